"""``redis-info`` and ``redis-clear``: a shared Redis index (SIMHASH_BACKEND="redis")."""

from __future__ import annotations

import argparse
import json
from typing import Any

from scrapy_simhash.cli import EXIT_OK
from scrapy_simhash.cli.errors import InputError, Problems, UsageProblem
from scrapy_simhash.cli.options import Commands
from scrapy_simhash.cli.output import Progress


def redis_client(url: str) -> Any:
    """A connected client; :class:`InputError` when redis-py is missing or Redis is down."""
    from scrapy_simhash.backends.redis_index import import_redis

    try:
        redis = import_redis()
    except ImportError as exc:
        raise InputError(url, None, str(exc)) from None
    client = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise InputError(url, None, f"Redis is not reachable: {exc}") from None
    return client


def cmd_redis_info(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.backends.redis_index import index_info

    info = index_info(redis_client(args.url), args.key)
    if info is None:
        print(f"no simhash index under {args.key!r} at {args.url}")
        return EXIT_OK
    print(json.dumps(info, indent=None if args.json else 2, sort_keys=True))
    return EXIT_OK


def cmd_redis_clear(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.backends.redis_index import clear_index, index_info

    client = redis_client(args.url)
    info = index_info(client, args.key)
    if info is None:
        print(f"no simhash index under {args.key!r} at {args.url}")
        return EXIT_OK
    if not args.yes:
        raise UsageProblem(
            f"{args.key!r} holds {info.get('size', '?')} pages: add --yes to delete it"
        )
    deleted = clear_index(client, args.key)
    print(f"deleted {deleted} keys of {args.key!r} ({info.get('size', '?')} pages)")
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    for name, func, what, formats, example in (
        ("redis-info", cmd_redis_info,
         "the metadata of a shared Redis index (k, layout, fingerprint version, size)",
         ("input: the index stored in Redis under --key.\n\noutput: the metadata as "
          "indented JSON (--json: on one line), or a line saying there is no index under "
          "the key."),
         "redis-info --url redis://localhost:6379 --key demo:simhash"),
        ("redis-clear", cmd_redis_clear, "delete a shared Redis index (a crawl never does)",
         ("input: the index stored in Redis under --key.\n\noutput: one line saying how "
          "many keys were deleted; without --yes nothing is deleted (exit 2)."),
         "redis-clear --url redis://localhost:6379 --key demo:simhash --yes"),
    ):
        p = commands.add(name, func, what, formats=formats, example=example)
        p.add_argument("--url", default="redis://localhost:6379",
                       help="Redis URL (default: redis://localhost:6379)")
        p.add_argument("--key", required=True,
                       help="the index's key prefix: SIMHASH_REDIS_KEY with the spider name "
                            "filled in, e.g. demo:simhash")
        if name == "redis-clear":
            p.add_argument("--yes", action="store_true", help="really delete it")
        else:
            p.add_argument("--json", action="store_true", help="the metadata on one line")
