"""Argument types and the options several commands share, and :class:`Commands`,
through which each command group adds its subcommands."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from typing import Any

EXIT_CODES_HELP = (
    "exit codes: 0 success; 1 bad input with --strict, an unreadable input or no "
    "valid input; 2 usage error; 130 interrupted; 141 output closed early"
)

FINGERPRINT_FORMAT_HELP = (
    "fingerprints: 16 hex digits (as `fingerprint` and the drop log print them), "
    "0x and hex digits, or decimal (simhash-cpp); a whole input is read as hex when "
    "all its bare fingerprints are 16 hex digits, else as decimal (--input-format "
    "decides instead). Input lines: FP, or KEY<TAB>FP[<TAB>...] (KEY: a URL or path, "
    "carried to the output); a '#' header line naming a 'fingerprint' column and a "
    "'source'/'url'/'key' column places them; blank and other '#' lines are skipped; "
    "'-' as a fingerprint (a page without one) is skipped. JSON lines with a "
    "\"fingerprint\" and a \"source\"/\"url\"/\"key\" field are read too. A 'sketch' "
    "column (named in the header) or JSON field holds each page's sketch, 192 hex digits "
    "('-': none), as `fingerprint` writes it: optional, it lets a pair be confirmed."
)


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilogs' line breaks (formats, examples, exit codes)."""


class Commands:
    """The subcommand registry a command group module adds to in ``add_commands``."""

    def __init__(self, subparsers: Any, prog: str) -> None:
        self._sub = subparsers
        self.prog = prog

    def add(self, name: str, func: Callable[..., int], summary: str, *, formats: str,
            example: str) -> argparse.ArgumentParser:
        """A subcommand running ``func(args, problems, progress) -> exit code``.

        ``formats`` documents what it reads and writes (shown by ``--help``);
        ``example`` is a command line without the program name.
        """
        text = "\n\n".join(textwrap.fill(part, 79) for part in (*formats.split("\n\n"),))
        parser = self._sub.add_parser(
            name, help=summary, description=summary, formatter_class=Formatter,
            epilog=f"{text}\n\nexample:\n  {self.prog} {example}\n\n"
                   + textwrap.fill(EXIT_CODES_HELP, 79),
        )
        parser.add_argument("--strict", action="store_true",
                            help="stop at the first bad input (exit 1) instead of skipping it")
        parser.set_defaults(func=func)
        return parser


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argument type: an integer between ``low`` and ``high``."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}: {value}")
        return value

    return convert


_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9}


def count(text: str) -> int:
    """A positive count: ``1000000``, ``1e6``, ``10M``, ``2k``."""
    value = text.strip().lower()
    scale = _SUFFIXES.get(value[-1:], 1)
    if scale > 1:
        value = value[:-1]
    try:
        number = float(value) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r}") from None
    if not 1 <= number < 2**63 or number != int(number):
        raise argparse.ArgumentTypeError(f"must be a positive whole number: {text!r}")
    return int(number)


def add_distance(parser: argparse.ArgumentParser, default: int | None = 3,
                 help: str = "maximum Hamming distance of a match (default: 3)") -> None:
    parser.add_argument("-d", "--distance", type=int_in(0, 32), default=default,
                        metavar="K", help=help)


def add_layout(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-b", "--blocks", type=int_in(1, 64), metavar="B",
                       help="split the 64 bits into B equal blocks (simhash-cpp style)")
    group.add_argument("--layout", default="auto", metavar="SPEC",
                       help='block widths such as "16,16,16,16", or "auto" (default)')


def add_input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--input", default="-",
                        help="fingerprint list to read (default: - for stdin)")
    parser.add_argument("--input-format", choices=("auto", "hex", "decimal"), default="auto",
                        help="how the input writes fingerprints (default: auto)")


def add_output(parser: argparse.ArgumentParser, *, to_file: bool = True) -> None:
    """``-o``, ``--json``, ``--decimal``, ``--no-header``."""
    if to_file:
        parser.add_argument(
            "-o", "--output", default="-",
            help="output file (default: - for stdout); a regular file is replaced whole "
                 "or not at all, a device or FIFO is written in place")
    parser.add_argument("--json", action="store_true",
                        help="JSON lines: one object per row, keyed by the column names")
    parser.add_argument("--decimal", action="store_true",
                        help="write fingerprints in decimal instead of 16 hex digits")
    parser.add_argument("--no-header", action="store_true",
                        help="leave out the '#' header line of tabular output")
