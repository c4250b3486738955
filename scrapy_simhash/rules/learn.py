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
    _support_keys: set = field(default_factory=set, repr=False)  # keys of own pairs
    _kept: dict = field(default_factory=dict, repr=False)  # own key -> (page, url, Url)
    _own_pairs: int = field(default=0, repr=False)
    # key a URL has under this rule after another rule -> {its id: [(page, url, image)]}
    _composed: dict = field(default_factory=dict, repr=False)
    # support lent by other rules: their id -> {url: (the key it has here, its image)}
    _lent: dict = field(default_factory=dict, repr=False)
    _borrowers: dict = field(default_factory=dict, repr=False)  # rules this one lends to
    _lending: bool = field(default=False, repr=False)  # ever active
    _verify_left: int = field(default=0, repr=False)
    _verify_keys: set = field(default_factory=set, repr=False)
    _would: int = field(default=0, repr=False)  # requests it would have skipped
    _checks: int = field(default=0, repr=False)  # ... of which fetched to check it

    @property
    def was_active(self) -> bool:
        """Whether the rule was ever active (a retired rule that was not: a rejected candidate)."""
        return self._lending

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
    ``verify_share``: after those, a rule fetches a request it would skip whenever
    fewer than this share of the requests it would have skipped so far were
    fetched to check it (the first ones included): a floor, not an average.

    **What the state depends on: the evidence, not its order.** Every fetched URL
    is an observation (URL, page). A rule's *own* pairs are two URLs of one page
    with the same :meth:`Rule.key`; its counterexamples, two URLs of two pages
    kept as distinct with the same key: one retires it for good. Both are
    functions of the set of observations (a rule created late meets every earlier
    one), so which rules are retired does not depend on order. A rule may also be
    supported *through* another active rule ``O`` (a host alias: ``/a?utm=1`` on
    the mirror is ``/a`` on the main host once ``O`` strips ``utm``): the URLs
    ``O`` maps onto a URL the rule keys like one of the same page. Such a pair is
    never a counterexample; when ``O`` then the rule map two distinct pages
    together, the composition is ``unlinked``: neither applied nor counted any
    more. The active rules are then the least set in which every rule has enough
    support, its own plus what the active rules around it lend it (support only
    grows with the set, so that set is unique): :meth:`_settle` recomputes it
    from scratch after a retirement or an unlinking, and grows it otherwise. An
    earlier version credited a rule with another rule's pairs as they came and
    blamed it for their counterexamples, which made the final states depend on
    which rule had become active first.

    Candidates come from every pair of URLs of one page, as fetched and after each
    host alias rule learned (whatever its state, so that they do not depend on when
    it was retired). Order-dependent on purpose: which pair is shown as an example or
    counterexample, ``verified``, ``skips``, a retired rule's counts (they stop at
    its counterexample), and, when a page has more than ``MAX_CLUSTER`` URLs,
    which pairs of them suggest candidates (a missed candidate saves fewer
    fetches; it never skips a page).
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
        self._lenders: dict[str, list[Rule]] = {}  # origin -> rules ever active
        self._hosts: dict[str, list[Rule]] = {}  # origin -> host alias rules learned
        self._unlinked: set[tuple[str, str]] = set()  # (inner id, outer id): not composed
        self._page_of: dict[str, str] = {}  # URL fetched -> the kept URL of its page
        self._cluster: dict[str, list[str]] = {}  # kept URL -> URLs that showed it
        self._seen: dict[tuple, list[tuple[Url, str, str]]] = {}  # scope -> (url, page)
        self._touched: dict[str, Rule] = {}  # rules whose support grew since _settle
        self._shrunk = False  # an active rule retired or two unlinked since _settle

    # -- evidence --------------------------------------------------------------------------

    def kept(self, url: str) -> list[RuleEvent]:
        """``url`` was fetched and kept as a distinct page; returns the rules it retires."""
        events = self._observe(url, url)
        return events + self._settle()

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
        forms = self._forms(u)
        for other in cluster:
            if other == url:
                continue
            o = parse_url(other)
            # the URLs themselves, and each after a host alias rule (which makes a
            # mirror's URL comparable with the main host's)
            for a, b in [*((form, o) for form in forms), *((u, f) for f in self._forms(o)[1:])]:
                events.extend(self._suggest(a, b, (url, other)))
        return events + self._settle()

    def _forms(self, u: Url) -> list[Url]:
        """``u`` and its forms under every host alias rule learned (whatever its state,
        so that the candidates suggested do not depend on when it was retired)."""
        forms = [u]
        for host in self._hosts.get(u.origin, ()):
            image = host.key(u)
            if image is not None and image != u:
                forms.append(Url(*image))
        return forms

    def _suggest(self, a: Url, b: Url, pair: Pair) -> list[RuleEvent]:
        """The candidate rule that ``a`` and ``b`` (two forms of one page) suggest, new."""
        rule = candidate_rule(a, b)
        if rule is None or rule.id in self.rules:
            return []
        self.rules[rule.id] = rule
        for origin in rule.origins:
            self._live.setdefault(origin, []).append(rule)
        events = [RuleEvent("learned", rule, pair), *self._backfill(rule)]
        if isinstance(rule, HostRule):
            # the URLs fetched on its hosts, compared with the other URLs of their page
            for origin in rule.origins:
                self._hosts.setdefault(origin, []).append(rule)
            for origin in rule.origins:
                for u, url, page in list(self._seen.get(("origin", origin), ())):
                    image = rule.key(u)
                    if image is None or image == u:
                        continue
                    for other in self._cluster[page][:MAX_CLUSTER]:
                        if other != url:
                            events.extend(self._suggest(Url(*image), parse_url(other),
                                                        (url, other)))
        return events

    def _observe(self, url: str, page: str) -> list[RuleEvent]:
        """Record that fetching ``url`` showed ``page`` (a kept URL): every live rule
        that maps it, alone or after a rule ever active, meets it."""
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
        for inner in list(self._lenders.get(u.origin, ())):
            if not inner.retired:
                events.extend(self._lend(inner, None, u, url, page))
        return events

    def _backfill(self, rule: Rule) -> list[RuleEvent]:
        """A new rule meets every URL fetched before it existed: its own pairs and
        counterexamples so far, then what the rules ever active lend it."""
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
        lenders = {id(r): r for o in rule.origins for r in self._lenders.get(o, ())
                   if not r.retired}
        for inner in lenders.values():
            for origin in inner.origins:
                for u, url, page in self._seen.get(("origin", origin), ()):
                    events.extend(self._lend(inner, rule, u, url, page))
        return events

    def _meet(self, rule: Rule, u: Url, url: str, page: str) -> list[RuleEvent]:
        """``rule`` meets a URL fetched: an own supporting pair or a counterexample when
        it maps the URL onto a URL fetched before."""
        own = rule.key(u)
        if own is None:
            return []
        first = rule._kept.setdefault(own, (page, url, u))
        if first[0] != page:
            return [self._retire(rule, (first[1], url))]
        events: list[RuleEvent] = []
        if first[1] != url:
            rule._own_pairs += 1
            self._touched[rule.id] = rule
            if len(rule.examples) < MAX_EXAMPLES:
                rule.examples.append((url, first[1]))
            if rule.active:
                rule.verified += 1
            if own not in rule._support_keys:
                rule._support_keys.add(own)
                if rule.active and own not in rule._verify_keys and rule._verify_left > 0:
                    # a fetch already under way at activation checked a new page: it
                    # counts as one of the first verifications
                    rule._verify_left -= 1
                    rule._checks += 1
                    rule._would += 1
        if first[1] != url:
            return events
        # the first URL with this key: URLs another rule mapped to it lend support, or
        # unlink the composition
        for inner_id, seen in rule._composed.get(own, {}).items():
            for other_page, other_url, image in seen:
                events.extend(self._credit(self.rules[inner_id], rule, own,
                                           (other_url, other_page, image), url, page))
        return events

    def _lend(self, inner: Rule, outer: Rule | None, u: Url, url: str,
              page: str) -> list[RuleEvent]:
        """``inner`` (a rule ever active) maps ``u``; ``outer`` (every live rule on the
        image's origin, when ``None``) meets the image: the URL it keys like it is
        support lent by ``inner``, or unlinks the two rules."""
        image = inner.key(u)
        if image is None or image == u:
            return []
        image = Url(*image)
        outers = [outer] if outer is not None else self._live.get(image.origin, ())
        events: list[RuleEvent] = []
        for rule in list(outers):
            if rule is inner or rule.retired:
                continue
            key = rule.key(image)
            if key is None or key == rule.key(u):
                continue  # the rule maps it alone: its own pair
            seen = rule._composed.setdefault(key, {}).setdefault(inner.id, [])
            if seen and seen[0][0] != page:
                events.extend(self._unlink(inner, rule, (seen[0][1], url)))
            seen.append((page, url, image.text()))
            direct = rule._kept.get(key)
            if direct is not None:
                events.extend(self._credit(inner, rule, key, (url, page, image.text()),
                                           direct[1], direct[0]))
        return events

    def _credit(self, inner: Rule, outer: Rule, key: tuple, lent_url: tuple[str, str, str],
                direct_url: str, direct_page: str) -> list[RuleEvent]:
        """``inner`` maps ``lent_url`` (url, page, image) to a URL that ``outer`` keys
        like ``direct_url``: support lent to ``outer`` when the pages agree."""
        url, page, image = lent_url
        if direct_page != page:
            return self._unlink(inner, outer, (direct_url, url))
        lent = outer._lent.setdefault(inner.id, {})
        if url not in lent:
            lent[url] = (key, image)
            inner._borrowers[outer.id] = outer
            self._touched[outer.id] = outer
            if len(outer.examples) < MAX_EXAMPLES:
                outer.examples.append((url, direct_url))
        return []

    def _unlink(self, inner: Rule, outer: Rule, pair: Pair) -> list[RuleEvent]:
        if (inner.id, outer.id) in self._unlinked:
            return []
        self._unlinked.add((inner.id, outer.id))
        if inner.active and outer.active:
            self._shrunk = True
        return [RuleEvent("unlinked", outer, pair, inner)]

    def _retire(self, rule: Rule, pair: Pair) -> RuleEvent:
        rule.retired = True
        if len(rule.counterexamples) < MAX_EXAMPLES:
            rule.counterexamples.append(pair)
        for origin in rule.origins:
            self._live[origin].remove(rule)
        was_active = rule.active
        if was_active:
            self._deactivate(rule)
            self._shrunk = True
        rule._kept, rule._composed, rule._lent = {}, {}, {}
        rule._support_keys = set()
        self._touched.pop(rule.id, None)
        return RuleEvent("retired" if was_active else "rejected", rule, pair)

    def _deactivate(self, rule: Rule) -> None:
        rule.active = False
        for origin in rule.origins:
            self._active[origin].remove(rule)

    # -- the active set ----------------------------------------------------------------------

    def _counts(self, rule: Rule) -> tuple[int, int]:
        """Support and pages of ``rule``: its own pairs, and the URLs that active rules
        (compositions not unlinked) map onto a URL of the same page under it."""
        support, pages = rule._own_pairs, rule._support_keys
        lent: dict[str, tuple] = {}
        page_of = self._page_of
        for inner_id, urls in rule._lent.items():
            if self.rules[inner_id].active and (inner_id, rule.id) not in self._unlinked:
                # a URL whose image was fetched itself splits into the two rules' own
                # pairs: ``rule`` is not needed to map it
                lent.update((url, key) for url, (key, image) in urls.items()
                            if image not in page_of)
        if lent:
            support += len(lent)
            pages = pages | set(lent.values())
        rule.support, rule.pages = support, len(pages)
        return rule.support, rule.pages

    def _enough(self, rule: Rule) -> bool:
        support, pages = self._counts(rule)
        return support >= self.min_support and pages >= min(2, self.min_support)

    def _settle(self) -> list[RuleEvent]:
        """Bring the active set to the least set in which every rule has enough support:
        from scratch after an active rule retired or two were unlinked, else grown
        from the rules whose support changed."""
        if self._shrunk:
            self._shrunk = False
            for rules in self._active.values():
                for rule in rules:
                    rule.active = False
            self._active = {}
            todo = {r.id: r for r in self.rules.values() if not r.retired}
        else:
            todo = self._touched
        self._touched = {}
        events: list[RuleEvent] = []
        while todo:
            grown: dict[str, Rule] = {}
            for rule in todo.values():
                if rule.retired or rule.active or not self._enough(rule):
                    continue
                rule.active = True
                for origin in rule.origins:
                    self._active.setdefault(origin, []).append(rule)
                if not rule._lending:
                    rule._verify_left = self.verify_first
                    events.append(RuleEvent("activated", rule, rule.examples[-1]))
                    events.extend(self._start_lending(rule))
                grown.update(rule._borrowers)
            todo = {**grown, **self._touched}
            self._touched = {}
        return events

    def _start_lending(self, rule: Rule) -> list[RuleEvent]:
        """``rule`` is active for the first time: from now on it lends support to the
        rules on its images (every URL fetched so far, then each new one)."""
        rule._lending = True
        for origin in rule.origins:
            self._lenders.setdefault(origin, []).append(rule)
        events: list[RuleEvent] = []
        for origin in rule.origins:
            for u, url, page in list(self._seen.get(("origin", origin), ())):
                events.extend(self._lend(rule, None, u, url, page))
        return events

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
            outers = [outer for outer in self._active.get(image[0], ())
                      if outer is not inner and (inner.id, outer.id) not in self._unlinked]
            found.extend(self._direct(outers, Url(*image), url))
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
        for rule in self.rules.values():
            if not rule.retired:
                self._counts(rule)
        order = {"active": 0, "candidate": 1, "retired": 2}
        rows = [r.summary() for r in self.rules.values()]
        return sorted(rows, key=lambda r: (order[r["state"]], -r["support"], r["rule"]))
