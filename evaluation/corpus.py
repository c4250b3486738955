"""Access to the shared evaluation corpus (``../shared/corpus``), unpacked once.

The corpus holds third-party pages: it is never committed. It is unpacked into
the git-ignored ``.cache/corpus`` folder on first use. Tests that need it call
:func:`corpus_dir` and skip when it returns ``None``.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SIMHASH_CORPUS", ROOT.parent / "shared" / "corpus"))
CACHE = ROOT / ".cache" / "corpus"
ARCHIVES = ("web-dev.tar.xz", "docs-dev.tar.xz", "docs-dev2.tar.xz")

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


#: The documentation sites: ``docs-dev`` (at the corpus' top) and ``docs-dev2`` (under ``docs2/``).
DOC_SITES = (
    "python-3.11", "django-3.2",
    "docs2/cmake-3.25", "docs2/libstdc++-12", "docs2/postgresql-15", "docs2/git-2.39",
)


def site_pages(site: str) -> list[Path]:
    """All HTML pages of one documentation site (one of :data:`DOC_SITES`)."""
    base = corpus_dir()
    if base is None:
        return []
    return sorted((base / site).rglob("*.html"))
