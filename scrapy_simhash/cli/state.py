"""What a crawl stored, for the command line: a JOBDIR (or its state file), or a Redis index.

``find-all``, ``clusters``, ``query``, ``explain`` and ``report`` read a crawl's
pages here: each page's fingerprint, sketch and URL, and the k the crawl decided
at, so that they decide as the crawl did. A state file is read only through
:func:`scrapy_simhash.backends.state.read_state` (format and fingerprint version
checked); a Redis index through
:func:`scrapy_simhash.backends.redis_index.read_index_pages`.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple

import numpy as np

from scrapy_simhash.cli.errors import InputError, UsageProblem
from scrapy_simhash.cli.fingerprints import FingerprintList, Keys

#: URL schemes read as a Redis index (redis-py's ``from_url``).
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def load_state(path: str) -> Any:
    """A crawl's state (a JOBDIR or its state file), format and version checked;
    :class:`InputError` saying why it cannot be used."""
    from scrapy_simhash.backends.state import StateError, read_state, state_path
    from scrapy_simhash.index import CorruptStateError

    file = state_path(path)
    try:
        state = read_state(file)
    except StateError as exc:
        raise InputError(file, None, _without_prefix(str(exc), file)) from None
    except CorruptStateError as exc:
        where = "" if exc.offset is None else f" at byte {exc.offset}"
        raise InputError(file, None, f"damaged crawl state{where}: {exc.reason}; "
                                     f"`scrapy-simhash salvage {file} NEW_STATE` copies "
                                     "its readable records into a new file") from None
    except OSError as exc:
        raise InputError(file, None, exc.strerror or str(exc)) from None
    if state.truncated:
        print(f"scrapy-simhash: {file}: ignored a truncated last record", file=sys.stderr)
    return state


def _without_prefix(message: str, path: str) -> str:
    return message[len(path) + 1:] if message.startswith(path + " ") else message


def looks_like_state(path: str) -> bool:
    """Whether ``path`` starts like a record log (a state file)."""
    from scrapy_simhash.index.store import MAGIC

    try:
        with open(path, "rb") as stream:
            return stream.read(len(MAGIC)) == MAGIC
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None


def is_redis_url(spec: str) -> bool:
    return spec.lower().startswith(REDIS_SCHEMES)


def is_crawl(spec: str) -> bool:
    """Whether ``spec`` names a crawl's pages (a JOBDIR, a state file, a Redis URL)
    rather than a fingerprint list."""
    if spec == "-":
        return False
    if is_redis_url(spec) or os.path.isdir(spec):
        return True
    return os.path.isfile(spec) and looks_like_state(spec)


class CrawlPages(NamedTuple):
    """The pages a crawl stored: fingerprints (``uint64``), sketches (``(n,
    SKETCH_BINS)`` ``uint8``), URLs, and the crawl's k (None: unknown)."""

    source: str
    fingerprints: np.ndarray
    sketches: np.ndarray
    urls: list[str]
    k: int | None

    def fingerprint_list(self) -> FingerprintList:
        """The pages as a fingerprint list keyed by URL, every row with its sketch."""
        return FingerprintList(self.fingerprints, Keys.from_strings(self.urls), "hex", 0,
                               self.sketches, 0)

    def find(self, url: str) -> int | None:
        """The row of ``url`` (None: not stored)."""
        try:
            return self.urls.index(url)
        except ValueError:
            return None


def open_crawl(spec: str, key: str | None = None) -> CrawlPages:
    """The pages stored by the crawl ``spec`` names: a JOBDIR, its state file, or
    a Redis URL (with ``key``, the index's key prefix such as ``myspider:simhash``)."""
    if is_redis_url(spec):
        return _redis_pages(spec, key)
    state = load_state(spec)
    return CrawlPages(state.path, state.fingerprints, state.sketches, state.urls,
                      state.max_distance)


def _redis_pages(url: str, key: str | None) -> CrawlPages:
    from scrapy_simhash.backends.redis_index import IndexMismatchError, import_redis, read_index_pages

    if not key:
        raise UsageProblem(f"{url} is a Redis URL: add --key, the index's key prefix "
                           "(SIMHASH_REDIS_KEY with the spider name filled in, e.g. "
                           "myspider:simhash)")
    try:
        redis = import_redis()
    except ImportError as exc:
        raise InputError(url, None, str(exc)) from None
    client = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=10)
    try:
        pages = read_index_pages(client, key)
    except redis.RedisError as exc:
        raise InputError(url, None, f"Redis is not reachable: {exc}") from None
    except IndexMismatchError as exc:
        raise InputError(url, None, str(exc)) from None
    finally:
        client.close()
    if pages is None:
        raise InputError(url, None, f"no simhash index under {key!r}")
    return CrawlPages(f"{url} {key}", pages.fingerprints, pages.sketches, pages.urls, pages.k)


def crawl_note(pages: CrawlPages, k: int, given: bool) -> str:
    """How a command reading a crawl decides, for stderr."""
    if given:
        at = f"k={k} (--distance)"
    elif pages.k is None:
        at = f"k={k} (the default: this state does not record the crawl's k)"
    else:
        at = f"k={k}, the crawl's SIMHASH_MAX_DISTANCE"
    return (f"{pages.source}: {len(pages.fingerprints):,} pages the crawl stored; "
            f"decided as the crawl decides, at {at}, confirmed by their sketches")
