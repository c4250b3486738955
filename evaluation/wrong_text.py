"""The extractor made wrong on purpose: a page's main text replaced by the wrong text.

The first rule (issue 23) asks for a drop decision that stays safe when the
extractor picks the wrong text as a page's main text: the site-wide footer, the
navigation, any block of the page. :func:`wrong_main` forces it, deterministically
(a copy gets the same wrong text as its original, as a deterministic extractor
would give it), for the property test (``tests/test_safety.py``) and for any
site (``python -m bench.unseen_sites --wrong HOW``).
"""

from __future__ import annotations

import random
import zlib

from scrapy_simhash.fingerprinting.extract import MainText, PageText

__all__ = ["WRONG_TEXTS", "wrong_main"]

#: The wrong texts :func:`wrong_main` can force.
WRONG_TEXTS = ("footer", "navigation", "random")


def wrong_main(page: PageText, how: str | None) -> PageText:
    """``page`` with its main text replaced by the wrong text ``how`` names: the
    page's last block (``footer``), its link lists joined (``navigation``) or one
    of its blocks chosen by the page's text (``random``); None: as read."""
    if how is None:
        return page
    if how not in WRONG_TEXTS:
        raise ValueError(f"how must be one of {WRONG_TEXTS} or None, got {how!r}")
    texts = [text for text, _ in page.blocks[1:]] or [""]
    if how == "footer":
        chosen = [texts[-1]]
    elif how == "navigation":
        chosen = [" ".join(text for text, link in page.blocks if link * 2 > len(text))]
    else:
        rng = random.Random(zlib.crc32("\n".join(texts).encode("utf-8", "surrogatepass")))
        chosen = [rng.choice(texts)]
    return page._replace(main=MainText(page.main.title, [], chosen, []))
