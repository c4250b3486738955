"""Realistic, seeded page perturbations for the fingerprint quality harness.

Each perturbation changes what a real mirror or a later fetch of the same page
changes -- ad blocks, dates and counters, menu order, sidebar teasers, a few
words of the article, the surrounding site template -- and never rewrites the
article itself beyond that.  They work on an lxml tree in place and return how
many changes they made, so a caller (and the tests) can see that something
happened.  The same ``random.Random`` state gives the same result on every
platform; seeds are derived with :func:`page_seed` (CRC-32, never ``hash()``).

When a page has nothing to perturb (no menu, no sidebar, no date), the
perturbation inserts one -- a mirror's template adds its own menu or sidebar --
so every perturbed copy really differs from its original.
"""

from __future__ import annotations

import copy
import random
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterator, Sequence
from html import escape

import lxml.html
from lxml import etree

__all__ = [
    "DEFAULT_TEASERS",
    "PERTURBATIONS",
    "change_timestamps",
    "count_timestamps",
    "edit_words",
    "find_main",
    "insert_ads",
    "main_path",
    "nav_menus",
    "page_seed",
    "parse",
    "perturb",
    "rotate_navigation",
    "serialize",
    "sidebars",
    "swap_sidebar",
    "transplant",
]

_SKIP_TEXT = frozenset({"script", "style", "noscript", "template", "textarea"})
_TOKEN_SPLIT = re.compile(r"[\s\-_]+")
_WORD = re.compile(r"[^\W\d_]+")


# --------------------------------------------------------------------------- tree helpers


def parse(html: str | bytes) -> lxml.html.HtmlElement:
    """Parse a page the way parsel (Scrapy's selector) does: UTF-8 bytes, recovering."""
    if isinstance(html, str):
        html = html.encode("utf-8", "surrogatepass")
    parser = lxml.html.HTMLParser(recover=True, encoding="utf-8")
    root = etree.fromstring(html or b"<html/>", parser=parser)
    if root is None:  # only comments or whitespace
        root = etree.fromstring(b"<html><body></body></html>", parser=parser)
    return root


def serialize(root: lxml.html.HtmlElement) -> str:
    """The page as HTML text (the charset is carried by ``str``, not a meta tag)."""
    return lxml.html.tostring(root, encoding="unicode", method="html", doctype="<!DOCTYPE html>")


def body_of(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    body = root.find(".//body")
    return body if body is not None else root


def page_seed(*parts: object) -> int:
    """A stable seed from strings/ints (CRC-32 of their text; same on every platform)."""
    return zlib.crc32("\x1f".join(map(str, parts)).encode("utf-8"))


def _tokens(el: etree._Element) -> set[str]:
    """The element's class and id tokens (split on whitespace, ``-`` and ``_``)."""
    cls, ident = el.get("class"), el.get("id")
    if not cls and not ident:
        return set()
    values = f"{cls or ''} {ident or ''}".lower()
    return {t for t in _TOKEN_SPLIT.split(values) if t}


def _elements(root: etree._Element) -> Iterator[etree._Element]:
    """HTML elements (no comments or processing instructions)."""
    for el in root.iter():
        if isinstance(el.tag, str):
            yield el


def _text_len(el: etree._Element) -> int:
    return len("".join(el.text_content().split())) if isinstance(el.tag, str) else 0


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _set_text(node: etree._Element, attr: str, text: str) -> None:
    """Set ``node.text``/``node.tail``, dropping characters XML cannot hold (lxml refuses them)."""
    setattr(node, attr, _CONTROL.sub("", text))


def _norm(text: str) -> str:
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.split()).lower()


def _is_ancestor(a: etree._Element, b: etree._Element) -> bool:
    """True if ``a`` is ``b`` or one of its ancestors."""
    return a is b or any(x is a for x in b.iterancestors())


