"""What a drop would cut off: the links of the pages a crawl delivered.

A near-duplicate that is dropped never reaches the spider, so the links it
carries never reach the frontier; a page linked only from it is lost with it,
however right the drop was (two generated pages may be near-identical and still
link to pages of their own). :class:`DeliveredLinks` holds the links of every
page delivered to the spider, and a near copy is dropped only when each link it
carries is among them (:meth:`DeliveredLinks.uncovered`): a drop then cuts the
frontier off from no page the crawl could reach before. This holds whatever the
extractor read as the page's main text: it looks at the page's links, not at
its text.

A copy's link is read in two ways: as it is (resolved against the copy's own
URL), and, when the copy is on another host than the page it duplicates (a
mirror), as it would be on the kept page, by swapping the copy's address prefix
for the kept page's (``http://mirror/docs/a.html`` of ``http://site/docs/a.html``:
``http://mirror/docs/b.html`` is read as ``http://site/docs/b.html``). Pages of
one host are never read into each other's links: two of them alike, with their
own links, are as often two classes of one name in two packages (commons-lang3's
``lang3/Streams.html`` and ``lang3/stream/Streams.html``) as one page twice.

Links are compared without their query and fragment (a session id in every
link would otherwise make each copy's links new), and only links to the hosts
the crawl delivered pages from (plus the copy's and the kept page's): a link to
an advert or another site is not the crawl's frontier. Pure: no Scrapy import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Literal
from urllib.parse import urljoin, urlsplit

import xxhash
from lxml import etree

try:  # the compiled tree walks, when the package was built with them (extract warns when not)
    from scrapy_simhash.fingerprinting._walk import hrefs as _compiled_hrefs
except (ImportError, ValueError):  # pragma: no cover - a pure-Python install, another lxml
    _compiled_hrefs = None

__all__ = ["DeliveredLinks", "MAX_LINKS", "page_links"]

#: Links read from one page (as many as the elements the extractor reads of it).
#: A delivered page with more is recorded in part (a later copy of it is then
#: delivered rather than dropped); a copy with more is delivered.
MAX_LINKS = 30_000

#: Links a :class:`DeliveredLinks` keeps resolved and hashed, by href, for the
#: next pages of their origin (about 5 MB when full).
MEMO_SIZE = 16_384


def page_links(root: etree._Element) -> list[str]:
    """The ``href`` of each ``<a>`` and ``<area>`` of the page, in document
    order, at most :data:`MAX_LINKS` + 1 (bounded work on a hostile page); by
    the compiled walks when they were built (over lxml's C API: no element
    object a link)."""
    if _compiled_hrefs is not None:
        return _compiled_hrefs(root, MAX_LINKS)
    hrefs: list[str] = []
    for element in root.iter("a", "area"):
        href = element.get("href")
        if href is not None:
            hrefs.append(href)
            if len(hrefs) > MAX_LINKS:
                break
    return hrefs


#: What a path leaves to ``urljoin``: parameters, a backslash, a control character,
#: a space (a whole HTTP(S) URL's path also leaves it dot segments, :func:`_dot_segment`).
_UNSAFE = re.compile(r"[;\\\x00-\x20\x7f]")
#: What makes the string path leave a host part to ``urlsplit`` (as an empty one
#: does): user info, IPv6, odd characters.
_ODD_HOST = re.compile(r"[@\[\]\\\x00-\x20\x7f?#]")


def _dot_segment(path: str) -> bool:
    """Whether ``path`` has a ``.`` or ``..`` segment (string tests: a regular
    expression anchored on ``^|/`` costs a microsecond a link)."""
    if "." not in path:
        return False
    padded = f"/{path}/"
    return "/./" in padded or "/../" in padded


@lru_cache(maxsize=4096)
def _resolve(base: str, href: str) -> tuple[str, str] | None:
    """``href`` on the page at ``base`` by :func:`urllib.parse.urljoin`: (host, URL
    without query and fragment), or None for a link that is not an HTTP(S) URL.
    What :func:`_links` does faster for the usual links."""
    try:
        parts = urlsplit(urljoin(base, href))
    except ValueError:  # an invalid IPv6 host and the like: no link a crawl follows
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return parts.netloc.lower(), f"{parts.scheme}://{parts.netloc.lower()}{parts.path or '/'}"


def _keyed_links(
    url: str, hrefs: Iterable[str], memo: _Memo | None = None
) -> Iterator[tuple[str, str, int]]:
    """The links ``hrefs`` of the page at ``url``, resolved as :func:`_resolve`
    resolves them, as (host, link, :func:`_key`): string operations for a plain
    path (absolute, relative or a whole HTTP URL), ``urljoin`` for anything with
    dot segments or odd forms. The links of root-relative paths and of whole
    HTTP(S) URLs resolved by string operations depend on the page's origin only:
    with ``memo``, they are read from it (and added to it, see :class:`_Memo`)
    rather than resolved and hashed again."""
    page = _resolve(url, "")
    if page is None:
        for href in hrefs:
            link = _resolve(url, href.strip())
            if link is not None:
                yield *link, _key(link[1])
        return
    host, own = page
    origin = own[: own.index("/", own.index("//") + 2)]
    own_path = own[len(origin):]
    odd_base = "//" in own_path  # urljoin drops its empty segments too
    folder = own[: own.rfind("/") + 1]
    known = memo.of(origin) if memo is not None else {}
    for raw in hrefs:
        keyed = known.get(raw)
        if keyed is not None:
            yield keyed
            continue
        href = raw.strip()
        if not href or href[0] == "#":
            continue
        path = href.split("#", 1)[0].split("?", 1)[0]
        origin_only = False  # whether the link depends on the page's origin only
        if not path:  # a query of this page
            link = host, own
        elif path[0] != "/" and ":" in path.split("/", 1)[0]:  # a scheme
            link = _absolute(path)
            if link is False:  # not a plain HTTP(S) URL
                link = _resolve(url, href)
            else:
                origin_only = True
        elif path.startswith("//") or _UNSAFE.search(path):
            link = _resolve(url, href)  # another host, or urljoin's rules for odd paths
        elif "//" in path or _dot_segment(path) or (odd_base and path[0] != "/"):
            link = host, origin + _join(own_path, path)
            origin_only = path[0] == "/"
        elif path[0] == "/":
            link = host, origin + path
            origin_only = True
        else:
            link = host, folder + path
        if link is not None:
            keyed = link[0], link[1], _key(link[1])
            if origin_only:
                known[raw] = keyed
            yield keyed


class _Memo:
    """The resolved, hashed links of hrefs whose link depends on the page's origin
    only (whole URLs, root-relative paths), by origin and href: the pages of a site
    repeat most of theirs (navigation). Holds about :data:`MEMO_SIZE` entries at
    most: when more, all are dropped (the pages read next fill it again)."""

    def __init__(self) -> None:
        self._origins: dict[str, dict[str, tuple[str, str, int]]] = {}
        self._size = 0  # entries, but those added to ``_last`` since it was handed out
        self._last: dict[str, tuple[str, str, int]] = {}
        self._last_size = 0

    def __len__(self) -> int:
        return self._size + len(self._last) - self._last_size

    def of(self, origin: str) -> dict[str, tuple[str, str, int]]:
        """The links known of ``origin``'s hrefs, for one page to read and add to."""
        self._size = len(self)
        if self._size >= MEMO_SIZE:
            self._origins.clear()
            self._size = 0
        known = self._origins.setdefault(origin, {})
        self._last, self._last_size = known, len(known)
        return known


