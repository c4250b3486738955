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
    from scrapy_simhash.settings import SimhashSettings

__all__ = [
    "BUILTIN_BACKENDS",
    "Backend",
    "BackendError",
    "Duplicate",
    "PersistenceError",
    "load_backend",
]

#: ``SIMHASH_BACKEND`` short names and the classes they stand for.
BUILTIN_BACKENDS = {
    "memory": "scrapy_simhash.backends.memory.MemoryBackend",
    "redis": "scrapy_simhash.backends.redis.RedisBackend",
}


class Duplicate(NamedTuple):
    """The nearest stored duplicate of a probed page (within k bits, confirmed)."""

    url: str
    fingerprint: int
    distance: int


class BackendError(Exception):
    """The index could not be read or written (I/O, network, bad state)."""


class PersistenceError(BackendError):
    """The page was checked and indexed, but could not be persisted (a full
    disk, say): ``query_and_add`` found no match, and only the saved state
    lacks the page."""


@runtime_checkable
class Backend(Protocol):
    """What the middleware needs of an index backend.

    Failures raise :class:`BackendError`; the middleware applies
    ``SIMHASH_REDIS_ON_ERROR`` to them. A page that was checked and indexed
    but not persisted raises :class:`PersistenceError` (the page is kept).
    """

    @classmethod
    def from_config(cls, config: SimhashSettings) -> Backend:
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


def load_backend(name: Any) -> type[Backend]:
    """The backend class for a ``SIMHASH_BACKEND`` value: a short name, an
    import path, or a class."""
    if not isinstance(name, str):
        return name
    from importlib import import_module

    path = BUILTIN_BACKENDS.get(name.strip().lower(), name.strip())
    module, _, attribute = path.rpartition(".")
    return getattr(import_module(module), attribute)