def _text_slots(el: etree._Element) -> list[tuple[etree._Element, str]]:
    """(element, "text"|"tail") slots holding the visible text below ``el``, in no set order."""
    slots: list[tuple[etree._Element, str]] = []
    if not isinstance(el.tag, str) or el.tag in _SKIP_TEXT:
        return slots
    stack = [el]
    while stack:  # an explicit stack: real pages nest deeper than Python recursion likes
        node = stack.pop()
        if node.text:
            slots.append((node, "text"))
        for child in node:
            if isinstance(child.tag, str) and child.tag not in _SKIP_TEXT:
                stack.append(child)
            if child.tail:
                slots.append((child, "tail"))
    return slots


_BLOCK = frozenset(
    {
        "article",
        "main",
        "section",
        "div",
        "td",
        "body",
        "form",
        "center",
        "dd",
        "table",
        "tbody",
        "ul",
        "ol",
    }
)


def find_main(
    root: lxml.html.HtmlElement, segments: Sequence[str] = (), boilerplate: Sequence[str] = ()
) -> lxml.html.HtmlElement | None:
    """The page's main content container.

    With annotated ``segments`` (main-text snippets): the deepest block element
    holding most of them, widened to its ancestors as long as that takes in no
    more annotated ``boilerplate`` snippets and no more ``nav``/``aside``
    elements (the deepest block often leaves out the headline or a lead
    paragraph).  Without segments: the block that directly holds the most
    paragraph text.  ``None`` when no segment is found on the page.
    """
    body = body_of(root)
    if segments:
        wanted = [s for s in (_norm(x) for x in segments) if s]
        unwanted = [s for s in (_norm(x) for x in boilerplate) if s]
        best, best_count, best_len = None, 0, 0
        stack = [body]
        while stack:  # top-down: a subtree holding no segment is never searched
            el = stack.pop()
            text = _norm(el.text_content())
            count = sum(s in text for s in wanted)
            if not count:
                continue
            if el.tag in _BLOCK and (
                count > best_count or (count == best_count and len(text) < best_len)
            ):
                best, best_count, best_len = el, count, len(text)
            stack.extend(
                child for child in el if isinstance(child.tag, str) and child.tag not in _SKIP_TEXT
            )
        if best is None:
            return None

        def outside(el: etree._Element) -> tuple[int, int]:
            text = _norm(el.text_content())
            return sum(s in text for s in unwanted), sum(1 for _ in el.iter("nav", "aside"))

        limit = outside(best)
        while True:
            parent = best.getparent()
            if (
                parent is None
                or parent is body
                or parent.tag in ("body", "html")
                or outside(parent) != limit
            ):
                return best
            best = parent
    scores: dict[etree._Element, int] = {}
    for p in body.iter("p", "pre", "blockquote"):
        parent = p.getparent()
        if parent is not None:
            scores[parent] = scores.get(parent, 0) + _text_len(p)
    if not scores:
        return body
    return max(scores, key=lambda e: scores[e])


def main_path(
    root: lxml.html.HtmlElement, segments: Sequence[str] = (), boilerplate: Sequence[str] = ()
) -> str | None:
    """The XPath of :func:`find_main`'s element, valid in any parse of the same HTML."""
    main = find_main(root, segments, boilerplate)
    return None if main is None else root.getroottree().getpath(main)


# --------------------------------------------------------------------------- ads

