"""Main text of an HTML page, read from an lxml tree without modifying it.

The tree is walked once. Text is gathered into blocks (paragraphs, list items,
cells...); template parts are left out by rules borrowed from resiliparse,
trafilatura and readability:

* never text: ``script style noscript template iframe svg`` and similar;
* soft drops (see the guard below): ``form``, hidden elements (``hidden``,
  ``aria-hidden="true"``, inline ``display:none`` / ``visibility:hidden``),
  page-level ``nav header footer aside`` (outside ``article``/``main``), ARIA
  landmarks (navigation, banner, contentinfo, complementary, search, menu...),
  and elements whose class/id *tokens* name template parts (ads, menus,
  sidebars, share bars, related links, cookie banners, comments...);
* blocks whose text is mostly link text.

Over-pruning guard: a soft-dropped element holding more than half of the
page's visible text is kept (wrappers such as ``class="has-sidebar"`` exist),
and when less than :data:`MIN_KEPT_SHARE` of the visible text (or fewer than
:data:`MIN_KEPT_CHARS` characters) survives, all visible text is used.

Bounds, so that a 10 MB page costs a bounded time: HTML given as ``str`` or
``bytes`` is cut to its first :data:`MAX_HTML_CHARS` characters before
parsing, and the walk stops after :data:`MAX_TEXT_CHARS` characters of
visible text or :data:`MAX_ELEMENTS` elements.
"""

from __future__ import annotations

import codecs
import logging
import re
import threading
from functools import lru_cache
from typing import NamedTuple

from bs4.dammit import EncodingDetector
from lxml import etree, html

logger = logging.getLogger(__name__)

#: Characters of HTML parsed at most (longer ``str``/``bytes`` pages are cut).
MAX_HTML_CHARS = 3_000_000
#: Characters of visible text walked at most.
MAX_TEXT_CHARS = 200_000
#: Elements walked at most.
MAX_ELEMENTS = 60_000
#: Kept share of the visible text below which all visible text is used.
MIN_KEPT_SHARE = 0.1
#: Kept characters below which all visible text is used.
MIN_KEPT_CHARS = 200
#: A block whose link text exceeds this share of its text is dropped.
MAX_LINK_DENSITY = 0.5
#: A soft-dropped element holding more than this share of the text is kept.
GUARD_SHARE = 0.5

