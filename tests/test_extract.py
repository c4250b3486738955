"""Main-text extraction: boilerplate rules, the over-pruning guard, decoding, bad input."""

from __future__ import annotations

import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from parsel import Selector

from evaluation.corpus import ABSENT_REASON, corpus_dir
from scrapy_simhash.fingerprinting.extract import (
    MAX_ATTRIBUTE_CHARS,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MainText,
    _measure,
    decode_html,
    extract,
    parse_html,
    plain_elements,
)

ARTICLE = """
<h1>Night trains are back</h1>
<p>The railway company has announced that the night train between the two capitals
will run again from next spring, after a pause of several years.</p>
<p>Passengers can book a couchette or a sleeper, and the trains will be hauled by
modern locomotives that were built for the purpose.</p>
"""

BODY = ARTICLE.replace("<h1>Night trains are back</h1>", "")

BOILERPLATE_PAGE = f"""<!DOCTYPE html>
<html><head><title>Night trains are back | Rail News</title>
<script>var x = "the script text is not content";</script>
<style>.a {{ color: red }}</style></head>
<body>
<header><a href="/">Rail News</a> <a href="/login">Log in</a></header>
<nav><ul><li><a href="/a">Home</a></li><li><a href="/b">Trains</a></li></ul></nav>
<div id="cookie-banner"><p>We use cookies to improve the service you are using.</p></div>
<div class="ad-slot"><p>Buy the best shoes of the season at a discount today.</p></div>
<main><article>{ARTICLE}
<div class="share-buttons"><p>Share this on Facebook and Twitter with your friends.</p></div>
</article></main>
<div style="display: none"><p>A hidden paragraph that is never shown to readers.</p></div>
<div aria-hidden="true"><p>Another hidden paragraph that is for machines only.</p></div>
<aside><h3>Related</h3><p>An aside with a story that is not part of the article.</p></aside>
<div class="related-posts"><h3>You may also like</h3>
<ul><li><a href="/x">The other story about trains</a></li><li><a href="/y">More</a></li></ul></div>
<div><p><a href="/1">Link one is here</a> and <a href="/2">link two is there</a></p></div>
<footer><p>The copyright is held by the publisher of this site.</p></footer>
</body></html>"""

BOILERPLATE = (
    "script text",
    "Log in",
    "Home",
    "cookies",
    "shoes",
    "Share this",
    "hidden paragraph",
    "for machines",
    "An aside",
    "You may also like",
    "The other story",
    "Link one",
    "copyright",
)


def text_of(main: MainText) -> str:
    return " ".join([*main.headings, *main.blocks])


def test_boilerplate_rules():
    main = extract(BOILERPLATE_PAGE)
    text = text_of(main)
    assert "night train between the two capitals" in " ".join(text.split())
    assert "modern locomotives" in text
    for phrase in BOILERPLATE:
        assert phrase not in text, phrase
    assert main.title == "Night trains are back | Rail News"
    assert main.headings == ["Night trains are back"]
    assert all("Night trains are back" not in b for b in main.blocks)


def test_the_region_holds_what_the_main_text_left_out_of_it():
    """``MainText.region``: every block of the main-content region in document
    order, the link-only ones the main text leaves out too (a member list's
    "defined in" cells), but not the subtrees dropped for their class names
    (an ad slot between the article's paragraphs)."""
    rows = "".join(
        f'<tr><td><a href="#m{i}">member{i}</a>(const wxRect &amp;rect, long style)</td>'
        f'<td><a href="classBase.html">wxBase</a></td><td>virtual</td></tr>'
        for i in range(30)
    )
    page = (f"<html><body><nav><a href='/'>Home</a></nav><main><h1>wxDerived Member List</h1>"
            f"<p>This is the complete list of members for wxDerived, including all inherited "
            f"members.</p><div class='ad-slot'><p>Buy the best shoes of the season.</p></div>"
            f"<table>{rows}</table></main></body></html>")
    main = extract(page)
    assert "wxBase" not in main.blocks and "wxBase" in main.region
    assert main.region.count("wxBase") == 30
    assert all(block in main.region for block in main.blocks)
    assert not any("shoes" in block for block in main.region)
    assert [b for b in main.region if b in main.blocks] == main.blocks  # document order


def test_class_tokens_not_substrings():
    # "download" and "header" contain "ad"; "loading" too: none is an ad token.
    page = f'<div class="download-header loading">{ARTICLE}</div><div class="ad">Buy now</div>'
    text = text_of(extract(page))
    assert "modern locomotives" in text
    assert "Buy now" not in text


def test_guard_keeps_wrapper_holding_most_text():
    # A wrapper whose class names a sidebar but holds the article (and most text).
    page = f'<body><div class="layout-sidebar-right">{ARTICLE}</div><nav>Home</nav></body>'
    assert "modern locomotives" in text_of(extract(page))
    page = f'<body><div class="has-sidebar">{ARTICLE}</div></body>'
    assert "modern locomotives" in text_of(extract(page))


