"""Where the commands write: ``-o`` files, tables or JSON lines, a progress line.

Tabular output starts with a header line (``#`` and the column names,
tab-separated); ``--json`` writes one JSON object per line instead, keyed by
the same column names.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import IO, Any

_BATCH = 65536  # rows joined per write
_ESCAPES = str.maketrans({"\t": "\\t", "\n": "\\n", "\r": "\\r"})


@contextlib.contextmanager
def open_output(path: str) -> Iterator[IO[bytes]]:
    """Binary output: stdout for ``-``.

    A regular file (or a new path) is written whole or not at all, through a
    temporary file renamed over it, keeping its permissions. A symlink is
    followed: its target is written and the link stays. Anything else (a
    device such as ``/dev/null``, a FIFO, a socket) is written in place: it is
    never replaced by a regular file.
    """
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = os.path.realpath(path)
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as out:
            yield out
        return
    directory, name = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
    try:
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files
        else:
            os.chmod(tmp, stat.S_IMODE(mode))
        with os.fdopen(fd, "wb") as out:
            yield out
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def cell(value: Any) -> str:
    """A value as one tab-separated cell: ``-`` for None, no tab or newline."""
    if value is None:
        return "-"
    return str(value).translate(_ESCAPES)


class Rows:
    """Rows of named columns, as a table with a ``#`` header line or as JSON lines."""

    def __init__(self, out: IO[bytes], columns: Sequence[str], *, as_json: bool = False,
                 header: bool = True) -> None:
        self.out = out
        self.columns = tuple(columns)
        self.as_json = as_json
        self.count = 0
        self._batch: list[str] = []
        if header and not as_json:
            self._batch.append("#" + "\t".join(self.columns) + "\n")

    def add(self, *values: Any) -> None:
        if self.as_json:
            line = json.dumps(dict(zip(self.columns, values)), ensure_ascii=False)
        else:
            line = "\t".join(map(cell, values))
        self._batch.append(line + "\n")
        self.count += 1
        if len(self._batch) >= _BATCH:
            self.flush()

    def add_object(self, record: dict[str, Any]) -> None:
        """One JSON object as is (``--json`` output whose values are not cells)."""
        self._batch.append(json.dumps(record, ensure_ascii=False) + "\n")
        self.count += 1
        if len(self._batch) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self.out.write("".join(self._batch).encode("utf-8", "surrogateescape"))
            self._batch.clear()
        self.out.flush()

    def __enter__(self) -> Rows:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.flush()


class Progress:
    """One self-erasing status line on stderr, only when stderr is a terminal."""

    def __init__(self, stream: IO[str] | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self._last = 0.0
        self._shown = False

    def __call__(self, label: str, done: int | None = None, total: int | None = None,
                 *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        text = label
        if done is not None:
            text += f": {done:,}"
            if total:
                text += f"/{total:,} ({100 * done // total}%)"
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