def _join(base: str, path: str) -> str:
    """The path ``path`` on a page at the path ``base``, dot segments removed, as
    :func:`urllib.parse.urljoin` merges them."""
    if path[0] == "/":
        segments = path.split("/")
    else:
        segments = base.split("/")
        if segments[-1]:
            del segments[-1]
        segments += path.split("/")
        segments[1:-1] = filter(None, segments[1:-1])
    resolved: list[str] = []
    for segment in segments:
        if segment == "..":
            if resolved:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    if segments[-1] in (".", ".."):
        resolved.append("")
    joined = "/".join(resolved)
    return joined if joined.startswith("/") else "/" + joined  # as urlunparse writes it


def _absolute(path: str) -> tuple[str, str] | Literal[False]:
    """A whole HTTP(S) URL (without query and fragment) split by string
    operations, or False when it needs ``urljoin``'s rules."""
    head = path[:8].lower()
    if head.startswith("http://"):
        scheme, rest = "http", path[7:]
    elif head == "https://":
        scheme, rest = "https", path[8:]
    else:
        return False
    cut = rest.find("/")
    netloc, rest = (rest, "/") if cut < 0 else (rest[:cut], rest[cut:])
    if not netloc or _ODD_HOST.search(netloc) or _UNSAFE.search(rest) or _dot_segment(rest):
        return False
    netloc = netloc.lower()
    return netloc, f"{scheme}://{netloc}{rest}"


