"""Boilerplate filter quality on the hand-annotated ``web/segments.json`` pages.

For each page, every ``with`` segment (main content) should survive the
extraction and every ``without`` segment (template) should not. A segment
survives when its whitespace-normalised, lower-cased text occurs in the
extracted text (title, headings and blocks joined). Reported: the share of
``with`` segments kept and of ``without`` segments removed (micro-averaged over
all segments), with precision/recall/F1 computed the way trafilatura's own
evaluation does (kept ``with`` = true positive, kept ``without`` = false
positive).

Usage: ``python -m bench.boilerplate [--limit N]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


from evaluation.corpus import ABSENT_REASON, corpus_dir, web_pages
from scrapy_simhash.fingerprinting.features import page_main_text


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def boilerplate_scores(limit: int | None = None) -> dict[str, float]:
    """Segment survival figures of the main text that fingerprints are computed
    from (:func:`scrapy_simhash.fingerprinting.features.page_main_text`) on the annotated web pages: ``with_kept``, ``without_removed``, ``precision``,
    ``recall``, ``f1``, ``pages``, ``with``, ``without``."""
    pages = web_pages()[:limit]
    tp = fn = fp = tn = 0
    for _url, path, ann in pages:
        main = page_main_text(path.read_bytes())
        text = _norm(" \n ".join([main.title, *main.headings, *main.blocks, *main.code]))
        for segment in ann.get("with", []):
            if _norm(segment) in text:
                tp += 1
            else:
                fn += 1
        for segment in ann.get("without", []):
            if _norm(segment) in text:
                fp += 1
            else:
                tn += 1
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "pages": len(pages),
        "with": tp + fn,
        "without": fp + tn,
        "with_kept": recall,
        "without_removed": tn / (fp + tn) if fp + tn else 0.0,
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    args = parser.parse_args(argv)
    if corpus_dir() is None:
        print(ABSENT_REASON)
        return 1
    s = boilerplate_scores(args.limit)
    print(f"pages: {s['pages']}, segments: {s['with']} with, {s['without']} without")
    print(f"with kept:       {s['with_kept']:.3f}   (bar >= 0.90)")
    print(f"without removed: {s['without_removed']:.3f}   (bar >= 0.80)")
    print(f"precision {s['precision']:.3f}  recall {s['recall']:.3f}  F1 {s['f1']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
