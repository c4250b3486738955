"""Access to the shared evaluation corpus (``../shared/corpus``), unpacked once.

The corpus holds third-party pages: it is never committed. It is unpacked into
the git-ignored ``.cache/corpus`` folder on first use. Tests that need it call
:func:`corpus_dir` and skip when it returns ``None``.

Where its pages come from (docs/corpus.rst): ``web/`` is trafilatura's evaluation
set (pages and hand-annotated segments); every documentation site is the HTML of a
Debian 12 documentation package, byte for byte. Without the shared archives,
:func:`site_dir` finds those sites in the packages instead (``make corpus-debian``
unpacks them into ``.cache/debian``; installed packages under ``/`` are used too),
so what needs only documentation sites can still run. ``python -m evaluation.corpus``
says which parts are available and how to get the missing ones.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SIMHASH_CORPUS", ROOT.parent / "shared" / "corpus"))
CACHE = ROOT / ".cache" / "corpus"
ARCHIVES = ("web-dev.tar.xz", "docs-dev.tar.xz")

ABSENT_REASON = f"the shared corpus is not at {SHARED} (set SIMHASH_CORPUS to its folder)"


def corpus_dir() -> Path | None:
    """Return the unpacked corpus folder, unpacking it on first use; None if absent."""
    if not all((SHARED / name).is_file() for name in ARCHIVES):
        return None
    for name in ARCHIVES:
        stamp = CACHE / f".{name}.done"
        if stamp.exists():
            continue
        CACHE.mkdir(parents=True, exist_ok=True)
        with tarfile.open(SHARED / name) as tar:
            tar.extractall(CACHE, filter="data")
        stamp.touch()
    return CACHE


def web_pages() -> list[tuple[str, Path, dict]]:
    """``(url, path, annotation)`` for every annotated page of ``web/``."""
    base = corpus_dir()
    if base is None:
        return []
    segments = json.loads((base / "web" / "segments.json").read_text(encoding="utf-8"))
    pages = []
    for url, ann in sorted(segments.items()):
        path = base / "web" / ann["file"]
        if path.is_file():
            pages.append((url, path, ann))
    return pages


def site_pages(site: str) -> list[Path]:
    """All HTML pages of one documentation site (``python-3.11``, ``django-3.2``, ...),
    from the shared corpus, else from its Debian package (:func:`site_dir`)."""
    folder = site_dir(site)
    if folder is None:
        return []
    return sorted(folder.rglob("*.html"))


# --------------------------------------------------------------------------- public sources

#: Each documentation site of the corpus: the Debian 12 package its HTML comes from and the
#: folder the package installs it in (the same files, byte for byte).
DEBIAN_SITES = {
    "python-3.11": ("python3.11-doc", "usr/share/doc/python3.11/html"),
    "django-3.2": ("python-django-doc", "usr/share/doc/python-django-doc/html"),
    "docs2/cmake-3.25": ("cmake-doc", "usr/share/doc/cmake-data/html"),
    "docs2/libstdc++-12": ("libstdc++-12-doc", "usr/share/doc/gcc-12-base/libstdc++"),
    "docs2/postgresql-15": ("postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html"),
    "docs2/git-2.39": ("git-doc", "usr/share/doc/git-doc"),
}
#: Where Debian packages' files are looked for: unpacked by ``make corpus-debian``, installed.
DEBIAN_ROOTS = (ROOT / ".cache" / "debian", Path("/"))
WEB_SOURCE = (
    "web/ is trafilatura's evaluation set (tests/eval and tests/cache of its repository, "
    "annotations in tests/evaldata.json); it cannot be built from a package registry"
)


def _site_key(site: str) -> str:
    return site if site in DEBIAN_SITES or site.startswith("docs2/") else f"docs2/{site}"


def site_dir(site: str) -> Path | None:
    """The folder of one documentation site: in the unpacked shared corpus when it is
    there, else where its Debian package put it; None when neither has it."""
    base = corpus_dir()
    if base is not None:
        for name in (site, _site_key(site)):
            if (base / name).is_dir():
                return base / name
    entry = DEBIAN_SITES.get(site) or DEBIAN_SITES.get(_site_key(site))
    if entry is None:
        return None
    for root in DEBIAN_ROOTS:
        folder = root / entry[1]
        if folder.is_dir() and any(folder.glob("*.html")):
            return folder
    return None


def availability() -> dict[str, str]:
    """Each part of the corpus -> where it is read from, or why it is missing."""
    shared = corpus_dir() is not None
    parts = {"web": f"shared corpus ({SHARED})" if shared else f"missing: {WEB_SOURCE}"}
    for site, (package, _) in DEBIAN_SITES.items():
        folder = site_dir(site)
        parts[site] = (
            f"missing: Debian package {package} (make corpus-debian)"
            if folder is None
            else str(folder)
        )
    return parts


def main() -> int:
    """Print which parts of the evaluation corpus are available; exit 1 when none is."""
    parts = availability()
    width = max(map(len, parts))
    for name, where in parts.items():
        print(f"{name:<{width}}  {where}")
    return 0 if any(not where.startswith("missing") for where in parts.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
