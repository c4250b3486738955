"""How much of each corpus page's text takes the general (non-Latin-1) tokenizer,
against the per-page budget ``MAX_GENERAL_CHARS``: the pages it would cut, and the
most any page spends. Usage: ``python -m bench.token_budget``."""

from __future__ import annotations

import sys

from evaluation import corpus
from scrapy_simhash.fingerprinting import features as F


def spent(html: bytes) -> tuple[int, bool]:
    """Characters of ``html``'s text read by the general tokenizer, and whether the
    budget cut the page (:func:`features.read_page`)."""
    budget = F.TokenBudget()
    F.read_page(html, budget=budget)
    return F.MAX_GENERAL_CHARS - budget.left, budget.cut


def main() -> int:
    pages = [path for _, path, _ in corpus.web_pages()]
    sites = ["python-3.11", "django-3.2", *(s for s in corpus.DEBIAN_SITES if s.startswith("docs2/")),
             *corpus.ARCHIVE_ONLY_SITES]
    for site in sites:
        pages += corpus.site_pages(site)
    if not pages:
        print(f"needs the evaluation corpus: {corpus.ABSENT_REASON}", file=sys.stderr)
        return 2
    found = sorted(((*spent(p.read_bytes()), p) for p in pages), key=lambda r: r[0], reverse=True)
    print(f"{len(found):,} pages; MAX_GENERAL_CHARS {F.MAX_GENERAL_CHARS:,}; "
          f"cut by it: {sum(cut for _, cut, _ in found)}")
    for chars, _, path in found[:5]:
        print(f"  {chars:>7,}  {path.relative_to(corpus.corpus_dir() or path.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
