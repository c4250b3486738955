"""``scrapy simhash ...``: the ``scrapy-simhash`` subcommands as a Scrapy command.

Registered through the ``scrapy.commands`` entry point; it needs no project
and starts no crawler. ``scrapy simhash find-all --help`` shows the help of a
subcommand.
"""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand

from scrapy_simhash import cli


class SimhashCommand(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<subcommand> [options] [args]"

    def short_desc(self) -> str:
        return "Fingerprint pages, find and explain near-duplicates, report on a crawl"

    def long_desc(self) -> str:
        return (
            "Near-duplicate tools of scrapy-simhash, the same as the scrapy-simhash "
            "console script: fingerprint, find-all, clusters, query, plan, explain, "
            "report, salvage, redis-info, redis-clear. Run 'scrapy simhash SUBCOMMAND "
            "--help' for the formats, options and an example of each."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        # Everything from the subcommand name on, --help included, belongs to cli.main().
        parser.add_argument("simhash_args", nargs=argparse.REMAINDER,
                            metavar="SUBCOMMAND ...", help=argparse.SUPPRESS)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        self.exitcode = cli.main([*opts.simhash_args, *args], prog="scrapy simhash")
