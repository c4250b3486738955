"""A site's template, learned from the crawl: the text blocks its pages repeat.

The drop decision must hold when the main-text extractor is wrong (a site-wide
footer read as an API page's main text, its own member table left out). So the
evidence a drop rests on is not the main text but the page's **own text**:
every visible block of the page (:attr:`~scrapy_simhash.fingerprinting.extract.PageText.blocks`),
less the blocks that recur on :data:`TEMPLATE_PAGES` or more other pages the
crawl kept from the same host. That split needs no rule about what template
looks like (Bar-Yossef & Rajagopalan, WWW 2002; Vieira et al., CIKM 2006: a
template is what a site's pages share), and it is safe whatever it decides:
a block left out of a page's own text is on other pages the crawl kept, so a
page dropped on this evidence loses no text that no kept page holds.

A host's template is *known* once :data:`KNOWN_PAGES` of its pages were
learned; before that a page's own text is all of it, and
:mod:`~scrapy_simhash.fingerprinting.signature` drops it only as an exact copy.
Only pages the crawl kept are learned (:meth:`SiteTemplate.learn`), and of
those only one per fingerprint (a copy kept unconfirmed has its original's), so
copies of a page never make its own text look like template.

Memory is bounded: per host, counts of :data:`MAX_BLOCKS` blocks seen on two
pages or more (past them no new one is counted, so fewer blocks count as
template: fewer drops, never a wrong one) and a window of the last
:data:`MAX_BLOCKS` blocks seen once, and the fingerprints of the last
:data:`MAX_PRINTS` pages learned (past them a copy kept unconfirmed may be
learned again: less own text for its next copy, never a wrong drop); and
:data:`MAX_HOSTS` hosts (the least recently used is forgotten, and starts again
unknown).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from itertools import repeat
from collections.abc import Iterable, Sequence

import numpy as np

from scrapy_simhash.fingerprinting.features import token_hashes

#: A block is template when it is on at least this many kept pages of its
#: host, and on :data:`TEMPLATE_SHARE` of them: what most of a site's pages
#: repeat (menus, footers, legal notices), not a paragraph a few pages quote.
TEMPLATE_PAGES = 2
TEMPLATE_SHARE = 0.2
#: A host's template is known once this many of its pages were learned.
KNOWN_PAGES = 2
#: Template blocks per host at most (about 100 bytes each), and blocks seen
#: once remembered (about 160 bytes each, in an ordered dict).
MAX_BLOCKS = 20_000
#: Hosts whose template is kept at most (least recently used forgotten).
MAX_HOSTS = 64
#: Fingerprints of the pages learned remembered per host (72 bytes each, 0.3 MB):
#: a page with one of them is not learned (:meth:`SiteTemplate.learn`).
MAX_PRINTS = 4_096
#: Seed of the block hashes (apart from every other hash of the package).
BLOCK_SEED = 0xB10C


def block_hashes(texts: Sequence[str], *, folded: bool = False) -> np.ndarray:
    """One ``uint64`` per block: xxh3-64 of its text with runs of white space
    folded (``folded``: they are already), case and digits kept (a block that
    differs in a number is another block)."""
    if not folded:
        texts = [" ".join(text.split()) for text in texts]
    return token_hashes(list(texts), BLOCK_SEED)


class SiteTemplate:
    """The blocks one host's kept pages repeat, in bounded memory: how many
    learned pages hold each block seen on two or more (at most
    :data:`MAX_BLOCKS` of them), and the last :data:`MAX_BLOCKS` blocks seen
    on one (the oldest forgotten first, so a block must recur within that
    window to be counted)."""

    __slots__ = ("pages", "needed", "early", "_once", "_counts", "_prints")

    def __init__(self, needed: int = TEMPLATE_PAGES) -> None:
        #: Pages learned.
        self.pages = 0
        #: Learned pages a block is on, at the least, before it counts as template.
        self.needed = needed
        #: Fingerprints of the pages learned before the template was known (at
        #: most :data:`KNOWN_PAGES`): they confirm only exact copies of themselves.
        self.early: list[int] = []
        # Windows, oldest first. The blocks' is an ordered dict: its oldest
        # leaves in O(1), where a dict finds its first key past the holes its
        # deletions left, up to the window's size for each of the ~100 blocks a
        # page adds (bench/template_learn.py). The fingerprints' loses one a
        # page: a dict, smaller.
        self._once: OrderedDict[int, None] = OrderedDict()
        self._counts: dict[int, int] = {}
        self._prints: dict[int, None] = {}  # fingerprints of the pages learned

    @property
    def known(self) -> bool:
        """Whether enough pages were learned for the template to mean anything."""
        return self.pages >= KNOWN_PAGES

    def threshold(self) -> int:
        """Learned pages a block must be on to be template: :attr:`needed`,
        and :data:`TEMPLATE_SHARE` of the pages learned."""
        return max(self.needed, math.ceil(TEMPLATE_SHARE * self.pages))

    def counts(self, hashes: np.ndarray) -> np.ndarray:
        """Learned pages holding each block (``int64``; 0 for a block never
        counted): compare with :meth:`threshold` for the template, with
        :attr:`needed` for the blocks other pages repeat."""
        counts = self._counts
        if not counts or not len(hashes):
            return np.zeros(len(hashes), dtype=np.int64)
        return np.fromiter(map(counts.get, hashes.tolist(), repeat(0)), dtype=np.int64,
                           count=len(hashes))

    def template_mask(self, hashes: np.ndarray) -> np.ndarray:
        """``bool`` per block: True where the block is template."""
        return self.counts(hashes) >= self.threshold()

    def learn(self, hashes: np.ndarray, fingerprint: int | None = None) -> bool:
        """Count a kept page's blocks (each distinct block once); whether it was.

        A page with the ``fingerprint`` of a page learned before (one of the
        last :data:`MAX_PRINTS`) is not: it may be a copy of it kept unconfirmed
        (a copy of one of the host's first pages, a view of a listing signed
        while the template was younger), and a copy's blocks must not pass for
        template, or its views would make each other's text template in turn,
        each then too small to be dropped but as an exact copy: kept again,
        learned again. Learning fewer pages is safe: less is template."""
        if fingerprint is not None:
            prints = self._prints
            if fingerprint in prints:
                return False
            prints[fingerprint] = None
            if len(prints) > MAX_PRINTS:
                del prints[next(iter(prints))]  # the oldest
            if not self.known:
                self.early.append(fingerprint)
        self.pages += 1
        once, counts = self._once, self._counts
        for h in set(hashes.tolist()):
            seen = counts.get(h)
            if seen is not None:
                counts[h] = seen + 1
            elif h in once:
                del once[h]
                if len(counts) < MAX_BLOCKS:
                    counts[h] = 2
            else:
                once[h] = None
                if len(once) > MAX_BLOCKS:
                    once.popitem(last=False)  # the oldest
        return True

    def __len__(self) -> int:
        """Blocks counted on two pages or more."""
        return len(self._counts)


class SiteTemplates:
    """One :class:`SiteTemplate` per host, for at most :data:`MAX_HOSTS` hosts."""

    def __init__(self, max_hosts: int = MAX_HOSTS) -> None:
        self.max_hosts = max_hosts
        self._hosts: OrderedDict[str, SiteTemplate] = OrderedDict()

    def __getitem__(self, host: str) -> SiteTemplate:
        """The template of ``host`` (a new, unknown one the first time)."""
        template = self._hosts.get(host)
        if template is None:
            template = self._hosts[host] = SiteTemplate()
            if len(self._hosts) > self.max_hosts:
                self._hosts.popitem(last=False)
        else:
            self._hosts.move_to_end(host)
        return template

    def __len__(self) -> int:
        return len(self._hosts)


def learned(pages: Iterable[np.ndarray]) -> SiteTemplate:
    """The template of a whole site given at once (batch tools: the pages'
    :func:`block_hashes`): every page learned, a block template when it is on
    :data:`TEMPLATE_PAGES` pages *besides* the one being signed, as in a
    crawl."""
    template = SiteTemplate(needed=TEMPLATE_PAGES + 1)
    for hashes in pages:
        template.learn(hashes)
    return template
