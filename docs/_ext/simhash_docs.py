"""Sphinx directives that render reference tables from the code, their one home.

``.. simhash-settings::`` renders :data:`scrapy_simhash.settings.SETTINGS` (objects
with ``name``, ``default`` and ``help``) as a table; ``.. simhash-keys:: STATS``
(or ``META``) renders the stats or meta keys of :mod:`scrapy_simhash.keys`;
``.. simhash-cli::`` renders the help of every subcommand of
:func:`scrapy_simhash.cli.build_parser`.
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def _default(value: Any) -> str:
    if isinstance(value, str):
        return f'``"{value}"``'
    return f"``{value!r}``"


class SettingsTable(SphinxDirective):
    """A ``list-table`` of every setting, from ``scrapy_simhash.settings.SETTINGS``."""

    def run(self) -> list[nodes.Node]:
        settings = importlib.import_module("scrapy_simhash.settings").SETTINGS
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 25 20 55",
            "",
            "   * - Setting",
            "     - Default",
            "     - Meaning",
        ]
        for setting in settings:
            help_text = " ".join(str(setting.help).split())
            lines += [
                f"   * - .. setting:: {setting.name}",
                "",
                f"     - {_default(setting.default)}",
                f"     - {help_text}",
            ]
        return self.parse(lines)

    def parse(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="scrapy_simhash.settings"), 0, container)
        return container.children


class KeysTable(SettingsTable):
    """A ``list-table`` of :data:`scrapy_simhash.keys.STATS` or ``META`` (the argument)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        registry = getattr(importlib.import_module("scrapy_simhash.keys"), self.arguments[0])
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 35 20 45",
            "",
            "   * - Key",
            "     - Component",
            "     - Meaning",
        ]
        for spec in registry:
            lines += [
                f"   * - ``{spec.name}``",
                f"     - {spec.component}",
                f"     - {' '.join(str(spec.help).split())}",
            ]
        return self.parse(lines)


class CliReference(SphinxDirective):
    """One section per subcommand, holding its ``--help`` output verbatim."""

    def run(self) -> list[nodes.Node]:
        cli = importlib.import_module("scrapy_simhash.cli")
        os.environ["COLUMNS"] = "88"  # argparse wraps to the terminal width
        parser = cli.build_parser()
        result: list[nodes.Node] = [nodes.literal_block(text=parser.format_help())]
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            for name, sub in action.choices.items():
                section = nodes.section(ids=[nodes.make_id(f"cli-{name}")])
                section += nodes.title(text=f"{parser.prog} {name}")
                section += nodes.literal_block(text=sub.format_help())
                self.state.document.note_implicit_target(section)
                result.append(section)
        return result


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_object_type(
        "setting", "setting", objname="setting", indextemplate="pair: %s; setting"
    )
    app.add_directive("simhash-settings", SettingsTable)
    app.add_directive("simhash-cli", CliReference)
    app.add_directive("simhash-keys", KeysTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
