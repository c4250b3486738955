"""The memory backend's persisted state: JOBDIR resume, reset, damaged files."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from pathlib import Path

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from scrapy_simhash.backends import BackendError, Duplicate
from scrapy_simhash.backends.memory import MemoryBackend
from scrapy_simhash.backends.state import state_header
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION, Signature
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS
from scrapy_simhash.index import RecordLog
from tests.fixtures_http import article_html, crawl
from tests.test_crawl import MW, SiteSpider, make_project, run_scrapy, scrapy_command

pytestmark = pytest.mark.scrapy


def serve_two_runs(site):
    """Run 1 starts at /one (links /a), run 2 at /two (links /b, a copy of /a:
    a resumed crawl learns its template again, so an exact copy)."""
    site.serve(
        {
            "/one": article_html(1, links=("/a",)),
            "/two": article_html(7, links=("/b", "/c")),
            "/a": article_html(2),
            "/b": article_html(2),
            "/c": article_html(3),
        }
    )


@deferred_f_from_coro_f
async def test_jobdir_resume_drops_a_page_seen_in_the_first_run(site, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    serve_two_runs(site)
    settings = {**MW, "JOBDIR": str(tmp_path / "job")}
    first = await crawl(SiteSpider, settings, base=site.base, start_path="/one")
    assert sorted(first.spider.parsed) == ["/a", "/one"]
    state = tmp_path / "job" / "simhash.seen"
    assert state.is_file()

    second = await crawl(SiteSpider, settings, base=site.base, start_path="/two")
    assert sorted(second.spider.parsed) == ["/c", "/two"]
    stats = second.stats
    assert stats.get_value("simhash/initial_index_size") == 2
    assert stats.get_value("simhash/index_size") == 4
    assert stats.get_value("simhash/duplicate_count") == 1
    [dropped] = [r.getMessage() for r in caplog.records if r.name == "scrapy_simhash.dropped"]
    assert dropped.startswith(
        f"Dropped <200 {site.url('/b')}>: a near-duplicate of <{site.url('/a')}> (distance 0, "
    )
    assert any(
        r.getMessage().startswith(f"Loaded 2 fingerprints from {state}")
        for r in caplog.records
        if r.name == "scrapy_simhash.backends.memory"
    )


@deferred_f_from_coro_f
async def test_a_resumed_crawl_remembers_the_links_it_delivered(site, tmp_path, caplog):
    """/a (run 1) links /x; /b (run 2), a copy of /a, links /x too: with the links
    kept in JOBDIR, dropping /b cuts nothing off; without them the resumed crawl
    must deliver it (the safe side, a fetch of its links not saved)."""
    caplog.set_level(logging.INFO)
    site.serve({
        "/one": article_html(1, links=("/a",)),
        "/two": article_html(7, links=("/b",)),
        "/a": article_html(2, links=("/x",)),
        "/b": article_html(2, links=("/x",)),
        "/x": article_html(3),
    })  # fmt: skip
    for keep_links in (True, False):
        job = tmp_path / f"job-{keep_links}"
        settings = {**MW, "JOBDIR": str(job)}
        first = await crawl(SiteSpider, settings, base=site.base, start_path="/one")
        assert sorted(first.spider.parsed) == ["/a", "/one", "/x"]
        assert (job / "simhash.links").is_file()
        if not keep_links:
            (job / "simhash.links").unlink()
        second = await crawl(SiteSpider, settings, base=site.base, start_path="/two")
        stats = second.stats
        if keep_links:
            assert sorted(second.spider.parsed) == ["/two"]  # /b dropped, /x seen in run 1
            assert stats.get_value("simhash/duplicate_count") == 1
            assert stats.get_value("simhash/kept_for_links_count") is None
            assert f"Restored the links of the pages this crawl delivered before" in caplog.text
        else:
            assert sorted(second.spider.parsed) == ["/b", "/two"]
            assert stats.get_value("simhash/kept_for_links_count") == 1


@deferred_f_from_coro_f
async def test_reset_starts_empty(site, tmp_path):
    serve_two_runs(site)
    path = tmp_path / "index.seen"
    settings = {**MW, "SIMHASH_PERSIST_PATH": str(path)}
    await crawl(SiteSpider, settings, base=site.base, start_path="/one")
    second = await crawl(
        SiteSpider, {**settings, "SIMHASH_RESET": True}, base=site.base, start_path="/two"
    )
    assert "/b" in second.spider.parsed
    assert second.stats.get_value("simhash/initial_index_size") == 0
    assert len(RecordLog.read(path).fingerprints) == 3  # /two, /b, /c


@deferred_f_from_coro_f
async def test_truncated_state_file_loses_only_the_last_record(site, tmp_path, caplog):
    serve_two_runs(site)
    path = tmp_path / "index.seen"
    settings = {**MW, "SIMHASH_PERSIST_PATH": str(path)}
    await crawl(SiteSpider, settings, base=site.base, start_path="/one")
    size = path.stat().st_size
    os.truncate(path, size - 5)  # a crash in the middle of writing /a's record
    second = await crawl(SiteSpider, settings, base=site.base, start_path="/two")
    assert second.stats.get_value("simhash/initial_index_size") == 1
    assert "/b" in second.spider.parsed  # /a was lost with the truncated record
    assert any("truncated" in r.getMessage() for r in caplog.records)
    contents = RecordLog.read(path)
    assert not contents.truncated
    assert [bytes(p[SKETCH_BINS:]).decode() for p in contents.payloads] == [
        site.url(p) for p in ("/one", "/two", "/b", "/c")
    ]


SKETCH = bytes(range(1, SKETCH_BINS + 1))
OTHER_SKETCH = bytes(range(101, SKETCH_BINS + 101))


def test_memory_backend_round_trip(tmp_path):
    path = str(tmp_path / "state" / "index.seen")
    backend = MemoryBackend(k=4, persist_path=path)
    assert backend.open("spider") == 0
    a, b, c = 0x0123_4567_89AB_CDEF, 0x0123_4567_89AB_CDE0, 0xFEDC_BA98_7654_3210
    assert backend.query_and_add(Signature(a, SKETCH), "https://example.com/a") is None
    assert backend.query_and_add(Signature(c, SKETCH), "https://example.com/é") is None
    assert backend.query_and_add(Signature(b, SKETCH), "https://example.com/b") == Duplicate(
        "https://example.com/a", a, 4
    )
    # A candidate whose sketch does not confirm it is a new page, and stored.
    assert backend.query_and_add(Signature(b, OTHER_SKETCH), "https://example.com/b2") is None
    backend.close()

    again = MemoryBackend(k=4, persist_path=path)
    assert again.open("spider") == 3
    assert again.query_and_add(Signature(c ^ 1, SKETCH), "https://example.com/c2") == Duplicate(
        "https://example.com/é", c, 1
    )
    # The sketches came back from the state file.
    assert again.query_and_add(Signature(b, OTHER_SKETCH), "https://example.com/b3") == Duplicate(
        "https://example.com/b2", b, 0
    )
    again.close()


def test_state_of_another_sketch_size_is_refused(tmp_path):
    path = tmp_path / "other.seen"
    header = {**state_header(), "sketch_bytes": SKETCH_BINS // 2}
    log = RecordLog.open(path, header)
    log.append(1, 0, bytes(SKETCH_BINS) + b"https://example.com/")
    log.close()
    with pytest.raises(BackendError, match=rf"sketches of {SKETCH_BINS // 2} bytes.*SIMHASH_RESET"):
        MemoryBackend(persist_path=str(path)).open("spider")


@pytest.mark.parametrize("version", [3, FINGERPRINT_VERSION + 1])
def test_foreign_version_is_refused(tmp_path, version):
    """A state of version 3 (fingerprints without sketches) or a newer one."""
    path = tmp_path / "old.seen"
    header = {"format": "scrapy-simhash-seen", "fingerprint_version": version}
    log = RecordLog.open(path, header)
    log.append(1, 0, b"https://example.com/")
    log.close()
    backend = MemoryBackend(persist_path=str(path))
    with pytest.raises(BackendError, match=r"version .*SIMHASH_RESET"):
        backend.open("spider")
    assert MemoryBackend(persist_path=str(path), reset=True).open("spider") == 0


def test_corrupt_state_file_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.seen"
    path.write_bytes(b"this is not a record log at all")
    with pytest.raises(BackendError, match=r"bad\.seen.*SIMHASH_RESET"):
        MemoryBackend(persist_path=str(path)).open("spider")
    assert path.read_bytes() == b"this is not a record log at all"  # nothing lost


@deferred_f_from_coro_f
async def test_corrupt_state_file_stops_the_crawl_before_it_starts(site, tmp_path):
    serve_two_runs(site)
    path = tmp_path / "bad.seen"
    path.write_bytes(b"garbage")
    with pytest.raises(BackendError, match=r"bad\.seen"):
        await crawl(
            SiteSpider, {**MW, "SIMHASH_PERSIST_PATH": str(path)}, base=site.base, start_path="/one"
        )
    assert site.hits["/one"] == 0
    assert path.read_bytes() == b"garbage"


@deferred_f_from_coro_f
async def test_corrupt_links_file_stops_the_crawl_before_it_starts(site, tmp_path):
    serve_two_runs(site)
    job = tmp_path / "job"
    job.mkdir()
    (job / "simhash.links").write_bytes(b"garbage")
    with pytest.raises(BackendError, match=r"simhash\.links.*SIMHASH_RESET"):
        await crawl(SiteSpider, {**MW, "JOBDIR": str(job)}, base=site.base, start_path="/one")
    assert site.hits["/one"] == 0
    assert (job / "simhash.links").read_bytes() == b"garbage"
    # the state file the backend opened first was closed again: a reset crawl starts
    reset = await crawl(SiteSpider, {**MW, "JOBDIR": str(job), "SIMHASH_RESET": True},
                        base=site.base, start_path="/one")  # fmt: skip
    assert sorted(reset.spider.parsed) == ["/a", "/one"]


@deferred_f_from_coro_f
async def test_stopped_crawl_resumes_with_its_index(site, tmp_path):
    """Stop mid-crawl (CLOSESPIDER_PAGECOUNT), resume the same JOBDIR: the pending
    copy of a page parsed before the stop is dropped."""
    site.serve(
        {
            "/": article_html(1, links=("/a", "/c", "/d", "/b")),
            "/a": article_html(2),
            "/b": article_html(2),
            "/c": article_html(3),
            "/d": article_html(4),
        }
    )
    settings = {**MW, "JOBDIR": str(tmp_path / "job")}
    first = await crawl(SiteSpider, {**settings, "CLOSESPIDER_PAGECOUNT": 2}, base=site.base)
    assert first.stats.get_value("finish_reason") == "closespider_pagecount"
    assert "/a" in first.spider.parsed and site.hits["/b"] == 0
    second = await crawl(SiteSpider, settings, base=site.base, start_path="/d")
    assert site.hits["/b"] == 1
    assert "/b" not in second.spider.parsed
    assert second.stats.get_value("simhash/duplicate_count") == 1
    assert second.stats.get_value("simhash/initial_index_size") >= 2


def test_pages_indexed_before_a_kill_reach_the_spider_on_resume(site, tmp_path):
    """kill -9 while the spider is in a page's callback: that page was indexed but
    never processed. On resume its request is fetched again and must reach the
    spider (it is the same URL, not a near-duplicate of another page)."""
    pages = [f"/p{i}" for i in range(1, 13)]
    site.serve({"/": article_html(0, links=tuple(pages))}
               | {path: article_html(i) for i, path in enumerate(pages, 1)})
    project = make_project(tmp_path / "project")
    job, reached, drops = tmp_path / "job", tmp_path / "reached", tmp_path / "drops.jsonl"
    args = ["crawl", "site", "-s", f"JOBDIR={job}", "-s", f"SIMHASH_LOG_FILE={drops}",
            "-a", f"base={site.base}", "-a", f"reached={reached}"]
    first = scrapy_command(project, *args, "-a", "hang=/p6")
    try:
        deadline = time.monotonic() + 90
        while not Path(f"{reached}.hang").exists():
            assert first.poll() is None, first.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the crawl never reached /p6"
            time.sleep(0.1)
    finally:
        first.kill()  # SIGKILL: no spider_closed, no flush of Scrapy's queue state
        first.communicate(timeout=30)
    state = RecordLog.read(job / "simhash.seen")
    indexed = {bytes(p[SKETCH_BINS:]).decode()[len(site.base):] for p in state.payloads}
    before = reached.read_text().split()
    assert "/p6" in indexed and "/p6" not in before  # indexed, never processed

    second = run_scrapy(project, *args, timeout=120)
    assert second.returncode == 0, second.stderr[-3000:]
    after = reached.read_text().split()[len(before):]
    assert set(before) | set(after) == {"/", *pages}  # every page reached the spider
    assert "/p6" in after
    events = [json.loads(line) for line in drops.read_text().splitlines()]
    assert [e["event"] for e in events if e["event"] != "drop"] == ["open", "open", "close"]
    assert not [e for e in events if e["event"] == "drop" and e["url"] == e["duplicate_of"]]
    assert events[-1]["self_matches"] >= 1
    assert "Traceback" not in second.stderr


@pytest.fixture
def small_disk(tmp_path):
    """A real 8 KB file system (tmpfs); skipped where mounting is not allowed."""
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(mount)],
            capture_output=True, timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}")
    try:
        (mount / "filler").write_bytes(b"x" * 4096)  # one of the two pages
        yield mount
    finally:
        # lazy: the state file may still be open (a failed close leaves it so)
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30, check=False)


@deferred_f_from_coro_f
async def test_full_disk_keeps_checking_in_memory_and_ends_with_an_error(
    site, small_disk, caplog
):
    """The state file fills the disk after a few pages: pages are still checked
    (copies dropped), the warning says so, and the crawl ends with an ERROR."""
    long = "x" * 600  # ~650-byte records: the 4 KB left hold a few
    originals = [f"/p{i}-{long}" for i in range(1, 11)]
    copies = [f"/copy{i}" for i in range(1, 4)]  # of p8, p9, p10, met after the disk is full
    pages = {"/": article_html(0, links=(*originals, *copies))}
    pages |= {path: article_html(i) for i, path in enumerate(originals, 1)}
    pages |= {path: article_html(7 + i, chrome="Other menu") for i, path in enumerate(copies, 1)}
    site.serve(pages)
    path = small_disk / "state.seen"
    crawler = await crawl(SiteSpider, {**MW, "SIMHASH_PERSIST_PATH": str(path)}, base=site.base)
    stats = crawler.stats
    assert sorted(crawler.spider.parsed) == sorted(["/", *originals])  # nothing lost
    assert stats.get_value("simhash/duplicate_count") == 3  # still checked in memory
    assert stats.get_value("simhash/index_size") == 11
    unsaved = stats.get_value("simhash/persist_error_count")
    assert unsaved and unsaved < 11
    assert stats.get_value("simhash/backend_error_count") is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                and r.name.startswith("scrapy_simhash")]
    assert len([m for m in warnings if "state not saved" in m]) == 1
    assert not [m for m in warnings if "unchecked" in m]
    [error] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert error.startswith(f"The simhash state file {path} misses {unsaved} page")
    saved = RecordLog.read(path)  # what was written is readable
    assert 0 < len(saved.fingerprints) <= 11 - unsaved