_AD_TEXTS = (
    "Save up to 50% on the new SmartWatch Pro. The offer is valid while stocks last, so do not miss it.",
    "Are you looking for a better mortgage rate? Compare the best offers and switch today, it is free.",
    "The holiday you have been dreaming of is closer than you think: book now and get 20% off all flights.",
    "This is the credit card that pays you back. Apply in minutes and get a welcome bonus of $200.",
    "Doctors are amazed: this simple trick has helped thousands of readers to sleep better at night.",
    "Sparen Sie jetzt bis zu 40 % auf alle Matratzen. Das Angebot gilt nur solange der Vorrat reicht.",
    "Die neue Kollektion ist da! Jetzt bestellen und die Lieferung ist kostenlos, auch bei Rücksendung.",
    "Profitez de nos offres exceptionnelles : la livraison est gratuite dès 30 € d'achat sur le site.",
    "Find out why millions of people have switched to the fastest VPN. Try it free for 30 days.",
    "Learn a new language in just 3 weeks with the app that is loved by 10 million users.",
    "You will not believe what these celebrities look like today. Click here to see the photos.",
    "Home insurance has never been this cheap. Get your personal quote now and save up to $500 a year.",
)
_AD_TITLES = ("Sponsored", "Advertisement", "Anzeige", "Publicité", "Promoted", "Werbung", "Ad")


def _ad_block(rng: random.Random) -> lxml.html.HtmlElement:
    """One ad container in one of the shapes real sites serve."""
    text = rng.choice(_AD_TEXTS)
    label = rng.choice(_AD_TITLES)
    slot = rng.randrange(10**9, 10**10)
    shapes = (
        (
            f'<div class="ad ad-container"><span class="ad-label">{label}</span>'
            f'<ins class="adsbygoogle" style="display:block" data-ad-client="ca-pub-{slot}" '
            f'data-ad-slot="{slot % 10**6}"><a href="https://ads.example.com/c?{slot}">{text}</a></ins></div>'
        ),
        (
            f'<div class="sponsored-content"><p class="sponsored-label">{label}</p>'
            f'<a href="https://promo.example.com/{slot}"><h4>{text.split(".")[0]}</h4><p>{text}</p></a></div>'
        ),
        (
            f'<aside class="ad-slot ad-slot--inline" id="div-gpt-ad-{slot}"><div class="advertisement">'
            f"<small>{label}</small><p>{text}</p></div></aside>"
        ),
        (
            f'<div id="taboola-below-article-{slot % 1000}" class="trc_related_container sponsored">'
            f'<div class="trc_header">{label}</div><a href="https://trc.example.com/{slot}">{text}</a></div>'
        ),
        (
            f'<div class="banner-ad dfp-ad" data-slot="{slot}"><a href="https://ad.example.net/{slot}">'
            f"<strong>{label}</strong> {text}</a></div>"
        ),
    )
    return lxml.html.fragment_fromstring(rng.choice(shapes))


def insert_ads(
    root: lxml.html.HtmlElement, rng: random.Random, main: etree._Element | None = None
) -> int:
    """Insert 3-5 ad containers: a leaderboard, ads between the article's blocks, one at the end."""
    body = body_of(root)
    main = main if main is not None else find_main(root)
    body.insert(0, _ad_block(rng))
    n = 1
    blocks = list(main) if main is not None and main is not body else []
    if blocks:
        for _ in range(rng.randint(1, 3)):
            anchor = rng.choice(blocks)
            anchor.addnext(_ad_block(rng))
            n += 1
    else:
        for _ in range(rng.randint(1, 3)):
            body.insert(rng.randrange(len(body) + 1), _ad_block(rng))
            n += 1
    body.append(_ad_block(rng))
    return n + 1


# --------------------------------------------------------------------------- dates and counters

