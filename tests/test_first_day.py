"""A Scrapy user's first day (issue 22): each point shown on a real crawl of a loopback site.

Misspelt settings are named; the command line reads the crawl it belongs to (a
JOBDIR, a Redis index) and decides as the crawl did; Redis chosen without
redis-py fails in one line with a hint that works from a checkout; the dry run
says what it does; a spider argument resets the index; log mode marks the
response.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import scrapy
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash.fingerprinting.signature import SKETCH_BINS
from tests.fixtures_http import article_html, crawl
from tests.test_cli import run
from tests.test_crawl import ONE_LINE

pytestmark = pytest.mark.scrapy

ROOT = Path(__file__).resolve().parent.parent
ADDON = {"ADDONS": {"scrapy_simhash.Addon": 0}}


class LinkSpider(scrapy.Spider):
    """Follows every link from ``/``; records each page's meta marks."""

    name = "links"

    def __init__(self, base: str, **kwargs):
        super().__init__(**kwargs)
        self.base = base
        self.marks: dict[str, str | None] = {}

    async def start(self):
        yield scrapy.Request(self.base + "/", dont_filter=True)

    def parse(self, response):
        path = response.url[len(self.base):]
        self.marks[path] = response.meta.get("simhash_duplicate_of")
        yield {"url": response.url, "duplicate_of": response.meta.get("simhash_duplicate_of")}
        for href in response.css("a::attr(href)").getall():
            yield scrapy.Request(self.base + href)


def serve_copies(site) -> None:
    """``/`` links four articles and a copy of each of two (the same text: a site's
    first pages are dropped only as exact copies, before its template is learned)."""
    site.serve({
        "/": article_html(1, links=("/a", "/b", "/c", "/d", "/a-copy", "/b-copy")),
        "/a": article_html(2),
        "/b": article_html(3),
        "/c": article_html(4),
        "/d": article_html(5),
        "/a-copy": article_html(2),
        "/b-copy": article_html(3),
    })


# -- 1. a misspelt setting is named, with the closest known name -------------------------


@deferred_f_from_coro_f
async def test_a_misspelt_setting_is_named_at_start(site, caplog):
    caplog.set_level(logging.INFO)
    serve_copies(site)
    crawler = await crawl(LinkSpider, {**ADDON, "SIMHASH_ACTON": "log",
                                       "SIMHASH_MAX_DISTANSE": 3, "SIMHASH_COLOUR": "red"},
                          base=site.base)
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING and r.name == "scrapy_simhash.middleware"]
    assert warnings == [
        "Unknown setting SIMHASH_ACTON: scrapy-simhash ignores it (did you mean SIMHASH_ACTION?)",
        "Unknown setting SIMHASH_COLOUR: scrapy-simhash ignores it",
        "Unknown setting SIMHASH_MAX_DISTANSE: scrapy-simhash ignores it "
        "(did you mean SIMHASH_MAX_DISTANCE?)",
    ]
    # the typo really was ignored: the default action dropped the copies
    assert crawler.stats.get_value("simhash/duplicate_count") == 2
    assert sorted(crawler.spider.marks) == ["/", "/a", "/b", "/c", "/d"]


def test_every_name_the_code_reads_is_known():
    """The warning's list is SETTINGS: a name the code reads but SETTINGS lacks would warn."""
    import re

    from scrapy_simhash.settings import DEFAULTS

    read = set()
    for path in (ROOT / "scrapy_simhash").rglob("*.py"):
        read |= set(re.findall(r"""["'](SIMHASH_[A-Z_]*[A-Z])["']""",
                               path.read_text(encoding="utf-8")))
    assert read - set(DEFAULTS) == set()


# -- 9. the spider argument simhash_reset, and the mark on the response --------------------


