"""The links a crawl delivered, kept in ``JOBDIR/simhash.links`` across a pause.

:class:`~scrapy_simhash.links.DeliveredLinks` decides whether dropping a near
copy cuts a page off the crawl; a resumed crawl that had forgotten them would
deliver copies it could drop (the safe side, at the cost of their fetches and
outlinks). This file is a :class:`~scrapy_simhash.index.RecordLog` (a crash
loses at most the record being written; a torn tail is cut on open, damage is
refused) whose JSON header names its format, and whose records are of two kinds,
told by the record's fingerprint field:

- :data:`LINKS`: the payload holds the 64-bit hashes (little-endian) of links a
  delivered page added;
- :data:`HOST`: the payload is a host (UTF-8) a delivered page came from.

Pure: no Scrapy import.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from scrapy_simhash.index import CorruptStateError, RecordLog
from scrapy_simhash.links import DeliveredLinks

__all__ = ["LINKS_FILE", "LinkLog"]

#: The file's name inside JOBDIR.
LINKS_FILE = "simhash.links"
#: The ``format`` field of its header.
LINKS_FORMAT = "scrapy-simhash-links"
LINKS_VERSION = 1
#: Record kinds (the record's fingerprint field).
LINKS, HOST = 0, 1


class LinkLog:
    """An open links file: :meth:`open` reads what it holds into a
    :class:`DeliveredLinks`, :meth:`append` adds what a delivered page brought."""

    def __init__(self, log: RecordLog) -> None:
        self._log = log
        self.path = log.path

    @classmethod
    def open(cls, path: str, *, reset: bool = False) -> tuple[LinkLog, DeliveredLinks]:
        """Lock and read ``path`` (created when missing; emptied when ``reset``):
        the open log and the links it holds. Raises
        :class:`~scrapy_simhash.index.CorruptStateError` for a damaged file or one
        of another format, ``OSError`` when it cannot be opened."""
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        log = RecordLog.open(path, {"format": LINKS_FORMAT, "version": LINKS_VERSION},
                             reset=reset)  # fmt: skip
        try:
            links = cls._read(log)
        except BaseException:
            log.close()
            raise
        return cls(log), links

    @staticmethod
    def _read(log: RecordLog) -> DeliveredLinks:
        header, contents = log.header, log.contents
        if header.get("format") != LINKS_FORMAT or header.get("version") != LINKS_VERSION:
            raise CorruptStateError(
                log.path, None,
                f"not a scrapy-simhash links file of version {LINKS_VERSION} (header {header!r})",
            )
        kinds = contents.fingerprints
        parts, hosts = [], []
        for n, (kind, payload) in enumerate(zip(kinds.tolist(), contents.payloads)):
            if kind == LINKS and len(payload) % 8 == 0:
                parts.append(payload)
            elif kind == HOST:
                hosts.append(payload.decode("utf-8", "surrogateescape"))
            else:
                raise CorruptStateError(
                    log.path, None,
                    f"record {n} is of kind {kind} with {len(payload)} bytes, not links "
                    f"(a multiple of 8 bytes) nor a host",
                )
        links = DeliveredLinks()
        links.restore(np.frombuffer(b"".join(parts), dtype="<u8").tolist(), hosts)
        return links

    def append(self, keys: Iterable[int], host: str | None = None) -> None:
        """Write what a delivered page added: its new link hashes, its new host."""
        if host is not None:
            self._log.append(HOST, 0, host.encode("utf-8", "surrogateescape"))
        keys = np.fromiter(keys, dtype="<u8")
        if len(keys):
            self._log.append(LINKS, 0, keys.tobytes())

    def close(self) -> None:
        self._log.close()
