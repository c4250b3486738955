"""Signals sent by scrapy-simhash.

``simhash_duplicate`` is sent for every near-duplicate found (in every action
mode, and before a ``drop`` raises), with the arguments ``response``,
``duplicate_of`` (URL), ``distance``, ``fingerprint``,
``duplicate_fingerprint``, ``action``, ``spot_signatures`` (distinct spot
signatures of the page's main text: what its fingerprint was computed from;
0 when unknown) and ``spider``. A handler may declare only the arguments it
uses. It is sent from a synchronous hook with ``send_catch_log``: handlers must
be synchronous (an ``async def`` handler would not be awaited). Connect it with
``crawler.signals.connect(handler, signal=scrapy_simhash.signals.simhash_duplicate)``.

A response whose own URL is the match (fetched again) is kept and sends no
signal; it is counted in ``simhash/self_match_count``.
"""

simhash_duplicate = object()

simhash_kept = object()
"""Sent for every page fingerprinted and kept as distinct (no stored page within
k bits confirmed), with ``response``, ``fingerprint``, ``conclusive`` and
``spider``; synchronous, like ``simhash_duplicate``. ``conclusive`` is False
when being kept says nothing of the page: it was signed before its host's
template was known, or such a page is within k bits of it (those confirm only
exact copies). The URL rules learn their counterexamples from the conclusive
ones."""
