"""Every ``SIMHASH_*`` setting: its name, default and meaning, read and validated once.

:data:`SETTINGS` is the one home of each setting's name, default and one-line
description: :meth:`SimhashSettings.from_settings` reads its defaults from it,
the add-on registers them (so ``crawler.settings`` shows them), and the
reference documentation is rendered from it.

:class:`SimhashSettings` is what the middleware and the backends receive, so
an invalid value fails the crawl at start-up with a message naming the
setting and the bad value, instead of being noticed (or not) mid-crawl.
"""

from __future__ import annotations

import difflib
import logging
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy.settings import BaseSettings

from scrapy_simhash.backends import BUILTIN_BACKENDS, Backend, backend_problem, load_backend
from scrapy_simhash.backends.redis import DEFAULT_QUEUE_SIZE, DEFAULT_TIMEOUT, URL_FORMATS
from scrapy_simhash.backends.state import STATE_FILE
from scrapy_simhash.fingerprinting import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_FEATURES
from scrapy_simhash.index import TableLayout
from scrapy_simhash.link_state import LINKS_FILE

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

ACTIONS = ("drop", "drop_outlinks", "log")
ON_ERROR = ("keep", "stop")
RULES_MODES = ("apply", "learn", "off")
MAX_DISTANCE_LIMIT = 10  # beyond this the permuted tables stop paying off
DEFAULT_EXPECTED_PAGES = 1_000_000
DEFAULT_REDIS_KEY = "%(spider)s:simhash"
#: In a Redis Cluster, the hash tag puts one crawl's keys in one slot.
DEFAULT_CLUSTER_REDIS_KEY = "{%(spider)s}:simhash"


class SettingSpec(NamedTuple):
    """One ``SIMHASH_*`` setting: its name, its default and what it does."""

    name: str
    default: Any
    help: str