_MONTHS = {
    "en": [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ],
    "en3": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
    "de": [
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ],
    "fr": [
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ],
    "es": [
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ],
}
_MONTH_RE = "|".join(
    sorted({re.escape(m) for names in _MONTHS.values() for m in names}, key=len, reverse=True)
)
_UNITS = {
    "en": ("seconds", "minutes", "hours", "days", "weeks"),
    "de": ("Sekunden", "Minuten", "Stunden", "Tagen", "Wochen"),
    "fr": ("secondes", "minutes", "heures", "jours", "semaines"),
    "es": ("segundos", "minutos", "horas", "días", "semanas"),
}
_UNIT_RE = "|".join(
    sorted({u.rstrip("s") + "s?" for us in _UNITS.values() for u in us}, key=len, reverse=True)
)
_COUNTER_WORDS = (
    r"views?|comments?|likes?|shares?|reads?|replies|reply|votes?|followers?|visits?|downloads?|"
    r"Kommentare?|Aufrufe|Leser|Antworten|Bewertungen|commentaires?|vues|réponses|comentarios?|visitas"
)
_DATE_PATTERNS = (
    # 2023-04-05, 2023-04-05T10:20:30
    re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d)?)?\b"),
    # 05.04.2023, 5/4/23
    re.compile(r"\b[0-3]?\d[./][01]?\d[./](?:19|20)?\d\d\b"),
    # April 5, 2023 / Apr. 5th 2023
    re.compile(rf"\b(?:{_MONTH_RE})\.? [0-3]?\d(?:st|nd|rd|th)?,? (?:19|20)\d\d\b", re.IGNORECASE),
    # 5 April 2023 / 5. April 2023 / 5 de abril de 2023
    re.compile(
        rf"\b[0-3]?\d\.? (?:de )?(?:{_MONTH_RE})\.?,? (?:de )?(?:19|20)\d\d\b", re.IGNORECASE
    ),
    # 10:20, 10:20:30, 9:05 pm
    re.compile(r"\b[0-2]?\d:[0-5]\d(?::[0-5]\d)?(?:\s?[ap]\.?m\.?)?(?![\d:])", re.IGNORECASE),
)
_RELATIVE = re.compile(
    rf"\b(?:(?P<n>\d+)|an?) (?P<unit>{_UNIT_RE}) ago\b|\bvor (?P<n2>\d+|einer?) (?P<unit2>{_UNIT_RE})\b"
    rf"|\bil y a (?P<n3>\d+) (?P<unit3>{_UNIT_RE})\b|\bhace (?P<n4>\d+) (?P<unit4>{_UNIT_RE})\b",
    re.IGNORECASE,
)
_MAYBE = re.compile(r"\d|\bago\b|\bvor ein", re.IGNORECASE)
_COUNTER = re.compile(
    rf"\b\d{{1,3}}(?:[,.\u202f\u00a0 ]\d{{3}})*(?:[.,]\d)?\s?[kKM]?\s+(?:{_COUNTER_WORDS})\b"
    rf"|\b(?:{_COUNTER_WORDS})\s?:?\s?\d[\d,.]*\b"
)


def _plausible(digits: str, rng: random.Random) -> str:
    """Another number of the same width in the same plausible range (year, day, minute, count)."""
    value, width = int(digits), len(digits)
    if width == 4 and digits[:2] in ("19", "20"):
        low, high = 2010, 2025  # a year
    elif width <= 2 and value <= 12:
        low, high = 1, 12  # a month, an hour
    elif width <= 2 and value <= 31:
        low, high = 1, 28  # a day
    elif width <= 2:
        low, high = 0, 59  # minutes, seconds
    else:
        low, high = 10 ** (width - 1), 10**width - 1  # a counter
    for _ in range(8):
        new = str(rng.randint(low, high)).zfill(width)
        if new != digits:
            return new
    return new


def _shift_digits(match: re.Match, rng: random.Random) -> str:
    """The same text with every digit run replaced by another plausible one of the same width."""
    return re.sub(r"\d+", lambda m: _plausible(m.group(), rng), match.group())


def _change_month(text: str, rng: random.Random) -> str:
    def repl(m: re.Match) -> str:
        word = m.group()
        for names in _MONTHS.values():
            lower = [n.lower() for n in names]
            if word.lower() in lower:
                i = lower.index(word.lower())
                new = names[(i + rng.randint(1, 11)) % 12]
                return new.lower() if word.islower() else new
        return word

    return re.sub(rf"(?<!\w)(?:{_MONTH_RE})(?!\w)", repl, text, flags=re.IGNORECASE)


