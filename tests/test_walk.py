"""The compiled walk (``scrapy_simhash.fingerprinting._walk``) against the Python walk it replaces.

Both must return the same blocks, placeholders, spans and budgets on any tree
(and the same text of soft-dropped subtrees, ``_subtree_text``, and the same
blocks and budgets when every visible block is read, ``_Walker.blocks``):
generated pages (hypothesis), trees built with lxml's API (namespaces, entity
references, CDATA, processing instructions), pathologically deep nesting, the
budgets cut short, the hostile shapes of ``evaluation.hostile`` with every
budget small enough to run out, and every corpus web page.
"""

from __future__ import annotations

import html
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from parsel import Selector

from evaluation.corpus import ABSENT_REASON, corpus_dir, web_pages
from evaluation.hostile import SHAPES
from scrapy_simhash.fingerprinting import extract as E

COMPILED = E._walk
needs_compiled = pytest.mark.skipif(
    COMPILED is None, reason="scrapy_simhash.fingerprinting._walk is not built (pure-Python install)"
)


@contextmanager
def walk_mode(compiled: bool, **budgets: int):
    """Run with the compiled or the Python walk, and optionally smaller budgets."""
    saved = {name: getattr(E, name) for name in budgets}
    E._walk = COMPILED if compiled else None
    for name, value in budgets.items():
        setattr(E, name, value)
    try:
        yield
    finally:
        E._walk = COMPILED
        for name, value in saved.items():
            setattr(E, name, value)


def _item(item) -> tuple:
    if type(item) is tuple:
        return item
    return ("dropped", item.el.tag, item.kind, item.in_link, item.in_main, item.weak,
            item.depth, item.chars)


def budgets_of(walker) -> tuple:
    return (walker.chars, walker.elements, walker.read, walker.scan_chars, walker.scan_elements,
            walker.items, walker.name_chars, walker.names)


def walk_result(root, compiled: bool, **budgets: int) -> tuple:
    """What the walker returns for a page: the first walk, the full expansion
    (every placeholder walked, nested walks included), the budgets used, and
    what :func:`extract_page` makes of it."""
    with walk_mode(compiled, **budgets):
        _, body = E._head_and_body(root)
        start = body if body is not None else root
        walker = E._Walker()
        items, spans = walker.run(start, E._HEADING_TAGS.get(start.tag, 0), False, False)
        first = ([_item(i) for i in items], spans, budgets_of(walker))
        full = walker.expand(items, spans, -1, -1)
        expanded = budgets_of(walker)
        # every visible block, straight after a first walk (each placeholder
        # walked by blocks() itself; the scan budgets are the Python walk's only)
        reader = E._Walker()
        every = reader.blocks(reader.run(start, E._HEADING_TAGS.get(start.tag, 0), False, False)[0])
        read = (reader.chars, reader.elements, reader.read, reader.items, reader.name_chars,
                E._complete(reader))
        # extract_page: the main text, and every block (soft-dropped subtrees
        # read as one block each: E._subtree_text, compiled or not).
        return first, full, expanded, every, read, E.extract_page(root)


def assert_same(root, **budgets: int) -> None:
    assert walk_result(root, True, **budgets) == walk_result(root, False, **budgets)


TAGS = (
    "div p span a b i nav header footer aside article main section h1 h2 h3 pre li ul "
    "table tr td br script style noscript template form figure button svg time"
).split()
ATTRIBUTES = [
    "", "", "", ' class="content"', ' class="sidebar"', ' class="has-sidebar"',
    ' class="tag-social ad-slot"', ' id="comments"', ' id="main"', " hidden",
    ' aria-hidden="true"', ' aria-hidden="false"', ' role="navigation"', ' role=" Main "',
    ' style="display: none"', ' style="color:red"', ' class="post"  id="share-bar"',
]
PIECES = ["the", "of", "and", "is", "a", "cat", "sat", "on", "1", " ", " ", "\n", "\t",
          "\u00a0", "\u3000", "é", "漢字", "の", "’", "&", "<", "𝒳"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=12).map(lambda p: html.escape("".join(p)))


def _element(parts: tuple) -> str:
    tag, attributes, text, children, tail = parts
    return f"<{tag}{attributes}>{text}{''.join(children)}</{tag}>{tail}"


