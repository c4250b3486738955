"""SimhashMiddleware as a component, on hand-built responses (no network)."""

from __future__ import annotations

import logging

import pytest
from lxml import etree
from lxml.html import HtmlComment, HtmlElement
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.asyncgen import as_async_generator, collect_asyncgen
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_simhash import NearDuplicate, SimhashMiddleware
from scrapy_simhash.backends import BackendError, PersistenceError
from scrapy_simhash.backends.memory import MemoryBackend
from scrapy_simhash.fingerprinting import fingerprint, fingerprint_details, hamming
from scrapy_simhash.fingerprinting.signature import analyse, signature_details
from scrapy_simhash.fingerprinting.template import KNOWN_PAGES, SiteTemplate
from tests.fixtures_http import article_html

pytestmark = pytest.mark.scrapy


def make_mw(**settings) -> SimhashMiddleware:
    crawler = get_crawler(Spider, settings)
    mw = build_from_crawler(SimhashMiddleware, crawler)
    mw.spider_opened(Spider("test"))
    return mw


def html(url: str, seed: int, *, chrome: str = "", **request_kwargs) -> HtmlResponse:
    request = Request(url, **request_kwargs)
    body = article_html(seed, chrome=chrome).encode()
    return HtmlResponse(url, body=body, encoding="utf-8", request=request)


def deliver(mw: SimhashMiddleware, response) -> None:
    """What Scrapy's chain does with a response: ``process_spider_input`` (which
    raises NearDuplicate on a drop, and records the links of a page it lets through),
    then ``process_spider_output`` for a page that reaches the spider."""
    assert mw.process_spider_input(response) is None
    output = collect_asyncgen(mw.process_spider_output(response, as_async_generator([])))
    with pytest.raises(StopIteration):  # nothing to wait for: it completes at once
        output.send(None)


def stat(mw, key):
    return mw.stats.get_value(key)


def warm(mw, host: str = "example.com") -> None:
    """Teach the middleware ``host``'s template, as the pages a crawl kept
    before would (a site's first pages are dropped only as exact copies)."""
    template = mw.templates[host]
    for seed in range(100, 100 + KNOWN_PAGES):
        template.learn(analyse(article_html(seed)).evidence.block_hashes)


def test_disabled_raises_not_configured():
    crawler = get_crawler(Spider, {"SIMHASH_ENABLED": False})
    with pytest.raises(NotConfigured):
        build_from_crawler(SimhashMiddleware, crawler)


def test_invalid_setting_raises_from_from_crawler():
    crawler = get_crawler(Spider, {"SIMHASH_MAX_DISTANCE": 64})
    with pytest.raises(ValueError, match="SIMHASH_MAX_DISTANCE"):
        build_from_crawler(SimhashMiddleware, crawler)


def test_drop_raises_near_duplicate_and_swallows_it(caplog):
    caplog.set_level(logging.DEBUG)
    mw = make_mw(SIMHASH_LOG_LEVEL="DEBUG")
    warm(mw)
    first = html("https://example.com/a", 1)
    assert deliver(mw, first) is None
    copy = html("https://example.com/b", 1, chrome="Other menu")
    with pytest.raises(NearDuplicate) as info:
        deliver(mw, copy)
    exc = info.value
    assert isinstance(exc, IgnoreRequest)
    assert exc.response is copy
    assert exc.duplicate_of == "https://example.com/a"
    assert exc.distance == hamming(exc.fingerprint, fingerprint(first.selector.root))
    assert exc.distance <= 3
    assert mw.process_spider_exception(copy, exc) == ()
    assert mw.process_spider_exception(copy, ValueError("other")) is None
    assert stat(mw, "simhash/response_count") == 2
    assert stat(mw, f"simhash/duplicate_distance_count/{exc.distance}") == 1
    [record] = [r for r in caplog.records if r.name == "scrapy_simhash.dropped"]
    assert record.levelno == logging.DEBUG
    assert record.simhash["fingerprint"] == f"{exc.fingerprint:016x}"


def test_distinct_pages_are_kept():
    mw = make_mw()
    for seed in range(20):
        deliver(mw, html(f"https://example.com/{seed}", seed))
    assert stat(mw, "simhash/duplicate_count") is None
    assert len(mw.backend) == 20


def test_tree_is_not_mutated():
    mw = make_mw()
    response = html("https://example.com/a", 3)
    before = etree.tostring(response.selector.root)
    deliver(mw, response)
    assert etree.tostring(response.selector.root) == before


def test_spider_gets_lxml_html_elements():
    """The middleware reads the tree with plain lxml elements (faster); none
    of them outlives the read, so the spider sees lxml.html's classes."""
    mw = make_mw()
    response = html("https://example.com/a", 3)
    found = mw.analyse_response(response, SiteTemplate())
    sig, result = found.signature, found.details
    assert (sig, result) == signature_details(response.selector.root)
    assert result == fingerprint_details(response.selector.root)
    assert sig.fingerprint == result.fingerprint is not None
    elements = list(response.selector.root.iter())
    assert len(elements) >= 10
    assert all(isinstance(el, (HtmlElement, HtmlComment)) for el in elements)
    assert isinstance(response.xpath("//p")[0].root, HtmlElement)


