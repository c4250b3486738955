"""Main text of an HTML page, read from an lxml tree without modifying it.

The tree is walked once, read-only (comments and processing instructions are
skipped, their tails kept). Text is gathered into blocks (paragraphs, list
items, cells...) and headings; template parts are left out by rules borrowed
from resiliparse, trafilatura and readability:

* never text: ``script style noscript template iframe svg``, form controls,
  ``time`` and similar;
* soft drops (see the guard below): ``nav footer aside form figure``,
  ``header`` outside an ``article`` (an article's own header is kept), hidden
  elements (``hidden``, ``aria-hidden="true"``, inline ``display:none`` /
  ``visibility:hidden``), ARIA landmarks (navigation, banner, contentinfo,
  complementary, search, menu...), and elements whose class/id *tokens* name
  template parts (ads, menus, sidebars, share bars, related links, cookie
  banners, comments, bylines...; ``has-sidebar`` and CMS taxonomy classes such
  as ``tag-social`` do not count; ``article main body`` never drop by name);
* blocks whose text is mostly link text, and headings with no kept text in
  their section (the titles of "Related" or "Most read" boxes);
* then everything outside the main-content region: the deepest block element
  holding :data:`REGION_SHARE` of the kept body text's weight (its words, or
  the spot signatures the fingerprint is made of). What is left around it are
  the template's leftovers (blurbs, teaser lists, a second site's boxes); inside
  it every block counts fully (no positional weighting). Headings count only
  inside it. The region is not looked for when the fallbacks below apply,
  unless the elements they bring back lie in the page's declared main content.

Over-pruning guard: a soft-dropped element holding more than
:data:`GUARD_SHARE` of the page's visible text is kept. Class/id names can be
wrong (``class="sidebar-layout"``, or Drupal's ``field--label-hidden`` on the
article's wrapper) where landmarks (the tag, role and hiding rules) are not:
so an element dropped for its name alone is kept when it holds more than
:data:`GUARD_SHARE` of the page's own text, the text outside its landmarks.
Whether an article survives then does not depend on how much text its
template's menus, headers and footers hold: the same article in another
site's template is extracted the same way. When less than
:data:`MIN_KEPT_SHARE` of the visible text (or fewer than
:data:`MIN_KEPT_CHARS` characters) survives, the class/id rules are ignored:
first for the elements holding :data:`MIN_KEPT_SHARE` of the page's own text
(a misnamed wrapper; captions, share bars and cookie notices stay out), then
for all; if that is still too little, every rule is off but link lists stay
out, then the text outside the landmarks is read whole, and a page with too
little of it whose landmarks hold most of its text gets no main text (its
own text cannot be told from its template's). Soft-dropped
subtrees are only walked when the guard or a fallback needs them, which keeps
the walk under a millisecond on typical pages.

Bounds, so that any page costs a bounded time whatever its size or shape,
given as HTML or as a tree (parsel's included), each a budget of the whole
page (all its walks counted). They cut 24 of the corpus's 13,506 pages (its
largest indexes and source listings: Python's ``contents.html``, libstdc++'s
biggest headers); a cut page gets a fingerprint of what was read and is
dropped only as a byte copy (:attr:`PageText.complete`):

* HTML as ``str``/``bytes`` is cut to :data:`MAX_HTML_CHARS` characters before
  parsing (the parse itself is lxml's; a tree given is already parsed);
* walking stops after :data:`MAX_ELEMENTS` elements, :data:`MAX_TEXT_CHARS`
  kept characters or :data:`MAX_ITEMS` blocks, and text is read into blocks up
  to :data:`MAX_READ_CHARS` characters (a longer text is cut there; the
  soft-dropped subtrees' text read for :attr:`PageText.blocks` counts too);
* elements nested more than :data:`MAX_DEPTH` levels below the start are read
  as plain text (parsel's trees can be 2,048 levels deep), so the recursion is
  bounded;
* measuring soft-dropped subtrees reads at most :data:`MAX_SCAN_CHARS`
  characters and :data:`MAX_SCAN_ELEMENTS` elements;
* attribute values are read up to :data:`MAX_ATTRIBUTE_CHARS` characters, the
  title up to :data:`MAX_TITLE_CHARS`; at most :data:`MAX_NAME_CHARS`
  characters of distinct class/id values are classified and of style values
  searched;
* the process-wide caches keyed by page content keep bounded keys (class/id
  values up to :data:`_CACHED_VALUE_CHARS` characters, class names up to
  :data:`_CACHED_NAME_CHARS`).

``python -m bench.bench_hostile`` shows what hostile shapes cost on both paths.

The walk is compiled (``_walk.pyx``, over lxml's C API) when the package was
built with it, and done in Python otherwise: the same results either way.
"""

from __future__ import annotations

import codecs
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import NamedTuple

from bs4.dammit import EncodingDetector
from lxml import etree
from lxml.html import HTMLParser as _LxmlHtmlParser
from lxml.html import HtmlElementClassLookup

try:  # the compiled walk, when the package was built with it
    import scrapy_simhash.fingerprinting._walk as _walk
except ModuleNotFoundError:  # pragma: no cover - a pure-Python install
    _walk = None
except (ImportError, ValueError) as exc:  # pragma: no cover - built for another lxml
    logging.getLogger(__name__).warning(
        "The compiled walk (scrapy_simhash.fingerprinting._walk) cannot be used with this lxml "
        "(%s); extracting in Python, with the same results, more slowly", exc
    )
    _walk = None

logger = logging.getLogger(__name__)