NODES = st.recursive(
    TEXT | st.just("<!-- a comment -->") | st.just("&copy; &amp;"),
    lambda children: st.tuples(
        st.sampled_from(TAGS), st.sampled_from(ATTRIBUTES), TEXT,
        st.lists(children, max_size=5), TEXT,
    ).map(_element),
    max_leaves=40,
)


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.lists(NODES, max_size=6), title=TEXT)
def test_generated_pages(body: list[str], title: str) -> None:
    page = f"<html><head><title>{title}</title></head><body>{''.join(body)}</body></html>"
    root = E.parse_html(page)
    if root is not None:
        assert_same(root)
        assert_same(root, MAX_DEPTH=3, MAX_ELEMENTS=12, MAX_TEXT_CHARS=30)
    assert_same(Selector(text=page).root)  # lxml.html classes, comments kept


@needs_compiled
def test_api_built_trees() -> None:
    root = etree.fromstring(
        b'<html xmlns:x="urn:x"><head><title>T</title></head><body>'
        b'<div class="nav">menu <![CDATA[cdata text]]> more</div>'
        b'<x:p class="ad">namespaced element, its class counts</x:p>'
        b'<p x:class="ad">a namespaced class does not</p>'
        b"<?pi data?>tail of a processing instruction"
        b'<div xmlns="urn:y"><script>var a;</script><p>default namespace text</p></div>'
        b"<footer><p>a footer with some words in it</p><script>x = 1;</script></footer>"
        b"</body></html>"
    )
    body = root[1]
    footer = body[-1]
    footer.append(etree.Entity("nbsp"))  # an entity reference: counted by Python
    paragraph = etree.SubElement(body, "p")
    paragraph.text = "text before "
    paragraph.append(etree.Entity("amp"))
    paragraph[-1].tail = " and after an entity"
    empty = etree.SubElement(body, "nav")  # a dropped element with no children
    empty.tail = "tail after an empty nav"
    assert_same(root)
    assert_same(root, MAX_DEPTH=1)


@needs_compiled
def test_deep_nesting_is_read_flat_past_max_depth() -> None:
    page = (
        "<html><body><p>intro words here</p>" + "<div>" * 1900
        + "deep <b>text</b> of the page" + "</div>" * 1900 + "<p>after</p></body></html>"
    )
    for root in (Selector(text=page).root, E.parse_html(page)):
        assert_same(root)
    root = etree.Element("html")
    element = etree.SubElement(root, "body")
    for _ in range(5000):  # deeper than Python's recursion limit
        element = etree.SubElement(element, "div")
    element.text = "the deepest text"
    assert_same(root)
    assert E.extract(root).blocks == ["the deepest text"]


@needs_compiled
def test_dropped_subtree_counts_match_python() -> None:
    page = (
        "<html><body><article><p>" + "main words " * 40 + "</p></article>"
        "<aside>  side\u00a0bar \u3000 words<script>var  x = 'a  b';</script>"
        "<style>p{}</style><noscript>no <script>s</script> script</noscript>"
        "<template>t</template>&nbsp;é漢字</aside></body></html>"
    )
    assert_same(E.parse_html(page))
    assert_same(Selector(text=page).root)


@pytest.mark.corpus
@needs_compiled
def test_corpus_pages() -> None:
    if corpus_dir() is None:
        pytest.skip(ABSENT_REASON)
    for _url, path, _annotations in web_pages():
        data = path.read_bytes()
        assert_same(E.parse_html(data))
        assert_same(Selector(text=data.decode("utf-8", errors="replace")).root)


@needs_compiled
def test_tag_bits_are_the_same_in_both_walks() -> None:
    assert COMPILED.TAG_BITS == E.TAG_BITS
    # The Python walk's tuples are read off the same codes.
    assert E._tag_rule("script") is E._SKIP
    assert E._tag_rule("nav") == (True, False, True, None, False, False, True)
    assert E._tag_rule("{urn:x}header") == (False, True, True, None, False, False, True)
    assert E._tag_rule("article") == (False, False, False, None, False, True, True)
    assert E._tag_rule("a") == (False, False, True, None, True, False, False)
    assert E._tag_rule("h2")[3] == 2 and E._tag_rule("pre")[3] == E._CODE


@needs_compiled
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hostile_shapes_within_budgets(shape: str) -> None:
    """Both walks cut the hostile shapes at the same places, with every budget
    small enough to run out."""
    page = SHAPES[shape](20_000)
    small = dict(
        MAX_READ_CHARS=4000, MAX_SCAN_CHARS=3000, MAX_SCAN_ELEMENTS=300, MAX_ELEMENTS=1500,
        MAX_ATTRIBUTE_CHARS=40, MAX_DEPTH=20, MAX_TEXT_CHARS=2500, MAX_NAME_CHARS=500,
        MAX_ITEMS=300,
    )
    for root in (E.parse_html(page), Selector(text=page).root):
        assert_same(root)
        assert_same(root, **small)