def test_fallback_to_all_visible_text():
    # Everything is in a menu: too little survives, so all visible text is used.
    page = f"<body><div class='menu'>{ARTICLE}</div><nav>{ARTICLE}</nav><script>x</script></body>"
    main = extract(page)
    assert "modern locomotives" in text_of(main)
    assert "x" not in main.blocks


def _misnamed_article_page(menu_items: int) -> str:
    """An article whose wrapper's class names a template part (Drupal's
    ``field--label-hidden``), with a caption, a share bar and a cookie notice
    named as such, in a template whose menu and footer hold ``menu_items`` links."""
    links = "".join(f'<li><a href="/{n}">Section number {n} of the site</a></li>' for n in range(menu_items))
    return f"""<html><body>
    <header><nav><ul>{links}</ul></nav></header>
    <div id="cookie-consent"><p>We use cookies to give you the best experience on this site.</p></div>
    <main><div class="field field--name-body field--label-hidden">{ARTICLE}
    <div class="caption"><p>The new sleeper carriage, photographed at the depot last year.</p></div>
    <div class="share-bar"><p>Share this story with your friends and family today.</p></div>
    </div></main>
    <footer><ul>{links}</ul></footer></body></html>"""


def test_misnamed_article_wrapper_same_text_whatever_the_template():
    # The article's wrapper is dropped for its name; too little is left, so the
    # fallback walks it again. Only the named element holding the text comes
    # back: the caption, share bar and cookie notice stay out, whether the
    # template's menus are short or long (the guard's share is then small).
    light = extract(_misnamed_article_page(3))
    heavy = extract(_misnamed_article_page(20))
    assert "modern locomotives" in text_of(light)
    assert light.blocks == heavy.blocks
    assert light.headings == heavy.headings == ["Night trains are back"]
    for text in ("photographed at the depot", "Share this story", "We use cookies"):
        assert text not in text_of(heavy)


def test_fallback_region_in_declared_main_content():
    # The article's wrapper, misnamed, holds less than half of the page's own
    # text (many small share boxes): the fallback brings back only the wrapper,
    # and as it lies in the page's <article> the region is still looked for,
    # leaving out the stray line outside it.
    shares = "".join(
        f'<div class="share-box"><p>Share on network {n} with all of your friends</p></div>'
        for n in range(6)
    )
    page = f"""<html><body><nav><ul><li><a href="/">Home</a></li></ul></nav>
    <div><p>Our paper, since 1851.</p></div>{shares}
    <article><div class="field field--label-hidden">{BODY}</div></article></body></html>"""
    main = extract(page)
    assert "modern locomotives" in text_of(main)
    assert "since 1851" not in text_of(main)
    assert "Share on network" not in text_of(main)


def _index_page(letter: str) -> str:
    """A generated index page: its content is a list of links (too little prose
    survives), beside a footer of prose that every page of the site repeats."""
    entries = "".join(
        f'<li><a href="/{letter}{n}">{letter}{n}name (module {letter}{n})</a></li>'
        for n in range(40)
    ) + "".join(
        f'<li><a href="/{letter}f{n}">{letter}f{n}</a> (function in {letter}{n}, obsolete)</li>'
        for n in range(2)
    )
    return f"""<html><body><div class="document"><h1>Index {letter}</h1><ul>{entries}</ul></div>
    <div class="footer"><p>This page is licensed under the Software Foundation License,
    and the examples in the documentation are additionally licensed under the Zero Clause
    license. The Foundation is a non-profit corporation: please donate to it. The page
    was last updated on the first of the month, and it was created with the generator
    that the project has used for all of its documentation since the beginning.</p></div>
    </body></html>"""


def test_fallback_never_reduces_a_page_to_its_footer():
    # The footer, dropped for its name, holds a good share of the little prose
    # these pages have: the fallback brings it back, but outside any declared
    # main content the region is not looked for, so each page keeps its own
    # entries too and two index pages never become the same footer.
    b, c = extract(_index_page("b")), extract(_index_page("c"))
    assert "non-profit corporation" in text_of(b)
    assert "(function in b1, obsolete)" in text_of(b)
    assert "(function in c1, obsolete)" in text_of(c)
    assert b.blocks != c.blocks


def test_heading_of_template_box_dropped():
    page = f"""<body><article>{ARTICLE}</article>
    <div><h2>Most read</h2><ul><li><a href="/1">A story that is popular</a></li>
    <li><a href="/2">Another story that is popular</a></li></ul></div></body>"""
    main = extract(page)
    assert main.headings == ["Night trains are back"]
    assert "popular" not in text_of(main)