#: Characters of HTML parsed at most (longer ``str``/``bytes`` pages are cut).
MAX_HTML_CHARS = 3_000_000
#: Characters of visible text kept at most: walking stops at the first
#: element after this many.
MAX_TEXT_CHARS = 200_000
#: Characters of text read into blocks at most (whitespace included, every
#: walk of the page counted): a longer text is cut there and walking stops.
MAX_READ_CHARS = 400_000
#: Elements walked at most (elements read as plain text included).
MAX_ELEMENTS = 30_000
#: Nesting depth below the walk's start (``body``) beyond which an element is
#: read as plain text (its whole text, no rules): bounds the walk's recursion.
MAX_DEPTH = 128
#: Characters and elements read at most, over the whole page, to measure the
#: soft-dropped subtrees (for the guard below). A subtree past what is left
#: counts as :data:`MAX_SCAN_CHARS` characters, and so does every one after it.
MAX_SCAN_CHARS = 4_000_000
MAX_SCAN_ELEMENTS = 200_000
#: Characters of an attribute value (class, id, style, role) read at most.
MAX_ATTRIBUTE_CHARS = 8192
#: Characters of distinct class/id values classified and of style values
#: searched, at most per page: past them, class, id and style no longer drop
#: elements (reading them is the costly part of a walk).
MAX_NAME_CHARS = 250_000
#: Blocks and placeholders made at most, every walk of the page counted:
#: walking stops there.
MAX_ITEMS = 5_000
#: Characters of the title read at most.
MAX_TITLE_CHARS = 2000
#: Kept share of the visible text below which class/id names are trusted
#: less (first for the elements holding this share of the text outside the
#: landmarks), and then every rule is off (the last fallback).
MIN_KEPT_SHARE = 0.1
#: Kept characters below which the fallbacks apply.
MIN_KEPT_CHARS = 200
#: A block whose link text exceeds this share of its text is dropped.
MAX_LINK_DENSITY = 0.5
#: A soft-dropped element holding more than this share of the text is kept
#: (of the text outside the landmarks, when it was dropped for its name).
GUARD_SHARE = 0.5
#: The main-content region: the deepest block element holding this share of
#: the kept body text's weight.
REGION_SHARE = 0.8

# Elements whose content is never visible text.
_SKIP_TAGS = frozenset(
    "script style noscript template iframe svg math object embed canvas audio video "
    "select option textarea button label head title time".split()
)
_SCRIPT_TAGS = ("script", "style", "noscript", "template")
# Template landmarks and forms (soft drops); <header> too unless inside an
# <article> (the article's own header). Never dropped for a class/id name:
_DROP_TAGS = frozenset(("nav", "footer", "aside", "form", "figure"))
_NEVER_DROPPED = frozenset(("article", "main", "body"))
_BOILER_ROLES = frozenset(
    "navigation banner contentinfo complementary search menu menubar dialog alertdialog".split()
)
_HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_CODE = 7  # block kind of <pre> (0: body text, 1-6: heading level)
_BLOCK_TAGS = frozenset(
    "html body div p li ul ol dl dt dd td th tr table tbody thead tfoot caption "
    "blockquote pre section article main header footer nav aside form fieldset "
    "figure figcaption address details summary hr br center h1 h2 h3 h4 h5 h6 "
    "legend dialog menu".split()
)
# class/id tokens naming template parts.
_BOILER_TOKENS = frozenset(
    """nav navbar navigation menu menus submenu breadcrumb breadcrumbs sidebar sidebars
    footer masthead ad ads adv advert adverts advertisement advertisements advertising
    adsense dfp sponsor sponsors sponsored promo promos promoted banner outbrain taboola
    share shares sharing social socials related recommended recommendations comment
    comments disqus cookie cookies consent gdpr newsletter subscribe subscription popup
    pagination pager toolbar skiplink hidden teaser teasers tags
    tagcloud tagged copyright copyrights legal caption captions credit credits byline
    author authors bio rating ratings widget widgets paywall disclaimer noprint popular
    date dateline published updated timestamp meta metadata respond reply cta tweet
    twitter facebook instagram pinterest whatsapp login signup werbung anzeige kommentar
    kommentare""".split()
)
# Roots that also name template parts when glued to other words ("sharebar").
_BOILER_PREFIXES = (
    "advert", "breadcrumb", "comment", "cookie", "footer", "kommentar", "navbar",
    "navigation", "newsletter", "outbrain", "paywall", "related", "share", "sidebar",
    "social", "sponsor", "taboola",
)
_TAXONOMY_TOKENS = frozenset(
    "tag tags category categories cat post postid page format single term topic elementor".split()
)
# Tokens of wrappers that merely mention a template part ("has-sidebar").
_WRAPPER_TOKENS = frozenset("has with no without".split())
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_CLASS_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>", re.I)


class MainText(NamedTuple):
    """What a page says: its title, its headings and its main-text blocks."""

    title: str
    headings: list[str]
    blocks: list[str]
    #: Preformatted blocks (``pre``: code, listings), kept apart from prose.
    code: list[str]
    #: Every block of the main-content region in document order, whether the
    #: rules above kept it or not (link lists, a table's link-only cells): what
    #: the drop decision's main-text sketch reads, so that what the extractor
    #: leaves out of a region cannot make two pages' main texts agree. Empty
    #: for a page with no main text, or a main text made elsewhere (then the
    #: kept blocks are read).
    region: Sequence[str] = ()


_BOILER_PREFIX = re.compile(r"(?:^| )(?:%s)" % "|".join(_BOILER_PREFIXES))


#: Class/id values and class names longer than these are classified without
#: being cached: the caches live as long as the process, their keys come from
#: pages (at most 8,192 x 256 + 65,536 x 64 characters are kept).
_CACHED_VALUE_CHARS = 256
_CACHED_NAME_CHARS = 64


@lru_cache(maxsize=8192)
def _is_boiler_name(value: str) -> bool:
    """Whether a class/id value names a template part (per class name, ignoring
    CMS taxonomy classes such as ``tag-social-media`` or ``category-ads``).
    Cached: only for values up to :data:`_CACHED_VALUE_CHARS` characters."""
    return _boiler_name(value)


def _boiler_name(value: str) -> bool:
    """:func:`_is_boiler_name`, uncached (long values)."""
    for name in value.split():
        if _is_boiler_class(name) if len(name) <= _CACHED_NAME_CHARS else _boiler_class(name):
            return True
    return False


