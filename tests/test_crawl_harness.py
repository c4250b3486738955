"""The crawl harness (bench/crawl_harness.py) on a tiny generated site and its mirror:
real loopback servers, two real Scrapy crawls in fresh processes, and its accounting.

The site is built so that its figures do not depend on how the drop decision decides, only
on its dropping exact copies: ``x/t.html`` and ``y/t.html`` show the same text, but the
judge's content container (``div.own``) holds their first half on one and their second half
on the other. The second is dropped as a copy of the first: a WRONG drop by the container
(Jaccard about 0), a LOST page. Its one link is the first's (``x/n.html``), so its drop
cuts nothing off: a copy with a link of its own is delivered instead (``links.py``), and a
crawl loses no page through a drop's outlinks.
``c.html`` is a byte copy of ``a.html``: dropped, and not lost.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bench import crawl_harness as H

WORDS = (
    "river mountain engine garden silver window market letter harbor winter candle forest "
    "doctor pocket ladder orange thunder blanket pepper castle meadow bridge lantern violin "
    "canvas rocket pillow saddle tunnel quartz falcon cotton marble anchor basket cactus"
).split()
OWN = "//div[@class='own']"
XPATHS = (OWN, "//article")


def paragraph(seed: int) -> str:
    rng = random.Random(seed)
    sentences = (
        f"The {rng.choice(WORDS)} {rng.choice(WORDS)} is a {rng.choice(WORDS)} "
        f"{rng.choice(WORDS)} and the {rng.choice(WORDS)} was {rng.choice(WORDS)}."
        for _ in range(6)
    )
    return "<p>" + " ".join(sentences) + "</p>"


def page(title: str, body: str, links: tuple[str, ...] = ()) -> str:
    nav = "".join(f'<li><a href="{href}">{text}</a></li>' for href, text in links)
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
            f"<nav><ul>{nav}</ul></nav>{body}</body></html>")


def article(seed: int, links: tuple[str, ...] = ()) -> str:
    text = "".join(paragraph(seed * 10 + n) for n in range(5))
    return page(f"Article {seed}", f"<article><h1>Article {seed}</h1>{text}</article>",
                tuple((href, "next") for href in links))


def twin(own_first: bool, next_page: str) -> str:
    """The same visible text as its twin; ``div.own`` around one half or the other."""
    first = "".join(paragraph(900 + n) for n in range(3))
    second = "".join(paragraph(950 + n) for n in range(3))
    own, other = ('<div class="own">', "<div>") if own_first else ("<div>", '<div class="own">')
    return page("Twin", f"<h1>Twin</h1>{own}{first}</div>{other}{second}</div>",
                ((next_page, "next"),))


def write_site(root: Path) -> dict[str, str]:
    pages = {
        "index.html": page("Index", "<h1>Index</h1>", tuple(
            (name, f"Page {name}") for name in ("a.html", "b.html", "c.html", "x/t.html",
                                                 "y/t.html")
        ) + (("sub/", "More"), ("a.html?x=1#top", "Again"), ("javascript:void(0)", "Menu"))),
        "a.html": article(1),
        "b.html": article(2),
        "x/t.html": twin(True, "n.html"),
        "y/t.html": twin(False, "../x/n.html"),
        "x/n.html": article(6),
        "y/n.html": article(7),
        "sub/index.html": article(8, ("../b.html", "../index.html", "../y/n.html")),
        "unlinked.html": article(9),
    }
    pages["c.html"] = pages["a.html"]
    for name, html in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(html, encoding="utf-8")
    return pages


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    write_site(root)
    return root


def test_links_and_pages(site: Path) -> None:
    assert H.page_key("/") == "index.html" and H.page_key("/sub/") == "sub/index.html"
    assert H.page_key("/a%20b.html") == "a b.html"
    assert H.page_url("http://h:1", "a b.html") == "http://h:1/a%20b.html"
    assert list(H.outlinks("http://h:1/sub/x.html", [
        "../a.html?q=1#f", "#top", "javascript:go()", "mailto:x@y", "http://[bad", "y.html",
    ])) == ["http://h:1/a.html", "http://h:1/sub/x.html", "http://h:1/sub/y.html"]
    bases = {"original": "http://h:1", "mirror": "http://h:2"}
    assert H.locate("http://h:2/sub/", bases) == ("mirror", "sub/index.html")
    assert H.locate("http://h:3/a.html", bases) is None
    order = H.bfs_pages(site, "index.html")
    assert order[:6] == ["index.html", "a.html", "b.html", "c.html", "x/t.html", "y/t.html"]
    assert sorted(order) == sorted(
        ["index.html", "sub/index.html", "x/t.html", "y/t.html", "x/n.html", "y/n.html"]
        + [f"{n}.html" for n in "abc"]
    )  # unlinked.html is not reachable
    assert H.bfs_pages(site, "index.html", 3) == ["index.html", "a.html", "b.html"]
    with pytest.raises(H.HarnessError, match="no start page"):
        H.bfs_pages(site, "start.html")
    assert H.mirror_entries(order, 3) == ["index.html", order[3], order[6]]
    assert H.mirror_entries(order[:1], 3) == ["index.html"]
    assert H.inject_links(b"<p>x</p></BODY></html>", ["http://m/", "http://m/a"]) == (
        b'<p>x</p><p><a href="http://m/">mirror</a></p><p><a href="http://m/a">mirror</a></p>'
        b'</BODY></html>')
    assert H.inject_links(b"<p>x</p>", ["u"]).endswith(b'<a href="u">mirror</a></p>')


def test_judge_reads_the_content_container(site: Path) -> None:
    judge = H.Judge(site, XPATHS)
    assert judge("a.html", "c.html") == 1.0
    assert judge("x/t.html", "y/t.html") < 0.05  # same text, the container around other halves
    assert judge("a.html", "b.html") < 0.5
    (site / "empty.html").write_bytes(b"")
    (site / "empty2.html").write_bytes(b"   ")
    assert judge.shingles("empty.html") == frozenset()
    assert judge.closest("empty.html", ["a.html", "empty2.html"]) == (1.0, "empty2.html")
    assert judge.closest("a.html", ["b.html", "c.html"]) == (1.0, "c.html")


def test_foreign_drop_url_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "drops.jsonl"
    log.write_text(json.dumps({"event": "drop", "url": "http://elsewhere/a.html",
                               "duplicate_of": "http://h:1/b.html", "distance": 0}) + "\n")
    with pytest.raises(H.HarnessError, match="did not serve"):
        list(H.read_events(log, {"original": "http://h:1"}))


def test_bad_arguments_get_one_clear_line(site: Path, capsys) -> None:
    for argv, message in (
        ([str(site / "nowhere")], "neither a folder nor a corpus site"),
        ([str(site)], "give its content container with --xpath"),
        ([str(site), "--xpath", "//div[", ], "--xpath '//div['"),
        ([str(site), "--xpath", "//main", "-s", "SIMHASH_MAX_DISTANCE"], "-s takes NAME=VALUE"),
        ([str(site), "--xpath", "//main", "--pages", "0"], "--pages must be at least 1"),
    ):
        with pytest.raises(SystemExit) as exc:
            H.main(argv)
        assert exc.value.code == 2
        assert message in capsys.readouterr().err


def test_crawl_accounting_on_a_site_and_its_mirror(site: Path, tmp_path: Path) -> None:
    # One request at a time, breadth first: the order of the crawl is fixed. The start page
    # links to the mirror copies of every page but y/n.html, so x/n.html (two links deep in
    # the original) is met first through the mirror.
    args = argparse.Namespace(pages=None, concurrency=1, order="fifo", settings=[],
                              mirror_links=8, timeout=300, show=10, keep=tmp_path / "work")
    spec = H.SiteSpec("tiny", site, "index.html", XPATHS)
    acc, lines = H.measure(spec, args, tmp_path / "work")
    pages = set(H.bfs_pages(site, "index.html"))
    assert acc.pages == len(pages) == 9

    # Without the add-on: every page of both copies served once (the start page too, linked
    # back to from sub/) and delivered.
    assert acc.off.served == {(copy, key): 1 for copy in ("original", "mirror") for key in pages}
    assert set(acc.off.parsed) == set(acc.off.served) and acc.both_off == 9
    assert acc.mirror_off == 9 and not acc.off.drops

    # With it: y/t.html dropped as a copy of x/t.html (same text; its one link, to x/n.html,
    # is x/t.html's: its drop cuts nothing off).
    assert acc.lost == {"y/t.html": "dropped"}
    for copy in ("original", "mirror"):
        assert (copy, "y/t.html") not in acc.on.parsed
    wrong = acc.wrong()
    assert {(v.event.copy, v.event.key, v.event.of_key) for v in wrong} == {
        ("original", "y/t.html", "x/t.html"), ("mirror", "y/t.html", "x/t.html")}
    assert all(v.jaccard < 0.05 for v in wrong)
    # c.html (a byte copy of a.html) is not delivered, and not lost: a.html's content was.
    assert "c.html" not in acc.on.delivered() and acc.undelivered["c.html"][0] == 1.0
    assert "c.html" not in acc.lost
    # Every other drop or skip is a copy of the same page or of near-identical content;
    # x/n.html's original, met after its mirror copy, is dropped as a copy of it (or skipped
    # before download by the URL rule learned from the mirror's drops).
    judged = acc.drops + acc.skips
    assert all(v.kind in ("same page", "near-identical") for v in judged if v not in wrong)
    same = {(v.event.copy, v.event.key, v.event.of_copy) for v in judged
            if v.kind == "same page"}
    assert ("original", "x/n.html", "mirror") in same and ("mirror", "a.html", "original") in same
    assert ("mirror", "x/n.html") in acc.on.parsed and ("original", "x/n.html") not in acc.on.parsed
    # The mirror's other copies never reach the spider (dropped or never requested); the
    # index (a list of links, too little text) may.
    for key in pages - {"index.html", "x/n.html"}:
        assert ("mirror", key) not in acc.on.parsed
    assert sum(acc.mirror_missing.values()) >= 7
    # x/n.html's mirror copy is delivered in place of its original: the copy kept, not missed.
    instead = {key for copy, key in acc.on.parsed
               if copy == "mirror" and ("original", key) not in acc.on.parsed}
    assert "x/n.html" in instead and acc.mirror_instead == len(instead)
    # Fetches saved: the page copies never requested (each page is served at most once).
    saved = sum(acc.off.served.values()) - sum(acc.on.served.values())
    assert set(acc.on.served.values()) == {1} and saved == 18 - len(acc.on.served)
    assert saved >= 1

    text = "\n".join(lines)
    assert "  LOST: 1 pages (" in text and "1 dropped" in text
    assert "dropped          y/t.html as a copy of x/t.html (J=0.0" in text
    assert f"fetches saved: {saved} (" in text
    assert f"of which {len(instead)} in place of their original" in text
    single = len(acc.on.delivered()) - acc.both_on
    assert f"second copies not delivered: {single} of {len(acc.on.delivered())} pages" in text
    assert "WRONG drops and skips" in text

    # --keep: the index of the crawl with the add-on, readable by the command line, holds
    # the pages the crawl kept (x/t.html, whose copy y/t.html was dropped, among them).
    from scrapy_simhash.cli.state import load_state

    state = load_state(str(tmp_path / "work" / "with.state"))
    kept = {H.page_key(urlsplit(url).path) for url in state.urls}
    assert "x/t.html" in kept and "y/t.html" not in kept
    assert len(state.sketches) == len(state.urls)