def _relative(match: re.Match, rng: random.Random) -> str:
    text = match.group()
    for units in _UNITS.values():
        for unit in units:
            if re.search(rf"\b{re.escape(unit.rstrip('s'))}", text, re.IGNORECASE):
                new_unit = rng.choice(units)
                n = str(rng.randint(2, 59))
                out = re.sub(rf"\b(?:{_UNIT_RE})\b", new_unit, text, count=1, flags=re.IGNORECASE)
                return re.sub(r"\b(?:\d+|an?|einer?)\b(?= )", n, out, count=1, flags=re.IGNORECASE)
    return _shift_digits(match, rng)


def _rewrite_text(text: str, rng: random.Random) -> tuple[str, int]:
    changes = 0

    def date(m: re.Match) -> str:
        nonlocal changes
        changes += 1
        return _change_month(_shift_digits(m, rng), rng)

    def rel(m: re.Match) -> str:
        nonlocal changes
        changes += 1
        return _relative(m, rng)

    def counter(m: re.Match) -> str:
        nonlocal changes
        changes += 1
        return _shift_digits(m, rng)

    if not _MAYBE.search(text):
        return text, 0
    text = _RELATIVE.sub(rel, text)
    text = _COUNTER.sub(counter, text)
    for pattern in _DATE_PATTERNS:
        text = pattern.sub(date, text)
    return text, changes


def count_timestamps(root: lxml.html.HtmlElement) -> int:
    """How many dates, times, counters and relative times the page's body shows."""
    rng = random.Random(0)
    return sum(_rewrite_text(getattr(n, a), rng)[1] for n, a in _text_slots(body_of(root)))


def change_timestamps(
    root: lxml.html.HtmlElement, rng: random.Random, main: etree._Element | None = None
) -> int:
    """Change dates, times, "1,234 views" counters and "5 minutes ago" phrases everywhere.

    ``<time datetime>`` attributes follow.  A page without any gets a byline with
    a date and a view counter (a later fetch shows a different one).
    """
    changes = 0
    for node, attr in _text_slots(body_of(root)):
        old = getattr(node, attr)
        new, n = _rewrite_text(old, rng)
        if n and new != old:
            _set_text(node, attr, new)
            changes += n
    for el in body_of(root).iter("time"):
        if el.get("datetime"):
            el.set("datetime", re.sub(r"\d", lambda _: str(rng.randrange(10)), el.get("datetime")))
    if changes == 0:
        main = main if main is not None else find_main(root)
        target = main if main is not None else body_of(root)
        month = rng.choice(_MONTHS["en"])
        day, hour, minute = rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)
        views = f"{rng.randint(1, 99)},{rng.randint(0, 999):03d}"
        byline = lxml.html.fragment_fromstring(
            f'<div class="post-meta"><time datetime="2024-01-{day:02d}T{hour:02d}:{minute:02d}">'
            f"{month} {day}, 2024, {hour:02d}:{minute:02d}</time> · "
            f'<span class="view-count">{views} views</span></div>'
        )
        target.insert(0, byline)
        changes = 1
    return changes


# --------------------------------------------------------------------------- navigation

_NAV_ROLES = frozenset({"navigation", "menubar", "menu", "banner"})
_NAV_TOKENS = frozenset(
    {
        "nav",
        "navbar",
        "navigation",
        "menu",
        "mainmenu",
        "main-menu",
        "topnav",
        "topmenu",
        "menubar",
        "subnav",
        "header",
        "masthead",
        "navi",
        "hauptnavigation",
        "breadcrumb",
        "breadcrumbs",
    }
)
_MENU_ITEMS = (
    "Podcasts",
    "Newsletter",
    "Shop",
    "Events",
    "Jobs",
    "Videos",
    "Deals",
    "Magazin",
    "Kontakt",
    "Services",
    "Blog",
    "Community",
    "Termine",
    "Actualités",
    "Archive",
    "Gallery",
    "Subscribe",
    "Login",
)