@deferred_f_from_coro_f
async def test_log_mode_marks_the_response_and_simhash_reset_empties_the_index(
        site, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    serve_copies(site)
    settings = {**ADDON, "SIMHASH_ACTION": "log", "JOBDIR": str(tmp_path / "job")}
    first = await crawl(LinkSpider, settings, base=site.base)
    marks = first.spider.marks
    # every page reached the callback; the copies carry the URL of the page they repeat
    assert {p: m for p, m in marks.items() if m} == {"/a-copy": site.url("/a"),
                                                      "/b-copy": site.url("/b")}
    assert first.stats.get_value("simhash/index_size") == 5
    # the copies kept in log mode: the dry run's first line says so, and says that later
    # ones are logged at DEBUG as near-duplicates, not drops
    [found] = [r.getMessage() for r in caplog.records
               if r.name == "scrapy_simhash.dropped" and r.levelno == logging.INFO]
    assert found.startswith(f"Found <200 {site.url('/a-copy')}>: a near-duplicate of ")
    assert "kept: SIMHASH_ACTION = log is a dry run; later near-duplicates are logged" in found
    assert "drop" not in found.split("dry run")[1]

    again = await crawl(LinkSpider, settings, base=site.base)
    assert again.stats.get_value("simhash/initial_index_size") == 5
    reset = await crawl(LinkSpider, settings, base=site.base, simhash_reset="1")
    assert reset.stats.get_value("simhash/initial_index_size") == 0
    # only the start page was fetched again: JOBDIR's requests.seen (Scrapy's) is not reset
    assert reset.stats.get_value("simhash/index_size") == 1

    caplog.clear()
    with pytest.raises(ValueError, match="simhash_reset"):
        await crawl(LinkSpider, settings, base=site.base, simhash_reset="maybe")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        "The crawl cannot start: Invalid spider argument simhash_reset: 'maybe' "
        "(expected 1 or 0, true or false)"]


# -- 6. the dry run's rule lines agree with what it does -------------------------------------


def serve_print_site(site, n: int = 8) -> None:
    """Articles each with a printer version at /print/..., linked from the home page."""
    links = [f"/news/{i}.html" for i in range(n)] + [f"/print/{i}.html" for i in range(n)]
    pages = {"/": article_html(100, links=tuple(links))}
    for i in range(n):
        pages[f"/news/{i}.html"] = article_html(10 + i)
        pages[f"/print/{i}.html"] = article_html(10 + i)
    site.serve(pages)


@deferred_f_from_coro_f
async def test_the_dry_run_says_it_skips_nothing(site, caplog):
    caplog.set_level(logging.INFO)
    serve_print_site(site)
    crawler = await crawl(LinkSpider, {**ADDON, "SIMHASH_ACTION": "log",
                                       "SIMHASH_RULES": "apply", "SIMHASH_RULES_MIN_SUPPORT": 2},
                          base=site.base)
    lines = [r.getMessage() for r in caplog.records
             if r.name == "scrapy_simhash.downloadermiddleware"]
    assert lines[0].startswith("URL rules (SIMHASH_RULES=apply, but SIMHASH_ACTION=log is a "
                               "dry run: learned and counted, no request skipped): 0 active "
                               "rules, 0 rules learned, from 0 stored events in memory")
    stats = crawler.stats
    assert stats.get_value("simhash/requests_skipped_count") is None
    skippable = stats.get_value("simhash/requests_skippable_count")
    assert skippable and stats.get_value("simhash/rules_active") >= 1
    active = stats.get_value("simhash/rules_active")
    close = lines[-1]
    assert close.startswith(f"URL rules: {active} active rule{'s' if active != 1 else ''}, ")
    assert close.endswith(f"; {skippable} request{'s' if skippable != 1 else ''} would have "
                          "been skipped (none was)")
    rejected = stats.get_value("simhash/rules_rejected_count", 0)
    assert f"{rejected} rejected candidate" in close


@deferred_f_from_coro_f
async def test_the_add_on_skips_no_request_by_default(site, caplog):
    """URL rules are learned and counted at the defaults, never applied: a request a
    rule maps wrongly (a translated page in a language folder of untranslated copies)
    would never be fetched. The start line says so."""
    caplog.set_level(logging.INFO)
    serve_print_site(site)
    crawler = await crawl(LinkSpider, {**ADDON, "SIMHASH_RULES_MIN_SUPPORT": 2}, base=site.base)
    lines = [r.getMessage() for r in caplog.records
             if r.name == "scrapy_simhash.downloadermiddleware"]
    assert lines[0].startswith("URL rules (SIMHASH_RULES=learn: learned and counted, no "
                               "request skipped)")
    stats = crawler.stats
    assert stats.get_value("simhash/requests_skipped_count") is None
    assert stats.get_value("simhash/requests_skippable_count")
    assert stats.get_value("simhash/rules_active") >= 1


# -- 5. Redis chosen without redis-py ------------------------------------------------------

SPIDER = """
import scrapy

class One(scrapy.Spider):
    name = "one"
    start_urls = [{url!r}]

    def parse(self, response):
        yield {{"url": response.url}}
"""


