"""Fingerprints: golden values, determinism, bad input, near-duplicates, Hamming distances."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import random
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from parsel import Selector

import scrapy_simhash
from evaluation.corpus import ABSENT_REASON, corpus_dir, web_pages
from evaluation.hostile import SHAPES, crafted_cache_page
from scrapy_simhash.fingerprinting.extract import plain_elements

# The module; ``scrapy_simhash.fingerprinting.hashing`` is also the name of a re-exported function.
FP = importlib.import_module("scrapy_simhash.fingerprinting.hashing")
ROOT = Path(__file__).resolve().parent.parent

ARTICLE = """
<h1>Night trains are back</h1>
<p>The railway company has announced that the night train between the two capitals
will run again from next spring, after a pause of several years. The decision was
taken by the board after a long debate with the ministry.</p>
<p>Passengers can book a couchette or a sleeper, and the trains will be hauled by
modern locomotives that were built for the purpose. The old carriages have been
rebuilt and are now more comfortable than they were.</p>
<p>A spokesperson said that the demand is high and that the company is considering
a second line to the coast, which would be the first new line in a decade.</p>
"""

CLEAN = f"<html><head><title>Night trains are back</title></head><body>{ARTICLE}</body></html>"

NOISY = f"""<html><head><title>Night trains are back</title>
<script>var tracking = "the page is tracked by the script";</script></head><body>
<header><a href="/">Rail News</a></header>
<nav><ul><li><a href="/a">Home</a></li><li><a href="/b">The trains</a></li></ul></nav>
<div class="cookie-consent"><p>We use cookies: the site is better with them.</p></div>
<div class="ad-banner"><p>The best shoes are on sale, and the prices are low.</p></div>
<main><article>{ARTICLE}
<p class="byline">Published on 3 March 2024, 10:42. Read 12,345 times.</p>
<div class="share"><p>Share the story with the people you know.</p></div>
</article></main>
<aside class="sidebar"><h3>Most read</h3><p>The other story is about the buses.</p></aside>
<footer><p>The copyright is held by the publisher.</p></footer>
</body></html>"""

# Golden values: these change only with FINGERPRINT_VERSION.
GOLDEN = {
    "clean": 445473156856164813,
    "cjk": 14753458128856570549,
    "seed7": 17336697191685449313,
    "deep": 445297233917780429,
}

CJK = """<html><head><title>夜行列車が戻ってくる</title></head><body>
<p>鉄道会社は、二つの首都を結ぶ夜行列車が来年の春から再び運行されると発表した。
数年の休止の後の再開であり、多くの利用者が待っていた知らせである。</p>
<p>乗客は寝台車を予約することができ、列車は新しい機関車によって牽引される。
会社の広報担当者は、需要が高く、海岸への二本目の路線も検討していると述べた。</p>
<p>中国的铁路公司也宣布了新的夜行列车，这是十年来的第一条新线路。</p>
</body></html>"""

THAI = """<html><head><title>รถไฟกลางคืนกลับมาแล้ว</title></head><body>
<p>บริษัทรถไฟประกาศว่ารถไฟกลางคืนที่วิ่งระหว่างสองเมืองหลวงจะกลับมาให้บริการอีกครั้ง
ในฤดูใบไม้ผลิหน้า หลังจากที่หยุดไปหลายปี ผู้โดยสารสามารถจองตู้นอนได้ และมีรถจักรใหม่ที่สร้างขึ้นมาโดยเฉพาะ
โฆษกกล่าวว่ามีความต้องการสูงและบริษัทก็กำลังพิจารณาเส้นทางที่สองไปยังชายฝั่ง นี้เป็นข่าวดีที่มีผู้รอคอย</p>
</body></html>"""


def test_public_api_reexported():
    fp = scrapy_simhash.fingerprint(CLEAN)
    assert fp == FP.fingerprint(CLEAN)
    assert scrapy_simhash.FINGERPRINT_VERSION == FP.FINGERPRINT_VERSION == 9
    assert scrapy_simhash.hamming(fp, fp) == 0


def deep_page(depth: int) -> str:
    """CLEAN's body nested ``depth`` elements deep."""
    head, _, rest = CLEAN.partition("<body>")
    body, _, tail = rest.partition("</body>")
    return head + "<body>" + "<div>" * depth + body + "</div>" * depth + "</body>" + tail