def nav_menus(root: lxml.html.HtmlElement) -> list[etree._Element]:
    """Menus: lists (or bare link rows) inside page navigation, outermost first."""
    targets = [
        el
        for el in _elements(body_of(root))
        if el.tag in ("nav", "header")
        or el.get("role", "").lower() in _NAV_ROLES
        or _tokens(el) & _NAV_TOKENS
    ]
    lists: list[etree._Element] = []
    seen: set[etree._Element] = set()
    for target in targets:
        has_list = False
        for ul in target.iter("ul", "ol"):
            if ul in seen:
                has_list = True
                continue
            items = [li for li in ul if li.tag == "li" and li.find(".//a") is not None]
            if len(items) >= 3:
                seen.add(ul)
                lists.append(ul)
                has_list = True
        if not has_list:
            links = [a for a in target if a.tag == "a"]
            if len(links) >= 3 and target not in seen:
                seen.add(target)
                lists.append(target)
    return lists


def _menu_item(template: etree._Element, rng: random.Random) -> etree._Element:
    item = copy.deepcopy(template)
    item.tail = template.tail
    link = item if item.tag == "a" else item.find(".//a")
    label = rng.choice(_MENU_ITEMS)
    for child in list(link):
        link.remove(child)
    link.text = label
    link.set("href", "/" + label.lower())
    return item


def rotate_navigation(
    root: lxml.html.HtmlElement, rng: random.Random, main: etree._Element | None = None
) -> int:
    """Rotate the order of every menu's items, drop one item and add a new one.

    A page without a menu gets a navigation bar at the top of the body.
    """
    changes = 0
    for menu in nav_menus(root):
        tag = "a" if menu.tag not in ("ul", "ol") else "li"
        items = [
            el for el in menu if el.tag == tag and (tag == "a" or el.find(".//a") is not None)
        ]
        if len(items) < 3:
            continue
        first = list(menu).index(items[0])
        tails = [el.tail for el in items]
        for el in items:
            menu.remove(el)
        shift = rng.randint(1, len(items) - 1)
        items = items[shift:] + items[:shift]
        items.pop(rng.randrange(len(items)))
        items.insert(rng.randrange(len(items) + 1), _menu_item(items[0], rng))
        for i, el in enumerate(items):
            el.tail = tails[i % len(tails)]
            menu.insert(first + i, el)
        changes += 1
    if changes == 0:
        labels = rng.sample(_MENU_ITEMS, 6)
        links = "".join(f'<li><a href="/{x.lower()}">{x}</a></li>' for x in labels)
        body_of(root).insert(
            0,
            lxml.html.fragment_fromstring(
                f'<nav class="main-nav"><ul class="menu">{links}</ul></nav>'
            ),
        )
        changes = 1
    return changes


# --------------------------------------------------------------------------- sidebar

_SIDEBAR_ROLES = frozenset({"complementary"})
_SIDEBAR_TOKENS = frozenset(
    {
        "sidebar",
        "side",
        "aside",
        "widget-area",
        "widgets",
        "secondary",
        "rail",
        "sidebar-right",
        "sidebar-left",
        "marginal",
        "seitenleiste",
    }
)
_TEASER_HEADINGS = (
    "Most read",
    "Related",
    "Meistgelesen",
    "Trending now",
    "Lire aussi",
    "More stories",
    "Top-Themen",
)
DEFAULT_TEASERS = (
    "How the city plans to rebuild its old harbour district",
    "Ten questions you should ask before you buy a used car",
    "Why the new rules for landlords are causing so much confusion",
    "Das sind die besten Wanderwege in den Alpen für Familien",
    "The history of the bicycle in five surprising objects",
    "Was die neue Grundsteuer für Mieter und Eigentümer bedeutet",
    "Les secrets d'une bonne pâte à pizza selon un chef napolitain",
    "Inside the lab that is trying to grow coffee without plants",
)


