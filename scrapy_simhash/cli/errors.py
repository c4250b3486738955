"""Errors of the command line and the collector of bad inputs.

A bad line of input is reported as ``file:line: message`` and skipped (or,
with ``--strict``, stops the command with exit code 1); a bad combination of
arguments is a :class:`UsageProblem` (exit code 2).
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

#: Bad inputs printed before the rest are only counted.
MAX_REPORTED = 20


class InputError(Exception):
    """A bad input line or file; ``str()`` is ``file:line: message``."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        self.source, self.line, self.message = source, line, message
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {message}")


class UsageProblem(Exception):
    """A bad combination of arguments (exit code 2); ``usage``: print the usage line too."""

    def __init__(self, message: str, *, usage: bool = True) -> None:
        super().__init__(message)
        self.usage = usage


class Problems:
    """Collects input errors: prints them on stderr, or raises with ``--strict``."""

    def __init__(self, strict: bool = False, stream: IO[str] | None = None) -> None:
        self.strict = strict
        self.stream = stream or sys.stderr
        self.count = 0

    def add(self, source: str, line: int | None, message: str) -> None:
        error = InputError(source, line, message)
        if self.strict:
            raise error
        self.count += 1
        if self.count <= MAX_REPORTED:
            print(f"scrapy-simhash: {error}", file=self.stream)

    def note(self, message: str) -> None:
        """Something the user should know that is not an error."""
        print(f"scrapy-simhash: {message}", file=self.stream)

    def summary(self) -> None:
        if self.count > MAX_REPORTED:
            print(
                f"scrapy-simhash: {self.count - MAX_REPORTED} more bad inputs not shown",
                file=self.stream,
            )
        if self.count:
            print(f"scrapy-simhash: {self.count} bad inputs skipped", file=self.stream)


def load_json_line(line: bytes | str) -> Any:
    """One JSON line of input, parsed; ``ValueError`` for bad JSON and for a
    string holding a lone surrogate (``"\\ud800"``: no valid Unicode, it could
    be neither printed nor written), so that such a line is skipped as bad."""
    obj = json.loads(line)
    raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    if b"\\ud" in raw or b"\\uD" in raw or b"\xed" in raw:  # a surrogate is possible
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start:exc.end].encode("unicode_escape").decode("ascii")
            raise ValueError(f"a lone surrogate ({bad}) is not valid Unicode") from None
    return obj