def test_article_header_kept_page_header_dropped():
    page = f"""<body><header><p>Rail News, the paper that is about trains</p></header>
    <article><header><h1>Headline of the article</h1></header>{BODY}</article></body>"""
    main = extract(page)
    assert "Headline of the article" in main.headings
    assert "Rail News" not in text_of(main)


def _parsel_root(html: str):
    return Selector(text=html).root


def test_tree_not_mutated():
    html = BOILERPLATE_PAGE.replace("<main>", "<main><!-- a comment --><?pi x?>")
    for root in (_parsel_root(html), lxml.html.fromstring(html), etree.HTML(html)):
        before = etree.tostring(root, method="html", encoding=str)
        extract(root)
        assert etree.tostring(root, method="html", encoding=str) == before


def test_parsel_tree_same_as_text():
    html = BOILERPLATE_PAGE.replace("<main>", "<main><!-- a comment with the words -->")
    assert extract(_parsel_root(html)) == extract(html)
    assert extract(_parsel_root(html).getroottree()) == extract(html)


def test_comments_and_pis_skipped_but_tails_kept():
    root = lxml.html.fromstring(
        "<html><body><p>before the comment <!-- the comment --> after the comment"
        "<?pi data?> after the pi</p></body></html>"
    )
    (block,) = extract(root).blocks
    assert "the comment -->" not in block and "pi data" not in block
    assert "before the comment" in block and "after the comment" in block and "after the pi" in block


@pytest.mark.parametrize(
    ("data", "encoding", "expected"),
    [
        ("<meta charset='windows-1251'><p>Привет</p>".encode("cp1251"), None, "Привет"),
        (
            '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"><p>Größe</p>'.encode(
                "latin-1"
            ),
            None,
            "Größe",
        ),
        ("<p>Größe</p>".encode("latin-1"), "latin-1", "Größe"),  # given by the response
        ("<p>Größe</p>".encode("utf-8"), None, "Größe"),  # no declaration: UTF-8
        ("<p>Größe</p>".encode("cp1252"), None, "Größe"),  # not UTF-8: windows-1252
        ("\ufeff<p>Größe</p>".encode("utf-16"), None, "Größe"),  # BOM wins
        ("<meta charset='utf-16'><p>Größe</p>".encode("utf-8"), None, "Größe"),  # lying charset
        ("<meta charset='no-such'><p>Größe</p>".encode("utf-8"), None, "Größe"),
    ],
)
def test_decode(data, encoding, expected):
    assert expected in decode_html(data, encoding)
    root = parse_html(data, encoding)
    assert expected in "".join(root.itertext())


def test_xml_declaration_in_str():
    page = '<?xml version="1.0" encoding="utf-8"?><html><body><p>Größe matters</p></body></html>'
    assert extract(page).blocks == ["Größe matters"]
    assert extract(page.encode()).blocks == ["Größe matters"]


@pytest.mark.parametrize(
    "page",
    ["", "   \n\t ", b"", b"\x00\x00", "<html></html>", "<!-- only a comment -->", b"\xff\xfe\xfa\xfb" * 10,
     "<script>only()</script><style>x</style>", "<img src=a.png><img src=b.png>", "<<<>>><p<</",
     "<html><body><p>unclosed <div><b>tags <i>everywhere"],
)
def test_bad_input_never_raises(page):
    main = extract(page)
    assert isinstance(main, MainText)


def test_wrong_type():
    with pytest.raises(TypeError, match="page must be"):
        extract(42)


