"""The ``scrapy-simhash`` command line (also ``scrapy simhash``).

Commands come in groups, one module each (:data:`COMMAND_GROUPS`): ``pages``
(``fingerprint``), ``pairs`` (``find-all``, ``clusters``, ``query``,
``plan``), ``explain``, ``crawl`` (``report``, ``salvage``), ``rules``, ``redis``
(``redis-info``, ``redis-clear``) and ``spark`` (``spark-pairs``,
``spark-clusters``). Every command reads and writes the one
fingerprint list format of :mod:`scrapy_simhash.cli.fingerprints`, so they
chain: ``scrapy-simhash fingerprint pages/ | scrapy-simhash find-all``.

Exit codes: 0 success; 1 bad input with ``--strict``, an unreadable input, or
no valid input at all; 2 usage error; 130 interrupted (Ctrl-C); 141 output
closed early (e.g. piped into ``head``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from scrapy_simhash.cli.errors import InputError, Problems, UsageProblem
from scrapy_simhash.cli.options import EXIT_CODES_HELP, Commands, Formatter
from scrapy_simhash.cli.output import Progress

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: The modules whose ``add_commands(commands)`` add the subcommands, in help
#: order. A new group of commands (say ``cli/spark.py``) is one line here.
COMMAND_GROUPS = (
    "scrapy_simhash.cli.pages",
    "scrapy_simhash.cli.pairs",
    "scrapy_simhash.cli.explain",
    "scrapy_simhash.cli.crawl",
    "scrapy_simhash.cli.rules",
    "scrapy_simhash.cli.redis",
    "scrapy_simhash.cli.spark",
)


def build_parser(prog: str = "scrapy-simhash") -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    from scrapy_simhash import __version__

    parser = argparse.ArgumentParser(
        prog=prog, formatter_class=Formatter,
        description="Near-duplicate tools: fingerprint pages, find near-duplicate "
                    "fingerprints, explain a match, plan table layouts, report on a crawl.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = Commands(parser.add_subparsers(dest="command", metavar="COMMAND",
                                              required=True), prog)
    for name in COMMAND_GROUPS:
        importlib.import_module(name).add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "scrapy-simhash") -> int:
    """Run one subcommand; return the exit code."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0)
    problems = Problems(strict=args.strict)
    progress = Progress()
    try:
        code = args.func(args, problems, progress)
        progress.clear()
        problems.summary()
        return code
    except InputError as exc:
        progress.clear()
        print(f"scrapy-simhash: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except UsageProblem as exc:
        progress.clear()
        if exc.usage:
            parser.print_usage(sys.stderr)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        progress.clear()
        print("scrapy-simhash: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, without a second error at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # e.g. the output folder does not exist
        progress.clear()
        print(f"scrapy-simhash: {exc}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