def test_skips():
    mw = make_mw()
    url = "https://example.com/t"
    text = TextResponse(url, body=b"x " * 100, request=Request(url))
    deliver(mw, text)
    deliver(mw, html("https://example.com/m", 1, meta={"simhash_enabled": False}))
    thin = HtmlResponse(url, body=b"<p>Hello</p>", request=Request(url))
    deliver(mw, thin)
    assert stat(mw, "simhash/skipped_count/non_html") == 1
    assert stat(mw, "simhash/skipped_count/disabled_meta") == 1
    assert stat(mw, "simhash/skipped_count/too_few_features") == 1
    assert len(mw.backend) == 0


def test_dont_filter_kept_and_indexed():
    mw = make_mw()
    deliver(mw, html("https://example.com/a", 1, dont_filter=True))
    deliver(mw, html("https://example.com/b", 1, dont_filter=True))
    assert stat(mw, "simhash/kept_dont_filter_count") == 1
    assert len(mw.backend) == 1  # indexed when new, like any page
    with pytest.raises(NearDuplicate):
        deliver(mw, html("https://example.com/c", 1))


@deferred_f_from_coro_f
async def test_drop_outlinks_filters_requests_of_flagged_responses_only():
    mw = make_mw(SIMHASH_ACTION="drop_outlinks")
    original = html("https://example.com/a", 1)
    copy = html("https://example.com/b", 1)
    deliver(mw, original)
    deliver(mw, copy)  # flagged, not raised
    output = [{"item": 1}, Request("https://example.com/x"), Request("https://example.com/y")]
    kept = await collect_asyncgen(mw.process_spider_output(copy, as_async_generator(output)))
    assert kept == [{"item": 1}]
    passed = await collect_asyncgen(mw.process_spider_output(original, as_async_generator(output)))
    assert passed == output
    assert stat(mw, "simhash/outlinks_dropped_count") == 2


def test_log_action_keeps_everything():
    mw = make_mw(SIMHASH_ACTION="log")
    deliver(mw, html("https://example.com/a", 1))
    deliver(mw, html("https://example.com/b", 1))
    assert stat(mw, "simhash/duplicate_count") == 1


class BrokenBackend(MemoryBackend):
    def query_and_add(self, fingerprint, url, *, add="if_new"):
        raise BackendError("timeout") from TimeoutError("timeout")


def test_backend_error_keeps_page_and_warns_once(caplog):
    mw = make_mw(SIMHASH_BACKEND=f"{__name__}.BrokenBackend")
    for i in range(3):
        assert deliver(mw, html(f"https://example.com/{i}", 1)) is None
    assert stat(mw, "simhash/backend_error_count") == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "timeout" in warnings[0].getMessage()


def test_close_sets_stats():
    mw = make_mw()
    deliver(mw, html("https://example.com/a", 1))
    mw.spider_closed(Spider("test"))
    assert stat(mw, "simhash/index_size") == 1
    assert stat(mw, "simhash/initial_index_size") == 0
    assert stat(mw, "simhash/cpu_seconds") > 0


def drop_records(caplog):
    return [r for r in caplog.records if r.name == "scrapy_simhash.dropped"]


@pytest.mark.parametrize(
    ("settings", "levels"),
    [
        ({}, [logging.INFO, logging.DEBUG, logging.DEBUG]),
        ({"SIMHASH_DEBUG": True}, [logging.INFO] * 3),
        ({"SIMHASH_LOG_LEVEL": "WARNING"}, [logging.WARNING, logging.DEBUG, logging.DEBUG]),
        ({"SIMHASH_LOG_LEVEL": "WARNING", "SIMHASH_DEBUG": "1"}, [logging.WARNING] * 3),
    ],
)
def test_first_drop_logged_with_a_hint_the_others_at_debug(caplog, settings, levels):
    caplog.set_level(logging.DEBUG)
    mw = make_mw(SIMHASH_ACTION="log", **settings)
    warm(mw)
    deliver(mw, html("https://example.com/a", 1))
    for i in range(3):
        deliver(mw, html(f"https://example.com/copy{i}", 1, chrome=f"menu {i}"))
    records = drop_records(caplog)
    assert [r.levelno for r in records] == levels
    hinted = [r for r in records if "SIMHASH_DEBUG = True" in r.getMessage()]
    assert hinted == ([] if mw.config.debug else records[:1])
    assert records[1].getMessage() == (
        "Found <200 https://example.com/copy1>: a near-duplicate of <https://example.com/a> "
        f"(distance {records[1].simhash['distance']}, "
        f"{records[1].simhash['spot_signatures']} spot signatures), kept: "
        "SIMHASH_ACTION = log is a dry run"
    )