@lru_cache(maxsize=65536)
def _is_boiler_class(name: str) -> bool:
    # Cached per class name too: values differ from page to page ("post-123
    # entry-content"), their names repeat across a site.
    return _boiler_class(name)


def _boiler_class(name: str) -> bool:
    tokens = _CLASS_TOKEN.findall(name)
    if not tokens:
        return False
    joined = " ".join(tokens).lower()  # ASCII letters only
    tokens = joined.split()
    if tokens[0] in _TAXONOMY_TOKENS or not _WRAPPER_TOKENS.isdisjoint(tokens):
        return False
    return not _BOILER_TOKENS.isdisjoint(tokens) or _BOILER_PREFIX.search(joined) is not None


def decode_html(page: bytes, encoding: str | None = None) -> str:
    """Decode HTML bytes: BOM, then ``encoding``, then the declared charset, then
    UTF-8, then windows-1252 with replacement. Never raises."""
    return _decode(page, encoding)[0]


def _decode(page: bytes, encoding: str | None) -> tuple[str, bytes | None]:
    """:func:`decode_html`, and the bytes when they are the text's UTF-8 (so
    that the parser can be given them without encoding the text again)."""
    data, bom_encoding = EncodingDetector.strip_byte_order_mark(page)
    candidates = [bom_encoding, encoding]
    if bom_encoding is None:
        candidates.append(
            EncodingDetector.find_declared_encoding(data[:4096], is_html=True)
        )
    candidates += ["utf-8", "windows-1252"]
    for candidate in candidates:
        if not candidate:
            continue
        try:
            info = codecs.lookup(candidate)
        except (LookupError, ValueError):  # unknown, or a NUL in the name
            continue
        if not info._is_text_encoding:  # base64, zlib, rot13...: not from a page
            continue
        name = info.name
        if name in ("utf-16", "utf-16-le", "utf-16-be", "utf-32") and bom_encoding is None:
            # A declared UTF-16 in an ASCII-readable page is a lie.
            continue
        try:
            text = data.decode(name)
        except ValueError:  # UnicodeError: undefined, punycode, idna... cannot read a page
            continue
        return text, data if name == "utf-8" else None
    return data.decode("utf-8", errors="replace"), None


_local = threading.local()


def _parser() -> etree.HTMLParser:
    # lxml parsers must not be shared between threads.
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = etree.HTMLParser(
            encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True
        )
    return parser


def parse_html(page: str | bytes, encoding: str | None = None) -> etree._Element | None:
    """Parse HTML ``str``/``bytes`` into an lxml root element; None when empty.

    Bytes are decoded by :func:`decode_html`; an XML declaration is harmless.
    Only the first :data:`MAX_HTML_CHARS` characters are parsed. Never raises on
    page content.
    """
    data = None
    if isinstance(page, (bytes, bytearray, memoryview)):
        text, data = _decode(bytes(page[: MAX_HTML_CHARS * 4]), encoding)
    elif isinstance(page, str):
        text = page
    else:
        raise TypeError(f"page must be str, bytes or an lxml element, not {type(page).__name__}")
    if len(text) > MAX_HTML_CHARS:
        text, data = text[:MAX_HTML_CHARS], None
    if _XML_DECLARATION.match(text):
        text, data = _XML_DECLARATION.sub("", text, count=1), None
    if not text or text.isspace():
        return None
    if data is None:
        data = text.encode("utf-8", errors="replace")
    try:
        return etree.fromstring(data, parser=_parser())
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        logger.debug("Cannot parse a page of %d characters: %s", len(text), exc)
        return None


_PLAIN_LOOKUP = etree.ElementDefaultClassLookup()
_HTML_LOOKUP = HtmlElementClassLookup()


@contextmanager
def plain_elements(root: etree._Element) -> Iterator[None]:
    """Read a tree parsed by ``lxml.html.HTMLParser`` with plain lxml elements.

    ``lxml.html`` picks the class of each element object lxml creates with a
    Python callback (``make bench-fingerprint``, rows ``parsel tree -> fp`` and
    ``parsel, plain elements``, shows what that costs). Within
    this block the tree's parser uses lxml's default classes; on leaving it,
    the lookup ``lxml.html.HTMLParser`` sets is restored. Only for a tree
    whose parser no other thread uses (parsel makes one per document, as for
    ``response.selector``), and only if no element read inside the block is
    kept after it (the element objects :func:`extract` creates die with it).
    Other trees are read as they are.
    """
    parser = root.getroottree().parser
    if type(parser) is not _LxmlHtmlParser:
        yield
        return
    parser.set_element_class_lookup(_PLAIN_LOOKUP)
    try:
        yield
    finally:
        parser.set_element_class_lookup(_HTML_LOOKUP)


# What the walk does with an element, by tag, as bits of one int (the tag
# code): the one definition of the tag rule. The compiled walk reads the same
# bits (its ``TAG_BITS`` equals this one, tests/test_walk.py checks it); the
# Python walk reads the code unpacked into a tuple (:func:`_tag_rule`).
TAG_BITS = {
    "SKIP": 1,  # its content is never text
    "DROP_TAG": 2,  # soft-dropped for its tag
    "HEADER": 4,  # soft-dropped outside an <article>
    "NAMED": 8,  # its class/id and hiding attributes can drop it
    "IS_LINK": 16,
    "IS_MAIN": 32,  # an <article>
    "BLOCK": 64,  # block-level: its text is a block of its own
    "KIND_SHIFT": 8,  # from this bit: the block kind plus one (0: the parent's)
}
_SKIP_BIT, _DROP_TAG, _HEADER, _NAMED, _IS_LINK, _IS_MAIN, _BLOCK, _KIND_SHIFT = (
    TAG_BITS.values()
)
_TAG_CODES: dict[str, int] = {}


