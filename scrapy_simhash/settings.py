"""Every ``SIMHASH_*`` setting, read and validated once.

:class:`SimhashSettings` is what the middleware and the backends receive, so
an invalid value fails the crawl at start-up with a message naming the
setting and the bad value, instead of being noticed (or not) mid-crawl.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from scrapy.settings import BaseSettings

from scrapy_simhash.backends import BUILTIN_BACKENDS, Backend, load_backend
from scrapy_simhash.backends.state import STATE_FILE

from scrapy_simhash.fingerprinting import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_FEATURES
from scrapy_simhash.index import TableLayout

ACTIONS = ("drop", "drop_outlinks", "log")
ON_ERROR = ("keep", "stop")
MAX_DISTANCE_LIMIT = 10  # beyond this the permuted tables stop paying off
DEFAULT_EXPECTED_PAGES = 1_000_000
DEFAULT_REDIS_KEY = "%(spider)s:simhash"


def _invalid(name: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"Invalid {name} setting: {value!r} ({expected})")


@dataclass(frozen=True)
class SimhashSettings:
    """The validated configuration of the Scrapy layer and its backends."""

    enabled: bool = True
    max_distance: int = DEFAULT_MAX_DISTANCE
    layout: str = "auto"
    expected_pages: int = DEFAULT_EXPECTED_PAGES
    min_features: int = DEFAULT_MIN_FEATURES
    action: str = "drop"
    log_level: int = logging.INFO
    log_file: str | None = None
    persist_path: str | None = None
    reset: bool = False
    backend: str | type[Backend] = "memory"
    redis_url: str = "redis://localhost:6379"
    redis_params: dict = field(default_factory=dict, hash=False)
    redis_key: str = DEFAULT_REDIS_KEY
    redis_on_error: str = "keep"

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SimhashSettings:
        """Read every ``SIMHASH_*`` setting; raise ``ValueError`` naming a bad one."""
        k = _get_int(settings, "SIMHASH_MAX_DISTANCE", DEFAULT_MAX_DISTANCE, 0, MAX_DISTANCE_LIMIT)
        expected = _get_int(settings, "SIMHASH_EXPECTED_PAGES", DEFAULT_EXPECTED_PAGES, 1)
        layout = _get_layout(settings, k, expected)
        jobdir = settings.get("JOBDIR") or None
        persist = settings.get("SIMHASH_PERSIST_PATH") or None
        if persist is None and jobdir:
            persist = os.path.join(jobdir, STATE_FILE)
        return cls(
            enabled=_get_bool(settings, "SIMHASH_ENABLED", True),
            max_distance=k,
            layout=layout,
            expected_pages=expected,
            min_features=_get_int(settings, "SIMHASH_MIN_FEATURES", DEFAULT_MIN_FEATURES, 1),
            action=_get_choice(settings, "SIMHASH_ACTION", "drop", ACTIONS),
            log_level=_get_level(settings, "SIMHASH_LOG_LEVEL", logging.INFO),
            log_file=_get_path(settings, "SIMHASH_LOG_FILE"),
            persist_path=None if persist is None else os.fspath(persist),
            reset=_get_bool(settings, "SIMHASH_RESET", False),
            backend=_get_backend(settings),
            redis_url=_get_redis_url(settings),
            redis_params=_get_dict(settings, "REDIS_PARAMS"),
            redis_key=_get_redis_key(settings),
            redis_on_error=_get_choice(settings, "SIMHASH_REDIS_ON_ERROR", "keep", ON_ERROR),
        )


def _get_bool(settings: BaseSettings, name: str, default: bool) -> bool:
    try:
        return settings.getbool(name, default)
    except ValueError:
        raise _invalid(name, settings.get(name), "expected true or false") from None


def _get_int(
    settings: BaseSettings, name: str, default: int, low: int, high: int | None = None
) -> int:
    value = settings.get(name, default)
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


def _get_choice(settings: BaseSettings, name: str, default: str, choices: tuple[str, ...]) -> str:
    value = settings.get(name, default)
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise _invalid(name, value, "expected one of " + ", ".join(choices))
    return value.strip().lower()


def _get_level(settings: BaseSettings, name: str, default: int) -> int:
    value = settings.get(name, default)
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
    value = settings.get("SIMHASH_LAYOUT", "auto")
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
    here by loading it, so a typo fails at start-up."""
    value = settings.get("SIMHASH_BACKEND", "memory")
    expected = "expected " + ", ".join(BUILTIN_BACKENDS) + " or an import path"
    if isinstance(value, str):
        name = value.strip()
        if name.lower() in BUILTIN_BACKENDS:
            return name.lower()
        if "." not in name:
            raise _invalid("SIMHASH_BACKEND", value, expected)
        try:
            load_backend(name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise _invalid("SIMHASH_BACKEND", value, f"cannot import it: {exc}") from None
        return name
    if callable(getattr(value, "from_config", None)):
        return value
    raise _invalid("SIMHASH_BACKEND", value, expected)


def _get_redis_url(settings: BaseSettings) -> str:
    url = settings.get("SIMHASH_REDIS_URL") or settings.get("REDIS_URL")
    if url:
        if not isinstance(url, str) or "://" not in url:
            name = "SIMHASH_REDIS_URL" if settings.get("SIMHASH_REDIS_URL") else "REDIS_URL"
            raise _invalid(name, url, "expected a URL such as redis://localhost:6379/0")
        return url
    host = settings.get("REDIS_HOST") or "localhost"
    port = _get_int(settings, "REDIS_PORT", 6379, 1, 65535)
    return f"redis://{host}:{port}"


def _get_redis_key(settings: BaseSettings) -> str:
    value = settings.get("SIMHASH_REDIS_KEY", DEFAULT_REDIS_KEY)
    if not isinstance(value, str) or not value:
        raise _invalid(
            "SIMHASH_REDIS_KEY", value, 'expected a key template such as "%(spider)s:simhash"'
        )
    try:
        value % {"spider": "spider"}
    except (KeyError, ValueError, TypeError) as exc:
        raise _invalid("SIMHASH_REDIS_KEY", value, f"bad template: {exc}") from None
    return value
