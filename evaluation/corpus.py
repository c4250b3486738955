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

import argparse
import json
import os
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "corpus"
ARCHIVES = ("web-dev.tar.xz", "docs-dev.tar.xz")
#: Archives unpacked beside them when present (the four ``docs2/`` sites, the three
#: ``docs3/`` API references).
OPTIONAL_ARCHIVES = ("docs-dev2.tar.xz", "docs-dev3.tar.xz")
#: The API references of ``docs-dev3.tar.xz`` (Debian 12's qtbase5-doc-html, libeigen3-doc,
#: libcommons-lang3-java-doc): read from the shared archive only, not rebuilt by ``build``.
ARCHIVE_ONLY_SITES = ("docs3/qt-5.15", "docs3/eigen-3.4", "docs3/commons-lang3-3.12")
#: The same archives rebuilt from public sources by ``python -m evaluation.corpus build``.
PUBLIC = ROOT / ".cache" / "public-corpus"


def _shared() -> Path:
    """``SIMHASH_CORPUS``, else ``../shared/corpus``, else the rebuilt public copy."""
    if os.environ.get("SIMHASH_CORPUS"):
        return Path(os.environ["SIMHASH_CORPUS"])
    shared = ROOT.parent / "shared" / "corpus"
    if not all((shared / name).is_file() for name in ARCHIVES) and all(
        (PUBLIC / name).is_file() for name in ARCHIVES
    ):
        return PUBLIC
    return shared


SHARED = _shared()

ABSENT_REASON = f"the shared corpus is not at {SHARED} (set SIMHASH_CORPUS to its folder)"


def corpus_dir() -> Path | None:
    """Return the unpacked corpus folder, unpacking it on first use; None if absent."""
    if not all((SHARED / name).is_file() for name in ARCHIVES):
        return None
    optional = tuple(name for name in OPTIONAL_ARCHIVES if (SHARED / name).is_file())
    for name in ARCHIVES + optional:
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


#: The parts each archive holds (its top-level folders).
ARCHIVE_PARTS = {
    "web-dev.tar.xz": ("web",),
    "docs-dev.tar.xz": ("python-3.11", "django-3.2"),
    "docs-dev2.tar.xz": tuple(site for site in DEBIAN_SITES if site.startswith("docs2/")),
}
WEB_LIST = Path(__file__).resolve().parent / "web-pages.json"


def _debian_dir(site: str) -> Path | None:
    for root in DEBIAN_ROOTS:
        folder = root / DEBIAN_SITES[site][1]
        if folder.is_dir() and any(folder.glob("*.html")):
            return folder
    return None


def _web_files(trafilatura: Path) -> dict[str, Path] | None:
    """``web/`` from a checkout of trafilatura's repository: ``segments.json`` (the
    entries of its ``tests/evaldata.json`` for the URLs in ``web-pages.json``) and the
    pages, found in its ``tests/eval`` or ``tests/cache``. None when one is missing."""
    tests = trafilatura / "tests"
    evaldata = tests / "evaldata.json"
    if not evaldata.is_file():
        print(f"web: {evaldata} not found (a checkout of trafilatura's repository?)")
        return None
    entries = json.loads(evaldata.read_text(encoding="utf-8"))
    urls = json.loads(WEB_LIST.read_text(encoding="utf-8"))["urls"]
    files: dict[str, Path] = {}
    segments = {}
    for url in urls:
        entry = entries.get(url)
        found = entry and next(
            (tests / d / entry["file"] for d in ("eval", "cache") if (tests / d / entry["file"]).is_file()),
            None,
        )
        if not found:
            print(f"web: {url} is not in this trafilatura checkout; an older commit has it")
            return None
        files[entry["file"]] = found
        segments[url] = entry
    data = json.dumps(segments, ensure_ascii=False, indent=1).encode("utf-8")
    stage = PUBLIC / "web-segments.json"
    stage.parent.mkdir(parents=True, exist_ok=True)
    stage.write_bytes(data)
    files["segments.json"] = stage
    return files