def _tag_code(tag: str) -> int:
    """The tag code of an element's tag (cached; tag names come from pages, so
    the cache is bounded)."""
    code = _TAG_CODES.get(tag)
    if code is None:
        if tag in _SKIP_TAGS:
            code = _SKIP_BIT
        else:
            name = tag.rpartition("}")[2].rpartition(":")[2]
            kind = _CODE if name == "pre" else _HEADING_TAGS.get(name)
            code = (
                _DROP_TAG * (name in _DROP_TAGS)
                | _HEADER * (name == "header")
                | _NAMED * (name not in _NEVER_DROPPED)
                | _IS_LINK * (name == "a")
                | _IS_MAIN * (name == "article")
                | _BLOCK * (name in _BLOCK_TAGS)
                | (0 if kind is None else (kind + 1) << _KIND_SHIFT)
            )
        if len(_TAG_CODES) < 4096:
            _TAG_CODES[tag] = code
    return code


# The Python walk's form of a tag code: _SKIP, or (drop_tag, header, named,
# kind, is_link, is_main, block) with ``kind`` None to inherit the parent's.
_SKIP = ()
_TAG_RULES: dict[str, tuple] = {}


def _tag_rule(tag: str) -> tuple:
    code = _tag_code(tag)
    if code & _SKIP_BIT:
        rule = _SKIP
    else:
        kind = code >> _KIND_SHIFT
        rule = (
            bool(code & _DROP_TAG),
            bool(code & _HEADER),
            bool(code & _NAMED),
            kind - 1 if kind else None,
            bool(code & _IS_LINK),
            bool(code & _IS_MAIN),
            bool(code & _BLOCK),
        )
    if len(_TAG_RULES) < 4096:
        _TAG_RULES[tag] = rule
    return rule


class _Dropped:
    """A soft-dropped subtree, walked only if the guard or a fallback needs it."""

    __slots__ = ("el", "kind", "in_link", "in_main", "weak", "depth", "chars")

    def __init__(
        self, el, kind: int, in_link: bool, in_main: bool, weak: bool, depth: int, chars: int
    ) -> None:
        self.el, self.kind, self.weak, self.depth = el, kind, weak, depth
        self.in_link, self.in_main = in_link, in_main
        self.chars = chars  # visible characters, approximately


def _texts(el, elements_left: int) -> Iterator[tuple[str | None, object]]:
    """The texts of ``el``'s subtree in document order (its tail left out), each
    with the element it starts (None for a tail), as lxml reads them: comments,
    processing instructions and entity references give only their tails. Stops
    after ``elements_left`` elements (yielding ``(None, False)`` then)."""
    yield el.text, el
    stack = [(el, iter(el))]
    visited = 0
    while stack:
        node = next(stack[-1][1], None)
        if node is None:
            done = stack.pop()[0]
            if stack:
                yield done.tail, None
        elif node.tag.__class__ is str:
            visited += 1
            if visited > elements_left:
                yield None, False
                return
            yield node.text, node
            stack.append((node, iter(node)))
        else:
            yield node.tail, None


def _flat_text(el, chars_left: int, elements_left: int) -> tuple[str, int]:
    """The text of ``el``'s subtree (scripts' included, as
    ``etree.tostring(el, method="text")``), cut at ``chars_left`` characters or
    at the element past ``elements_left``; and the elements read. The Python
    walk reads elements nested past :data:`MAX_DEPTH` with it (``_walk.pyx``
    does the same in C)."""
    parts = []
    elements = -1  # el itself is not counted
    for text, element in _texts(el, elements_left):
        if element is False:
            elements = elements_left + 1
            break
        if element is not None:
            elements += 1
        if text:
            if len(text) >= chars_left:
                parts.append(text[:chars_left])
                break
            chars_left -= len(text)
            parts.append(text)
    return "".join(parts), elements


def _measure(el, chars_left: int, elements_left: int) -> tuple[int, int, int] | None:
    """``(visible characters, characters read, elements read)`` of a soft-dropped
    subtree: the length of its text with runs of whitespace counted as one
    space, less the text of the scripts and styles in it (``_walk.pyx`` counts
    the same in C); None when it holds more than ``chars_left`` characters or
    ``elements_left`` elements. Read at C speed, whole: once a subtree is past
    the budgets, :class:`_Walker` measures no other."""
    text = etree.tostring(el, method="text", encoding=str, with_tail=False)
    if len(text) > chars_left:
        return None
    elements = sum(1 for _ in el.iterdescendants(etree.Element))
    if elements > elements_left:
        return None
    scripts = sum(len(script.text or "") for script in el.iterdescendants(_SCRIPT_TAGS))
    return len(" ".join(text.split())) - scripts, len(text), elements


