"""Issue 24, faults round 2: each case failed before its fix.

Long URLs keep their page (a state record is bounded), layouts that would eat
the machine are refused, charsets Python cannot read never raise, a page of a
million CJK characters stays within its budgets, bad backend classes and
settings get one line naming the setting, a state file's damaged header is
repaired or replaced by salvage, and JSON lines holding lone surrogates are
skipped as bad lines.
"""

from __future__ import annotations

import json
import re
import threading
import time
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
import scrapy
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f

from evaluation.hostile import han_paragraphs, han_text
from scrapy_simhash.backends import PersistenceError, hashed_url
from scrapy_simhash.backends.memory import MemoryBackend
from scrapy_simhash.backends.state import MAX_URL_BYTES, read_state, state_header
from scrapy_simhash.fingerprinting import features as F
from scrapy_simhash.fingerprinting import hashing as H
from scrapy_simhash.fingerprinting.extract import parse_html
from scrapy_simhash.fingerprinting.signature import (
    EMPTY_SKETCH,
    SKETCH_BINS,
    Signature,
    confirms,
    cut_sketch,
    signature,
)
from scrapy_simhash.index import RecordLog, TableLayout
from scrapy_simhash.index.layout import MAX_TABLES
from scrapy_simhash.index.store import MAX_PAYLOAD
from scrapy_simhash.settings import SimhashSettings
from tests.fixtures_http import article_html, crawl
from tests.test_cli import make_state, run

MW = {"SPIDER_MIDDLEWARES": {"scrapy_simhash.SimhashMiddleware": 100}}


def load(**values: Any) -> SimhashSettings:
    return SimhashSettings.from_settings(Settings(values))


# -- 1. a URL longer than a state record ---------------------------------------------------