#: Every setting of scrapy-simhash, in the order the reference lists them.
SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec("SIMHASH_ENABLED", True, "Off disables the middleware (NotConfigured)."),
    SettingSpec(
        "SIMHASH_MAX_DISTANCE", DEFAULT_MAX_DISTANCE,
        f"k: pages whose fingerprints are within k bits (0-{MAX_DISTANCE_LIMIT}) and whose "
        "sketches confirm it are near-duplicates.",
    ),
    SettingSpec(
        "SIMHASH_LAYOUT", "auto",
        'Permuted-table block widths, such as "16,16,16,16", or "auto" (derived from k).',
    ),
    SettingSpec(
        "SIMHASH_EXPECTED_PAGES", DEFAULT_EXPECTED_PAGES,
        "Pages the index is sized for (the auto layout and the table sizes).",
    ),
    SettingSpec(
        "SIMHASH_MIN_FEATURES", DEFAULT_MIN_FEATURES,
        "Pages with fewer distinct spot signatures are not fingerprinted (never dropped).",
    ),
    SettingSpec(
        "SIMHASH_ACTION", "drop",
        "drop (the callback never runs), drop_outlinks (its requests are dropped) "
        "or log (a dry run).",
    ),
    SettingSpec(
        "SIMHASH_LOG_LEVEL", "INFO",
        "Level of the first drop's log line (of every drop's with SIMHASH_DEBUG).",
    ),
    SettingSpec(
        "SIMHASH_DEBUG", False,
        "Log every drop at SIMHASH_LOG_LEVEL; otherwise only the first, the others at DEBUG.",
    ),
    SettingSpec(
        "SIMHASH_LOG_FILE", None,
        "JSON lines audit file: a line per run start and end and per near-duplicate "
        "(appended).",
    ),
    SettingSpec(
        "SIMHASH_PERSIST_PATH", None,
        f"State file of the memory backend; default JOBDIR/{STATE_FILE} when JOBDIR is set.",
    ),
    SettingSpec("SIMHASH_RESET", False, "Start with an empty index (the state is replaced)."),
    SettingSpec(
        "SIMHASH_BACKEND", "memory",
        "memory, redis, or the import path of a backend class.",
    ),
    SettingSpec(
        "SIMHASH_REDIS_URL", None,
        "Redis of the redis backend; default REDIS_URL, then REDIS_HOST and REDIS_PORT.",
    ),
    SettingSpec(
        "SIMHASH_REDIS_KEY", None,
        f"Key prefix template of the redis backend (%(spider)s is the spider name); "
        f"default {DEFAULT_REDIS_KEY}, or {DEFAULT_CLUSTER_REDIS_KEY} with "
        "SIMHASH_REDIS_CLUSTER (one hash slot a crawl).",
    ),
    SettingSpec(
        "SIMHASH_REDIS_ON_ERROR", "keep",
        "When the index fails mid-crawl: keep pages (unchecked, queued for indexing) or "
        "stop the crawl.",
    ),
    SettingSpec(
        "SIMHASH_REDIS_TIMEOUT", DEFAULT_TIMEOUT,
        "Seconds one Redis call may block the crawl (connect, and again for the answer); "
        "no retries.",
    ),
    SettingSpec(
        "SIMHASH_REDIS_QUEUE", DEFAULT_QUEUE_SIZE,
        "Pages kept unchecked (or unstored) while Redis fails, queued and indexed when it "
        "answers again.",
    ),
    SettingSpec(
        "SIMHASH_REDIS_CLUSTER", False,
        "Use redis-py's RedisCluster (a Redis Cluster); one crawl's keys in one hash slot.",
    ),
    SettingSpec(
        "SIMHASH_REDIS_SHARDED", False,
        "With a cluster: spread one crawl's tables over the masters (a lease lock makes "
        "probe-and-insert atomic).",
    ),
    SettingSpec(
        "SIMHASH_REDIS_URLS", "full",
        "full (URLs stored for the drop log) or hash (an 8-byte hash a page: the drop log "
        "names the kept page as xxh3:<hex>).",
    ),
    SettingSpec(
        "SIMHASH_RULES", "learn",
        "URL rules learned from confirmed drops: learn (a dry run: count what would be "
        "skipped), apply (skip matching requests before download: a page a rule maps wrongly "
        "is never fetched, so this can lose distinct pages) or off.",
    ),
    SettingSpec(
        "SIMHASH_RULES_MIN_SUPPORT", 3,
        "Supporting instances (on at least two pages) before a URL rule is active.",
    ),
    SettingSpec(
        "SIMHASH_RULES_MIN_PRECISION", 0.3,
        "A URL rule skips only while the 99% Wilson lower bound of its precision is at "
        "least this (a broad rule, one for a whole host or a folder tree: this plus 0.5).",
    ),
    SettingSpec(
        "SIMHASH_RULES_VERIFY_SHARE", 0.05,
        "Share of the requests an active rule would skip that are fetched anyway to check it.",
    ),
    SettingSpec(
        "SIMHASH_RULES_VERIFY_FIRST", 2,
        "Requests for new pages fetched anyway right after a rule becomes active.",
    ),
    SettingSpec(
        "SIMHASH_RULES_PATH", None,
        "Rules file; default JOBDIR/simhash.rules, else SIMHASH_PERSIST_PATH + .rules, else "
        "in memory (shared through Redis with the redis backend).",
    ),
    SettingSpec(
        "SIMHASH_MAX_UNCHECKED_SHARE", 0.05,
        "A crawl that kept more than this share of its pages unchecked ends with finish "
        "reason simhash_unchecked and an ERROR.",
    ),
)

#: ``SIMHASH_*`` name -> default.
DEFAULTS: dict[str, Any] = {spec.name: spec.default for spec in SETTINGS}

#: The prefix of every setting of scrapy-simhash: a name with it that
#: :data:`SETTINGS` does not list is a typo (:func:`unknown_settings`).
PREFIX = "SIMHASH_"
#: The spider argument that empties the index, as ``-a simhash_reset=1``
#: (scrapy-deltafetch's ``deltafetch_reset``); it overrides ``SIMHASH_RESET``.
RESET_ARGUMENT = "simhash_reset"


def unknown_settings(settings: BaseSettings) -> list[tuple[str, str | None]]:
    """Each ``SIMHASH_*`` name set that :data:`SETTINGS` does not list, with the
    closest known name (None when none is close): a misspelt setting would
    otherwise be ignored without a word."""
    # compared without the shared prefix, which would make every name look close
    known = [name[len(PREFIX):] for name in DEFAULTS]
    found = []
    for name in sorted(str(n) for n in settings):
        if name.upper().startswith(PREFIX) and name not in DEFAULTS:
            close = difflib.get_close_matches(name.upper()[len(PREFIX):], known, n=1,
                                              cutoff=0.6)
            found.append((name, PREFIX + close[0] if close else None))
    return found