def test_golden_values():
    # Version 4 left prose pages' fingerprints as they were (content features
    # come from blocks that are not prose).
    assert FP.FINGERPRINT_VERSION == 9  # bump it together with the values below
    assert FP.fingerprint(CLEAN) == GOLDEN["clean"]
    assert FP.fingerprint(CJK) == GOLDEN["cjk"]
    assert FP.fingerprint(CLEAN, seed=7) == GOLDEN["seed7"]
    # Version 3: nested beyond MAX_DEPTH, the text is read flat.
    assert FP.fingerprint(deep_page(200)) == GOLDEN["deep"]


def test_simhash_golden_and_brute_force():
    # One feature: the fingerprint is the feature's hash.
    assert FP.simhash({"the cat": 1.0}) == xxhash.xxh3_64_intdigest(b"the cat")
    assert FP.simhash([("the cat", 2.0)], seed=5) == xxhash.xxh3_64_intdigest(b"the cat", 5)
    assert FP.simhash({}) == 0
    rng = random.Random(0)
    for _ in range(20):
        feats = {f"f{rng.random()}": float(rng.randint(1, 5)) for _ in range(rng.randint(1, 60))}
        seed = rng.randint(0, 2**64 - 1)
        expected = 0
        for bit in range(64):
            vote = sum(
                w if xxhash.xxh3_64_intdigest(f.encode(), seed) >> bit & 1 else -w
                for f, w in feats.items()
            )
            expected |= (vote > 0) << bit
        assert FP.simhash(feats, seed=seed) == expected
        assert FP.simhash(list(feats.items()), seed=seed) == expected


