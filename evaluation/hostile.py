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
}


def crafted_cache_page(n: int, size: int = 200_000) -> str:
    """A page whose class and id values are all new (page ``n`` of a series):
    what a per-process cache keyed by page content would keep."""
    names = _names(size // 12, f"p{n}x")
    return _page(
        f'<div class="{names}" id="{names[:5000]}"><p>{_prose(2000)}</p></div>'
        + "".join(f'<div class="c{n}x{i} {names[i:i + 200]}">w</div>' for i in range(50))
    )