class _Walker:
    """Read-only walks over a tree, with the page's budgets (:data:`MAX_ELEMENTS`,
    :data:`MAX_TEXT_CHARS`, :data:`MAX_READ_CHARS`, :data:`MAX_SCAN_CHARS`,
    :data:`MAX_SCAN_ELEMENTS`) shared by all of them.

    A walk returns items in document order: blocks ``(text, kind, link_chars)``
    (kind 0 for body text, 1-6 for a heading level), flushed at block-level
    elements, and :class:`_Dropped` placeholders for soft-dropped subtrees.
    It is done by the compiled :mod:`scrapy_simhash.fingerprinting._walk` when that is built
    (the same items, faster: the ``Python walk`` rows of ``make
    bench-fingerprint``), else in Python.
    """

    __slots__ = (
        "chars", "elements", "read", "scan_chars", "scan_elements", "items", "name_chars", "names",
        "walked",
    )

    def __init__(self) -> None:
        self.chars = 0  # kept text
        self.elements = 0
        self.read = 0  # text read into blocks
        self.scan_chars = MAX_SCAN_CHARS  # left to measure dropped subtrees
        self.scan_elements = MAX_SCAN_ELEMENTS
        self.items = 0  # blocks and placeholders made
        self.name_chars = MAX_NAME_CHARS  # left to classify class/id values
        self.names: dict[str, bool] = {}  # class/id value -> names a template part
        # placeholder -> its subtree's items, once a guard or fallback walked it
        # (:func:`_all_blocks` gives such a subtree as its blocks)
        self.walked: dict = {}

    def boiler(self, value: str) -> bool:
        """Whether a class/id value names a template part (:func:`_is_boiler_name`),
        as both walks read it: cut to :data:`MAX_ATTRIBUTE_CHARS`, each distinct
        value classified once per page within :data:`MAX_NAME_CHARS`."""
        value = value[:MAX_ATTRIBUTE_CHARS]
        known = self.names.get(value)
        if known is None:
            if len(value) > self.name_chars:
                self.name_chars = -1
                return False
            self.name_chars -= len(value)
            known = self.names[value] = (
                _is_boiler_name(value) if len(value) <= _CACHED_VALUE_CHARS else _boiler_name(value)
            )
        return known

    def style(self, value: str | None) -> str | None:
        """A style value as both walks read it: cut to :data:`MAX_ATTRIBUTE_CHARS`,
        None once :data:`MAX_NAME_CHARS` is spent."""
        if value is None:
            return None
        value = value[:MAX_ATTRIBUTE_CHARS]
        if len(value) > self.name_chars:
            self.name_chars = -1
            return None
        self.name_chars -= len(value)
        return value

    def measure(self, el) -> int:
        """The visible characters of a soft-dropped subtree (:func:`_measure`),
        within what is left of the scan budgets; past them,
        :data:`MAX_SCAN_CHARS`, and the budgets are spent."""
        if self.scan_chars >= 0:
            measured = _measure(el, self.scan_chars, self.scan_elements)
            if measured is not None:
                chars, read, elements = measured
                self.scan_chars -= read
                self.scan_elements -= elements
                return chars
        self.scan_chars = self.scan_elements = -1
        return MAX_SCAN_CHARS

    def run(
        self, start, kind: int, in_link: bool, in_main: bool, depth: int = 0
    ) -> tuple[list, list]:
        """Items of the subtree of ``start`` (at ``depth`` below the top), and
        the spans ``(first, end)`` of the items of each block-level element
        that yields any."""
        if _walk is not None:
            (
                items, spans, self.chars, self.elements, self.read, self.scan_chars,
                self.scan_elements, self.name_chars,
            ) = _walk.walk(
                start, kind, in_link, in_main, depth, *self._compiled_args(), _Dropped,
            )
            self.items += len(items)
            return items, spans
        return self._run(start, kind, in_link, in_main, depth)

    def blocks(self, items: list) -> list:
        """Every visible block of the page whose first walk gave ``items``
        (:func:`_all_blocks`), by the compiled walk when it is built (the same
        blocks and budgets, but the scan budgets: it measures no subtree, as
        nothing reads the measures past this)."""
        if _walk is None:
            return _all_blocks(items, self)
        blocks, self.chars, self.elements, self.read, self.items, self.name_chars = (
            _walk.all_blocks(items, self.walked, *self._compiled_args())
        )
        return blocks

    def _compiled_args(self) -> tuple:
        """What both compiled walks take after their own arguments: the budgets
        used so far, the limits (read at each call: the tests set smaller ones),
        and the rules' functions and the page's classified class/id values."""
        used = (self.chars, self.elements, self.read, self.scan_chars, self.scan_elements,
                self.name_chars, self.items)
        limits = (MAX_TEXT_CHARS, MAX_ELEMENTS, MAX_READ_CHARS, MAX_DEPTH, MAX_SCAN_CHARS,
                  MAX_ATTRIBUTE_CHARS, _CACHED_VALUE_CHARS, MAX_ITEMS)
        return used, limits, _tag_code, self.names, _is_boiler_name, _boiler_name, _hides

    def _run(
        self, start, kind: int, in_link: bool, in_main: bool, depth: int
    ) -> tuple[list, list]:
        """:meth:`run` in Python (``_walk.pyx`` does the same)."""
        items: list = []
        spans: list = []
        append = items.append
        buf: list[str] = []
        link = 0
        chars = self.chars
        elements = self.elements
        read = self.read
        tag_rules = _TAG_RULES
        measure = self.measure
        boiler = self.boiler
        first_item = self.items

        def take(text: str, in_link: bool) -> None:
            # Text into the block, within MAX_READ_CHARS.
            nonlocal link, read
            if len(text) > MAX_READ_CHARS - read:
                text = text[: MAX_READ_CHARS - read]
                if not text:
                    return
            read += len(text)
            buf.append(text)
            if in_link:
                link += len(text)

        def flush(kind: int) -> None:
            nonlocal link, chars
            text = buf[0] if len(buf) == 1 else "".join(buf)
            buf.clear()
            if not text.isspace():
                append((text, kind, link))
                chars += len(text)
            link = 0

        def walk(el, kind: int, in_link: bool, in_main: bool, depth: int) -> bool:
            nonlocal elements
            text = el.text
            if text:
                take(text, in_link)
            depth += 1
            for child in el:
                tag = child.tag
                if tag.__class__ is str:
                    elements += 1
                    if (
                        elements > MAX_ELEMENTS or chars > MAX_TEXT_CHARS or read >= MAX_READ_CHARS
                        or first_item + len(items) >= MAX_ITEMS
                    ):
                        return False
                    if depth > MAX_DEPTH:
                        text, used = _flat_text(
                            child, MAX_READ_CHARS - read, MAX_ELEMENTS - elements
                        )
                        elements += used
                        if text:
                            take(text, in_link)
                        rule = _SKIP
                    else:
                        rule = tag_rules.get(tag)
                        if rule is None:
                            rule = _tag_rule(tag)
                    if rule is not _SKIP:
                        drop_tag, header, named, child_kind, is_link, is_main, block = rule
                        weak = False
                        drop = drop_tag or (header and not in_main)
                        if not drop and named:
                            names = child.keys()
                            if names:
                                if "class" in names and boiler(child.get("class")):
                                    drop = weak = True
                                elif "id" in names and boiler(child.get("id")):
                                    drop = weak = True
                                elif not _HIDING_ATTRIBUTES.isdisjoint(names):
                                    drop = _hides(
                                        "hidden" in names,
                                        _cut(child.get("aria-hidden")),
                                        _cut(child.get("role")),
                                        self.style(child.get("style")),
                                    )
                        if child_kind is None:
                            child_kind = kind
                        child_link = in_link or is_link
                        child_main = in_main or is_main
                        if drop:
                            if buf:
                                flush(kind)
                            append(_Dropped(
                                child, child_kind, child_link, child_main, weak, depth,
                                measure(child),
                            ))
                        else:
                            if block:
                                if buf:
                                    flush(kind)
                                first = len(items)
                            if len(child):
                                if not walk(child, child_kind, child_link, child_main, depth):
                                    return False
                            else:  # a leaf: its text, without a call
                                text = child.text
                                if text:
                                    take(text, child_link)
                            if block:
                                if buf:
                                    flush(child_kind)
                                span = (first, len(items))
                                # (a wrapper holding just its child's items
                                # adds nothing for the region: no repeat)
                                if span[1] > first and (not spans or spans[-1] != span):
                                    spans.append(span)
                            elif buf and child_kind != kind:
                                flush(child_kind)
                tail = child.tail
                if tail:
                    take(tail, in_link)
            return True

        walk(start, kind, in_link, in_main, depth)
        del walk, take  # break the closures' cycles: the proxies they saw die now
        if buf:
            flush(kind)
        self.chars, self.elements, self.read = chars, elements, read
        self.items += len(items)
        spans.append((0, len(items)))
        return items, spans

    def expand(
        self, items: list, spans: list, limit: float, weak_limit: float
    ) -> tuple[list, list]:
        """Walk the placeholders holding more than ``limit`` characters, or
        more than ``weak_limit`` when dropped for their class/id only (the
        guard); the blocks and their spans."""
        out: list = []
        out_spans: list = []
        position = [0] * (len(items) + 1)  # item index -> index in ``out``
        for n, item in enumerate(items):
            position[n] = len(out)
            if item.__class__ is not _Dropped:
                out.append(item)
            elif (
                item.chars > (weak_limit if item.weak else limit)
            ) and self.items < MAX_ITEMS:
                walked = self.run(item.el, item.kind, item.in_link, item.in_main, item.depth)
                self.walked[item] = walked[0]
                sub, sub_spans = self.expand(*walked, limit, weak_limit)
                base = len(out)
                out.extend(sub)
                out_spans.extend((first + base, end + base) for first, end in sub_spans)
        position[len(items)] = len(out)
        out_spans.extend((position[first], position[end]) for first, end in spans)
        return out, out_spans