def test_deterministic_across_processes():
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from scrapy_simhash.fingerprinting import fingerprint
        print(fingerprint({CLEAN!r}), fingerprint({CJK!r}))
        """
    )
    outputs = set()
    for hashseed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout.strip())
    assert outputs == {f"{FP.fingerprint(CLEAN)} {FP.fingerprint(CJK)}"}


def test_boilerplate_does_not_move_the_fingerprint():
    clean, noisy = FP.fingerprint(CLEAN), FP.fingerprint(NOISY)
    assert clean is not None and noisy is not None
    assert FP.hamming(clean, noisy) <= 3
    # Dates and counters do not count.
    changed = NOISY.replace("3 March 2024, 10:42", "9 March 2025, 18:02").replace("12,345", "99")
    assert FP.fingerprint(changed) == noisy


def test_distinct_pages_far_apart():
    other = CLEAN.replace("Night trains are back", "The budget is approved").replace(
        ARTICLE,
        """<p>The parliament has approved the budget for the next year after a debate
        that lasted for three days. The opposition had asked for more money for schools,
        and the government has agreed to a smaller increase. The minister said that the
        deficit will fall, and the central bank is expected to keep its rates.</p>""",
    )
    assert FP.hamming(FP.fingerprint(CLEAN), FP.fingerprint(other)) > 10


def test_input_forms_agree():
    fp = FP.fingerprint(CLEAN)
    assert FP.fingerprint(CLEAN.encode("utf-8")) == fp
    assert FP.fingerprint(CLEAN.encode("utf-16")) == fp
    assert FP.fingerprint(Selector(text=CLEAN).root) == fp  # Scrapy's response.selector.root
    assert FP.fingerprint(CLEAN.encode("cp1252"), encoding="cp1252") == fp


def test_cjk_and_thai():
    cjk, thai = FP.fingerprint(CJK), FP.fingerprint(THAI)
    assert cjk is not None and thai is not None
    assert len(FP.features(CJK)) >= FP.DEFAULT_MIN_FEATURES
    edited = CJK.replace("多くの利用者", "多数の利用者")
    assert FP.hamming(cjk, FP.fingerprint(edited)) <= 3
    assert FP.hamming(cjk, thai) > 10


def test_features_explain():
    feats = FP.features(CLEAN)
    assert feats["the trains"] == 1.0
    assert feats["title:night"] == importlib.import_module("scrapy_simhash.fingerprinting.features").TITLE_WEIGHT
    assert not any("tracked" in f for f in FP.features(NOISY))


def test_min_features():
    page = "<p>The cat is on the mat.</p>"
    assert 0 < len(FP.features(page)) < FP.DEFAULT_MIN_FEATURES
    assert FP.fingerprint(page) is None
    assert FP.fingerprint(page, min_features=1) is not None


@pytest.mark.parametrize(
    "page",
    [
        "", b"", "  \n\t", b"   ", "<html></html>", "<!-- comment -->",
        "<script>var a = 'the page is a script';</script>" * 50,
        "<img src=a.png>" * 100,
        b"\xff\xfe\xfa\x80\x81" * 100,  # undecodable
        "<<p><div <b>the unclosed</i> is <p>broken",
        '<?xml version="1.0" encoding="utf-8"?><p>x</p>',
    ],
)
def test_bad_input_gives_none(page):
    assert FP.fingerprint(page) is None


def test_huge_page_gives_an_int():
    rng = random.Random(0)
    words = ["".join(rng.choice("bcdfghklmnprstvz") for _ in range(6)) for _ in range(3000)]
    paragraphs = [
        "<p>" + " ".join(f"the {rng.choice(words)} is {rng.choice(words)}" for _ in range(50))
        + "</p>\n"
        for _ in range(50)
    ]
    block = "".join(paragraphs)
    page = "<html><body>" + block * (10_000_000 // len(block)) + "</body></html>"
    assert isinstance(FP.fingerprint(page.encode()), int)
    # One paragraph repeated over megabytes rests on too few features for its size.
    page = "<html><body>" + paragraphs[0] * (10_000_000 // len(paragraphs[0])) + "</body></html>"
    assert FP.fingerprint(page.encode()) is None


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=40),
    st.integers(0, 2**64 - 1),
)
def test_hamming_many_matches_hamming(values, other):
    a = np.array(values, dtype=np.uint64)
    got = FP.hamming_many(a, np.uint64(other))
    assert got.shape == a.shape
    assert [int(d) for d in got] == [FP.hamming(v, other) for v in values]
    assert [int(d) for d in FP.hamming_many(a, a[::-1])] == [
        FP.hamming(x, y) for x, y in zip(values, values[::-1])
    ]


def test_hamming():
    assert FP.hamming(0, 2**64 - 1) == 64
    assert FP.hamming(0b1011, 0b0001) == 2


@pytest.mark.corpus
def test_corpus_pages_fingerprinted_and_stable():
    if corpus_dir() is None:
        pytest.skip(ABSENT_REASON)
    pages = web_pages()[:40]
    missing = 0
    for _url, path, _ann in pages:
        data = path.read_bytes()
        fp = FP.fingerprint(data)
        missing += fp is None
        text = data.decode("utf-8", errors="replace")
        if fp is not None and "charset=" not in text[:2000].lower():
            assert FP.fingerprint(Selector(text=text).root) == fp
    assert missing <= 2


def test_title_and_headings_only_give_none_code_counts():
    head = (
        "<title>The source code of the module is here</title>"
        "<h1>Source code for the module that is shown</h1><h2>The functions</h2>"
    )
    assert len(FP.features(head * 5)) >= FP.DEFAULT_MIN_FEATURES
    assert FP.fingerprint(head * 5) is None
    # Code is content (version 4): a listing gets a fingerprint that sees it.
    code = "<pre>if x is not None:\n    return the_value\nelse:\n    raise an_error</pre>"
    details = FP.fingerprint_details(head + code)
    assert details.fingerprint is not None and details.feature_count >= 6


def test_min_features_scale_with_the_page():
    """A fingerprint resting on a few features out of a long text is none."""
    row = "<tr><td>alpha beta</td><td>gamma</td></tr>"
    small = FP.fingerprint_details(f"<table>{row * 3}</table>", min_features=1)
    assert small.fingerprint is not None
    huge = FP.fingerprint_details(f"<table>{row * 3000}</table>", min_features=1)
    assert huge.fingerprint is None and "fewer than one per" in huge.reason


def test_fingerprint_details():
    details = FP.fingerprint_details(CLEAN)
    assert details == (GOLDEN["clean"], details.feature_count, None)
    assert details.feature_count == sum(":" not in f for f in FP.features(CLEAN))
    assert details.feature_count >= FP.DEFAULT_MIN_FEATURES
    few = FP.fingerprint_details("<p>The cat is on the mat.</p>")
    assert few.fingerprint is None and 0 < few.feature_count < FP.DEFAULT_MIN_FEATURES
    assert "min_features" in few.reason
    assert FP.fingerprint_details("") == (None, 0, "no main text")
    assert FP.fingerprint_details(CLEAN, min_features=10**6).fingerprint is None


def test_site_name_in_title_does_not_move_the_fingerprint():
    # A printer version and a partner site's copy: other site names in the title.
    for title in (
        "Night trains are back | Rail News",
        "Night trains are back - Valley Morning Post (print)",
        "Partner Site :: Night trains are back",
    ):
        other = CLEAN.replace("<title>Night trains are back</title>", f"<title>{title}</title>")
        assert FP.fingerprint(other) == FP.fingerprint(CLEAN), title


def test_other_sites_template_leftovers_left_out():
    # The same article inside another site's template, whose blurbs and teaser
    # text survive the rules: the main-content region leaves them out.
    body = CLEAN.split("<body>")[1].split("</body>")[0]
    blurb = (
        "<div class='box'><h2>About the magazine</h2><p>The magazine is published by a "
        "cooperative of readers and has been independent since its foundation.</p></div>"
    )
    host = f"""<html><head><title>Night trains are back</title></head><body>
    <div class="wrap"><div class="col">{blurb}</div>
    <div class="content"><article>{body}</article></div></div></body></html>"""
    assert FP.hamming(FP.fingerprint(host), FP.fingerprint(CLEAN)) == 0
    assert not any("magazine" in f or "cooperative" in f for f in FP.features(host))


def test_headline_repeating_the_title_counts_once():
    # A syndicated copy without an <h1>: the headline was the title anyway.
    no_headline = CLEAN.replace("<h1>Night trains are back</h1>", "")
    assert FP.fingerprint(no_headline) == FP.fingerprint(CLEAN)
    other = CLEAN.replace("<h1>Night trains are back</h1>", "<h1>Sleepers return</h1>")
    assert FP.features(other)["h:sleepers"] > 0


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hostile_pages_cost_bounded_cpu(shape: str) -> None:
    """Each hostile shape, far past every budget, is fingerprinted from bytes and
    from parsel's tree (the middleware's path) in well under a second of CPU
    (``make bench-hostile`` holds them to 50 ms; before the budgets some took
    seconds)."""
    html = SHAPES[shape](6_000_000)
    for page in (html.encode("utf-8"), Selector(text=html).root):
        start = time.thread_time()
        with plain_elements(page) if not isinstance(page, bytes) else contextlib.nullcontext():
            FP.fingerprint_details(page)
        assert time.thread_time() - start < 1.0, shape


def test_caches_keep_bounded_memory_across_crafted_pages() -> None:
    """Pages whose class and id values are all new leave at most a few MB in
    the class/id caches (whole values were kept before: ~1 MB a page)."""
    extract_module = importlib.import_module("scrapy_simhash.fingerprinting.extract")
    extract_module._is_boiler_name.cache_clear()
    extract_module._is_boiler_class.cache_clear()
    pages = [crafted_cache_page(n) for n in range(30)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for page in pages:
            FP.fingerprint(page)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 8_000_000, kept
    keys = extract_module._is_boiler_name.cache_info().currsize
    assert keys <= 8192