def test_huge_page_is_capped():
    paragraph = "<p>" + "the words of a long page go on and on " * 20 + "</p>\n"
    page = "<html><body>" + paragraph * (10_000_000 // len(paragraph)) + "</body></html>"
    assert len(page) > 9_000_000
    main = extract(page)
    assert 0 < sum(map(len, main.blocks)) <= MAX_TEXT_CHARS + len(paragraph)


@pytest.mark.corpus
def test_boilerplate_bars_on_corpus():
    if corpus_dir() is None:
        pytest.skip(ABSENT_REASON)
    from bench.boilerplate import boilerplate_scores

    scores = boilerplate_scores()
    assert scores["pages"] > 400
    assert scores["with_kept"] >= 0.90
    assert scores["without_removed"] >= 0.80


def test_preformatted_blocks_kept_apart():
    page = f"<body>{ARTICLE}<pre>if x is not None:\n    return x</pre></body>"
    main = extract(page)
    assert main.code == ["if x is not None:\n    return x"]
    assert all("return" not in b for b in main.blocks)


def test_weigh_blocks_gets_kept_body_blocks_and_matches_weigh():
    seen: list[list[str]] = []

    def weigh_blocks(texts: list[str]) -> list[float]:
        seen.append(list(texts))
        return [float(len(t)) for t in texts]

    by_blocks = extract(BOILERPLATE_PAGE, weigh_blocks=weigh_blocks)
    assert by_blocks == extract(BOILERPLATE_PAGE, weigh=lambda t: float(len(t)))
    # One call, with the kept body-text blocks in document order (a superset of
    # the main-content region's blocks).
    assert len(seen) == 1
    region = by_blocks.blocks
    assert region and all(b in seen[0] for b in region)
    first = seen[0].index(region[0])
    assert seen[0][first : first + len(region)] == region


def test_plain_elements_on_lxml_html_trees_only():
    # A parser of its own, as parsel makes for each response.
    tree = lxml.html.document_fromstring(PLAIN_ELEMENTS_PAGE, parser=lxml.html.HTMLParser())
    with plain_elements(tree):
        assert type(tree.find("body")) is etree._Element  # the fast classes
        main = extract(tree)
    assert main.blocks == extract(lxml.html.document_fromstring(PLAIN_ELEMENTS_PAGE)).blocks
    # Afterwards (no element kept) lxml.html classes again, even after an error.
    with pytest.raises(RuntimeError), plain_elements(tree):
        raise RuntimeError
    assert all(isinstance(el, lxml.html.HtmlElement) for el in tree.iter())
    own = parse_html(PLAIN_ELEMENTS_PAGE)  # another parser: left alone
    with plain_elements(own):
        assert extract(own).blocks == main.blocks


PLAIN_ELEMENTS_PAGE = (
    "<html><head><title>T</title></head><body><nav><a href='/'>Home</a></nav>"
    "<p>The first paragraph is here and it is long enough to be kept.</p>"
    "<p>The <b>second</b> one has <a href='/x'>a link</a> in it.</p></body></html>"
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t\n\r\x85\xa0ab\xe9\u2009\u3000z", max_size=30))  # XML's characters
def test_a_dropped_text_counts_as_its_joined_words(text):
    element = etree.Element("aside")
    element.text = text
    assert _measure(element, 10**6, 10**6)[0] == len(" ".join(text.split()))


def test_measuring_stops_past_its_budgets():
    element = etree.fromstring("<aside>four<b>more</b> text<script>x</script></aside>")
    assert _measure(element, 100, 100) == (len("fourmore text"), 14, 2)
    assert _measure(element, 13, 100) is None  # 14 characters read
    assert _measure(element, 100, 1) is None  # 2 elements


@pytest.mark.parametrize(
    "charset", ["base64", "bz2", "hex", "rot13", "zlib", "uu", "quopri", "utf\x008", "\x00"]
)
def test_only_text_encodings_are_taken_from_a_page(charset):
    page = f'<meta charset="{charset}"><p>hi there</p>'.encode("latin-1")
    assert decode_html(page).endswith("<p>hi there</p>")
    assert extract(page).blocks == ["hi there"]
    assert decode_html(b"<p>caf\xc3\xa9</p>", encoding=charset) == "<p>caf\u00e9</p>"


def test_title_and_attributes_are_read_up_to_their_budgets():
    page = (
        f"<html><head><title>{'word ' * MAX_TITLE_CHARS}</title></head><body>"
        f'<div class="{"x" * MAX_ATTRIBUTE_CHARS} sidebar"><p>{"kept text " * 30}</p></div>'
        f'<div class="{"x" * (MAX_ATTRIBUTE_CHARS - 8)} sidebar"><p>dropped</p></div>'
        "</body></html>"
    )
    main = extract(page)
    assert len(main.title) == MAX_TITLE_CHARS - 1  # "word word ... word" without the last space
    assert main.blocks == ["kept text " * 30]  # the sidebar past the cut is not read


def test_blocks_of_a_subtree_dropped_for_its_name_are_its_blocks():
    """A subtree dropped for its class/id name alone (here a misnamed wrapper
    holding the article) is given in ``PageText.blocks`` as the blocks the
    walk reads in it, so a site's repeated menu inside it is a block of its
    own (template learning can tell it from the article); a landmark
    (``<footer>``) stays one block of its whole text."""
    from scrapy_simhash.fingerprinting.extract import extract_page

    page = f"""<html><head><title>Night trains</title></head><body>
    <div id="navigation-container">
      <ul><li><a href="/a">Home</a></li><li><a href="/b">News</a></li></ul>
      {ARTICLE}
    </div>
    <footer><p>Imprint</p><p>Contact us</p></footer>
    </body></html>"""
    found = extract_page(parse_html(page))
    texts = [" ".join(text.split()) for text, _ in found.blocks]
    assert "Home" in texts and "News" in texts  # the menu's items, not the wrapper whole
    assert any(t.startswith("The railway company") for t in texts)
    assert any("Imprint" in t and "Contact us" in t for t in texts)  # the landmark: one block
    assert found.complete
