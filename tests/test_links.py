"""The links of delivered pages (scrapy_simhash.links): a drop cuts nothing off."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree, html
from parsel import Selector

import scrapy_simhash.links as L
from evaluation.corpus import ABSENT_REASON, corpus_dir, web_pages
from scrapy_simhash.links import MAX_LINKS, DeliveredLinks, page_links

SITE = "https://docs.example.org/api/"


def delivered(*pages: tuple[str, list[str]]) -> DeliveredLinks:
    links = DeliveredLinks()
    for url, hrefs in pages:
        links.record(url, hrefs)
    return links


def test_a_copy_whose_links_are_all_known_cuts_nothing_off():
    links = delivered((SITE + "a.html", ["b.html", "../index.html", "/api/c.html"]))
    # the same links, written otherwise: absolute, with a fragment or a query
    hrefs = [SITE + "b.html#top", "/index.html", "c.html?session=42", "#local"]
    assert links.uncovered(SITE + "a-print.html", hrefs, SITE + "a.html") is None


def test_a_copy_with_a_link_of_its_own_names_it():
    # two generated pages alike but for their names; each links to its own usage page
    links = delivered((SITE + "HtmlTreeBuilder.html", ["class-use/HtmlTreeBuilder.html"]))
    copy = SITE + "XmlTreeBuilder.html"
    assert links.uncovered(copy, ["class-use/XmlTreeBuilder.html"], SITE + "HtmlTreeBuilder.html") \
        == SITE + "class-use/XmlTreeBuilder.html"


def test_a_mirror_is_read_on_the_address_of_the_page_it_copies():
    original = "https://docs.example.org/v2/guide/a.html"
    links = delivered((original, ["b.html", "/v2/index.html"]))
    for mirror in ("https://mirror.example.net/v2/guide/a.html",         # another host
                   "https://mirror.example.net/mirror/v2/guide/a.html",  # and a folder
                   "http://docs.example.org:8080/v2/guide/a.html"):      # another port
        hrefs = ["b.html", "a.html", mirror.rsplit("/", 3)[0] + "/v2/index.html"]
        assert links.uncovered(mirror, hrefs, original) is None, mirror
        assert links.uncovered(mirror, ["c.html"], original).endswith("/guide/c.html")
    # on another host, whatever the file name (a mirror's index.html of the original's
    # git.html, one page at two names)
    links = delivered(("https://site/git.html", ["gittutorial.html"]))
    assert links.uncovered("https://mirror/index.html", ["gittutorial.html"],
                           "https://site/git.html") is None
    assert links.uncovered("https://site/index.html", ["gittutorial.html"],
                           "https://site/git.html") is None  # the same link, as it is


def test_pages_of_one_host_are_not_read_into_each_other():
    # commons-lang3: lang3/stream/Streams.html near-identical to lang3/Streams.html, each
    # linking to its own class-use/Streams.html (a crawl lost it when this was read as a
    # mirror)
    base = "https://h/org/apache/commons/lang3/"
    links = delivered((base + "Streams.html", ["class-use/Streams.html"]))
    assert links.uncovered(base + "stream/Streams.html", ["class-use/Streams.html"],
                           base + "Streams.html") == base + "stream/class-use/Streams.html"
    # two classes of one package: the same folder, other file names
    links = delivered(("https://h/x/Html/index.html", ["members.html"]))
    assert links.uncovered("https://h/x/Xml/list.html", ["members.html"],
                           "https://h/x/Html/index.html") == "https://h/x/Xml/members.html"


def test_links_are_compared_without_their_query():
    """A known limit, written down: a session id in every link would otherwise make
    each copy's links new; the price is that a page told apart by its query alone
    (``/use?id=2``) counts as linked once any ``/use?...`` is."""
    links = delivered(("https://h/list?page=2&sid=a1", ["/list?page=3&sid=a1"]))
    assert links.uncovered("https://h/list?page=2&sid=b7", ["/list?page=3&sid=c9"],
                           "https://h/list?page=2&sid=a1") is None
    links = delivered(("https://h/show?id=1", ["/use?id=1"]))
    assert links.uncovered("https://h/show?id=2", ["/use?id=2"], "https://h/show?id=1") is None


def test_links_off_the_crawled_hosts_do_not_count():
    links = delivered((SITE + "a.html", ["b.html"]))
    hrefs = ["b.html", "https://ads.example.com/click/123", "mailto:x@example.org",
             "javascript:void(0)", "http://[::1", ""]
    assert links.uncovered(SITE + "a2.html", hrefs, SITE + "a.html") is None
    links.record("https://ads.example.com/", [])  # a host the crawl delivered a page from
    assert links.uncovered(SITE + "a2.html", hrefs, SITE + "a.html") \
        == "https://ads.example.com/click/123"


def test_a_hashed_kept_url_still_reads_the_copy_on_its_own_address():
    # a Redis index with SIMHASH_REDIS_URLS = "hash" names the kept page by a digest
    links = delivered((SITE + "a.html", ["b.html"]))
    assert links.uncovered(SITE + "a2.html", ["b.html"], "xxh3:0123456789abcdef") is None
    assert links.uncovered(SITE + "a2.html", ["c.html"], "xxh3:0123456789abcdef") \
        == SITE + "c.html"


def test_work_is_bounded_on_a_page_of_many_links():
    root = html.fromstring("<div>" + "<a href='/p'>x</a>" * (MAX_LINKS + 50) + "</div>")
    hrefs = page_links(root)
    assert len(hrefs) == MAX_LINKS + 1
    links = delivered((SITE, hrefs))
    assert len(links) == 1
    # a copy with more links than are read is delivered: its last links are unknown
    assert links.uncovered(SITE + "copy", hrefs, SITE) == "/p"
    assert links.uncovered(SITE + "copy", hrefs[:MAX_LINKS], SITE) is None


def test_page_links_reads_a_and_area_in_order():
    root = html.fromstring(
        "<body><a href='1'>a</a><map><area href='2'></map><a>no href</a>"
        "<link href='css'><a href=' 3 '>c</a></body>")
    assert page_links(root) == ["1", "2", " 3 "]


# The compiled reader (scrapy_simhash.fingerprinting._walk.hrefs) against the
# Python loop it replaces: the same hrefs, in the same order, the same bound.

needs_compiled = pytest.mark.skipif(
    L._compiled_hrefs is None, reason="scrapy_simhash.fingerprinting._walk is not built")


def python_links(root) -> list[str]:
    saved, L._compiled_hrefs = L._compiled_hrefs, None
    try:
        return page_links(root)
    finally:
        L._compiled_hrefs = saved


def assert_same_links(root) -> None:
    assert page_links(root) == python_links(root)


_LINK_TAGS = ["a", "area", "div", "map", "link", "A", "svg:a", "abbr", "p"]
_LINK_ATTRIBUTES = [
    "", ' href="x.html"', " href=''", ' href=" /a b "', ' href="&amp;q=1&lt;"', ' href="é漢字"',
    ' href="1" href="2"', ' HREF="upper"', ' xlink:href="ns"', ' href="&#x1F600;&nbsp;"',
    ' class="c" href="#f"', " href", ' href="&bogus;"',
]


def _linked(parts: tuple) -> str:
    tag, attributes, children, tail = parts
    return f"<{tag}{attributes}>t{''.join(children)}</{tag}>{tail}"


_LINK_NODES = st.recursive(
    st.sampled_from(["", "text", "<!-- <a href='c'> -->", "&amp;", "<br>"]),
    lambda children: st.tuples(
        st.sampled_from(_LINK_TAGS), st.sampled_from(_LINK_ATTRIBUTES),
        st.lists(children, max_size=4), st.sampled_from(["", "tail"]),
    ).map(_linked),
    max_leaves=30,
)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(body=st.lists(_LINK_NODES, max_size=6))
def test_compiled_links_are_the_python_links_on_generated_pages(body):
    page = f"<html><head><title>t</title></head><body>{''.join(body)}</body></html>"
    assert_same_links(html.fromstring(page))
    assert_same_links(Selector(text=page).root)
    assert_same_links(html.fromstring(page).find("body"))  # a subtree: from its root on


@needs_compiled
def test_compiled_links_on_api_built_trees():
    root = etree.fromstring(
        b'<!DOCTYPE html [<!ENTITY e "entity text">]>'
        b'<html xmlns:x="urn:x"><body><a href="1">one</a><x:a href="ns">not read</x:a>'
        b'<a x:href="ns attribute">no href</a><a href="a&e;b">entity</a>'
        b'<div xmlns="urn:y"><a href="default namespace">not read</a></div>'
        b'<area href="4"/><?a href="pi"?><!-- <a href="comment"> --></body></html>',
        etree.XMLParser(resolve_entities=False),
    )
    built = etree.SubElement(root[0], "a", href="built")
    etree.SubElement(built, "a").set("href", "")
    assert page_links(root) == ["1", "aentity textb", "4", "built", ""]
    assert_same_links(root)
    assert page_links(built) == ["built", ""]  # the root itself counts
    leaf = etree.Element("a", href="alone")
    assert page_links(leaf) == ["alone"] == python_links(leaf)
    # attributes a DTD gives by default: lxml's get() reads them
    declared = etree.fromstring(
        b'<!DOCTYPE html [<!ATTLIST a href CDATA "default"><!ATTLIST area href CDATA #FIXED "f">]>'
        b'<html><a>x</a><area/><a href="own">y</a><a name="n"/></html>')
    assert page_links(declared) == ["default", "f", "own", "default"] == python_links(declared)


@needs_compiled
def test_compiled_links_keep_the_bound():
    root = html.fromstring("<div>" + "<a href='/p'>x</a>" * (MAX_LINKS + 50) + "</div>")
    assert len(page_links(root)) == len(python_links(root)) == MAX_LINKS + 1


@pytest.mark.corpus
@needs_compiled
def test_compiled_links_on_corpus_pages():
    if corpus_dir() is None:
        pytest.skip(ABSENT_REASON)
    for _url, path, _annotations in web_pages():
        data = path.read_bytes()
        assert_same_links(html.fromstring(data))
        assert_same_links(Selector(text=data.decode("utf-8", errors="replace")).root)


_segment = st.sampled_from(["a", "b", "api", "v2", "index.html", "x.html", "y.html"])
_path = st.lists(_segment, min_size=1, max_size=4).map("/".join)


@settings(max_examples=400, deadline=None)
@given(kept=st.lists(st.tuples(_path, st.lists(_path, max_size=5)), min_size=1, max_size=6),
       copy=_path, copy_links=st.lists(_path, max_size=6), of=st.integers(0, 5),
       mirror=st.sampled_from([None, "m", "x/m", "a"]), mirrored=st.lists(st.integers(0, 30)))
def test_what_is_covered_is_exactly_what_a_delivered_page_links_to(
        kept, copy, copy_links, of, mirror, mirrored):
    """Against a brute force of the rule: a copy's link is covered when a delivered
    page links to it, read as it is or, for a copy on another host, on the kept
    page's address."""
    host = "https://h/"
    links = delivered(*((host + url, ["/" + h for h in hrefs]) for url, hrefs in kept))
    kept_url = host + kept[of % len(kept)][0]
    copy_host = host
    if mirror is not None:  # the kept page, and some links of the crawl, on a mirror
        copy_host = "https://m/"
        copy = f"{mirror}/{kept[of % len(kept)][0]}"
        every = [h for _, hrefs in kept for h in hrefs]
        copy_links = [f"{mirror}/{every[i % len(every)]}" for i in mirrored if every] + copy_links
    known = {host + h for _, hrefs in kept for h in hrefs}
    own, other = copy_host + copy, kept_url
    expected = None
    for href in copy_links:
        target = copy_host + href
        if target in (own, other) or target in known:
            continue
        if copy_host != host:
            # the longest common tail of whole segments, then swap the prefixes
            a, b = own.split("/"), other.split("/")
            n = 1
            while n < min(len(a), len(b)) - 2 and a[-1 - n] == b[-1 - n]:
                n += 1
            pa, pb = "/".join(a[:-n]) + "/", "/".join(b[:-n]) + "/"
            if pa != pb and target.startswith(pa):
                mapped = pb + target[len(pa):]
                if mapped == other or mapped in known:
                    continue
        expected = target
        break
    assert links.uncovered(own, ["/" + h for h in copy_links], kept_url) == expected