def _key(url: str) -> int:
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass"))


def _base(url: str) -> str:
    """``url`` without query and fragment, as :func:`_resolve` writes links."""
    resolved = _resolve(url, "")
    return resolved[1] if resolved is not None else url


def _prefixes(copy: str, kept: str) -> tuple[str, str] | None:
    """The address prefixes of one page at two URLs on two hosts (a mirror):
    ``(copy's, kept's)``, the parts before their longest common tail of whole path
    segments, whatever the file names (a mirror's ``index.html`` of the original's
    ``git.html``); None on one host: two pages there with one file name in two
    folders are as often two classes of one name in two packages as a copy."""
    try:
        a, b = urlsplit(copy), urlsplit(kept)
    except ValueError:
        return None
    if a.netloc.lower() == b.netloc.lower():
        return None
    sa = [f"{a.scheme}://{a.netloc.lower()}", *(a.path or "/").split("/")[1:]]
    sb = [f"{b.scheme}://{b.netloc.lower()}", *(b.path or "/").split("/")[1:]]
    n = 1
    while n < min(len(sa), len(sb)) and sa[-1 - n] == sb[-1 - n]:
        n += 1
    return "/".join(sa[:-n]) + "/", "/".join(sb[:-n]) + "/"


class DeliveredLinks:
    """The links (64-bit hashes of their URLs without query) of the pages
    delivered to the spider, and the hosts those pages came from."""

    def __init__(self) -> None:
        self._links: set[int] = set()
        self.hosts: set[str] = set()
        self._memo = _Memo()

    def __len__(self) -> int:
        return len(self._links)

    def record(self, url: str, hrefs: list[str]) -> tuple[set[int], str | None]:
        """Add the links of the page at ``url`` (delivered to the spider); return
        what was new (the link hashes, and the page's host or None), for a
        :class:`~scrapy_simhash.link_state.LinkLog` to keep."""
        host = None
        resolved = _resolve(url, "")
        if resolved is not None and resolved[0] not in self.hosts:
            host = resolved[0]
            self.hosts.add(host)
        links = self._links
        unique = set(hrefs[:MAX_LINKS])  # each href once: pages repeat theirs
        new = {key for _, _, key in _keyed_links(url, unique, self._memo)} - links
        links |= new
        return new, host

    def restore(self, keys: Iterable[int], hosts: Iterable[str]) -> None:
        """Add link hashes and hosts kept by an earlier part of the crawl."""
        self._links.update(keys)
        self.hosts.update(hosts)

    def uncovered(self, url: str, hrefs: list[str], kept: str) -> str | None:
        """The first link of the copy at ``url`` (a near-duplicate of the page at
        ``kept``) that no delivered page carries, or None when dropping the copy
        cuts nothing off. A copy with more than :data:`MAX_LINKS` links answers
        its first link past them."""
        own = _base(url)
        kept_base = _base(kept)
        hosts = self.hosts | {urlsplit(own).netloc, urlsplit(kept_base).netloc}
        swap = _prefixes(url, kept)
        if len(hrefs) > MAX_LINKS:
            return hrefs[MAX_LINKS].strip()
        links = self._links
        # each href once, in order: the first uncovered link is the same
        for host, target, key in _keyed_links(url, dict.fromkeys(hrefs), self._memo):
            if key in links or host not in hosts or target in (own, kept_base):
                continue
            if swap is not None and target.startswith(swap[0]):
                mapped = swap[1] + target[len(swap[0]):]
                if mapped == kept_base or _key(mapped) in links:
                    continue
            return target
        return None