def _invalid(name: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"Invalid {name} setting: {value!r} ({expected})")


@dataclass(frozen=True)
class SimhashSettings:
    """The validated configuration of the Scrapy layer and its backends."""

    enabled: bool = DEFAULTS["SIMHASH_ENABLED"]
    max_distance: int = DEFAULTS["SIMHASH_MAX_DISTANCE"]
    layout: str = DEFAULTS["SIMHASH_LAYOUT"]
    expected_pages: int = DEFAULTS["SIMHASH_EXPECTED_PAGES"]
    min_features: int = DEFAULTS["SIMHASH_MIN_FEATURES"]
    action: str = DEFAULTS["SIMHASH_ACTION"]
    log_level: int = logging.INFO
    debug: bool = DEFAULTS["SIMHASH_DEBUG"]
    log_file: str | None = DEFAULTS["SIMHASH_LOG_FILE"]
    persist_path: str | None = DEFAULTS["SIMHASH_PERSIST_PATH"]
    #: Where the links of delivered pages are kept (:mod:`scrapy_simhash.link_state`):
    #: ``JOBDIR/simhash.links``, else the state file's path + ``.links``, else nowhere.
    links_path: str | None = None
    reset: bool = DEFAULTS["SIMHASH_RESET"]
    backend: str | type[Backend] = DEFAULTS["SIMHASH_BACKEND"]
    redis_url: str = "redis://localhost:6379"
    redis_params: dict = field(default_factory=dict, hash=False)
    redis_key: str = DEFAULT_REDIS_KEY  # SIMHASH_REDIS_KEY = None: per mode
    redis_on_error: str = DEFAULTS["SIMHASH_REDIS_ON_ERROR"]
    redis_timeout: float = DEFAULTS["SIMHASH_REDIS_TIMEOUT"]
    redis_queue: int = DEFAULTS["SIMHASH_REDIS_QUEUE"]
    redis_cluster: bool = DEFAULTS["SIMHASH_REDIS_CLUSTER"]
    redis_sharded: bool = DEFAULTS["SIMHASH_REDIS_SHARDED"]
    redis_urls: str = DEFAULTS["SIMHASH_REDIS_URLS"]
    max_unchecked_share: float = DEFAULTS["SIMHASH_MAX_UNCHECKED_SHARE"]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SimhashSettings:
        """Read every ``SIMHASH_*`` setting; raise ``ValueError`` naming a bad one."""
        k = _get_int(settings, "SIMHASH_MAX_DISTANCE", 0, MAX_DISTANCE_LIMIT)
        expected = _get_int(settings, "SIMHASH_EXPECTED_PAGES", 1)
        layout = _get_layout(settings, k, expected)
        jobdir = settings.get("JOBDIR") or None
        persist = settings.get("SIMHASH_PERSIST_PATH") or None
        if persist is None and jobdir:
            persist = os.path.join(jobdir, STATE_FILE)
        if jobdir:
            links = os.path.join(jobdir, LINKS_FILE)
        else:
            links = None if persist is None else os.fspath(persist) + ".links"
        return cls(
            enabled=_get_bool(settings, "SIMHASH_ENABLED"),
            max_distance=k,
            layout=layout,
            expected_pages=expected,
            min_features=_get_int(settings, "SIMHASH_MIN_FEATURES", 1),
            action=_get_choice(settings, "SIMHASH_ACTION", ACTIONS),
            log_level=_get_level(settings, "SIMHASH_LOG_LEVEL"),
            debug=_get_bool(settings, "SIMHASH_DEBUG"),
            log_file=_get_path(settings, "SIMHASH_LOG_FILE"),
            persist_path=None if persist is None else os.fspath(persist),
            links_path=links,
            reset=_get_bool(settings, "SIMHASH_RESET"),
            backend=_get_backend(settings),
            redis_url=_get_redis_url(settings),
            redis_params=_get_dict(settings, "REDIS_PARAMS"),
            redis_key=_get_redis_key(settings),
            redis_on_error=_get_choice(settings, "SIMHASH_REDIS_ON_ERROR", ON_ERROR),
            redis_timeout=_get_float(settings, "SIMHASH_REDIS_TIMEOUT", 0.001, 60),
            redis_queue=_get_int(settings, "SIMHASH_REDIS_QUEUE", 0),
            redis_cluster=_get_bool(settings, "SIMHASH_REDIS_CLUSTER"),
            redis_sharded=_get_sharded(settings),
            redis_urls=_get_choice(settings, "SIMHASH_REDIS_URLS", URL_FORMATS),
            max_unchecked_share=_get_float(settings, "SIMHASH_MAX_UNCHECKED_SHARE", 0, 1),
        )

    @staticmethod
    def unknown(settings: BaseSettings) -> list[tuple[str, str | None]]:
        """:func:`unknown_settings`: the ``SIMHASH_*`` names set that are typos."""
        return unknown_settings(settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashSettings:
        """:meth:`from_settings`, and the spider argument ``simhash_reset``
        (``-a simhash_reset=1``), which overrides ``SIMHASH_RESET``."""
        config = cls.from_settings(crawler.settings)
        value = getattr(getattr(crawler, "spider", None), RESET_ARGUMENT, None)
        if value is None:
            return config
        try:
            reset = BaseSettings({RESET_ARGUMENT: value}).getbool(RESET_ARGUMENT)
        except ValueError:
            raise ValueError(f"Invalid spider argument {RESET_ARGUMENT}: {value!r} "
                             "(expected 1 or 0, true or false)") from None
        return replace(config, reset=reset)

    def summary(self) -> dict[str, Any]:
        """The effective settings as plain JSON values (logged and written at open)."""
        return {
            "max_distance": self.max_distance,
            "layout": self.layout,
            "expected_pages": self.expected_pages,
            "min_features": self.min_features,
            "action": self.action,
            "backend": self.backend if isinstance(self.backend, str) else (
                f"{self.backend.__module__}.{self.backend.__qualname__}"
            ),
            "persist_path": self.persist_path,
            "reset": self.reset,
            "log_level": logging.getLevelName(self.log_level),
            "debug": self.debug,
        }


#: What a boolean setting may be: a bool, 0 or 1, or these strings (any case).
_BOOL_STRINGS = {"true": True, "false": False, "1": True, "0": False}


def _get_bool(settings: BaseSettings, name: str) -> bool:
    """True or false, strictly: ``2`` or ``"yes"`` is refused rather than read
    as true (Scrapy's ``getbool`` would take any integer)."""
    value = settings.get(name, DEFAULTS[name])
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOL_STRINGS:
        return _BOOL_STRINGS[value.strip().lower()]
    raise _invalid(name, value, "expected true or false (or 1 or 0)")


def _get_int(
    settings: BaseSettings, name: str, low: int, high: int | None = None, *, default: Any = None
) -> int:
    value = settings.get(name, DEFAULTS.get(name, default))
    if isinstance(value, bool):
        raise _invalid(name, value, "expected an integer")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _invalid(name, value, "expected an integer") from None
    if isinstance(value, float) and value != number:
        raise _invalid(name, value, "expected an integer")
    if number < low or (high is not None and number > high):
        bounds = f"at least {low}" if high is None else f"from {low} to {high}"
        raise _invalid(name, value, f"expected an integer {bounds}")
    return number


def _get_float(settings: BaseSettings, name: str, low: float, high: float) -> float:
    value = settings.get(name, DEFAULTS[name])
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not low <= number <= high:
        raise _invalid(name, value, f"expected a number from {low:g} to {high:g}")
    return number


def _get_choice(settings: BaseSettings, name: str, choices: tuple[str, ...]) -> str:
    value = settings.get(name, DEFAULTS[name])
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise _invalid(name, value, "expected one of " + ", ".join(choices))
    return value.strip().lower()


def _get_level(settings: BaseSettings, name: str) -> int:
    value = settings.get(name, DEFAULTS[name])
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        level = logging.getLevelName(text.upper())
        if isinstance(level, int):
            return level
    raise _invalid(name, value, "expected a logging level name such as INFO, or a number")


def _get_path(settings: BaseSettings, name: str) -> str | None:
    value = settings.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise _invalid(name, value, "expected a file path")
    return os.fspath(value)


def _get_dict(settings: BaseSettings, name: str) -> dict:
    try:
        return dict(settings.getdict(name))
    except (TypeError, ValueError):
        raise _invalid(name, settings.get(name), "expected a dict or a JSON object") from None


def _get_layout(settings: BaseSettings, k: int, expected: int) -> str:
    value = settings.get("SIMHASH_LAYOUT", DEFAULTS["SIMHASH_LAYOUT"])
    if isinstance(value, (list, tuple)):
        spec = ",".join(str(width) for width in value)
    elif isinstance(value, str):
        spec = value.strip()
    else:
        raise _invalid(
            "SIMHASH_LAYOUT", value, 'expected "auto" or block widths such as "16,16,16,16"'
        )
    try:
        TableLayout.resolve(spec, k, expected)
    except ValueError as exc:
        if TableLayout.is_auto(spec):
            raise _invalid("SIMHASH_MAX_DISTANCE", k, f"no table layout: {exc}") from None
        raise _invalid("SIMHASH_LAYOUT", value, str(exc)) from None
    if TableLayout.is_auto(spec):
        return "auto"
    return spec


def _get_backend(settings: BaseSettings) -> str | type[Backend]:
    """A short name (``memory``, ``redis``), an import path, or a class; checked
    here by loading it and holding it to the :class:`Backend` protocol, so a
    typo or a class that is not a backend fails at start-up."""
    value = settings.get("SIMHASH_BACKEND", DEFAULTS["SIMHASH_BACKEND"])
    expected = "expected " + ", ".join(BUILTIN_BACKENDS) + " or an import path"
    if isinstance(value, str):
        name = value.strip()
        if name.lower() in BUILTIN_BACKENDS:
            return name.lower()
        if "." not in name:
            raise _invalid("SIMHASH_BACKEND", value, expected)
        try:
            loaded = load_backend(name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise _invalid("SIMHASH_BACKEND", value, f"cannot import it: {exc}") from None
        problem = backend_problem(loaded)
        if problem:
            raise _invalid("SIMHASH_BACKEND", value, problem)
        return name
    if isinstance(value, type):
        problem = backend_problem(value)
        if problem:
            raise _invalid("SIMHASH_BACKEND", value, problem)
        return value
    raise _invalid("SIMHASH_BACKEND", value, expected)


#: URL schemes redis-py connects with.
REDIS_SCHEMES = ("redis", "rediss", "unix")


def _get_redis_url(settings: BaseSettings) -> str:
    url = settings.get("SIMHASH_REDIS_URL") or settings.get("REDIS_URL")
    if url:
        name = "SIMHASH_REDIS_URL" if settings.get("SIMHASH_REDIS_URL") else "REDIS_URL"
        if not isinstance(url, str) or "://" not in url:
            raise _invalid(name, url, "expected a URL such as redis://localhost:6379/0")
        scheme = url.partition("://")[0].strip().lower()
        if scheme not in REDIS_SCHEMES:
            raise _invalid(
                name, url, f"expected a {', '.join(s + '://' for s in REDIS_SCHEMES)} URL "
                "such as redis://localhost:6379/0",
            )
        return url
    host = settings.get("REDIS_HOST") or "localhost"
    port = _get_int(settings, "REDIS_PORT", 1, 65535, default=6379)
    return f"redis://{host}:{port}"


def _get_sharded(settings: BaseSettings) -> bool:
    """SIMHASH_REDIS_SHARDED spreads tables over a cluster's masters: without
    SIMHASH_REDIS_CLUSTER there are none to spread them over."""
    sharded = _get_bool(settings, "SIMHASH_REDIS_SHARDED")
    if sharded and not _get_bool(settings, "SIMHASH_REDIS_CLUSTER"):
        raise _invalid(
            "SIMHASH_REDIS_SHARDED", settings.get("SIMHASH_REDIS_SHARDED"),
            "it spreads a crawl's tables over a Redis Cluster's masters: it needs "
            "SIMHASH_REDIS_CLUSTER = True",
        )
    return sharded


def _get_redis_key(settings: BaseSettings) -> str:
    value = settings.get("SIMHASH_REDIS_KEY")
    if value is None:  # the default depends on the mode
        cluster = _get_bool(settings, "SIMHASH_REDIS_CLUSTER")
        value = DEFAULT_CLUSTER_REDIS_KEY if cluster else DEFAULT_REDIS_KEY
    if not isinstance(value, str) or not value:
        raise _invalid(
            "SIMHASH_REDIS_KEY", value, 'expected a key template such as "%(spider)s:simhash"'
        )
    try:
        value % {"spider": "spider"}
    except (KeyError, ValueError, TypeError) as exc:
        raise _invalid("SIMHASH_REDIS_KEY", value, f"bad template: {exc}") from None
    return value