_HIDING_ATTRIBUTES = frozenset(("hidden", "aria-hidden", "role", "style"))


def _cut(value: str | None) -> str | None:
    """An attribute value as the walks read it: its first
    :data:`MAX_ATTRIBUTE_CHARS` characters."""
    return value if value is None or len(value) <= MAX_ATTRIBUTE_CHARS else value[:MAX_ATTRIBUTE_CHARS]


def _hides(hidden: bool, aria_hidden: str | None, role: str | None, style: str | None) -> bool:
    """Whether an element with these attributes is hidden or a template landmark."""
    if hidden or aria_hidden == "true":
        return True
    if role and role.strip().lower() in _BOILER_ROLES:
        return True
    return bool(style and _HIDDEN_STYLE.search(style))


def _in_main_content(el) -> bool:
    """Whether ``el`` is inside the page's declared main content: a ``main``
    or ``article`` element, or an element with ``role="main"``."""
    for node in el.iterancestors():
        if node.tag in ("main", "article") or node.get("role") == "main":
            return True
    return False


def _select(blocks: list[tuple[str, int, int]]) -> tuple[list[bool], int]:
    """Which blocks to keep (not link lists, not headings of template boxes),
    and their characters."""
    keep = [link <= MAX_LINK_DENSITY * len(text) for text, _, link in blocks]
    # A heading with no kept body text in its section titles a template box
    # ("Related articles", "Comments"...). Walking back, the heading levels
    # below ``open_below`` have kept body text after them before the next
    # heading of their level or above: all of them after kept body text; a
    # heading of level k then closes levels k and deeper.
    open_below = 0
    for i in range(len(blocks) - 1, -1, -1):
        kind = blocks[i][1]
        if not kind or kind == _CODE:
            if keep[i]:
                open_below = 7
            continue
        if keep[i] and kind >= open_below:
            keep[i] = False
        if kind < open_below:
            open_below = kind
    kept = sum(len(b[0]) for b, k in zip(blocks, keep) if k)
    return keep, kept


class _Expansions:
    """:meth:`_Walker.expand` and :func:`_select` for the limits the guard and
    the fallbacks try in turn, each distinct expansion computed once: limits
    that walk the same placeholders (often none) share one result, so a page
    of many blocks is not read again for every fallback."""

    __slots__ = ("walker", "items", "spans", "dropped", "done")

    def __init__(self, walker: _Walker, items: list, spans: list) -> None:
        self.walker, self.items, self.spans = walker, items, spans
        self.dropped = [(n, i) for n, i in enumerate(items) if i.__class__ is _Dropped]
        self.done: dict = {}

    def __call__(self, limit: float, weak_limit: float) -> tuple[list, list, list[bool], int]:
        """``(blocks, spans, keep, kept)`` with these limits."""
        chosen = tuple(
            n for n, item in self.dropped if item.chars > (weak_limit if item.weak else limit)
        )
        # Placeholders nested in a walked one are expanded by the same limits.
        key = (chosen, limit, weak_limit) if chosen else ()
        found = self.done.get(key)
        if found is None:
            blocks, spans = self.walker.expand(self.items, self.spans, limit, weak_limit)
            found = self.done[key] = (blocks, spans, *_select(blocks))
        return found