class LongLineSite:
    """A loopback site whose request lines may be megabytes long (http.server
    answers 414 past 64 KiB): ``pages`` maps a path to HTML."""

    def __init__(self, pages: dict[str, str]) -> None:
        site = self
        self.pages = pages

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one_request(self) -> None:
                self.raw_requestline = self.rfile.readline(8 << 20)
                if not self.raw_requestline:
                    self.close_connection = True
                    return
                if self.parse_request():
                    self.do_GET()
                    self.wfile.flush()

            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                page = site.pages.get(self.path)
                body = (page or "not found").encode("utf-8")
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LongLineSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class ChainSpider(scrapy.Spider):
    """Follows the links of ``/`` in order; records the paths its callback saw."""

    name = "chain"
    custom_settings = {"CONCURRENT_REQUESTS": 1}

    def __init__(self, base: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = base
        self.parsed: list[str] = []

    async def start(self):
        yield scrapy.Request(self.base + "/", dont_filter=True)

    def parse(self, response):
        self.parsed.append(response.url[len(self.base):])
        # links read from the bytes: a page whose charset Python cannot read
        # must reach the callback too
        for i, href in enumerate(re.findall(rb'href="([^"]+)"', response.body)):
            yield scrapy.Request(self.base + href.decode(), priority=-i)


@deferred_f_from_coro_f
async def test_a_url_longer_than_a_record_keeps_its_page(tmp_path):
    long_path = "/long?q=" + "x" * (MAX_PAYLOAD + 1000)
    pages = {
        "/": article_html(1).replace("</body>", f'<a href="{long_path}">l</a>'
                                                '<a href="/copy">c</a></body>'),
        long_path: article_html(2),
        "/copy": article_html(2),
    }
    job = tmp_path / "job"
    settings = {**MW, "JOBDIR": str(job), "URLLENGTH_LIMIT": 0, "LOG_LEVEL": "INFO"}
    with LongLineSite(pages) as site:
        crawler = await crawl(ChainSpider, settings, base=site.base)
    # the page behind the long URL reached its callback; its copy was dropped
    assert crawler.spider.parsed == ["/", long_path]
    stats = crawler.stats
    assert stats.get_value("simhash/duplicate_count") == 1
    assert stats.get_value("simhash/persist_error_count") is None
    # the state holds it, under its URL's hash: a resumed crawl knows the page
    state = read_state(job)
    long_url = site.base + long_path
    assert state.urls == [site.base + "/", hashed_url(long_url)]
    backend = MemoryBackend(k=6, persist_path=str(job / "simhash.seen"))
    assert backend.open("chain") == 2
    again = backend.query_and_add(signature(pages["/copy"]), site.base + "/copy", add="never")
    assert again is not None and again.url == hashed_url(long_url)
    backend.close()


def test_any_failure_to_persist_keeps_the_page_and_says_so(tmp_path):
    backend = MemoryBackend(k=3, persist_path=str(tmp_path / "simhash.seen"))
    backend.open("s")
    backend._log.close()  # appending now raises ValueError ("the log is closed")
    sig = Signature(0x1234, bytes(range(1, SKETCH_BINS + 1)))
    with pytest.raises(PersistenceError, match="Cannot append to the simhash state file"):
        backend.query_and_add(sig, "https://a/")
    assert len(backend) == 1  # checked and indexed: only the file lacks it
    assert backend.query_and_add(sig, "https://b/", add="never").url == "https://a/"
    backend.close()


def test_a_state_record_keeps_at_most_a_bounded_url(tmp_path):
    path = tmp_path / "simhash.seen"
    backend = MemoryBackend(k=3, persist_path=str(path))
    backend.open("s")
    near = "https://a/" + "é" * ((MAX_URL_BYTES - 10) // 2)  # as long as a URL is kept
    far = near + "x"
    for fp, url in ((1, near), (2, far)):
        backend.query_and_add(Signature(fp, bytes([fp]) * SKETCH_BINS), url, add="always")
    backend.close()
    assert read_state(path).urls == [near, hashed_url(far)]


# -- 2. layouts that would eat the machine ---------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "tables"), [(",".join(["1"] * 64), "74,974,368"), (",".join(["2"] * 32), "906,192")]
)
def test_a_layout_of_too_many_tables_is_refused_at_once(spec, tables):
    start = time.process_time()
    with pytest.raises(ValueError) as caught:
        load(SIMHASH_LAYOUT=spec, SIMHASH_MAX_DISTANCE=6)  # C(64, 6), C(32, 6)
    assert time.process_time() - start < 1.0  # counted, not built
    message = str(caught.value)
    assert message.startswith("Invalid SIMHASH_LAYOUT setting") and "\n" not in message
    assert f"{tables} tables, more than {MAX_TABLES:,}" in message
    with pytest.raises(ValueError, match="tables, more than"):
        TableLayout.from_dict({"k": 3, "blocks": [2] * 32})  # a joined Redis index too


def test_every_planned_layout_is_within_the_bound():
    for k in range(11):
        assert len(TableLayout.plan(k, 10**9).tables) <= MAX_TABLES
    assert load(SIMHASH_LAYOUT="8,8,8,8,8,8,8,8").layout == "8,8,8,8,8,8,8,8"  # 28 tables


# -- 3. charsets Python cannot read ---------------------------------------------------------

PROSE = "<p>" + " ".join(
    f"The {w} of the valley is where the river was seen by the people." for w in
    "mill farm road bridge school church market harbour orchard meadow".split()
) + "</p>"


@pytest.mark.parametrize("charset", ["undefined", "punycode", "idna", "base64", "rot13"])
def test_a_charset_python_cannot_read_a_page_with_never_raises(charset):
    page = f'<html><head><meta charset="{charset}"></head><body>{PROSE}</body></html>'
    data = page.encode()
    assert signature(data) == signature(page)
    assert signature(data, encoding=charset) == signature(page)
    # NUL bytes and lone surrogates in a str page
    assert signature(page.replace("valley", "val\x00ley\ud800")) is not None


@deferred_f_from_coro_f
async def test_a_crawl_signs_pages_whose_charset_python_cannot_read(site):
    pages = {"/": article_html(1, links=("/a", "/b"))}
    for path, charset, seed in (("/a", "undefined", 2), ("/b", "idna", 2)):
        pages[path] = (200, f"text/html; charset={charset}", article_html(seed))
    site.serve(pages)
    # (Scrapy's MetaRefreshMiddleware reads response.text, and fails on such a page
    # before any spider middleware sees it)
    crawler = await crawl(ChainSpider, {**MW, "METAREFRESH_ENABLED": False}, base=site.base)
    # both reached the callback: signed from their bytes, the copy dropped
    assert crawler.spider.parsed == ["/", "/a"]
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert crawler.stats.get_value("spider_exceptions") is None


# -- 4. a page of a million CJK characters ------------------------------------------------


def test_simhash_of_many_features_needs_no_matrix_of_them():
    rng = np.random.default_rng(24)
    hashes = rng.integers(0, 2**64 - 1, 300_000, dtype=np.uint64, endpoint=True)
    weights = rng.integers(1, 4, len(hashes)).astype(np.float64)
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    votes = (2.0 * (weights @ bits) > weights.sum()).astype(np.uint8)
    expected = int(np.packbits(votes, bitorder="little").view("<u8")[0])
    del bits
    tracemalloc.start()
    try:
        assert H.simhash_hashes(hashes, weights) == expected
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak  # the N x 64 float64 matrix was 150 MB


def test_a_million_cjk_characters_stay_within_the_feature_budgets():
    main, tokens = F._main_text(parse_html(han_text(4_000_000)), None)
    assert max(map(len, tokens.values())) <= F.MAX_TOKEN_CHARS
    counted = H.fingerprint_of(main, tokens)
    assert counted.fingerprint is not None
    assert len(F.analyse_main_text(main, tokens).features) < F.MAX_PAGE_TOKENS
    # the page is read as its first MAX_PAGE_TOKENS tokens
    assert F.within_budget([["a"] * 7, ["b"] * 7, ["c"]], 10) == [["a"] * 7, ["b"] * 3, []]
    root = parse_html(han_text(4_000_000))
    tracemalloc.start()
    try:
        signature(root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 60 << 20, peak  # was ~400 MB


def test_the_general_tokenizer_reads_a_bounded_share_of_a_page_then_cuts_it():
    # The budget is drawn on in order; the text that spends it is read up to it,
    # later general-path texts give no tokens; Latin-1 texts are not counted.
    budget = F.TokenBudget(5)
    lists = F.tokenize_many(["日本語", "plain words", "漢字かな交じり", "中文", "more words"], budget)
    assert lists == [["日", "本", "語"], ["plain", "words"], ["漢", "字"], [], ["more", "words"]]
    assert budget.cut
    exact = F.TokenBudget(5)
    assert F.tokenize_many(["日本語", "中文"], exact) == [["日", "本", "語"], ["中", "文"]]
    assert not exact.cut and exact.left == 0
    assert F.tokenize_many(["日本語", "中文"]) == [["日", "本", "語"], ["中", "文"]]  # no budget


def _han_page(chars: int, tail: str = "") -> str:
    body = han_paragraphs(4 * chars)
    return body.replace("</body>", f"<p>{tail}</p></body>") if tail else body


def test_a_page_past_the_general_budget_is_cut_and_never_dropped():
    page, _ = F.read_page(_han_page(F.MAX_GENERAL_CHARS // 2))
    assert page.complete  # well within it: read whole, as every corpus page is
    long = F.MAX_GENERAL_CHARS + 10_000
    page, tokens = F.read_page(_han_page(long))
    assert not page.complete
    assert sum(map(len, tokens.values())) <= F.MAX_GENERAL_CHARS
    # Two long pages alike in what was read, apart in what was not: the same
    # fingerprint, and neither confirms the other; only a byte copy would.
    html_a = _han_page(long, "乙" * 3000 + " 一二三")
    a, b = signature(html_a), signature(_han_page(long, "丙" * 3000 + " 四五六"))
    assert a.fingerprint == b.fingerprint
    assert a.sketch == cut_sketch(html_a) != EMPTY_SKETCH
    assert not confirms(a.sketch, b.sketch)
    assert confirms(a.sketch, signature(html_a.encode()).sketch)


# -- 5 and 6. settings ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["os.system", "collections.OrderedDict", "json.JSONDecoder"])
def test_a_backend_that_is_not_a_backend_is_one_line(value):
    with pytest.raises(ValueError) as caught:
        load(SIMHASH_BACKEND=value)
    message = str(caught.value)
    assert message.startswith(f"Invalid SIMHASH_BACKEND setting: {value!r}")
    assert "\n" not in message and ("not a class" in message or "not a backend" in message)
    with pytest.raises(ValueError, match="Invalid SIMHASH_BACKEND setting"):
        load(SIMHASH_BACKEND=dict)
    assert load(SIMHASH_BACKEND="scrapy_simhash.backends.memory.MemoryBackend").backend
    assert load(SIMHASH_BACKEND=MemoryBackend).backend is MemoryBackend


def test_backend_members_are_the_protocols():
    from scrapy_simhash.backends import BACKEND_MEMBERS, Backend

    members = {
        name for name, value in vars(Backend).items()
        if callable(value) or isinstance(value, classmethod)
    } - {"__init__", "__subclasshook__", "_proto_hook", "__class_getitem__"}
    assert set(BACKEND_MEMBERS) == {m for m in members if not m.startswith("_") or m == "__len__"}


@pytest.mark.parametrize(
    ("values", "name"),
    [
        ({"SIMHASH_REDIS_SHARDED": 1}, "SIMHASH_REDIS_SHARDED"),
        ({"SIMHASH_REDIS_SHARDED": "true", "SIMHASH_REDIS_CLUSTER": False},
         "SIMHASH_REDIS_SHARDED"),
        ({"SIMHASH_DEBUG": 2}, "SIMHASH_DEBUG"),
        ({"SIMHASH_DEBUG": "yes"}, "SIMHASH_DEBUG"),
        ({"SIMHASH_RESET": -1}, "SIMHASH_RESET"),
        ({"SIMHASH_REDIS_URL": "http://localhost:6379"}, "SIMHASH_REDIS_URL"),
        ({"REDIS_URL": "https://cache.example/0"}, "REDIS_URL"),
        ({"SIMHASH_REDIS_URL": "notaurl"}, "SIMHASH_REDIS_URL"),
    ],
)
def test_settings_once_accepted_without_a_word(values, name):
    with pytest.raises(ValueError) as caught:
        load(**values)
    assert str(caught.value).startswith(f"Invalid {name} setting")
    assert "\n" not in str(caught.value)


def test_the_settings_still_accepted():
    assert load(SIMHASH_REDIS_SHARDED=1, SIMHASH_REDIS_CLUSTER="1").redis_sharded is True
    assert load(SIMHASH_DEBUG="1").debug is True and load(SIMHASH_DEBUG=0).debug is False
    assert load(SIMHASH_DEBUG="False").debug is False and load(SIMHASH_DEBUG=True).debug
    for url in ("redis://h:1/0", "rediss://h:1", "unix:///tmp/redis.sock"):
        assert load(SIMHASH_REDIS_URL=url).redis_url == url


# -- 7. a damaged header ---------------------------------------------------------------------


def _state(tmp_path, count: int = 40):
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**63, count, dtype=np.uint64)
    urls = [f"https://site.example/{i}" for i in range(count)]
    path = tmp_path / "simhash.seen"
    make_state(path, fps, urls)
    return path, fps.tolist(), urls


def _header_size(data: bytes) -> int:
    return 20 + int.from_bytes(data[12:16], "little")


def test_salvage_undoes_any_flipped_bit_of_the_header(tmp_path):
    from scrapy_simhash.index.store import salvage

    path, fps, urls = _state(tmp_path)
    data = path.read_bytes()
    for offset in range(_header_size(data)):
        for bit in range(8):
            broken = bytearray(data)
            broken[offset] ^= 1 << bit
            source = tmp_path / "broken"
            source.write_bytes(broken)
            saved = tmp_path / f"saved-{offset}-{bit}"
            report = salvage(source, saved)  # no header given: the file's own, repaired
            assert (report.records, report.header) == (len(fps), "repaired"), (offset, bit)
            contents = RecordLog.read(saved)
            assert contents.header == state_header()
            assert contents.fingerprints.tolist() == fps


def test_salvage_command_repairs_or_replaces_a_damaged_header(tmp_path):
    path, fps, urls = _state(tmp_path)
    data = bytearray(path.read_bytes())
    data[30] ^= 0x10  # one bit of the JSON header
    path.write_bytes(data)
    proc = run("salvage", path, tmp_path / "one.seen", check=0)
    assert "one flipped bit undone" in proc.stdout and "Traceback" not in proc.stderr
    assert read_state(tmp_path / "one.seen").urls == urls
    data[20 : _header_size(data)] = bytes(_header_size(data) - 20)  # the header zeroed
    path.write_bytes(data)
    proc = run("salvage", path, tmp_path / "two.seen", "--json", check=0)
    assert json.loads(proc.stdout)["header"] == "replaced"
    state = read_state(tmp_path / "two.seen")  # format and version checked
    assert state.urls == urls and state.fingerprints.tolist() == fps
    proc = run("salvage", path, tmp_path / "three.seen", "--fingerprint-version", "5", check=0)
    assert "fingerprint version 5" in proc.stdout
    assert RecordLog.read(tmp_path / "three.seen").header["fingerprint_version"] == 5


# -- 8. a lone surrogate in a JSON line -------------------------------------------------------


def test_json_lines_with_a_lone_surrogate_are_bad_lines(tmp_path):
    body = PROSE * 3
    pages = tmp_path / "pages.jsonl"
    pages.write_text(
        json.dumps({"url": "https://a/\ud800", "html": body}) + "\n"
        + json.dumps({"url": "https://a/b", "html": body}) + "\n"
    )
    proc = run("fingerprint", pages, check=0)
    assert "pages.jsonl:1: bad JSON: a lone surrogate (\\ud800)" in proc.stderr
    assert "https://a/b" in proc.stdout and "Traceback" not in proc.stderr
    fps = tmp_path / "fps.jsonl"
    fps.write_text(json.dumps({"url": "https://a/\udc00", "fingerprint": "00000000000000ff"})
                   + "\n" + json.dumps({"url": "https://b/", "fingerprint": "00000000000000fe"})
                   + "\n")
    proc = run("find-all", "--input", fps, "--no-confirm", check=0)
    assert "fps.jsonl:1: bad JSON: a lone surrogate" in proc.stderr
    assert "Traceback" not in proc.stderr
    drops = tmp_path / "drops.jsonl"
    drops.write_text(json.dumps({"event": "drop", "url": "https://a/\ud800",
                                 "duplicate_of": "https://b/", "distance": 1}) + "\n")
    proc = run("report", drops, check=None)
    assert "drops.jsonl:1: bad drop record: a lone surrogate" in proc.stderr
    assert "Traceback" not in proc.stderr
