"""Where the crawler's fingerprints live: the backend contract and its implementations.

A backend answers one question per page, atomically: "is a stored page a
duplicate of this one (fingerprints within k bits, sketches confirming it:
:func:`scrapy_simhash.is_duplicate`)? If not, remember this one". :class:`Backend` is
that contract; ``SIMHASH_BACKEND`` names an implementation: ``memory``
(:class:`~scrapy_simhash.backends.memory.MemoryBackend`, in the process, with
a JOBDIR record log), ``redis``
(:class:`~scrapy_simhash.backends.redis.RedisBackend`, shared by several
processes), or the import path of a class of your own, as Scrapy's
``DUPEFILTER_CLASS`` is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from scrapy_simhash.fingerprinting.signature import Signature

__all__ = [
    "BUILTIN_BACKENDS",
    "Backend",
    "BackendConfig",
    "BackendError",
    "Duplicate",
    "PersistenceError",
    "backend_problem",
    "hashed_url",
    "load_backend",
]

#: ``SIMHASH_BACKEND`` short names and the classes they stand for.
BUILTIN_BACKENDS = {
    "memory": "scrapy_simhash.backends.memory.MemoryBackend",
    "redis": "scrapy_simhash.backends.redis.RedisBackend",
}


class Duplicate(NamedTuple):
    """The nearest stored duplicate of a probed page (within k bits, confirmed);
    ``url`` is its URL or, where the backend keeps no full URL, :func:`hashed_url`."""

    url: str
    fingerprint: int
    distance: int


def hashed_url(url: str) -> str:
    """``xxh3:`` and the 16 hex digits of the xxh3-64 hash of ``url``'s UTF-8:
    what a backend keeps instead of a URL it does not store in full (the redis
    backend's ``SIMHASH_REDIS_URLS = "hash"``, the state file's over-long URLs);
    :attr:`Duplicate.url` may be one."""
    import xxhash

    return "xxh3:" + xxhash.xxh3_64_hexdigest(url.encode("utf-8", "surrogatepass"))


class BackendError(Exception):
    """The index could not be read or written (I/O, network, bad state)."""


class PersistenceError(BackendError):
    """The page was checked and indexed, but could not be persisted (a full
    disk, say): ``query_and_add`` found no match, and only the saved state
    lacks the page."""


class BackendConfig(Protocol):
    """What a backend reads of the validated settings: the fields of
    :class:`scrapy_simhash.settings.SimhashSettings` the built-in backends use
    (that class satisfies this protocol; backends do not import it, so that
    the settings module can import the backends without a cycle)."""

    max_distance: int
    layout: str
    expected_pages: int
    persist_path: str | None
    reset: bool
    redis_url: str
    redis_params: dict
    redis_key: str
    redis_timeout: float
    redis_queue: int
    redis_cluster: bool
    redis_sharded: bool
    redis_urls: str


@runtime_checkable
class Backend(Protocol):
    """What the middleware needs of an index backend.

    Failures raise :class:`BackendError`; the middleware applies
    ``SIMHASH_REDIS_ON_ERROR`` to them. A page that was checked and indexed
    but not persisted raises :class:`PersistenceError` (the page is kept).
    """

    @classmethod
    def from_config(cls, config: BackendConfig) -> Backend:
        """A backend configured from the validated settings (not opened yet)."""
        ...

    def open(self, spider_name: str) -> int:
        """Load or join the index of this spider; return its size."""
        ...

    def query_and_add(
        self, signature: Signature, url: str, *, add: str = "if_new"
    ) -> Duplicate | None:
        """The nearest stored page that is a duplicate of this one, or None:
        fingerprints within k bits and sketches that confirm it, exactly as
        :func:`scrapy_simhash.is_duplicate` decides. Store this page per ``add``
        (``if_new``: when no stored page is a duplicate; ``always``; ``never``).
        One atomic call per page."""
        ...

    def close(self) -> None:
        """Flush and release the index (persisted state stays)."""
        ...

    def stats(self) -> dict[str, int]:
        """The backend's own counters, named below ``simhash/`` (the middleware
        publishes them at close; ``{}`` when it has none)."""
        ...

    def __len__(self) -> int:
        """Pages stored."""
        ...


#: The members a backend class must have (the :class:`Backend` protocol's).
BACKEND_MEMBERS = ("from_config", "open", "query_and_add", "close", "stats", "__len__")


def backend_problem(candidate: Any) -> str | None:
    """Why ``candidate`` is not a backend class (not a class, or a member of
    :class:`Backend` missing or not callable), or None when it is one."""
    if not isinstance(candidate, type):
        return f"{candidate!r} is not a class"
    missing = [name for name in BACKEND_MEMBERS if not callable(getattr(candidate, name, None))]
    if missing:
        return (
            f"{candidate.__module__}.{candidate.__qualname__} is not a backend: it lacks "
            + ", ".join(missing)
            + " (see scrapy_simhash.backends.Backend)"
        )
    return None


def load_backend(name: Any) -> type[Backend]:
    """The backend class for a ``SIMHASH_BACKEND`` value: a short name, an
    import path, or a class."""
    if not isinstance(name, str):
        return name
    from importlib import import_module

    path = BUILTIN_BACKENDS.get(name.strip().lower(), name.strip())
    module, _, attribute = path.rpartition(".")
    return getattr(import_module(module), attribute)