def sidebars(root: lxml.html.HtmlElement, main: etree._Element | None) -> list[etree._Element]:
    """Sidebars, outermost only: never an element around ``main`` or inside it, nor most of the page."""
    body = body_of(root)
    total = max(_text_len(body), 1)
    found: list[etree._Element] = []
    for el in _elements(body):
        if not (
            el.tag == "aside"
            or el.get("role", "").lower() in _SIDEBAR_ROLES
            or _tokens(el) & _SIDEBAR_TOKENS
        ):
            continue
        if el is body or any(a in found for a in el.iterancestors()):
            continue
        if main is not None and (_is_ancestor(el, main) or _is_ancestor(main, el)):
            continue  # a "has-sidebar" wrapper around the article, or an aside inside it
        if _text_len(el) > total / 2:
            continue
        found.append(el)
    return found


def _teaser_box(rng: random.Random, teasers: Sequence[str]) -> etree._Element:
    """A widget of 3-5 teasers; a teaser is ``"title"`` or ``"title\tsnippet"``."""
    chosen = rng.sample(list(teasers), min(len(teasers), rng.randint(3, 5)))
    items = []
    for i, teaser in enumerate(chosen):
        title, _, snippet = (escape(part.strip()) for part in teaser.partition("\t"))
        href = f"/story/{page_seed(teaser) % 10**6}-{i}"
        para = f"<p>{snippet}</p>" if snippet else ""
        items.append(f'<li class="teaser"><a href="{href}">{title}</a>{para}</li>')
    heading = escape(rng.choice(_TEASER_HEADINGS))
    return lxml.html.fragment_fromstring(
        f'<div class="widget"><h3 class="widget-title">{heading}</h3><ul>{"".join(items)}</ul></div>'
    )


def swap_sidebar(
    root: lxml.html.HtmlElement,
    rng: random.Random,
    main: etree._Element | None = None,
    teasers: Sequence[str] = DEFAULT_TEASERS,
) -> int:
    """Replace every sidebar's content by other teasers (``"title"`` or ``"title\tsnippet"``).

    Sidebars: ``aside``, ``role=complementary`` and sidebar class/id tokens, never an
    element around the main content.  A page without one gets an ``aside.sidebar``
    next to its main content.
    """
    teasers = [t for t in teasers if t.strip()] or list(DEFAULT_TEASERS)
    main = main if main is not None else find_main(root)
    changes = 0
    for side in sidebars(root, main):
        for child in list(side):
            side.remove(child)
        side.text = None
        side.append(_teaser_box(rng, teasers))
        changes += 1
    if changes == 0:
        aside = lxml.html.fragment_fromstring('<aside class="sidebar"></aside>')
        aside.append(_teaser_box(rng, teasers))
        body = body_of(root)
        if main is not None and main is not body and main.getparent() is not None:
            main.addnext(aside)
        else:
            body.append(aside)
        changes = 1
    return changes


# --------------------------------------------------------------------------- word edits


def edit_words(
    root: lxml.html.HtmlElement,
    rng: random.Random,
    main: etree._Element | None = None,
    share: float = 0.01,
) -> int:
    """Edit ``share`` of the main text's words (at least one): replace, delete or insert a word."""
    main = main if main is not None else find_main(root)
    target = main if main is not None else body_of(root)
    slots = _text_slots(target)
    words = [
        (i, m.start(), m.end())
        for i, (node, attr) in enumerate(slots)
        for m in _WORD.finditer(getattr(node, attr))
    ]
    if not words:
        return 0
    vocabulary = sorted({getattr(slots[i][0], slots[i][1])[s:e] for i, s, e in words})
    n = max(1, round(len(words) * share))
    chosen = sorted(rng.sample(range(len(words)), min(n, len(words))), reverse=True)
    for w in chosen:  # from the end, so earlier offsets stay valid
        i, start, end = words[w]
        node, attr = slots[i]
        text = getattr(node, attr)
        op = rng.choice(("replace", "replace", "delete", "insert"))
        other = rng.choice(vocabulary)
        if op == "replace":
            if other == text[start:end] and len(vocabulary) > 1:
                other = vocabulary[(vocabulary.index(other) + 1) % len(vocabulary)]
            text = text[:start] + other + text[end:]
        elif op == "delete":
            text = (
                text[:start] + text[end:].lstrip(" ")
                if end < len(text)
                else text[:start].rstrip(" ")
            )
        else:
            text = text[:end] + " " + other + text[end:]
        _set_text(node, attr, text)
    return len(chosen)


