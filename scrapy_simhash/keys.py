"""Every stats key a crawl writes and every meta key it reads or sets: the one registry.

The reference documentation renders its tables from :data:`STATS` and
:data:`META` (``docs/_ext/simhash_docs.py``), and ``tests/test_keys.py`` runs a
real crawl and fails when it writes a stats key this registry does not list, or
when the code names a key that is missing here. A key with a variable part is
written with it in braces: ``simhash/duplicate_distance_count/{d}``.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class KeySpec(NamedTuple):
    """One key: its name (a ``{part}`` stands for a variable part), who writes or
    reads it, and what it means."""

    name: str
    component: str
    help: str


_MW = "SimhashMiddleware"
_RULES = "UrlRulesMiddleware"
_REDIS = "RedisBackend"

#: Every stats key, under the ``simhash/`` prefix, in the order the reference lists them.
STATS: tuple[KeySpec, ...] = (
    KeySpec("simhash/response_count", _MW, "Responses fingerprinted and checked against the index."),
    KeySpec("simhash/duplicate_count", _MW,
            "Near-duplicates found: dropped, or flagged in the other actions."),
    KeySpec("simhash/duplicate_distance_count/{d}", _MW,
            "Near-duplicates found at distance d (bits): a histogram for tuning k."),
    KeySpec("simhash/self_match_count", _MW,
            "Pages kept because the match is their own URL (fetched again, e.g. after a "
            "crash): neither dropped nor stored twice."),
    KeySpec("simhash/kept_dont_filter_count", _MW,
            "Near-duplicates kept because their request has dont_filter."),
    KeySpec("simhash/kept_for_links_count", _MW,
            "Near-duplicates delivered to the spider, not dropped or flagged, because they "
            "link to a page no page delivered before links to: dropping them could cut that "
            "page off the crawl. Not stored in the index."),
    KeySpec("simhash/skipped_count/{reason}", _MW,
            "Responses not fingerprinted: non_html, disabled_meta (meta simhash_enabled "
            "False), too_few_features (fewer than SIMHASH_MIN_FEATURES)."),
    KeySpec("simhash/outlinks_dropped_count", _MW,
            "Requests dropped from near-duplicates' callbacks (SIMHASH_ACTION drop_outlinks)."),
    KeySpec("simhash/backend_error_count", _MW,
            "Pages kept unchecked because the index failed (Redis unreachable, disk full)."),
    KeySpec("simhash/persist_error_count", _MW,
            "Pages checked and indexed in memory that the state file could not save."),
    KeySpec("simhash/initial_index_size", _MW,
            "Pages in the index when the spider opened (a resumed JOBDIR, a shared Redis "
            "index)."),
    KeySpec("simhash/index_size", _MW, "Pages in the index when the spider closed."),
    KeySpec("simhash/cpu_seconds", _MW, "CPU seconds spent fingerprinting, probing and reading "
            "links (thread CPU time of the hooks)."),
    KeySpec("simhash/rules_active", _RULES, "URL rules active (skipping requests)."),
    KeySpec("simhash/rules_learned_count", _RULES, "URL rule candidates learned from confirmed "
            "drops in this crawl."),
    KeySpec("simhash/rules_rejected_count", _RULES,
            "Candidates rejected before they became active: they map two pages kept as "
            "distinct."),
    KeySpec("simhash/rules_retired_count", _RULES,
            "Active rules retired: they mapped two pages kept as distinct."),
    KeySpec("simhash/rules_unlinked_count", _RULES,
            "Chains of two rules no longer applied one after the other."),
    KeySpec("simhash/rules_verify_count", _RULES,
            "Requests a rule would skip, fetched anyway to check it."),
    KeySpec("simhash/rules_verify_confirmed_count", _RULES,
            "Of them, pages confirmed as near-duplicates (the rule held)."),
    KeySpec("simhash/rules_verify_failed_count", _RULES,
            "Of them, pages kept as distinct."),
    KeySpec("simhash/rules_inconclusive_count", _RULES,
            "Pages kept that are no evidence for or against a rule: signed before their "
            "host's template was known, or near such a page."),
    KeySpec("simhash/rules_verify_pending_count", _RULES,
            "Requests a rule would skip, fetched because a check of the rule was still "
            "awaiting its verdict."),
    KeySpec("simhash/requests_skipped_count", _RULES,
            "Requests skipped before download by an active rule (SIMHASH_RULES apply)."),
    KeySpec("simhash/requests_skipped_count/{rule}", _RULES, "The same, per rule."),
    KeySpec("simhash/requests_skippable_count", _RULES,
            "Requests an active rule would have skipped, fetched because rules are not "
            "applied (SIMHASH_RULES learn, or SIMHASH_ACTION log)."),
    KeySpec("simhash/rules_error_count", _RULES,
            "Failures reading or storing the rules' evidence; no request is skipped after one."),
    KeySpec("simhash/redis/queue_length", _REDIS,
            "Pages still waiting in the queue at close (Redis failed or was full)."),
    KeySpec("simhash/redis/queued_count", _REDIS,
            "Pages queued because Redis failed or was full."),
    KeySpec("simhash/redis/queue_overflow_count", _REDIS,
            "Pages beyond SIMHASH_REDIS_QUEUE, never indexed."),
    KeySpec("simhash/redis/reindexed_count", _REDIS, "Queued pages indexed later."),
    KeySpec("simhash/redis/reindexed_already_stored_count", _REDIS,
            "Queued pages found already stored (their first call ran, its answer was lost)."),
    KeySpec("simhash/redis/reindexed_duplicate_count", _REDIS,
            "Queued pages found to be near-duplicates when indexed (they were kept)."),
    KeySpec("simhash/redis/unstored_count", _REDIS,
            "Pages checked but not stored because Redis was full (maxmemory)."),
    KeySpec("simhash/redis/unindexed_count", _REDIS,
            "Pages still queued when the crawl ended with Redis down: never indexed."),
    KeySpec("simhash/redis/lease_lost_count", _REDIS,
            "Sharded tables (SIMHASH_REDIS_SHARDED): probe-and-insert leases lost."),
    KeySpec("simhash/redis/conflict_count", _REDIS,
            "Inserts refused because a near page was stored since the probe (probed again)."),
    KeySpec("simhash/redis/unexamined_count", _REDIS,
            "Probes with candidates past the cap confirmed (sharded: those candidates)."),
    KeySpec("simhash/redis/crowded_count", _REDIS,
            "Pages not stored: the cap of stored pages with their fingerprint was reached."),
    KeySpec("simhash/redis/bucket_full_count", _REDIS,
            "Table entries not added: the bucket was full (findable through other tables)."),
    KeySpec("simhash/redis/log_rewound_count", _REDIS,
            "Times the log held fewer pages than this process had read (failover): read again."),
    KeySpec("simhash/redis/index_lost_count", _REDIS,
            "Times the shared index vanished mid-crawl (FLUSHALL, failover) and was made anew."),
)

#: Every request/response meta key scrapy-simhash reads or sets.
META: tuple[KeySpec, ...] = (
    KeySpec("simhash_enabled", f"{_MW}, {_RULES}",
            "Read. False on a request: its response is neither fingerprinted nor indexed, "
            "never dropped (simhash/skipped_count/disabled_meta), and no URL rule skips it."),
    KeySpec("simhash_rules", _RULES,
            "Read. False on a request: no URL rule skips it (it is still fingerprinted "
            "and checked after download)."),
    KeySpec("simhash_duplicate_of", _MW,
            "Set on a near-duplicate's response (request) meta, in every action: the URL of "
            "the kept page it matches. With SIMHASH_ACTION log or drop_outlinks the "
            "callback runs and can read it (and put it in its items); with drop an "
            "errback sees it."),
    KeySpec("simhash_distance", _MW,
            "Set beside simhash_duplicate_of: the distance in bits to the kept page."),
)

#: The meta keys the middleware sets on a near-duplicate.
DUPLICATE_OF = "simhash_duplicate_of"
DISTANCE = "simhash_distance"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{\w+\\\}", ".+", re.escape(name)) + "$")


_STATS_PATTERNS = [(spec, _pattern(spec.name)) for spec in STATS]


def stat_spec(key: str) -> KeySpec | None:
    """The registry entry a stats key written by a crawl falls under (None: undocumented)."""
    return next((spec for spec, pattern in _STATS_PATTERNS if pattern.match(key)), None)
