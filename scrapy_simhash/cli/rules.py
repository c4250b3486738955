"""``scrapy-simhash rules STATE``: the URL rules a crawl learned, with their evidence.

STATE is a JOBDIR (its ``simhash.rules``), a rules file, or ``redis://…`` with
``--key`` for a crawl sharing its rules in Redis. The evidence is replayed with
the crawl's settings for support (``--min-support``), so the states shown are
the ones the crawl had.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXAMPLE = "scrapy-simhash rules crawls/site   (a JOBDIR)"


def add_commands(commands: Any) -> None:
    """Add the ``rules`` subcommand to the command registry."""
    p = commands.add(
        "rules", lambda args, problems, progress: run(args),
        "the URL rules a crawl learned: support, counterexamples, skips",
        formats=(
            "input: a JOBDIR, its simhash.rules file, or a Redis URL with --key (the "
            "crawl's rules list).\n\noutput: a table of the rules with their state, "
            "supporting pages and pairs, counterexamples and skips, or JSON lines with "
            "--json (which adds the 99% precision bound)."
        ),
        example=EXAMPLE.removeprefix("scrapy-simhash "),
    )
    p.add_argument("state", metavar="STATE",
                   help="a JOBDIR, its simhash.rules file, or a Redis URL (with --key)")
    p.add_argument("--key", help="with a Redis URL: the rules list, e.g. demo:simhash:rules")
    p.add_argument("--min-support", type=int, default=3, metavar="N",
                   help="SIMHASH_RULES_MIN_SUPPORT of the crawl (default: 3)")
    p.add_argument("--min-precision", type=float, default=0.3, metavar="P",
                   help="SIMHASH_RULES_MIN_PRECISION of the crawl (default: 0.3)")
    p.add_argument("--all", action="store_true",
                   help="also list candidates with a single supporting pair")
    p.add_argument("--json", action="store_true", help="one JSON object per rule")


def _events(args: argparse.Namespace) -> list:
    from scrapy_simhash.rules import read_rules

    if args.state.startswith(("redis://", "rediss://", "unix://")):
        if not args.key:
            raise ValueError("a Redis STATE needs --key (SIMHASH_REDIS_KEY with the spider "
                             "name, then :rules, e.g. demo:simhash:rules)")
        from scrapy_simhash.backends.redis_index import import_redis
        from scrapy_simhash.rules import RedisRuleLog

        log = RedisRuleLog(import_redis().Redis.from_url(args.state), args.key)
        try:
            return log.poll()
        finally:
            log.close()
    return read_rules(args.state)


def run(args: argparse.Namespace) -> int:
    """List the rules; 0 on success, 1 when the state cannot be read."""
    from scrapy_simhash.index.store import CorruptStateError
    from scrapy_simhash.rules import RuleBook, replay

    if args.min_support < 1:
        print("scrapy-simhash: --min-support must be at least 1", file=sys.stderr)
        return 2
    try:
        events = _events(args)
    except (OSError, ValueError, CorruptStateError) as exc:
        print(f"scrapy-simhash: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # redis errors, without importing redis here
        print(f"scrapy-simhash: cannot read {args.state}: {exc}", file=sys.stderr)
        return 1
    if not 0 <= args.min_precision < 1:
        print("scrapy-simhash: --min-precision must be from 0 to below 1", file=sys.stderr)
        return 2
    book = RuleBook(min_support=args.min_support, min_precision=args.min_precision)
    replay(book, events)
    rows = [r for r in book.summary() if args.all or r["state"] != "candidate"
            or r["support"] > 1]
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    print(f"{_n(len(events), 'event')}: {_n(book.kept_count, 'page')} kept, "
          f"{_n(sum(e[0] == 'd' for e in events), 'near-duplicate')}, "
          f"{_n(sum(e[0] == 's' for e in events), 'request')} skipped; "
          f"{_n(book.active_count, 'active rule')}, {len(book.rules):,} learned")
    if not rows:
        return 0
    table = [("state", "pages", "pairs", "counter", "skips", "rule")]
    table += [(r["state"], str(r["support"]), str(r["pairs"]), str(r["counterexamples"]),
               str(r["skips"]), r["rule"]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                        enumerate(zip(row[:5], widths))) + "  " + row[5])
    for r in rows:
        if r["counterexample_pairs"]:
            a, b = r["counterexample_pairs"][0]
            print(f"  {r['rule']}: counterexample <{a}> / <{b}>")
    return 0


def _n(count: int, noun: str) -> str:
    """``1 rule``, ``2 rules``."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
