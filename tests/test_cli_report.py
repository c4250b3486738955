"""`report` tells the truth about a crawl: real crawls, then the report's figures
against the crawl's own stats; drop logs of several runs; refused state files."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash.cli.crawl import Drop, split_runs
from tests.fixtures_http import article_html, crawl
from tests.test_cli import SCRIPT, crawl_files, run
from tests.test_crawl import MW, SiteSpider

U64 = np.uint64


def serve_site(site):
    """/ links eleven articles; five of them repeat others' visible text with other
    chrome (their links go elsewhere: the repeats are exact copies of the words, as
    the first pages of a site must be to be dropped); /d4 is fetched with
    dont_filter (kept, neither stored nor logged)."""
    links = tuple(f"/p{i}" for i in range(6)) + tuple(f"/d{i}" for i in range(5))
    pages = {"/": article_html(100, links=links)}
    for i in range(6):
        pages[f"/p{i}"] = article_html(i, links=(f"/p{i}",), labels=("Permalink",))
    for i in range(5):
        # every link already requested from /: the crawl fetches no more pages
        pages[f"/d{i}"] = article_html(i, links=(f"/p{5 - i}",), labels=("Permalink",))
    site.serve(pages)


def report(*args, check=0):
    proc = run("report", *args, "--json", check=check)
    return json.loads(proc.stdout), proc


@pytest.mark.scrapy
@deferred_f_from_coro_f
async def test_report_matches_the_crawl_stats(site, tmp_path):
    serve_site(site)
    log = tmp_path / "drops.jsonl"
    settings = {**MW, "JOBDIR": str(tmp_path / "job1"), "SIMHASH_LOG_FILE": str(log)}
    crawler = await crawl(SiteSpider, settings, base=site.base, dont_filter=("/d4",))
    stats = crawler.stats.get_stats()
    fingerprinted = stats["simhash/response_count"]
    dups = stats["simhash/duplicate_count"]
    kept = stats.get("simhash/kept_dont_filter_count", 0)
    assert (dups, kept) == (4, 1)

    data, _ = report(tmp_path / "job1", log)
    assert data["stored"] == stats["simhash/index_size"] == 7
    assert data["near_duplicates"] == dups
    # the stated identity: fingerprinted = stored + logged + kept for dont_filter
    assert data["responses_fingerprinted"] + kept == fingerprinted
    text = run("report", tmp_path / "job1", log, check=0).stdout
    assert f"responses fingerprinted: {fingerprinted - kept} = 7 stored + 4 near-duplicates" \
        in text
    assert "dont_filter" in text

    # Without the drop log the count of near-duplicates is unknown, not 0.
    data, _ = report(tmp_path / "job1")
    assert data["near_duplicates"] is None and data["responses_fingerprinted"] is None
    text = run("report", tmp_path / "job1", check=0).stdout
    assert "near-duplicates: unknown" in text and "dropped: 0" not in text

    # A second crawl appends to the same drop log: the report tells the runs apart.
    settings["JOBDIR"] = str(tmp_path / "job2")
    crawler = await crawl(SiteSpider, settings, base=site.base)
    second = crawler.stats.get_value("simhash/duplicate_count")
    data, _ = report(tmp_path / "job2", log)
    assert [r["records"] for r in data["drop_logs"][0]["runs"]] == [dups, second]
    assert data["near_duplicates"] == second  # the last run, matching job2's state
    data, _ = report(tmp_path / "job2", log, "--run", "1")
    assert data["near_duplicates"] == dups
    text = run("report", tmp_path / "job2", log, check=0).stdout
    assert "in 2 runs" in text and "appends across crawls" in text


def test_split_runs():
    def drop(url, run=None):
        return Drop(url, "u0", 1, "drop", run, None)

    runs, how = split_runs([drop("a"), drop("b"), drop("a"), drop("c"), drop("b")])
    assert [[d.url for d in r] for r in runs] == [["a", "b"], ["a", "c", "b"]]
    assert how == "a URL appearing again"
    runs, how = split_runs([drop("a", "r1"), drop("a", "r2"), drop("b", "r1")])
    assert [[d.url for d in r] for r in runs] == [["a", "b"], ["a"]]
    assert how == "their run field"


def test_a_state_of_another_fingerprint_version_is_refused(tmp_path):
    from scrapy_simhash.backends.state import STATE_FORMAT
    from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION
    from scrapy_simhash.index import RecordLog

    jobdir = tmp_path / "job"
    jobdir.mkdir()
    old = FINGERPRINT_VERSION - 1
    log = RecordLog.open(str(jobdir / "simhash.seen"),
                         {"format": STATE_FORMAT, "fingerprint_version": old})
    log.append(123, 0, b"http://example.com/")
    log.close()
    for args in (["report", jobdir], ["query", "0" * 16, "--index", jobdir],
                 ["explain", "http://example.com/", "http://example.com/", "--state", jobdir]):
        proc = run(*args, check=1)
        assert proc.stdout == ""
        assert f"holds fingerprints of version {old}" in proc.stderr
        assert "cannot be compared" in proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_damaged_state_points_at_salvage(tmp_path):
    _, _, jobdir, _ = crawl_files(tmp_path, n=50)
    state = jobdir / "simhash.seen"
    data = bytearray(state.read_bytes())
    data[200] ^= 0xFF  # inside an early record: checksum mismatch before the end
    state.write_bytes(bytes(data))
    proc = run("report", jobdir, check=1)
    assert "scrapy-simhash salvage" in proc.stderr and "Traceback" not in proc.stderr


def test_plot_without_matplotlib_fails_first(tmp_path):
    """One line, exit 2, nothing printed before: matplotlib is checked before any work."""
    _, _, jobdir, log = crawl_files(tmp_path, n=20)
    fake = tmp_path / "site"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    env = {**os.environ, "PYTHONPATH": str(fake)}
    proc = subprocess.run([str(SCRIPT), "report", str(jobdir), str(log), "--plot",
                           str(tmp_path / "x.png")], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "scrapy-simhash: error: --plot needs matplotlib, which is not installed: pip install "
        "'matplotlib>=3.7' (or, in a checkout of scrapy-simhash: pip install '.[plot]')"]
    assert not (tmp_path / "x.png").exists()


def test_the_plot_has_a_title_counts_and_axes_fitted_to_the_data():
    from scrapy_simhash.cli.plot import distance_figure

    rng = np.random.default_rng(0)
    nearest = rng.integers(12, 26, size=500)
    drops = np.array([0] * 7 + [1] * 3 + [2, 3])
    fig = distance_figure(nearest, drops, 3, title="scrapy-simhash report: job")
    left, right = fig.axes[:2]
    assert fig._suptitle.get_text() == "scrapy-simhash report: job"
    assert "500 pages" in left.get_title()
    assert "12" in right.get_title()  # the number of near-duplicates
    assert right.get_xlim() == (-0.5, 5.5)  # drops at 0-3, k=3: 0 to k+2
    assert left.get_xlim()[1] == nearest.max() + 2.5
    labels = [t.get_text() for t in right.texts]
    assert "7" in labels and "3" in labels  # counts on the bars
    fig = distance_figure(nearest, None, 3)
    assert "unknown" in fig.axes[1].get_title()


def test_report_json_and_text_agree(tmp_path):
    _, _, jobdir, log = crawl_files(tmp_path)
    data, _ = report(jobdir, log)
    assert data["states"] == [{"path": str(jobdir / "simhash.seen"), "stored": 300}]
    assert data["actions"] == {"drop": 5}
    assert data["clusters"]["sizes"] == {"2": 2, "5": 1}


def test_split_runs_at_the_logs_open_lines(tmp_path):
    """Every run starts with an ``open`` line, even a run with no drop; ``close`` and
    ``skip`` lines are not drops; lines of an older version before them are a run."""
    from scrapy_simhash.cli.crawl import read_drop_log
    from scrapy_simhash.cli.errors import Problems

    def line(**fields):
        return json.dumps(fields) + "\n"

    log = tmp_path / "drops.jsonl"
    log.write_text(
        line(url="u1", duplicate_of="u0", distance=0, action="drop")  # an older version's
        + line(event="open", time="t1", spider="s")
        + line(event="drop", url="u1", duplicate_of="u0", distance=1, action="drop", time="t1")
        + line(event="skip", url="u9", duplicate_of="u0", rule="param x", time="t1")
        + line(event="close", time="t1", reason="finished")
        + line(event="open", time="t2", spider="s")  # a run that dropped nothing
        + line(event="close", time="t2", reason="finished"))
    runs, how = split_runs(read_drop_log(str(log), Problems()))
    assert [[d.url for d in r] for r in runs] == [["u1"], ["u1"], []]
    assert how == "the run's open record"
    data, _ = report(log, "--run", "last")
    assert data["near_duplicates"] == 0
