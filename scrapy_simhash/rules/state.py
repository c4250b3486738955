"""Where the evidence behind URL rules lives: a JOBDIR file or a Redis list.

The state of a :class:`~scrapy_simhash.rules.learn.RuleBook` is a pure function of
its evidence, so what is stored is the evidence itself, as events replayed on
open:

- ``["k", url]``: a page fetched and kept as distinct;
- ``["d", url, of]``: ``url`` dropped as a near-duplicate of the kept ``of``;
- ``["s", rule_id]``: a request skipped by a rule (for the counts).

:class:`FileRuleLog` appends each event as one record of a
:class:`~scrapy_simhash.index.store.RecordLog` (CRC per record, a torn last record
cut off on open, any other damage a :class:`CorruptStateError`), as the index's
own log does. :class:`RedisRuleLog` appends to one Redis list per crawl, which
every process of the crawl reads from the start on open and then polls for the
events of the others. Nothing here imports Scrapy.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterable
from typing import Any

from scrapy_simhash.index.store import CorruptStateError, RecordLog
from scrapy_simhash.rules.learn import RuleBook, RuleEvent

__all__ = ["RULES_FILE", "RULES_FORMAT", "FileRuleLog", "RedisRuleLog", "replay", "read_rules"]

logger = logging.getLogger(__name__)

#: The rules file's name in JOBDIR (beside the index's ``simhash.seen``).
RULES_FILE = "simhash.rules"
RULES_FORMAT = "scrapy-simhash-rules"
RULES_VERSION = 1
_EVENTS = {"k": 2, "d": 3, "s": 2}
#: Items of the shared rule log read per LRANGE.
POLL_CHUNK = 10_000

Event = list


def _check(event: Any, where: str) -> Event:
    if (
        not isinstance(event, list)
        or not event
        or event[0] not in _EVENTS
        or len(event) != _EVENTS[event[0]]
        or not all(isinstance(x, str) for x in event)
    ):
        raise ValueError(f"not a rules event in {where}: {event!r:.200}")
    return event


def replay(book: RuleBook, events: Iterable[Event]) -> list[RuleEvent]:
    """Feed stored events to ``book``; return what they made happen."""
    out: list[RuleEvent] = []
    for event in events:
        kind = event[0]
        if kind == "k":
            out.extend(book.kept(event[1]))
        elif kind == "d":
            out.extend(book.duplicate(event[1], event[2]))
        else:
            book.skipped(event[1])
    return out


class FileRuleLog:
    """The rules' evidence in a record log file (``JOBDIR/simhash.rules``)."""

    def __init__(self, path: str | os.PathLike, *, reset: bool = False) -> None:
        self.path = os.fspath(path)
        self.reset = reset
        self._log: RecordLog | None = None

    def open(self) -> list[Event]:
        """Open (creating it if needed) and return the stored events."""
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        header = {"format": RULES_FORMAT, "version": RULES_VERSION}
        self._log = RecordLog.open(self.path, header, reset=self.reset)
        return _events_of(self.path, self._log.header, self._log.contents.payloads)

    def append(self, event: Event) -> None:
        assert self._log is not None, "open() first"
        self._log.append(0, 0, json.dumps(event, separators=(",", ":")).encode())

    def poll(self) -> list[Event]:
        return []

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _events_of(path: str, header: dict, payloads: list[bytes]) -> list[Event]:
    if header.get("format") != RULES_FORMAT:
        raise CorruptStateError(path, None, f"not a rules file (header {header!r:.200})")
    if header.get("version") != RULES_VERSION:
        raise CorruptStateError(
            path, None, f"unknown rules format version {header.get('version')!r}"
        )
    events = []
    for n, payload in enumerate(payloads):
        try:
            events.append(_check(json.loads(payload), f"record {n}"))
        except ValueError as exc:
            raise CorruptStateError(path, None, str(exc)) from None
    return events


def read_rules(path: str | os.PathLike) -> list[Event]:
    """The events of a rules file (a JOBDIR or the file itself), read-only."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, RULES_FILE)
    contents = RecordLog.read(path)
    return _events_of(path, contents.header, contents.payloads)


class RedisRuleLog:
    """The rules' evidence of one crawl in a Redis list shared by its processes.

    Each item is ``[writer, *event]``; :meth:`poll` returns the events other
    processes appended since the last call (one ``LRANGE``).
    """

    def __init__(self, client: Any, key: str, *, reset: bool = False) -> None:
        self.client = client
        self.key = key
        self.reset = reset
        self.writer = uuid.uuid4().hex[:12]
        self._offset = 0

    def open(self) -> list[Event]:
        if self.reset:
            self.client.delete(self.key)
        return self.poll()

    def append(self, event: Event) -> None:
        self.client.rpush(self.key, json.dumps([self.writer, *event], separators=(",", ":")))

    def poll(self) -> list[Event]:
        items: list[bytes] = []
        while True:  # LRANGEs of at most POLL_CHUNK items: no command grows with the log
            chunk = self.client.lrange(self.key, self._offset + len(items),
                                       self._offset + len(items) + POLL_CHUNK - 1)
            items += chunk
            if len(chunk) < POLL_CHUNK:
                break
        self._offset += len(items)
        events = []
        for n, item in enumerate(items):
            try:
                writer, *event = json.loads(item)
                event = _check(event, f"{self.key}[{self._offset - len(items) + n}]")
            except (TypeError, ValueError) as exc:
                logger.warning("Skipped a bad item of the shared rules: %(error)s",
                               {"error": exc})
                continue
            if writer != self.writer:
                events.append(event)
        return events

    def close(self) -> None:
        """Close the client (the list stays: a crawl never deletes shared state)."""
        self.client.close()