# --------------------------------------------------------------------------- another template


def transplant(
    article: lxml.html.HtmlElement,
    article_main: etree._Element,
    template: lxml.html.HtmlElement,
    template_main: etree._Element,
) -> lxml.html.HtmlElement:
    """Page ``template`` with its main content replaced by a copy of ``article_main``.

    A syndicated copy keeps its headline: the title becomes the article's title,
    and the template's ``h1`` outside its main content (its own headline) is
    replaced by the article's ``h1`` when that is outside ``article_main``
    (dropped otherwise: the copied content carries the headline).  Both input trees are left
    unchanged; the result is a new tree.
    """
    page = copy.deepcopy(template)
    path = template.getroottree().getpath(template_main)
    target = page.getroottree().xpath(path)[0]
    content = copy.deepcopy(article_main)
    content.tail = target.tail
    if target.getparent() is None or target.tag in ("html", "body"):
        for child in list(target):
            target.remove(child)
        target.text = None
        target.append(content)
    else:
        target.getparent().replace(target, content)
    headline = next((h for h in article.iter("h1") if not _is_ancestor(article_main, h)), None)
    old = next((h for h in page.iter("h1") if not _is_ancestor(content, h)), None)
    if headline is not None:
        headline = copy.deepcopy(headline)
        headline.tail = None
        if old is not None:
            old.addprevious(headline)
        elif content.getparent() is not None:
            content.addprevious(headline)
        else:
            content.insert(0, headline)
    if old is not None:  # the template page's own headline goes
        old.drop_tree()
    title = article.find(".//title")
    if title is not None:
        old = page.find(".//title")
        if old is not None:
            old.getparent().replace(old, copy.deepcopy(title))
        else:
            head = page.find("head")
            if head is not None:
                head.append(copy.deepcopy(title))
    return page


# --------------------------------------------------------------------------- entry point

PERTURBATIONS: dict[str, Callable[..., int]] = {
    "ads": insert_ads,
    "timestamps": change_timestamps,
    "navigation": rotate_navigation,
    "sidebar": swap_sidebar,
    "edits": edit_words,
}


def perturb(
    html: str | bytes,
    kinds: Sequence[str],
    seed: int,
    *,
    segments: Sequence[str] = (),
    boilerplate: Sequence[str] = (),
    main_path: str | None = None,
    teasers: Sequence[str] = DEFAULT_TEASERS,
) -> tuple[str, dict[str, int]]:
    """Apply the named perturbations in order; return the new HTML and the changes per kind.

    ``segments`` and ``boilerplate`` (annotated snippets) locate the main content, or
    ``main_path`` (its XPath from :func:`main_path`, cheaper when a page is
    perturbed many times); ``teasers`` feed the swapped sidebar.  Deterministic
    for a given ``seed``.
    """
    unknown = [k for k in kinds if k not in PERTURBATIONS]
    if unknown:
        raise ValueError(f"unknown perturbation(s) {unknown!r}; known: {sorted(PERTURBATIONS)}")
    root = parse(html)
    if main_path is not None:
        found = root.getroottree().xpath(main_path)
        main = found[0] if found else None
    else:
        main = find_main(root, segments, boilerplate)
    counts = {}
    for kind in kinds:
        rng = random.Random(page_seed(seed, kind))
        if kind == "sidebar":
            counts[kind] = swap_sidebar(root, rng, main, teasers)
        else:
            counts[kind] = PERTURBATIONS[kind](root, rng, main)
    return serialize(root), counts