def test_redis_without_redis_py_is_one_line_with_a_working_hint(site, tmp_path):
    """A real ``scrapy runspider`` in a Python where ``import redis`` fails (a
    sitecustomize blocks it, as in a venv without the extra)."""
    site.serve({"/": article_html(1)})
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoRedis:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'redis' or name.startswith('redis.'):\n"
        "            raise ImportError(f'No module named {name!r} (blocked)')\n"
        "sys.meta_path.insert(0, _NoRedis())\n")
    spider = tmp_path / "one.py"
    spider.write_text(SPIDER.format(url=site.url("/")))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", str(spider), "-s", "LOG_LEVEL=INFO",
         "-s", "ADDONS={\"scrapy_simhash.Addon\": 0}", "-s", "SIMHASH_BACKEND=redis"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if "ERROR" in line]
    if ONE_LINE:  # Scrapy 2.13's CrawlerProcess: Twisted adds its traceback after our
        # line, and `runspider` exits 0 after a crawl that could not start
        assert proc.returncode == 1, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-5000:]
        assert len(errors) == 1, proc.stderr[-3000:]
    assert errors[0].endswith(
        "The crawl cannot start: the Redis backend (SIMHASH_BACKEND = \"redis\") needs "
        "redis-py, which is not installed: pip install 'redis>=5.0' 'hiredis>=3.0' (or, in a "
        "checkout of scrapy-simhash: pip install '.[redis]')")
    # the checkout's extra exists under that name
    assert "redis = [" in (ROOT / "pyproject.toml").read_text()


# -- 2. the command line reads the crawl it belongs to ----------------------------------------


@pytest.fixture
def crawled(site, tmp_path):
    """A real crawl with JOBDIR and a drop log, at k = 4 (not the default)."""
    serve_copies(site)
    jobdir, log = tmp_path / "job", tmp_path / "drops.jsonl"
    settings = {**ADDON, "JOBDIR": str(jobdir), "SIMHASH_LOG_FILE": str(log),
                "SIMHASH_MAX_DISTANCE": 4}
    return settings, jobdir, log


def drops_of(log: Path) -> list[dict]:
    return [r for r in map(json.loads, log.read_text().splitlines()) if r["event"] == "drop"]


@deferred_f_from_coro_f
async def test_the_command_line_decides_as_the_crawl_did(site, crawled):
    settings, jobdir, log = crawled
    crawler = await crawl(LinkSpider, settings, base=site.base)
    drops = drops_of(log)
    assert len(drops) == crawler.stats.get_value("simhash/duplicate_count") == 2
    # the drop log records what reproduces the decision
    for d in drops:
        assert d["k"] == 4 and len(bytes.fromhex(d["sketch"])) == SKETCH_BINS

    # find-all and clusters take the JOBDIR, at the crawl's k, confirmed by sketches
    for command in ("find-all", "clusters"):
        proc = run(command, jobdir, check=0)
        assert proc.stdout.startswith("#"), proc.stdout
        assert (f"{jobdir / 'simhash.seen'}: 5 pages the crawl stored; decided as the crawl "
                "decides, at k=4, the crawl's SIMHASH_MAX_DISTANCE, confirmed by their "
                "sketches") in proc.stderr
        assert "bad input" not in proc.stderr
    # stored pages are distinct: no pair; the copies were never stored
    assert run("find-all", jobdir, check=0).stdout.splitlines()[1:] == []

    # query: each drop, read from the drop log, finds the page it was dropped for,
    # confirmed by the stored sketches at the crawl's k
    proc = run("query", "-i", log, "--index", jobdir, check=0)
    rows = [line.split("\t") for line in proc.stdout.splitlines()[1:]]
    assert sorted((r[0], r[-1]) for r in rows) == sorted(
        (d["url"], d["duplicate_of"]) for d in drops), proc.stdout
    assert "2 matches within 4 bits confirmed by their sketches" in proc.stderr
    assert "bad input" not in proc.stderr  # the log's open and close lines are not pages
    # the same with FP:SKETCH arguments
    d = drops[0]
    proc = run("query", f"{d['fingerprint']}:{d['sketch']}", "--index", jobdir, check=0)
    assert proc.stdout.splitlines()[1].split("\t")[-1] == d["duplicate_of"]
    assert "within 4 bits confirmed" in proc.stderr

    # report clusters the stored pages at the crawl's k too
    assert json.loads(run("report", jobdir, log, "--json", check=0).stdout)["k"] == 4

    # explain: the dropped page is not in the state; fetched, or read from the drop log
    for extra in ((), ("--drop-log", log)):
        proc = run("explain", d["url"], d["duplicate_of"], "--state", jobdir, "--json",
                   *extra, check=0)
        data = json.loads(proc.stdout)
        assert data["near_duplicates"] is True and data["k"] == 4, data
        assert data["b"]["origin"] == "the crawl's state"
        if extra:
            assert data["a"]["fingerprint"] == d["fingerprint"]
            assert data["a"]["sketch"] == d["sketch"]
        else:
            assert "fetched now" in proc.stderr and data["a"]["features"]


