"""The links of delivered pages kept across a pause: ``JOBDIR/simhash.links``."""

from __future__ import annotations

import os

import pytest

from scrapy_simhash.index import CorruptStateError, RecordLog
from scrapy_simhash.link_state import HOST, LINKS, LinkLog
from scrapy_simhash.links import DeliveredLinks

SITE = "https://docs.example.org"


def _deliver(links: DeliveredLinks, log: LinkLog, url: str, hrefs: list[str]) -> None:
    new, host = links.record(url, hrefs)
    log.append(new, host)


def test_links_read_back_answer_as_before(tmp_path):
    path = str(tmp_path / "simhash.links")
    log, links = LinkLog.open(path)
    assert len(links) == 0 and not links.hosts
    _deliver(links, log, f"{SITE}/a.html", ["b.html", "c.html", "https://ads.example/x"])
    _deliver(links, log, f"{SITE}/b.html", ["a.html", "c.html"])  # one new link
    log.close()
    copy = [f"{SITE}/b.html", "/c.html"]
    assert links.uncovered(f"{SITE}/old/a.html", copy, f"{SITE}/a.html") is None
    again, restored = LinkLog.open(path)
    again.close()
    assert len(restored) == len(links) and restored.hosts == links.hosts == {"docs.example.org"}
    for hrefs in (copy, ["d.html"], ["../b.html"]):
        assert restored.uncovered(f"{SITE}/old/a.html", hrefs, f"{SITE}/a.html") == \
            links.uncovered(f"{SITE}/old/a.html", hrefs, f"{SITE}/a.html")
    contents = RecordLog.read(path)
    # a host once, then each page's new links only: 3 (ads link too) + 1
    assert contents.fingerprints.tolist() == [HOST, LINKS, LINKS]
    assert [len(p) for p in contents.payloads[1:]] == [3 * 8, 8]


def test_reset_starts_empty(tmp_path):
    path = str(tmp_path / "simhash.links")
    log, links = LinkLog.open(path)
    _deliver(links, log, f"{SITE}/a.html", ["b.html"])
    log.close()
    log, links = LinkLog.open(path, reset=True)
    log.close()
    assert len(links) == 0 and LinkLog.open(path)[1].hosts == set()


def test_torn_last_record_is_cut_and_the_rest_kept(tmp_path, caplog):
    path = str(tmp_path / "simhash.links")
    log, links = LinkLog.open(path)
    _deliver(links, log, f"{SITE}/a.html", ["b.html"])
    _deliver(links, log, f"{SITE}/b.html", ["c.html"])
    log.close()
    os.truncate(path, os.path.getsize(path) - 3)  # a crash mid-write
    log, restored = LinkLog.open(path)
    log.close()
    assert len(restored) == 1 and "Cut" in caplog.text


@pytest.mark.parametrize("header", [{"format": "scrapy-simhash-seen"}, {}])
def test_another_file_is_refused(tmp_path, header):
    path = str(tmp_path / "simhash.links")
    RecordLog.open(path, header).close()
    with pytest.raises(CorruptStateError, match="not a scrapy-simhash links file"):
        LinkLog.open(path)
    assert RecordLog.read(path).header == header  # left as it was


def test_a_record_of_another_kind_is_refused(tmp_path):
    path = str(tmp_path / "simhash.links")
    log, _ = LinkLog.open(path)
    log.close()
    raw = RecordLog.open(path, {})
    raw.append(LINKS, 0, b"12345")  # not whole hashes
    raw.close()
    with pytest.raises(CorruptStateError, match="record 0 is of kind 0 with 5 bytes"):
        LinkLog.open(path)