_href = st.text(st.sampled_from("ab./:?#\\%é \t-_Hh;"), max_size=12) | st.sampled_from(
    ["http://Other:8080/x/../y", "HTTPS://h/a", "//cdn.example/a", "mailto:a@b", "./a", "../",
     "a/./b", "a/../../b", "..", ".", "/..", "?q", "javascript:x", "a:b", "a/b:c",
     "http://h", "HTTP://Ex.ORG/A?b#c", "https://[::1]/x", "http://u@h/x", "http://h/a/./b",
     "https://h:443/p q", "http:/x", "http:x", "https:///x", "http://h\\x/y", "tel:+1"])


@settings(max_examples=1500, deadline=None)
@given(url=st.sampled_from(["https://h/", "https://H:81/a/b.html?x#y", "http://h/a/", "http://h",
                            "http://h/a/b;s=1", "https://h/a//b/c.html"]),
       hrefs=st.lists(_href, max_size=8))
def test_links_resolve_as_urljoin_does(url, hrefs):
    """The string path of ``_keyed_links`` gives what ``urljoin`` gives."""
    from scrapy_simhash.links import _keyed_links, _resolve

    expected = [_resolve(url, h.strip()) for h in hrefs if h.strip() and h.strip()[0] != "#"]
    found = [(host, link) for host, link, _ in _keyed_links(url, hrefs)]
    assert found == [link for link in expected if link is not None]