def build(trafilatura: Path | None) -> list[str]:
    """Write each archive of the corpus that public sources can make into :data:`PUBLIC`:
    the documentation sites from Debian's packages (``make corpus-debian`` first), ``web/``
    from a trafilatura checkout. Returns the archives written; ``SIMHASH_CORPUS`` (or,
    when ``../shared/corpus`` is absent, nothing at all) makes every consumer read them."""
    written = []
    for archive, parts in ARCHIVE_PARTS.items():
        if (PUBLIC / archive).is_file():
            print(f"{archive}: already built ({PUBLIC / archive}; delete it to rebuild)")
            written.append(archive)
            continue
        members: dict[str, Path] = {}
        for part in parts:
            if part == "web":
                files = _web_files(trafilatura) if trafilatura else None
                if files is None:
                    print(f"{archive}: skipped, {WEB_SOURCE} (pass --trafilatura CHECKOUT)")
                    break
                members.update({f"web/{name}": path for name, path in files.items()})
                continue
            folder = _debian_dir(part)
            if folder is None:
                print(f"{archive}: skipped, Debian package {DEBIAN_SITES[part][0]} not found "
                      "(make corpus-debian)")
                break
            for path in sorted(folder.rglob("*.html")):
                if path.is_file() and not path.is_symlink():
                    members[f"{part}/{path.relative_to(folder)}"] = path
        else:
            PUBLIC.mkdir(parents=True, exist_ok=True)
            partial = PUBLIC / f".{archive}.tmp"
            with tarfile.open(partial, "w:xz", preset=1) as tar:
                for name, path in members.items():
                    tar.add(path, arcname=name, recursive=False)
            partial.replace(PUBLIC / archive)
            written.append(archive)
            print(f"{archive}: {len(members)} files -> {PUBLIC / archive}")
    return written


def _site_key(site: str) -> str:
    return site if site in DEBIAN_SITES or site.startswith("docs2/") else f"docs2/{site}"


def site_dir(site: str) -> Path | None:
    """The folder of one documentation site (``docs2/cmake-3.25`` or ``cmake-3.25``,
    ``docs3/qt-5.15`` or ``qt-5.15``): in the unpacked shared corpus when it is there,
    else where its Debian package put it; None when neither has it."""
    base = corpus_dir()
    if base is not None:
        for name in (site, _site_key(site), f"docs3/{site}"):
            if (base / name).is_dir():
                return base / name
    key = site if site in DEBIAN_SITES else _site_key(site)
    return _debian_dir(key) if key in DEBIAN_SITES else None


def availability() -> dict[str, str]:
    """Each part of the corpus -> where it is read from, or why it is missing."""
    shared = corpus_dir() is not None
    parts = {"web": f"archives in {SHARED}" if shared else f"missing: {WEB_SOURCE}"}
    for site, (package, _) in DEBIAN_SITES.items():
        folder = site_dir(site)
        parts[site] = (
            f"missing: Debian package {package} (make corpus-debian)"
            if folder is None
            else str(folder)
        )
    for site in ARCHIVE_ONLY_SITES:
        folder = site_dir(site)
        parts[site] = f"missing: docs-dev3.tar.xz in {SHARED}" if folder is None else str(folder)
    return parts


def main(argv: list[str] | None = None) -> int:
    """Print which parts of the evaluation corpus are available (exit 1 when none is), or
    ``build`` the archives public sources can make."""
    parser = argparse.ArgumentParser(prog="python -m evaluation.corpus", description=main.__doc__)
    parser.add_argument("command", nargs="?", choices=("status", "build"), default="status")
    parser.add_argument("--trafilatura", type=Path, help="a checkout of trafilatura's repository")
    args = parser.parse_args(argv)
    if args.command == "build":
        written = build(args.trafilatura)
        if written:
            print(f"use them with SIMHASH_CORPUS={PUBLIC} (the default when ../shared/corpus "
                  "is absent and every archive was built)")
        return 0 if written else 1
    parts = availability()
    width = max(map(len, parts))
    for name, where in parts.items():
        print(f"{name:<{width}}  {where}")
    return 0 if any(not where.startswith("missing") for where in parts.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
