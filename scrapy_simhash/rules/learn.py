"""URL rules learned from confirmed near-duplicates (DUST: different URLs, similar text).

Pure: no Scrapy import. A :class:`RuleBook` is fed two kinds of evidence, both
from pages the crawl fetched and fingerprinted:

- :meth:`RuleBook.duplicate` ``(url, of)``: ``url`` was dropped as a
  near-duplicate of the kept page ``of``. The difference between ``url`` and
  each URL already known to show that page (one dimension only: a set of query
  parameters, a path substitution, a host alias, ``index.html`` versus ``/``,
  case, trailing slash, parameter order) names a candidate :class:`Rule`.
- :meth:`RuleBook.kept` ``(url)``: ``url`` was kept as a distinct page.

Every URL fetched is thus known to show one page. A rule that maps two URLs of
one page together has a supporting pair; a rule that maps URLs of two different
pages together has a counterexample and is retired for good.

Every rule is narrow: one origin (scheme and host), one path pattern, one
parameter set or one substitution. It becomes active only with
``min_support`` distinct supporting pairs, on at least two distinct pages (so
that one page met under many URLs, such as the empty pages past the end of a
listing, never speaks for a whole path), and no counterexample;
:meth:`RuleBook.check` then says which request URL an active rule maps to a
page already kept, and whether to fetch it anyway to verify the rule.

The state is rebuilt from the evidence (replayed from a log on resume or from
the other processes of a crawl), and which rules are active or retired depends on
that evidence only, not on the order it arrives in (see :class:`RuleBook`): a rule
counts the pairs it maps itself; rules compose only when they are applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

__all__ = ["Decision", "Rule", "RuleBook", "RuleEvent", "Url", "candidate_rule", "parse_url",
           "path_pattern"]

#: Default-document names that ``index`` rules may learn to drop.
INDEX_FILES = frozenset(
    {"index.html", "index.htm", "index.php", "index.asp", "default.asp", "default.aspx",
     "index.shtml", "index.jsp"}
)
#: Stored example pairs per rule (support and counterexamples): the evidence shown
#: in logs and by ``scrapy-simhash rules``; counts are kept in full.
MAX_EXAMPLES = 5
#: URLs of one page compared with a new duplicate of it to suggest rules.
MAX_CLUSTER = 16


class Url(NamedTuple):
    """A URL split for rule matching: origin (``scheme://host:port``, lower case),
    path, and the raw query items in their order, as ``(name, "=value")`` (``""``
    for a bare ``name``), without unquoting."""

    origin: str
    path: str
    query: tuple[tuple[str, str], ...]

    def text(self) -> str:
        if not self.query:
            return self.origin + self.path
        return self.origin + self.path + "?" + "&".join(n + v for n, v in self.query)


def parse_url(url: str) -> Url:
    """Split *url* without unquoting; the fragment is dropped (it never reaches a server)."""
    url = url.partition("#")[0]
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    slash = rest.find("/")
    qmark = rest.find("?")
    if slash == -1 or (qmark != -1 and qmark < slash):
        cut = qmark if qmark != -1 else len(rest)
        netloc, rest = rest[:cut], "/" + rest[cut:]
    else:
        netloc, rest = rest[:slash], rest[slash:]
    path, _, query = rest.partition("?")
    items: tuple[tuple[str, str], ...] = ()
    if query:
        items = tuple(
            (name, sep + value)
            for name, sep, value in (p.partition("=") for p in query.split("&") if p)
        )
    return Url(f"{scheme.lower()}://{netloc.lower()}", path or "/", items)


@lru_cache(maxsize=1 << 16)
def path_pattern(path: str) -> str:
    """The family of pages a parameter rule may speak for: the path itself, except a
    last segment that is a number (``/item/{n}``) or a file (``/news/*.html``)."""
    head, _, last = path.rpartition("/")
    if not last:
        return path
    if last.isdigit():
        return head + "/{n}"
    stem, dot, ext = last.rpartition(".")
    if dot and stem and 0 < len(ext) <= 5 and ext.isalnum():
        return f"{head}/*.{ext.lower()}"
    return path


def _ext(segment: str) -> str:
    stem, dot, ext = segment.rpartition(".")
    return ext.lower() if dot and stem else ""


Pair = tuple[str, str]


@dataclass(eq=False)
class Rule:
    """One candidate rewrite: which URLs it speaks for and the evidence for it.

    ``key(url)`` is the URL with the rule applied (``None`` when the rule does not
    speak for it): two URLs with the same key are, by the rule, the same page.
    """

    id: str
    kind: str
    origins: tuple[str, ...]
    support: int = 0  # supporting pairs (one per URL the rule maps onto a URL of its page)
    pages: int = 0  # distinct pages among them (rule keys)
    examples: list[Pair] = field(default_factory=list)
    counterexamples: list[Pair] = field(default_factory=list)
    active: bool = False
    retired: bool = False
    skips: int = 0
    verified: int = 0  # supporting pairs met after activation
    _support_keys: set = field(default_factory=set, repr=False)
    _support_urls: set = field(default_factory=set, repr=False)
    _kept: dict = field(default_factory=dict, repr=False)  # own key -> (page, url, Url)
    # key another active rule's form of a URL has under this one -> {inner id: (page, url)}
    _composed: dict = field(default_factory=dict, repr=False)
    _verify_left: int = field(default=0, repr=False)
    _verify_keys: set = field(default_factory=set, repr=False)
    _would: int = field(default=0, repr=False)  # requests it would have skipped
    _checks: int = field(default=0, repr=False)  # ... of which fetched to check it

    def key(self, url: Url):  # overridden
        raise NotImplementedError

    def scope(self) -> tuple:
        """Where kept pages that the rule may speak for are found (see RuleBook._backfill)."""
        return tuple(("origin", o) for o in self.origins)

    def summary(self) -> dict:
        return {
            "rule": self.id, "kind": self.kind, "support": self.support, "pages": self.pages,
            "counterexamples": len(self.counterexamples), "skips": self.skips,
            "verified": self.verified,
            "state": "retired" if self.retired else "active" if self.active else "candidate",
            "examples": [list(p) for p in self.examples],
            "counterexample_pairs": [list(p) for p in self.counterexamples],
        }


class ParamRule(Rule):
    """Query parameters ``names`` do not change the page, on one origin and path pattern."""

    def __init__(self, origin: str, pattern: str, names: frozenset[str]) -> None:
        label = ",".join(sorted(names))
        super().__init__(f"param {origin}{pattern} ignore {label}", "param", (origin,))
        self.pattern = pattern
        self.names = names

    def key(self, url: Url):
        if url.origin != self.origins[0] or path_pattern(url.path) != self.pattern:
            return None
        names = self.names
        return url.origin, url.path, tuple(p for p in url.query if p[0] not in names)

    def scope(self) -> tuple:
        return (("pattern", self.origins[0], self.pattern),)


class PathRule(Rule):
    """Path segments ``a`` and ``b`` are interchangeable after ``prefix``, before a tail
    of ``tail`` segments whose last has extension ``ext`` (``/print/X.html`` ↔ ``/news/X.html``)."""

    def __init__(self, origin: str, prefix: tuple[str, ...], a: tuple[str, ...],
                 b: tuple[str, ...], tail: int, ext: str) -> None:
        a, b = sorted((a, b))
        shape = "/".join(["*"] * (tail - 1) + ([f"*.{ext}" if ext else "*"] if tail else []))
        text = "/".join(prefix)
        super().__init__(
            f"path {origin}{text}/{{{'/'.join(a)}|{'/'.join(b)}}}/{shape}", "path", (origin,)
        )
        self.prefix, self.a, self.b, self.tail, self.ext = prefix, a, b, tail, ext
        self._heads = ("/".join(prefix + a) + "/", "/".join(prefix + b) + "/")

    def key(self, url: Url):
        if url.origin != self.origins[0]:
            return None
        path = url.path
        if not (path.startswith(self._heads[0]) or path.startswith(self._heads[1])):
            return None
        segs = tuple(path.split("/"))
        n = len(self.prefix)
        for side in (self.a, self.b):
            m = n + len(side)
            if segs[n:m] == side and len(segs) - m == self.tail and segs[:n] == self.prefix:
                if self.tail and _ext(segs[-1]) != self.ext:
                    return None
                return url.origin, "/".join(self.prefix + self.a + segs[m:]), url.query
        return None

    def scope(self) -> tuple:
        if self.tail == 1:
            return tuple(("dir", self.origins[0], h[:-1]) for h in self._heads)
        return super().scope()


class HostRule(Rule):
    """Two origins serve the same pages under the same paths (``www.`` or a mirror)."""

    def __init__(self, a: str, b: str) -> None:
        a, b = sorted((a, b))
        super().__init__(f"host {a} = {b}", "host", (a, b))

    def key(self, url: Url):
        if url.origin not in self.origins:
            return None
        return self.origins[0], url.path, url.query


class IndexRule(Rule):
    """``dir/<name>`` is ``dir/`` on one origin (``index.html`` versus ``/``)."""

    def __init__(self, origin: str, name: str) -> None:
        super().__init__(f"index {origin} {name} = /", "index", (origin,))
        self.name = name
        self._suffix = "/" + name

    def key(self, url: Url):
        if url.origin != self.origins[0]:
            return None
        path = url.path
        if path.endswith(self._suffix):
            path = path[: -len(self.name)]
        return url.origin, path, url.query


class SlashRule(Rule):
    """A trailing slash does not change the page, on one origin."""

    def __init__(self, origin: str) -> None:
        super().__init__(f"slash {origin}", "slash", (origin,))

    def key(self, url: Url):
        if url.origin != self.origins[0]:
            return None
        return url.origin, url.path.rstrip("/") or "/", url.query


class CaseRule(Rule):
    """Path case does not change the page, on one origin."""

    def __init__(self, origin: str) -> None:
        super().__init__(f"case {origin}", "case", (origin,))

    def key(self, url: Url):
        if url.origin != self.origins[0]:
            return None
        return url.origin, url.path.lower(), url.query


class OrderRule(Rule):
    """Query parameter order does not change the page, on one origin and path pattern."""

    def __init__(self, origin: str, pattern: str) -> None:
        super().__init__(f"order {origin}{pattern}", "order", (origin,))
        self.pattern = pattern

    def key(self, url: Url):
        if url.origin != self.origins[0] or path_pattern(url.path) != self.pattern:
            return None
        return url.origin, url.path, tuple(sorted(url.query))

    def scope(self) -> tuple:
        return (("pattern", self.origins[0], self.pattern),)


def candidate_rule(dropped: Url, kept: Url) -> Rule | None:
    """The one rule a confirmed pair suggests, or ``None`` when the URLs differ in more
    than one way (or not at all): rules are never guessed from a mixed difference."""
    if dropped == kept:
        return None
    if dropped.origin != kept.origin:
        if dropped.path == kept.path and dropped.query == kept.query:
            return HostRule(dropped.origin, kept.origin)
        return None
    origin = dropped.origin
    if dropped.path == kept.path:
        if sorted(dropped.query) == sorted(kept.query):
            return OrderRule(origin, path_pattern(dropped.path))
        x: dict[str, list[str]] = {}
        y: dict[str, list[str]] = {}
        for n, v in dropped.query:
            x.setdefault(n, []).append(v)
        for n, v in kept.query:
            y.setdefault(n, []).append(v)
        names = frozenset(n for n in x.keys() | y.keys() if x.get(n) != y.get(n))
        return ParamRule(origin, path_pattern(dropped.path), names)
    if dropped.query != kept.query:
        return None
    p, q = dropped.path, kept.path
    if p.lower() == q.lower():
        return CaseRule(origin)
    if (p.rstrip("/") or "/") == (q.rstrip("/") or "/"):
        return SlashRule(origin)
    for long, short in ((p, q), (q, p)):
        head, _, name = long.rpartition("/")
        if name.lower() in INDEX_FILES and short == head + "/":
            return IndexRule(origin, name)
    sp, sq = p.split("/"), q.split("/")
    i = 0
    while i < min(len(sp), len(sq)) - 1 and sp[i] == sq[i]:
        i += 1
    j = 0
    while j < min(len(sp), len(sq)) - i and sp[-1 - j] == sq[-1 - j]:
        j += 1
    a, b = tuple(sp[i : len(sp) - j]), tuple(sq[i : len(sq) - j])
    if not a or not b or i == 0:
        return None
    return PathRule(origin, tuple(sp[:i]), a, b, j, _ext(sp[-1]) if j else "")


class RuleEvent(NamedTuple):
    """Something a caller should log: ``kind`` is ``learned``, ``activated``,
    ``retired`` (an active rule met a counterexample), ``rejected`` (a candidate
    did) or ``unlinked`` (``via`` then ``rule``, both active, mapped two pages kept
    as distinct together: they are no longer applied one after the other); ``pair``
    is the supporting pair or the counterexample."""

    kind: str
    rule: Rule
    pair: Pair
    via: Rule | None = None


class Decision(NamedTuple):
    """An active rule maps a request to the kept page ``duplicate_of``; ``verify``
    says to fetch it anyway and let the fingerprint confirm or refute the rule."""

    rule: Rule
    duplicate_of: str
    verify: bool


class RuleBook:
    """Candidate and active rules, the evidence behind them, and the pages kept.

    ``min_support``: distinct supporting pairs before a rule is active (on two
    distinct pages at least, when ``min_support`` is 2 or more);
    ``verify_first``: requests fetched anyway right after activation (the first
    ones for pages beyond the rule's supporting pages: a page with a supporting
    pair of its own is skipped on that evidence);
    ``verify_share``: after those, a rule fetches the request it would skip
    whenever fewer than this share of the requests it would have skipped so far
    were fetched to check it (the first ones included): a floor, not an average.

    **What the state depends on.** A rule's support and counterexamples are the
    pairs of fetched URLs that the rule *itself* maps together (same
    :meth:`Rule.key`): same page, a supporting pair; two pages kept as distinct, a
    counterexample. Both are functions of the set of (URL, page) observations, so
    whether a rule is active (enough support, no counterexample) or retired (a
    counterexample) does not depend on the order the evidence arrives in: a rule
    created late meets every earlier observation (``_backfill``), support only
    grows and retirement is for good. Rules compose only when applied (a host
    alias, then a tracking parameter): a composition of two active rules is
    checked against every observation once both are active, and one pair of
    distinct pages it maps together stops it (``unlinked``), again whatever the
    order (a retired rule stops counting: its support is what it had when it met
    its counterexample). Crediting a rule with another rule's pairs, as an earlier version did,
    let a rule become active, or be blamed, depending on which rule had become
    active first. What stays order-dependent: which counterexample or example pair
    is shown, the ``verified`` and ``skips`` counts, and which pairs of a page's
    URLs suggest candidates when a page has more than ``MAX_CLUSTER`` URLs (a
    missed candidate saves fewer fetches; it never skips a page).
    """

    def __init__(self, min_support: int = 3, verify_first: int = 2,
                 verify_share: float = 0.05) -> None:
        if min_support < 1:
            raise ValueError(f"min_support must be at least 1, got {min_support}")
        if not 0.0 <= verify_share <= 1.0:
            raise ValueError(f"verify_share must be from 0 to 1, got {verify_share}")
        self.min_support = min_support
        self.verify_first = verify_first
        self.verify_share = verify_share
        self.rules: dict[str, Rule] = {}
        self._live: dict[str, list[Rule]] = {}  # origin -> rules not retired
        self._active: dict[str, list[Rule]] = {}  # origin -> active rules
        self._unlinked: set[tuple[str, str]] = set()  # (inner id, outer id): not composed
        self._page_of: dict[str, str] = {}  # URL fetched -> the kept URL of its page
        self._cluster: dict[str, list[str]] = {}  # kept URL -> URLs that showed it
        self._seen: dict[tuple, list[tuple[Url, str, str]]] = {}  # scope -> (url, page)

    # -- evidence --------------------------------------------------------------------------

    def kept(self, url: str) -> list[RuleEvent]:
        """``url`` was fetched and kept as a distinct page; returns the rules it retires."""
        return self._observe(url, url)

    def duplicate(self, url: str, of: str) -> list[RuleEvent]:
        """``url`` was dropped as a near-duplicate of the kept page ``of``: ``url`` with
        every other URL already known to show page ``of`` may suggest rules
        (``learned``), support them (``activated``) or refute them."""
        if url in self._page_of:
            return []
        cluster = self._cluster.get(of, [of])[:MAX_CLUSTER]
        # observed first, so that the new rules' backfill meets it with the others
        events = self._observe(url, of)
        u = parse_url(url)
        for other in cluster:
            if other == url:
                continue
            rule = candidate_rule(u, parse_url(other))
            if rule is None or rule.id in self.rules:
                continue
            self.rules[rule.id] = rule
            for origin in rule.origins:
                self._live.setdefault(origin, []).append(rule)
            events.append(RuleEvent("learned", rule, (url, other)))
            events.extend(self._backfill(rule))
        return events

    def _observe(self, url: str, page: str) -> list[RuleEvent]:
        """Record that fetching ``url`` showed ``page`` (a kept URL); every live rule
        that maps ``url`` gains a supporting pair or a counterexample, and every
        composition of two active rules that maps it is checked."""
        if url in self._page_of:
            return []
        self._page_of[url] = page
        cluster = self._cluster.setdefault(page, [page])
        if url != page:
            cluster.append(url)
        u = parse_url(url)
        entry = (u, url, page)
        head = u.path.rpartition("/")[0]
        for scope in (("origin", u.origin), ("pattern", u.origin, path_pattern(u.path)),
                      ("dir", u.origin, head)):
            self._seen.setdefault(scope, []).append(entry)
        events: list[RuleEvent] = []
        for rule in list(self._live.get(u.origin, ())):
            if not rule.retired:
                events.extend(self._meet(rule, u, url, page))
        for inner in list(self._active.get(u.origin, ())):
            image = inner.key(u) if inner.active else None
            if image is None or image == u:
                continue
            for outer in list(self._active.get(image[0], ())):
                if outer is not inner and outer.active:
                    events.extend(self._meet_composed(inner, outer, u, url, page))
        return events

    def _backfill(self, rule: Rule) -> list[RuleEvent]:
        """A new rule meets every URL fetched before it existed: its support and its
        counterexamples so far."""
        events: list[RuleEvent] = []
        done: set[str] = set()
        for scope in rule.scope():
            for u, url, page in self._seen.get(scope, ()):
                if url in done:
                    continue
                done.add(url)
                events.extend(self._meet(rule, u, url, page))
                if rule.retired:
                    return events
        return events

    def _meet(self, rule: Rule, u: Url, url: str, page: str) -> list[RuleEvent]:
        """``rule`` meets a URL fetched: a supporting pair or a counterexample when
        ``rule`` maps it onto a URL fetched before (its own pairs only)."""
        own = rule.key(u)
        if own is None:
            return []
        first = rule._kept.setdefault(own, (page, url, u))
        if first[0] != page:
            return [self._retire(rule, (first[1], url))]
        events: list[RuleEvent] = []
        if first[1] != url:
            events.extend(self._support(rule, own, (url, first[1])))
        # an earlier composition mapped another page to this key: it is refuted
        for inner_id, (other_page, other_url) in rule._composed.get(own, {}).items():
            if other_page != page:
                events.extend(self._unlink(self.rules[inner_id], rule, (other_url, url)))
        return events

    def _meet_composed(self, inner: Rule, outer: Rule, u: Url, url: str,
                       page: str) -> list[RuleEvent]:
        """``inner`` then ``outer`` (both active) meet a URL fetched: the composition
        is refuted when it maps the URL onto a URL of another page."""
        if (inner.id, outer.id) in self._unlinked:
            return []
        first = inner.key(u)
        if first is None or first == u:
            return []
        key = outer.key(Url(*first))
        if key is None:
            return []
        seen = outer._composed.setdefault(key, {}).setdefault(inner.id, (page, url))
        if seen[0] != page:
            return self._unlink(inner, outer, (seen[1], url))
        direct = outer._kept.get(key)
        if direct is not None and direct[0] != page:
            return self._unlink(inner, outer, (direct[1], url))
        return []

    def _unlink(self, inner: Rule, outer: Rule, pair: Pair) -> list[RuleEvent]:
        if (inner.id, outer.id) in self._unlinked:
            return []
        self._unlinked.add((inner.id, outer.id))
        return [RuleEvent("unlinked", outer, pair, inner)]

    def _support(self, rule: Rule, key: tuple, pair: Pair) -> list[RuleEvent]:
        url = pair[0]
        if url in rule._support_urls:
            return []
        rule._support_urls.add(url)
        rule.support += 1
        if rule.active:
            rule.verified += 1
        if key not in rule._support_keys:
            rule._support_keys.add(key)
            rule.pages += 1
            if rule.active and key not in rule._verify_keys and rule._verify_left > 0:
                # a fetch already under way at activation checked a new page: it counts
                # as one of the first verifications
                rule._verify_left -= 1
                rule._checks += 1
                rule._would += 1
        if len(rule.examples) < MAX_EXAMPLES:
            rule.examples.append(pair)
        if not rule.active and self._enough(rule):
            return self._activate(rule, pair)
        return []

    def _enough(self, rule: Rule) -> bool:
        return rule.support >= self.min_support and rule.pages >= min(2, self.min_support)

    def _activate(self, rule: Rule, pair: Pair) -> list[RuleEvent]:
        """``rule`` is active: its compositions with the other active rules meet every
        URL fetched so far (then each new one, in :meth:`_observe`)."""
        rule.active = True
        rule._verify_left = self.verify_first
        events = [RuleEvent("activated", rule, pair)]
        others = {id(r): r for o in rule.origins for r in self._active.get(o, ())}
        for origin in rule.origins:
            self._active.setdefault(origin, []).append(rule)
        for other in others.values():
            for inner, outer in ((rule, other), (other, rule)):
                for origin in inner.origins:
                    for u, url, page in self._seen.get(("origin", origin), ()):
                        events.extend(self._meet_composed(inner, outer, u, url, page))
        return events

    def _retire(self, rule: Rule, pair: Pair) -> RuleEvent:
        rule.retired = True
        if len(rule.counterexamples) < MAX_EXAMPLES:
            rule.counterexamples.append(pair)
        for origin in rule.origins:
            self._live[origin].remove(rule)
            if rule.active:
                self._active[origin].remove(rule)
        was_active, rule.active = rule.active, False
        rule._kept = {}
        rule._composed = {}
        rule._support_keys = set()
        rule._support_urls = set()
        return RuleEvent("retired" if was_active else "rejected", rule, pair)

    # -- applying --------------------------------------------------------------------------

    def check(self, url: str) -> Decision | None:
        """The active rule mapping ``url`` to a page already kept (another URL), if any:
        a rule alone, else an active rule after another one (a composition not
        unlinked)."""
        origin_end = url.find("/", url.find("://") + 3)
        origin = (url if origin_end == -1 else url[:origin_end]).lower()
        if "?" in origin:
            origin = origin.partition("?")[0]
        rules = self._active.get(origin)
        if not rules:
            return None
        u = parse_url(url)
        matches = self._direct(rules, u, url)
        if matches:
            for rule, key, kept in matches:
                if key in rule._support_keys:
                    # this very page has a supporting pair under the rule: no first check
                    return self._decide(rule, kept, first=False)
        else:
            matches = self._composed(rules, u, url)
            if not matches:
                return None
        for rule, key, kept in matches:
            if rule._verify_left == 0 or key in rule._verify_keys:
                return self._decide(rule, kept, first=False)
        # every rule mapping it is new: the first pages beyond its evidence are fetched
        rule, key, kept = matches[0]
        rule._verify_left -= 1
        rule._verify_keys.add(key)
        return self._decide(rule, kept, first=True)

    def _decide(self, rule: Rule, kept: str, *, first: bool) -> Decision:
        """Count a request ``rule`` would skip; fetch it to check the rule when it is
        one of the first, or while fewer than ``verify_share`` of them were checked."""
        rule._would += 1
        verify = first or rule._checks < self.verify_share * rule._would
        if verify:
            rule._checks += 1
        return Decision(rule, kept, verify)

    @staticmethod
    def _direct(rules: list[Rule], u: Url, url: str) -> list[tuple[Rule, tuple, str]]:
        found = []
        for rule in rules:
            key = rule.key(u)
            if key is None:
                continue
            known = rule._kept.get(key)
            if known is not None and known[0] != url:
                found.append((rule, key, known[0]))
        return found

    def _composed(self, rules: list[Rule], u: Url, url: str) -> list[tuple[Rule, tuple, str]]:
        """Active rules after another active rule (``/a?utm=1`` on a mirror host is
        ``/a`` on the main one), unless that composition was unlinked."""
        found = []
        for inner in rules:
            image = inner.key(u)
            if image is None or image == u:
                continue
            for outer in self._active.get(image[0], ()):
                if outer is inner or (inner.id, outer.id) in self._unlinked:
                    continue
                key = outer.key(Url(*image))
                if key is None:
                    continue
                known = outer._kept.get(key)
                if known is not None and known[0] != url:
                    found.append((outer, key, known[0]))
        return found

    def skipped(self, rule_id: str) -> None:
        rule = self.rules.get(rule_id)
        if rule is not None:
            rule.skips += 1

    # -- reading ---------------------------------------------------------------------------

    @property
    def active_count(self) -> int:
        return sum(r.active for r in self.rules.values())

    @property
    def kept_count(self) -> int:
        return len(self._cluster)

    def summary(self) -> list[dict]:
        """Every rule (active first, then candidates, then retired), as plain dicts."""
        order = {"active": 0, "candidate": 1, "retired": 2}
        rows = [r.summary() for r in self.rules.values()]
        return sorted(rows, key=lambda r: (order[r["state"]], -r["support"], r["rule"]))