# Elements whose content is never visible text.
_SKIP_TAGS = frozenset(
    "script style noscript template iframe svg math object embed canvas audio video "
    "select option textarea button label head title time".split()
)
# Template landmarks; a <header> inside an <article> is the article's own.
_LANDMARK_TAGS = frozenset(("nav", "footer", "aside"))
_SOFT_TAGS = frozenset(("form", "figure"))
_NEVER_DROPPED = frozenset(("article", "main", "body"))
_MAIN_TAGS = frozenset(("article",))
_BOILER_ROLES = frozenset(
    "navigation banner contentinfo complementary search menu menubar dialog alertdialog".split()
)
_HEADING_TAGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
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
    author authors bio rating ratings paywall disclaimer noprint popular
    date dateline published updated timestamp meta metadata respond reply cta tweet
    twitter facebook instagram pinterest whatsapp login signup werbung anzeige kommentar
    kommentare""".split()
)
# Tokens of wrappers that merely mention a template part ("has-sidebar").
# Roots that also name template parts when glued to other words ("sharebar").
_BOILER_PREFIXES = (
    "advert", "breadcrumb", "comment", "cookie", "footer", "kommentar", "navbar",
    "navigation", "newsletter", "outbrain", "paywall", "related", "share", "sidebar",
    "social", "sponsor", "taboola",
)
_TAXONOMY_TOKENS = frozenset(
    "tag tags category categories cat post postid page format single term topic elementor".split()
)
_WRAPPER_TOKENS = frozenset("has with no without".split())
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_CLASS_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>", re.I)


class MainText(NamedTuple):
    """What a page says: its title, its headings and its main-text blocks."""

    title: str
    headings: list[str]
    blocks: list[str]


@lru_cache(maxsize=8192)
def _is_boiler_name(value: str) -> bool:
    """Whether a class/id value names a template part (per class name, ignoring
    CMS taxonomy classes such as ``tag-social-media`` or ``category-ads``)."""
    for name in value.split():
        tokens = [t.lower() for t in _CLASS_TOKEN.findall(name)]
        if not tokens or tokens[0] in _TAXONOMY_TOKENS:
            continue
        if _WRAPPER_TOKENS.isdisjoint(tokens) and any(
            t in _BOILER_TOKENS or t.startswith(_BOILER_PREFIXES) for t in tokens
        ):
            return True
    return False


def decode_html(page: bytes, encoding: str | None = None) -> str:
    """Decode HTML bytes: BOM, then ``encoding``, then the declared charset, then
    UTF-8, then windows-1252 with replacement. Never raises."""
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
            name = codecs.lookup(candidate).name
        except LookupError:
            continue
        if name in ("utf-16", "utf-16-le", "utf-16-be", "utf-32") and bom_encoding is None:
            # A declared UTF-16 in an ASCII-readable page is a lie.
            continue
        try:
            return data.decode(name)
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="replace")


_local = threading.local()


def _parser() -> html.HTMLParser:
    # lxml parsers must not be shared between threads.
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = html.HTMLParser(
            encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True
        )
    return parser


def parse_html(page: str | bytes, encoding: str | None = None) -> etree._Element | None:
    """Parse HTML ``str``/``bytes`` into an lxml root element; None when empty.

    Bytes are decoded by :func:`decode_html`; an XML declaration is harmless.
    Only the first :data:`MAX_HTML_CHARS` characters are parsed. Never raises on
    page content.
    """
    if isinstance(page, (bytes, bytearray, memoryview)):
        text = decode_html(bytes(page[: MAX_HTML_CHARS * 4]), encoding)
    elif isinstance(page, str):
        text = page
    else:
        raise TypeError(f"page must be str, bytes or an lxml element, not {type(page).__name__}")
    text = _XML_DECLARATION.sub("", text[:MAX_HTML_CHARS], count=1)
    if not text.strip():
        return None
    data = text.encode("utf-8", errors="replace")
    try:
        return html.document_fromstring(data, parser=_parser())
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        logger.debug("Cannot parse a page of %d characters: %s", len(text), exc)
        return None


class _Walker:
    """One read-only pass over a tree, collecting blocks with their droppers."""

    __slots__ = (
        "texts", "kinds", "links", "owners", "dparent", "dweak", "buf", "link", "chars", "elements",
    )

    def __init__(self) -> None:
        self.texts: list[str] = []  # block texts
        self.kinds: list[int] = []  # 0 body, 1 heading
        self.links: list[int] = []  # link characters per block
        self.owners: list[int] = []  # innermost soft dropper per block (-1: none)
        self.dparent: list[int] = [-1]  # enclosing dropper per dropper (index 0: none)
        self.dweak: list[bool] = [False]  # dropped for its class/id only
        self.buf: list[str] = []
        self.link = 0
        self.chars = 0
        self.elements = 0

    def flush(self, owner: int, kind: int) -> None:
        if self.buf:
            text = "".join(self.buf)
            self.buf = []
            if not text.isspace():
                self.texts.append(text)
                self.kinds.append(kind)
                self.links.append(self.link)
                self.owners.append(owner)
                self.chars += len(text)
            self.link = 0

    def walk(self, el: etree._Element, owner: int, kind: int, in_link: bool, in_main: bool) -> None:
        text = el.text
        if text:
            self.buf.append(text)
            if in_link:
                self.link += len(text)
        for child in el:
            tag = child.tag
            if type(tag) is not str:  # comment, processing instruction, entity
                tail = child.tail
                if tail:
                    self.buf.append(tail)
                    if in_link:
                        self.link += len(tail)
                continue
            self.elements += 1
            if self.elements > MAX_ELEMENTS or self.chars > MAX_TEXT_CHARS:
                return
            if tag not in _SKIP_TAGS:
                if "}" in tag or ":" in tag:
                    tag = tag.rpartition("}")[2].rpartition(":")[2]
                child_owner = owner
                # soft drops
                weak = False
                drop = (
                    tag in _LANDMARK_TAGS or tag in _SOFT_TAGS or (tag == "header" and not in_main)
                )
                if not drop:
                    attrib = child.attrib
                    if attrib and tag not in _NEVER_DROPPED:
                        cls = attrib.get("class")
                        ident = attrib.get("id")
                        if (cls and _is_boiler_name(cls)) or (ident and _is_boiler_name(ident)):
                            drop = weak = True
                        elif "hidden" in attrib or attrib.get("aria-hidden") == "true":
                            drop = True
                        else:
                            role = attrib.get("role")
                            if role and role.strip().lower() in _BOILER_ROLES:
                                drop = True
                            else:
                                style = attrib.get("style")
                                if style and _HIDDEN_STYLE.search(style):
                                    drop = True
                block = drop or tag in _BLOCK_TAGS
                if block:
                    self.flush(owner, kind)
                if drop:
                    child_owner = len(self.dparent)
                    self.dparent.append(owner)
                    self.dweak.append(weak)
                child_kind = _HEADING_TAGS.get(tag, kind)
                self.walk(
                    child,
                    child_owner,
                    child_kind,
                    in_link or tag == "a",
                    in_main or tag in _MAIN_TAGS,
                )
                if block or child_kind != kind:
                    self.flush(child_owner, child_kind)
            tail = child.tail
            if tail:
                self.buf.append(tail)
                if in_link:
                    self.link += len(tail)


def _select(walker: _Walker, dchars: list[int], use_names: bool) -> tuple[list[bool], int]:
    """Which blocks to keep, and their characters."""
    dparent, dweak = walker.dparent, walker.dweak
    texts, kinds = walker.texts, walker.kinds
    limit = GUARD_SHARE * walker.chars
    dropped = [False] * len(dparent)
    for d in range(1, len(dparent)):
        dropped[d] = dropped[dparent[d]] or (
            dchars[d] <= limit and (use_names or not dweak[d])
        )
    keep = [
        not dropped[owner] and link <= MAX_LINK_DENSITY * len(text)
        for text, owner, link in zip(texts, walker.owners, walker.links)
    ]
    # A heading with no kept body text in its section titles a template box
    # ("Related articles", "Comments"...).
    next_level = [False] * 7  # kept body text before the next heading of level <= i
    for i in range(len(texts) - 1, -1, -1):
        kind = kinds[i]
        if not kind:
            if keep[i]:
                next_level = [True] * 7
            continue
        if keep[i] and not next_level[kind]:
            keep[i] = False
        for level in range(kind, 7):
            next_level[level] = False
    kept = sum(len(t) for t, k in zip(texts, keep) if k)
    return keep, kept


def _title(root: etree._Element) -> str:
    for path in ("head/title", ".//title"):
        el = root.find(path)
        if el is not None:
            return " ".join("".join(el.itertext()).split())
    return ""


def _root_element(page: object, encoding: str | None) -> etree._Element | None:
    if isinstance(page, (str, bytes, bytearray, memoryview)):
        return parse_html(page, encoding)
    if isinstance(page, etree._ElementTree):
        return page.getroot()
    if isinstance(page, etree._Element):
        return page
    raise TypeError(f"page must be str, bytes or an lxml element, not {type(page).__name__}")


def extract(page: str | bytes | etree._Element, *, encoding: str | None = None) -> MainText:
    """Return the title, headings and main-text blocks of a page.

    ``page`` is HTML (``str``/``bytes``) or an lxml element (such as
    ``response.selector.root``), which is read and never modified.
    """
    root = _root_element(page, encoding)
    if root is None:
        return MainText("", [], [])
    tag = root.tag
    if type(tag) is not str:  # a comment given as the root
        return MainText("", [], [])
    body = root.find("body") if tag == "html" else None
    walker = _Walker()
    start = body if body is not None else root
    walker.walk(start, 0, _HEADING_TAGS.get(start.tag, 0), False, False)
    walker.flush(0, 0)
    title = _title(root)
    texts, kinds, owners = walker.texts, walker.kinds, walker.owners
    if not texts:
        return MainText(title, [], [])

    # Over-pruning guard: chars per dropper (children have larger indices).
    dparent = walker.dparent
    dchars = [0] * len(dparent)
    for owner, text in zip(owners, texts):
        dchars[owner] += len(text)
    for d in range(len(dparent) - 1, 0, -1):
        dchars[dparent[d]] += dchars[d]
    total = walker.chars
    keep, kept = _select(walker, dchars, True)
    if kept < MIN_KEPT_SHARE * total or kept < MIN_KEPT_CHARS:
        # Too little left: first trust class/id names less, then keep it all.
        keep, kept = _select(walker, dchars, False)
        if kept < MIN_KEPT_SHARE * total or kept < MIN_KEPT_CHARS:
            keep = [True] * len(texts)
    headings = [t for t, k, kp in zip(texts, kinds, keep) if k and kp]
    blocks = [t for t, k, kp in zip(texts, kinds, keep) if not k and kp]
    return MainText(title, headings, blocks)