_page_url = st.sampled_from(["https://h/", "https://H/a/b.html?x", "http://h/a/", "http://h",
                             "https://h/a//b/c.html", "https://m/x/", "https://h:81/a/b;s=1",
                             "mailto:x@h"])


@settings(max_examples=300, deadline=None)
@given(pool=st.lists(_href, min_size=1, max_size=8),
       pages=st.lists(st.tuples(_page_url, st.lists(st.integers(0, 7), max_size=8)), max_size=8),
       copy=st.tuples(_page_url, st.lists(st.integers(0, 7), max_size=8)), kept=_page_url,
       size=st.integers(1, 12))
def test_memo_gives_the_links_it_would_resolve(pool, pages, copy, kept, size):
    """The memo of resolved links, warm or cold, small or not, changes no answer,
    and holds at most ``MEMO_SIZE`` entries plus one page's."""
    import scrapy_simhash.links as links_module
    from scrapy_simhash.links import _key, _keyed_links

    def hrefs(picks: list[int]) -> list[str]:  # hrefs of a pool: pages share theirs
        return [pool[i % len(pool)] for i in picks]

    links = DeliveredLinks()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(links_module, "MEMO_SIZE", size)
        for url, picks in pages * 2:  # each page twice: read from the memo the second time
            links.record(url, hrefs(picks))
            assert len(links._memo) <= size + len(picks)
            # a copy checked with the memo warm, and cold: the same answer
            cold = DeliveredLinks()
            cold._links, cold.hosts = links._links, links.hosts
            assert links.uncovered(copy[0], hrefs(copy[1]), kept) == \
                cold.uncovered(copy[0], hrefs(copy[1]), kept)
    expected = {_key(link) for url, picks in pages
                for _, link, _ in _keyed_links(url, hrefs(picks))}  # fmt: skip
    assert links._links == expected