@deferred_f_from_coro_f
async def test_find_all_reads_a_redis_index(site, redis_url, redis_client):
    serve_copies(site)
    crawler = await crawl(LinkSpider, {**ADDON, "SIMHASH_BACKEND": "redis",
                                       "SIMHASH_REDIS_URL": redis_url,
                                       "SIMHASH_MAX_DISTANCE": 5}, base=site.base)
    stored = crawler.stats.get_value("simhash/index_size")
    proc = run("find-all", redis_url, "--key", "links:simhash", check=0)
    assert f"{redis_url} links:simhash: {stored} pages the crawl stored; decided as the " \
           "crawl decides, at k=5, the crawl's SIMHASH_MAX_DISTANCE" in proc.stderr
    proc = run("query", "-i", "-", "--index", redis_url, "--key", "links:simhash",
               input="", check=1)
    proc = run("find-all", redis_url, check=2)
    assert "add --key" in proc.stderr


# -- 8. wording: the features' arithmetic, a run without drops -------------------------------


def test_explain_counts_add_up(tmp_path):
    """The features line is a sum that holds, and its min_features figure is the
    fingerprint's own count (content features of tables included)."""
    import re

    from scrapy_simhash.fingerprinting import fingerprint_details

    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    rows = "".join(f"<tr><td>item {a} {b}</td><td>{i * 7} crates of {b} {a}</td></tr>"
                   for i, (a, b) in enumerate((a, b) for a in words for b in words[:4]))
    html = ("<html><head><title>Stock of the river depot</title></head><body><h1>Depot "
            "stock</h1><h2>Winter counts</h2>" + article_html(7, words=80).split("<article>")[1]
            .split("</article>")[0] + f"<table>{rows}</table></body></html>")
    page = tmp_path / "a.html"
    page.write_text(html)
    out = run("explain", page, page, check=0).stdout
    line = next(x for x in out.splitlines() if x.strip().startswith("features:"))
    numbers = re.match(r"\s*features: (\d+) = (\d+) spot signatures? \+ (\d+) content "
                       r"features? \(tables, code, lists\) \+ (\d+) title words? \+ (\d+) "
                       r"heading words?; min_features=\d+ is compared with the first two: "
                       r"(\d+)$", line)
    assert numbers, line
    total, spots, content, titles, headings, counted = map(int, numbers.groups())
    assert total == spots + content + titles + headings
    assert counted == spots + content == fingerprint_details(html).feature_count
    assert titles >= 3 and headings >= 1 and content >= 1


def test_report_of_a_run_without_drops_has_no_empty_parentheses(tmp_path):
    log = tmp_path / "drops.jsonl"
    lines = [{"event": "open", "time": "2026-01-01T00:00:00+00:00"},
             {"event": "close", "time": "2026-01-01T00:01:00+00:00"},
             {"event": "open", "time": "2026-01-02T00:00:00+00:00"},
             {"event": "drop", "url": "http://x/b", "duplicate_of": "http://x/a",
              "distance": 1, "action": "drop", "time": "2026-01-02T00:00:01+00:00"}]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = run("report", log, check=0).stdout
    assert "  run 1: 0 near-duplicates\n" in out
    assert "  run 2: 1 near-duplicate (drop 1), " in out
    assert "()" not in out


def test_no_two_cli_modules_import_each_other():
    """crawl.py and pairs.py once imported each other through function-local imports;
    what both need (reading a crawl) lives in cli/state.py."""
    import ast

    cli = ROOT / "scrapy_simhash" / "cli"
    graph = {}
    for path in cli.glob("*.py"):
        name = f"scrapy_simhash.cli.{path.stem}"
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "scrapy_simhash.cli."):
                found.add(node.module)
        graph[name] = found
    assert graph["scrapy_simhash.cli.crawl"] >= {"scrapy_simhash.cli.pairs",
                                                 "scrapy_simhash.cli.state"}
    mutual = {tuple(sorted((a, b))) for a, deps in graph.items() for b in deps
              if a in graph.get(b, ())}
    assert mutual == set()