def _head_and_body(root: etree._Element) -> tuple[str, etree._Element | None]:
    """The page's title (the first ``head/title``, else the first ``title``)
    and its ``body`` element (when the root is ``html``)."""
    title = body = None
    for child in root.iterchildren("head", "body"):
        if child.tag == "body":
            if body is None:
                body = child
        elif title is None:
            title = next(child.iterchildren("title"), None)
    if title is None:
        title = next(root.iterdescendants("title"), None)
    if root.tag != "html":
        body = None
    text = ""
    if title is not None:
        parts = []
        left = MAX_TITLE_CHARS
        for part in title.itertext():
            parts.append(part[:left])
            left -= len(part)
            if left <= 0:
                break
        text = " ".join("".join(parts).split())
    return text, body


def _root_element(page: object, encoding: str | None) -> etree._Element | None:
    if isinstance(page, (str, bytes, bytearray, memoryview)):
        return parse_html(page, encoding)
    if isinstance(page, etree._ElementTree):
        return page.getroot()
    if isinstance(page, etree._Element):
        return page
    raise TypeError(f"page must be str, bytes or an lxml element, not {type(page).__name__}")


def _region(
    blocks: list,
    spans: list,
    keep: list[bool],
    weigh_blocks: Callable[[list[str]], Sequence[float]],
) -> tuple[int, int]:
    """The blocks ``[first, end)`` of the deepest block element holding at least
    :data:`REGION_SHARE` of the weight of the kept body text: the main content,
    without the template's leftovers around it (teasers, blurbs, link boxes)."""
    # Body text and preformatted blocks (code) weigh; headings do not.
    body = [k and (not b[1] or b[1] == _CODE) for b, k in zip(blocks, keep)]
    weights = iter(weigh_blocks([b[0] for b, k in zip(blocks, body) if k]))
    cumulative = [0.0]
    counts = [0]  # body blocks before each position
    total = 0.0
    for k in body:
        if k:
            total += next(weights)
        cumulative.append(total)
        counts.append(counts[-1] + k)
    best = (0, len(blocks))
    if total <= 0:
        return best
    need = REGION_SHARE * total
    # A region is a container of the page's body text, never one block of it:
    # a lone paragraph outweighing short list items or table cells (a release
    # note's items under a prose footer) would leave out what the page says.
    least = min(2, counts[-1])
    for first, end in spans:
        if (
            end - first < best[1] - best[0]
            and cumulative[end] - cumulative[first] >= need
            and counts[end] - counts[first] >= least
        ):
            best = (first, end)
    return best


def _words(texts: list[str]) -> list[float]:
    return [float(len(text.split())) for text in texts]


class PageText(NamedTuple):
    """A page's main text, and every visible text block it holds."""

    main: MainText
    #: Every visible text of the page in document order, whatever the rules
    #: above decided (template, link lists and hidden parts included; within
    #: the walk's budgets), as ``(text, link characters)``: the title first,
    #: the blocks of the walk, and each soft-dropped landmark (a ``<nav>``
    #: menu, a footer) as one block (a subtree dropped for its class/id name
    #: alone as the blocks the walk reads in it). What the drop decision reads
    #: beside the main text, so that a wrong main text cannot hide what a page
    #: holds (:mod:`scrapy_simhash.fingerprinting.template`).
    blocks: list[tuple[str, int]]
    #: Whether ``blocks`` hold the whole page: False when a budget of the walk
    #: (:data:`MAX_ELEMENTS`, :data:`MAX_TEXT_CHARS`, :data:`MAX_READ_CHARS`,
    #: :data:`MAX_ITEMS`) cut it, or when the blocks were not asked for.
    complete: bool = False


_EMPTY = MainText("", [], [], [])


def extract(
    page: str | bytes | etree._Element,
    *,
    encoding: str | None = None,
    weigh: Callable[[str], float] | None = None,
    weigh_blocks: Callable[[list[str]], Sequence[float]] | None = None,
) -> MainText:
    """Return the title, headings and main-text blocks of a page.

    ``page`` is HTML (``str``/``bytes``) or an lxml element (such as
    ``response.selector.root``), which is read and never modified. ``weigh``
    gives a body-text block's weight for locating the main-content region (by
    default its number of words; the fingerprint uses its spot signatures);
    ``weigh_blocks`` gives the weights of all body-text blocks at once (in
    document order), for weights that are cheaper computed together.
    """
    if weigh_blocks is None:
        weigh_blocks = _words if weigh is None else (lambda texts: list(map(weigh, texts)))
    return _extract(page, encoding, weigh_blocks, False).main


def extract_page(
    page: str | bytes | etree._Element,
    *,
    encoding: str | None = None,
    weigh_blocks: Callable[[list[str]], Sequence[float]] | None = None,
) -> PageText:
    """:func:`extract`, and every visible block of the page, from the same walk."""
    return _extract(page, encoding, weigh_blocks or _words, True)


