"""README and CHANGELOG render as CommonMark; the documentation site builds with -W."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*$")


def markdown_problems(text: str) -> list[str]:
    """What keeps ``text`` from rendering as its author meant, by a CommonMark parser:
    a code fence that does not close on a bare fence line (it then swallows what
    follows, headings included), or a fence line or ATX heading inside a code block."""
    lines = text.splitlines()
    problems = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type not in ("fence", "code_block"):
            continue
        start, end = token.map
        where = f"code block at line {start + 1}"
        if token.type == "fence":
            if end > len(lines) or not FENCE.match(lines[end - 1]) or end - 1 == start:
                problems.append(f"{where} is never closed")
        for number, line in enumerate(token.content.splitlines(), start + 2):
            if re.match(r"^ {0,3}(```|~~~)", line) or re.match(r"^#{1,6} \S", line):
                problems.append(f"{where} swallows line {number}: {line!r}")
    return problems


def headings(text: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(text)
    return [
        tokens[i + 1].content
        for i, token in enumerate(tokens)
        if token.type == "heading_open"
    ]


def test_the_checker_catches_a_fence_left_open():
    """README once had a closing fence with text after it, which CommonMark does not close."""
    broken = "# T\n\n```\ncode\n``` To run\nthe pieces.\n\n## Quick start\n\n```console\npip\n```\n"
    assert markdown_problems(broken)
    assert "Quick start" not in headings(broken)
    assert markdown_problems("# T\n\n```\nunclosed\n")
    assert not markdown_problems("# T\n\n```console\nmake demo\n```\n\ntext\n")


@pytest.mark.parametrize("name", ["README.md", "CHANGELOG.md"])
def test_markdown_renders(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    assert markdown_problems(text) == []
    # Every line that looks like a heading outside code is one to the parser.
    assert len(headings(text)) >= 3


def test_readme_sections_and_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert headings(text)[:7] == [
        "scrapy-simhash", "The two commands", "Quick start", "What can go wrong, and what it costs",
        "How well it works", "Documentation", "License"
    ]
    # Every make target README names exists.
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = set(re.findall(r"`make ([\w-]+)[^`]*`", text)) | set(re.findall(r"^make ([\w-]+)", text, re.M))
    assert named and named <= targets, named - targets
    # README points at the docs, and the docs include README's marked fragments.
    for marker in re.findall(r":(?:start-after|end-before): (<!-- [\w-]+ -->)",
                             (ROOT / "docs" / "installation.rst").read_text()):
        assert marker in text, marker
    # No unfilled placeholder is left.
    assert not re.search(r"\b(DEMO|TEST)_TIME\b", text)


def test_docs_build_without_warnings(tmp_path):
    """``make docs`` in a test: warnings are errors, so the site cannot rot silently.
    The generated reference pages hold every setting and every subcommand."""
    out = tmp_path / "html"
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(out)],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    from scrapy_simhash.cli import build_parser
    from scrapy_simhash.settings import SETTINGS

    settings_page = (out / "reference" / "settings.html").read_text(encoding="utf-8")
    for setting in SETTINGS:
        assert f'id="setting-{setting.name}"' in settings_page, setting.name
    cli_page = (out / "reference" / "cli.html").read_text(encoding="utf-8")
    subcommands = [
        name
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]
    assert subcommands
    for name in subcommands:
        assert f"scrapy-simhash {name}" in cli_page, name
    api_page = (out / "reference" / "api.html").read_text(encoding="utf-8")
    for name in ("scrapy_simhash.fingerprint", "scrapy_simhash.SimhashIndex",
                 "scrapy_simhash.SimhashMiddleware"):
        assert f'id="{name}"' in api_page, name
