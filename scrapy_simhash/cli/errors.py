"""Errors of the command line and the collector of bad inputs.

A bad line of input is reported as ``file:line: message`` and skipped (or,
with ``--strict``, stops the command with exit code 1); a bad combination of
arguments is a :class:`UsageProblem` (exit code 2).
"""

from __future__ import annotations

import sys
from typing import IO

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