def test_own_url_is_never_a_duplicate():
    """A URL fetched again (after a crash, or a dont_filter start URL linked
    later) matches its own entry: kept, counted, not added again."""
    mw = make_mw()
    deliver(mw, html("https://example.com/a?x=1&y=2", 1))
    assert deliver(mw, html("https://example.com/a?x=1&y=2", 1)) is None
    # the same page under the canonical form of its URL (query order, fragment)
    assert deliver(mw, html("https://example.com/a?y=2&x=1#top", 1)) is None
    assert stat(mw, "simhash/self_match_count") == 2
    assert stat(mw, "simhash/duplicate_count") is None
    assert len(mw.backend) == 1
    with pytest.raises(NearDuplicate):  # another URL with that text is still a copy
        deliver(mw, html("https://example.com/b", 1))


class IntFingerprintMiddleware(SimhashMiddleware):
    """An override from before fingerprint_response returned FingerprintResult."""

    def fingerprint_response(self, response):
        return fingerprint(response.selector.root)


def test_fingerprint_response_override_may_return_an_int():
    crawler = get_crawler(Spider, {})
    mw = build_from_crawler(IntFingerprintMiddleware, crawler)
    deliver(mw, html("https://example.com/a", 1))
    with pytest.raises(NearDuplicate):
        deliver(mw, html("https://example.com/b", 1))
    assert stat(mw, "simhash/response_count") == 2


class UnsavedBackend(MemoryBackend):
    """Checks and indexes in memory; every save fails, as on a full disk."""

    def query_and_add(self, fingerprint, url, *, add="if_new"):
        duplicate = super().query_and_add(fingerprint, url, add=add)
        if duplicate is None:
            raise PersistenceError("No space left on device")
        return duplicate


def test_persistence_error_still_checks_pages(caplog):
    mw = make_mw(SIMHASH_BACKEND=f"{__name__}.UnsavedBackend")
    deliver(mw, html("https://example.com/a", 1))
    deliver(mw, html("https://example.com/b", 2))
    with pytest.raises(NearDuplicate):
        deliver(mw, html("https://example.com/c", 1))
    assert stat(mw, "simhash/persist_error_count") == 2
    assert stat(mw, "simhash/response_count") == 3
    assert stat(mw, "simhash/backend_error_count") is None
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "still checked" in warning and "unchecked" not in warning
    mw.spider_closed(Spider("test"))
    [error] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "misses 2 pages" in error


def _cut_page(extra: str = "") -> bytes:
    """A page over the walk's element budget (cut): many distinct short list items."""
    from scrapy_simhash.fingerprinting.extract import MAX_ELEMENTS

    items = "".join(f"<li><a href='/p/{i}'>{article_html(i, words=8)[-60:-20]}</a> item {i}</li>"
                    for i in range(MAX_ELEMENTS // 2))
    return (f"<html><head><title>Index</title></head><body><h1>All pages</h1>"
            f"<p>{article_html(7, words=200)}</p><ul>{items}</ul>{extra}</body></html>").encode()


def test_a_cut_page_is_dropped_as_a_byte_copy_only():
    """A page a budget cut is compared on what was read: only a byte copy of it is dropped
    (through the spider's tree, as a crawl reads it); one byte more and it is kept."""
    from scrapy_simhash.fingerprinting.features import read_page

    body = _cut_page()
    assert not read_page(body)[0].complete
    # a page changed past the cut has the same fingerprint: the sketch must tell
    assert analyse(body).signature.fingerprint == analyse(
        _cut_page("<p>Updated today.</p>")).signature.fingerprint
    mw = make_mw()
    warm(mw)

    def response(url: str, data: bytes) -> HtmlResponse:
        return HtmlResponse(url, body=data, encoding="utf-8", request=Request(url))

    assert deliver(mw, response("https://example.com/index", body)) is None
    changed = response("https://example.com/index-2", _cut_page("<p>Updated today.</p>"))
    assert deliver(mw, changed) is None  # what was read is alike: kept all the same
    with pytest.raises(NearDuplicate) as info:
        deliver(mw, response("https://mirror.example.com/index", body))
    assert info.value.duplicate_of == "https://example.com/index"
    assert stat(mw, "simhash/duplicate_count") == 1


@pytest.mark.parametrize("depth_limit", [0, 1])
def test_links_of_a_page_at_depth_limit_do_not_count(depth_limit):
    """A page at DEPTH_LIMIT reaches the spider, but Scrapy drops the requests it
    yields: its links are not the crawl's, and a copy of it that carries them
    (one level up) is delivered instead of dropped."""
    mw = make_mw(DEPTH_LIMIT=depth_limit)
    warm(mw)
    body = article_html(1, links=("/next",)).encode()

    def response(url: str, depth: int) -> HtmlResponse:
        return HtmlResponse(url, body=body, encoding="utf-8",
                            request=Request(url, meta={"depth": depth}))

    deliver(mw, response("https://example.com/deep/a", 1))
    copy = response("https://example.com/a", 0)
    if depth_limit:
        assert len(mw.links) == 0
        deliver(mw, copy)
        assert stat(mw, "simhash/kept_for_links_count") == 1
    else:
        assert len(mw.links) == 1
        with pytest.raises(NearDuplicate):
            deliver(mw, copy)