def _extract(
    page: str | bytes | etree._Element,
    encoding: str | None,
    weigh_blocks: Callable[[list[str]], Sequence[float]],
    whole: bool,
) -> PageText:
    """The main text, and with ``whole`` every visible block (else none)."""
    root = _root_element(page, encoding)
    if root is None:
        return PageText(_EMPTY, [])
    tag = root.tag
    if type(tag) is not str:  # a comment given as the root
        return PageText(_EMPTY, [])
    title, body = _head_and_body(root)
    start = body if body is not None else root
    walker = _Walker()
    items, spans = walker.run(start, _HEADING_TAGS.get(start.tag, 0), False, False)
    landmarks = named = 0
    for item in items:
        if item.__class__ is _Dropped:
            if item.weak:  # dropped for its class/id only
                named += item.chars
            else:  # a landmark: dropped for its tag, role or hiding
                landmarks += item.chars
    total = walker.chars + named + landmarks
    # A class/id name can be wrong (a wrapper called "sidebar-layout" or
    # "field--label-hidden" holding the article); a landmark is not. So what
    # was dropped for its name alone is weighed against the page's text
    # outside its landmarks: whether the article is kept does not depend on
    # how much text the template's menus, headers and footers hold.
    own = total - landmarks
    limit = GUARD_SHARE * total
    expanded = _Expansions(walker, items, spans)
    blocks, block_spans, keep, kept = expanded(limit, GUARD_SHARE * own)
    enough = max(MIN_KEPT_SHARE * total, MIN_KEPT_CHARS)
    if kept < enough:
        # Too little left: trust class/id names less, first for the elements
        # holding a share of the page's own text (a misnamed wrapper; captions,
        # share bars and cookie notices stay dropped), then for all, then keep
        # it all. The region is not looked for then (the page has too little
        # prose), unless the misnamed elements lie in the page's declared main
        # content (main, article, role="main"): the markup then says where the
        # content is, and the region trims what is left around it.
        wrappers = [
            i for i in items
            if i.__class__ is _Dropped and i.weak and i.chars > MIN_KEPT_SHARE * own
        ]
        declared = bool(wrappers) and all(_in_main_content(i.el) for i in wrappers)
        for weak_limit in (MIN_KEPT_SHARE * own, -1):
            blocks, block_spans, keep, kept = expanded(limit, weak_limit)
            if kept >= enough:
                if weak_limit < 0 or not declared:
                    block_spans = []
                break
        else:
            # Still too little: every rule off, link lists still left out;
            # then, for a page whose content is links (an index), all the
            # text outside the landmarks (nav, header, footer, aside, hidden).
            # Never the landmarks' links: a short page under a site-wide
            # navigation tree (an API page) would be mostly that tree, shared
            # by every page of the site. If all that is too little and the
            # landmarks hold most of the page, its own text cannot be told
            # from its template's: no main text, so no fingerprint, never a
            # drop. (A small page with no template is read whole.)
            block_spans = []
            everything, _, keep, kept = expanded(-1, -1)
            blocks = everything
            if kept < MIN_KEPT_CHARS:
                blocks = expanded(float("inf"), -1)[0]
                outside = sum(len(b[0]) for b in blocks)
                if outside < MIN_KEPT_CHARS:
                    if total > 2 * outside:
                        main = MainText(title, [], [], [])
                        if not whole:
                            return PageText(main, [])
                        return PageText(
                            main, _whole(title, walker.blocks(items)), _complete(walker)
                        )
                    blocks = everything
                keep = [True] * len(blocks)
    if block_spans:
        first, end = _region(blocks, block_spans, keep, weigh_blocks)
        blocks, keep = blocks[first:end], keep[first:end]
    headings = [b[0] for b, k in zip(blocks, keep) if k and 0 < b[1] < _CODE]
    texts = [b[0] for b, k in zip(blocks, keep) if k and not b[1]]
    code = [b[0] for b, k in zip(blocks, keep) if k and b[1] == _CODE]
    main = MainText(title, headings, texts, code, [b[0] for b in blocks])
    if not whole:
        return PageText(main, [])
    return PageText(main, _whole(title, walker.blocks(items)), _complete(walker))


def _all_blocks(items: list, walker: _Walker) -> list:
    """Every visible block of the page as ``(text, kind, link characters)``:
    the blocks of the first walk, and each soft-dropped subtree as one block
    of its text (no rule applied: a template's menus and footers are blocks
    like any other); one dropped for its class/id name alone (a menu by
    name, or a misnamed wrapper holding the article) as the blocks the walk
    reads in it, as in any part of the page: so the template a site's pages
    repeat is told from a page's own text inside such a wrapper too. The subtrees' text
    counts against :data:`MAX_READ_CHARS` with the walks': past it the page
    is cut (not :func:`_complete`). In Python; :meth:`_Walker.blocks` calls
    it, or its compiled twin ``_walk.all_blocks``."""
    out = []
    walked = walker.walked
    for item in items:
        if item.__class__ is not _Dropped:
            out.append(item)
            continue
        if item.weak:  # dropped for its class/id only: read as the walk reads a page
            inner = walked.get(item)
            if inner is None and walker.items < MAX_ITEMS:
                inner = walker.run(item.el, item.kind, item.in_link, item.in_main, item.depth)[0]
            if inner is not None:
                out.extend(_all_blocks(inner, walker))
                continue
        read = _subtree_text(item.el, MAX_READ_CHARS - walker.read)
        if read is None:
            walker.read = MAX_READ_CHARS  # cut: the page's text is not all there
            break
        text, link = read
        walker.read += len(text)
        text = " ".join(text.split())
        if text:
            out.append((text, item.kind, len(text) if item.in_link else min(link, len(text))))
    return out


def _subtree_text(el, chars_left: int) -> tuple[str, int] | None:
    """``(text, link characters)`` of ``el``'s subtree without its tail (as
    ``etree.tostring(el, method="text")``, and the characters of that text
    inside links below ``el``), or None when it holds more than
    ``chars_left`` characters. Compiled when ``_walk`` is built."""
    if _walk is not None:
        return _walk.subtree_text(el, chars_left)
    if chars_left < 0:
        return None
    text = etree.tostring(el, method="text", encoding=str, with_tail=False)
    if len(text) > chars_left:
        return None
    return text, sum(map(len, el.xpath(".//a//text()")))


def _complete(walker: _Walker) -> bool:
    """Whether no budget cut the walks of a page."""
    return (
        walker.elements <= MAX_ELEMENTS
        and walker.chars <= MAX_TEXT_CHARS
        and walker.read < MAX_READ_CHARS
        and walker.items < MAX_ITEMS
    )


def _whole(title: str, blocks: list | None) -> list[tuple[str, int]]:
    """The page's visible blocks as :attr:`PageText.blocks` holds them."""
    out = [(title, 0)] if title else []
    out.extend((text, link) for text, _, link in blocks or ())
    return out
