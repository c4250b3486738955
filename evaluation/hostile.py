"""Hostile HTML pages: shapes that made one page cost seconds of fingerprinting
(issue 16) and generated ones of the same families, for ``bench/bench_hostile.py``
and the tests that hold the walk to its budgets.

Every shape is a function of ``size``, the page's approximate length in
characters; all are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable

#: A sentence of ordinary prose, repeated to fill text.
PROSE = "the cat is on the mat and it was there when the dog had gone to sleep. "


def _prose(chars: int) -> str:
    return (PROSE * (chars // len(PROSE) + 1))[:chars]


def _names(count: int, prefix: str = "") -> str:
    """``count`` distinct class names, ``prefix`` glued to each."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for n in range(count):
        word = ""
        while True:
            n, r = divmod(n, 26)
            word += letters[r]
            if not n:
                break
        out.append(prefix + word)
    return " ".join(out)


def _page(body: str, title: str = "A page") -> str:
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>"


def nested_drops(size: int, levels: int = 127) -> str:
    """127 nested ``aside``/``nav`` around one big text (issue 16: 12.8 s at 20 MB)."""
    tags = ["aside", "nav"] * (levels // 2 + 1)
    opening = "".join(f"<{t}>" for t in tags[:levels])
    closing = "".join(f"</{t}>" for t in reversed(tags[:levels]))
    return _page(f"<p>{_prose(300)}</p>{opening}<p>{_prose(size)}</p>{closing}")


def nested_drops_by_class(size: int, levels: int = 127) -> str:
    """The same with ``div class="sidebar"`` (dropped for its name: re-walked by
    the class/id fallback too)."""
    opening = '<div class="sidebar">' * levels
    return _page(f"{opening}<p>{_prose(size)}</p>{'</div>' * levels}")


def nested_drops_with_text(size: int, levels: int = 127) -> str:
    """Nested drops, each level with text of its own."""
    chunk = max(size // levels, 10)
    opening = "".join(f"<aside><p>{_prose(chunk)}</p>" for _ in range(levels))
    return _page(opening + "</aside>" * levels)


def huge_title(size: int) -> str:
    """A ``<title>`` of ``size`` characters (issue 16: 5.3 s at 20 MB)."""
    return _page(f"<p>{_prose(2000)}</p>", title=_prose(size))


def huge_text_node(size: int) -> str:
    """One text node of ``size`` characters (issue 16: 1.75 s at 20 MB)."""
    return _page(f"<p>{_prose(size)}</p>")


def huge_link_text(size: int) -> str:
    """One huge text inside a link (link characters counted)."""
    return _page(f"<p><a href='/'>{_prose(size)}</a></p>")


def sibling_navs(size: int) -> str:
    """Sibling ``nav`` elements (issue 16: 60k of them, 0.95 s)."""
    item = "<nav><a href='/x'>a link</a> words</nav>"
    return _page(item * (size // len(item)) + f"<p>{_prose(2000)}</p>")


def tiny_paragraphs(size: int) -> str:
    """``<p>w</p>`` repeated (issue 16: 500k of them, 0.77 s)."""
    return _page("<p>is w</p>" * (size // 10))


def inline_run(size: int) -> str:
    """One paragraph of ``<span>`` children: text gathered without a flush."""
    return _page("<p>" + "<span>is a</span> " * (size // 19) + "</p>")


def huge_class(size: int) -> str:
    """One class value of ``size`` characters of distinct names (issue 16: 1 MB, 0.34 s)."""
    return _page(f'<div class="{_names(size // 6)}"><p>{_prose(2000)}</p></div>')


def many_classes(size: int) -> str:
    """Many elements, each with a class value of distinct names that all need a
    close look (a boiler token after a taxonomy word)."""
    per = 20
    count = size // (per * 11 + 20)
    names = _names(count * per, "tag-ad-").split()
    return _page("".join(
        f'<div class="{" ".join(names[i * per:(i + 1) * per])}">w</div>' for i in range(count)
    ))


def huge_styles(size: int) -> str:
    """Many elements with long inline styles (the hidden-style rule reads them)."""
    style = "color: red; " * 400
    item = f'<div style="{style}">is w</div>'
    return _page(item * max(size // len(item), 1))


def many_scripts(size: int) -> str:
    """Scripts inside nested soft-dropped wrappers (their characters are subtracted)."""
    scripts = "<script>var a = 1;</script>x " * (size // 30)
    return _page("<footer>" * 100 + scripts + "</footer>" * 100 + f"<p>{_prose(2000)}</p>")


def deep(size: int, depth: int = 2000) -> str:
    """Nesting far past ``MAX_DEPTH``, text at every level (parsel keeps 2,048 levels)."""
    chunk = max(size // depth, 4)
    return _page(f"<div>{_prose(chunk)}" * depth + "</div>" * depth)


def deep_and_wide(size: int, depth: int = 200) -> str:
    """A wide subtree below ``MAX_DEPTH``: read flat."""
    wide = "<p>is <b>w</b></p>" * (size // 17)
    return _page("<div>" * depth + wide + "</div>" * depth)


def wide_drops_deep(size: int) -> str:
    """Many soft-dropped subtrees, each deep and holding text."""
    item = "<aside>" + "<div>" * 30 + "is a word" + "</div>" * 30 + "</aside>"
    return _page(item * (size // len(item)))


def _chars(count: int, low: int, high: int, seed: int = 1) -> str:
    """``count`` characters drawn from ``low``-``high`` (a linear congruential
    sequence: deterministic, no repeats that a cache could exploit)."""
    span = high - low + 1
    out = []
    x = seed
    for _ in range(count):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(chr(low + (x >> 8) % span))
    return "".join(out)


def _paragraphs(text: str, length: int = 500) -> str:
    return "".join(f"<p>{text[i:i + length]}</p>" for i in range(0, len(text), length))


def han_text(size: int) -> str:
    """``size // 4`` Han characters (a million at the default size) in one text
    node, each one a token (issue 24: 1.1 s and +300 MB of RSS)."""
    return _page(f"<p>{_chars(size // 4, 0x4E00, 0x9FFF)}</p>")


def han_paragraphs(size: int) -> str:
    """The same in paragraphs of 500 characters."""
    return _page(_paragraphs(_chars(size // 4, 0x4E00, 0x9FFF)))


def hiragana_text(size: int) -> str:
    """``size // 4`` hiragana characters in paragraphs."""
    return _page(_paragraphs(_chars(size // 4, 0x3041, 0x3096)))


def thai_text(size: int) -> str:
    """About ``size // 4`` characters of Thai syllables (a consonant, perhaps a
    vowel sign and a tone mark, in canonical order; no spaces, as Thai is
    written) in paragraphs."""
    consonants = _chars(size // 12, 0x0E01, 0x0E2E, seed=2)
    vowels = _chars(size // 12, 0x0E34, 0x0E37, seed=3)
    tones = _chars(size // 12, 0x0E48, 0x0E4B, seed=4)
    syllables = [
        c + (v if i % 3 else "") + (t if i % 2 else "")
        for i, (c, v, t) in enumerate(zip(consonants, vowels, tones))
    ]
    return _page(_paragraphs("".join(syllables)))


def joiners_and_marks(size: int) -> str:
    """Words broken up by zero-width joiners and stacked combining marks."""
    word = "is\u200dthe\u0301\u0302\u0303 ca\u200ct\u0300 "
    return _page(_paragraphs(word * (size // len(word))))


def nuls_and_surrogates(size: int) -> str:
    """Text full of NUL bytes and lone surrogates (as character references: a
    ``str`` cannot be encoded with them, a page can refer to them)."""
    word = "is\x00a&#xd800; the&#xdfff;\x00cat "
    return _page(_paragraphs(word * (size // len(word))))


def many_entities(size: int) -> str:
    """A million character references (at the default size) in one paragraph."""
    return _page("<p>" + "&amp;&#233;&lt;&nbsp;" * (size // 20) + "</p>")


def many_headings(size: int) -> str:
    """200,000 ``<h2>`` (at the default size), a word or two each."""
    return _page("<h2>is a</h2>" * (size // 20) + f"<p>{_prose(2000)}</p>")


def many_breaks(size: int) -> str:
    """100,000 ``<br>`` (at the default size) in one paragraph of prose."""
    return _page("<p>" + "the cat is on a mat<br>" * (size // 40) + "</p>")


def many_links_in_a_block(size: int) -> str:
    """100,000 links (at the default size) in one block."""
    return _page("<div>" + "<a href='/x'>is a</a> the cat " * (size // 40) + "</div>")


def big_table(size: int) -> str:
    """A table of 150,000 cells (at the default size), ten a row."""
    cells = size // 27
    row = "<tr>" + "<td>is a</td>" * 10 + "</tr>"
    return _page("<table>" + row * (cells // 10) + "</table>")


SHAPES: dict[str, Callable[[int], str]] = {
    "nested aside/nav": nested_drops,
    "nested class=sidebar": nested_drops_by_class,
    "nested drops, text each": nested_drops_with_text,
    "huge title": huge_title,
    "huge text node": huge_text_node,
    "huge link text": huge_link_text,
    "sibling navs": sibling_navs,
    "tiny paragraphs": tiny_paragraphs,
    "inline run": inline_run,
    "huge class value": huge_class,
    "many distinct classes": many_classes,
    "long styles": huge_styles,
    "many scripts": many_scripts,
    "deep": deep,
    "deep and wide": deep_and_wide,
    "wide drops, deep": wide_drops_deep,
    "han text": han_text,
    "han paragraphs": han_paragraphs,
    "hiragana text": hiragana_text,
    "thai text": thai_text,
    "joiners and marks": joiners_and_marks,
    "NULs and surrogates": nuls_and_surrogates,
    "many entities": many_entities,
    "many headings": many_headings,
    "many <br>": many_breaks,
    "many links, one block": many_links_in_a_block,
    "big table": big_table,
}


def crafted_cache_page(n: int, size: int = 200_000) -> str:
    """A page whose class and id values are all new (page ``n`` of a series):
    what a per-process cache keyed by page content would keep."""
    names = _names(size // 12, f"p{n}x")
    return _page(
        f'<div class="{names}" id="{names[:5000]}"><p>{_prose(2000)}</p></div>'
        + "".join(f'<div class="c{n}x{i} {names[i:i + 200]}">w</div>' for i in range(50))
    )
