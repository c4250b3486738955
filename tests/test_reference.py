"""The reference says what the code does: stats keys, meta keys, log lines.

The demo project is crawled for real (``scrapy crawl demo`` in a subprocess, as
``make demo`` runs it), once dropping with URL rules applied and once as a dry
run with a misspelt setting; every ``simhash/`` stats key those crawls write
must be in :data:`scrapy_simhash.keys.STATS`, and every log line the docs and
README show must have the shape of a line the crawls wrote (URLs, numbers and
fingerprints normalised).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import scrapy.cmdline

from scrapy_simhash.keys import META, STATS, stat_spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"
sys.path.insert(0, str(EXAMPLE))

import run_demo  # noqa: E402
from demo.site import serve  # noqa: E402

pytestmark = pytest.mark.scrapy

#: A log line as Scrapy's LOG_FORMAT writes it, and as the docs show it.
LOG_LINE = re.compile(r"\[(scrapy_simhash[\w.]*)\] (DEBUG|INFO|WARNING|ERROR): (.+?)\s*$")


def shape(line: str) -> str:
    """A log line with what differs from run to run normalised."""
    line = re.sub(r"https?://[^\s<>]+", "URL", line)
    line = re.sub(r"(?<![\w:/])/[\w.-]+(?:/[\w.-]+)+", "PATH", line)
    line = re.sub(r"\b[0-9a-f]{16}\b", "HEX", line)
    line = re.sub(r"(?<![\w.])\d[\d,]*(\.\d+)?", "N", line)
    # which URL rule skips first depends on the order Scrapy fetches in (a printer
    # copy linking further is delivered, not dropped, and its rule may not activate)
    line = re.sub(r"\brule .+? maps it to", "rule RULE maps it to", line)
    # "1 rejected candidate", "2 rejected candidates": one shape
    return re.sub(r"\bN ((?:[a-z-]+ )?[a-z-]+?)s\b", r"N \1", line)


def documented_log_lines() -> list[tuple[str, str]]:
    """Every log line shown in README.md and docs/: (file, line)."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.rst")),
                 *sorted((ROOT / "docs").rglob("*.md"))]:
        if "_build" in path.parts:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            match = LOG_LINE.search(line)
            if match:
                found.append((str(path.relative_to(ROOT)), " ".join(match.groups()[:2])
                              + ": " + match.group(3)))
    return found


@pytest.fixture(scope="module")
def demo_crawls(tmp_path_factory):
    """Two real crawls of the demo site: the default (drop, URL rules applied) and a dry
    run (SIMHASH_ACTION=log) with a misspelt setting; their log lines and stats. One
    request at a time: on Scrapy >= 2.14 the order, hence which URL rules gather support
    before the copies they would skip are met, is then the same every run (with 16, a
    rare order let no rule skip anything: 1 run of about 20)."""
    lines, stats = [], []
    for name, args in (("drop", []), ("log", ["-s", "SIMHASH_ACTION=log", "-s", "CLOSESPIDER_PAGECOUNT=120",
                                              "-s", "SIMHASH_DEBUGG=True"])):
        out = tmp_path_factory.mktemp(f"demo-{name}")
        with serve(seed=0) as site:
            result = run_demo.run_crawl(
                site, out, ["-s", "LOG_LEVEL=INFO", "-s", "CONCURRENT_REQUESTS=1", *args],
                timeout=240,
            )
        log = result.log_path.read_text(encoding="utf-8")
        assert result.returncode == 0, log[-3000:]
        for line in log.splitlines():
            match = LOG_LINE.search(line)
            if match:
                lines.append(" ".join(match.groups()[:2]) + ": " + match.group(3))
        stats.append(result.stats)
    return lines, stats


#: Scrapy 2.13 fetches the demo site in another order: the printer-view rule whose
#: skip README shows gathers no support before the copies it would skip are met
#: (since FINGERPRINT_VERSION 7 the third path needs the same main text), so its
#: crawls write no skip line and fewer stats keys. What needs a skip is checked on
#: Scrapy >= 2.14 only; everything else on every version.
ORDER_SKIPS = hasattr(scrapy.cmdline, "AsyncCrawlerProcess")


def needs_a_skip(line: str) -> bool:
    """Whether a documented log line is one only a URL-rule skip writes."""
    return "before download" in line


def test_every_documented_log_line_is_one_the_code_writes(demo_crawls):
    real = {shape(line) for line in demo_crawls[0]}
    documented = documented_log_lines()
    assert len(documented) >= 4, documented
    if not ORDER_SKIPS:
        documented = [(where, line) for where, line in documented if not needs_a_skip(line)]
    unknown = [(where, line) for where, line in documented if shape(line) not in real]
    assert not unknown, "\n".join(f"{w}: {line}" for w, line in unknown) + \
        "\n\nreal lines:\n" + "\n".join(sorted(real))


def test_the_checker_tells_a_line_the_code_never_writes(demo_crawls):
    real = {shape(line) for line in demo_crawls[0]}
    # the example docs/usage.rst once showed
    invented = ("scrapy_simhash.dropped INFO: Dropped near-duplicate <200 http://127.0.0.1:8731/"
                "partner/a.html> (distance 0 to <http://127.0.0.1:8731/news/a.html>)")
    assert shape(invented) not in real
    assert any(shape(line) == shape(line.replace("127.0.0.1", "10.0.0.1"))
               for line in demo_crawls[0])


def test_every_stats_key_a_crawl_writes_is_documented(demo_crawls):
    written = {key for s in demo_crawls[1] for key in s if key.startswith("simhash/")}
    assert {key for key in written if stat_spec(key) is None} == set()
    assert len(written) >= (12 if ORDER_SKIPS else 10), written  # the crawls exercise many
    if ORDER_SKIPS:  # an active rule: what it skipped, what the dry run would have
        assert "simhash/requests_skipped_count" in written
        assert "simhash/requests_skippable_count" in written


def _keys_named_in_the_code() -> set[str]:
    """Every stats key the package names: literals and f-strings (a placeholder
    becomes ``x``), and the Redis backend's counters under ``simhash/redis/``."""
    keys = set()
    for path in (ROOT / "scrapy_simhash").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for key in re.findall(r"""f?["'](simhash/[\w/{}.\[\]"']*?)["']\s*[,)]""", text):
            keys.add(re.sub(r"\{[^}]*\}", "x", key))
        if path.name == "redis.py":
            keys |= {f"simhash/redis/{name}" for name in
                     re.findall(r"""counts\[["'](\w+)["']\]""", text)}
            keys.add("simhash/redis/queue_length")
    keys.discard("simhash/x")  # the backend's own counters, prefixed in a loop
    return keys


def test_the_registry_and_the_code_name_the_same_stats_keys():
    named = _keys_named_in_the_code()
    assert len(named) >= 30, named
    assert {key for key in named if stat_spec(key) is None} == set()
    for spec in STATS:  # nothing documented that the code never writes
        assert any(stat_spec(key) == spec for key in named), spec.name


def test_the_registry_and_the_code_name_the_same_meta_keys():
    named = set()
    for path in (ROOT / "scrapy_simhash").rglob("*.py"):
        named |= set(re.findall(r"""meta(?:\.get\(|\[)["'](simhash_\w+)["']""",
                                path.read_text(encoding="utf-8")))
    from scrapy_simhash import keys

    named |= {keys.DUPLICATE_OF, keys.DISTANCE}
    assert named == {spec.name for spec in META}
