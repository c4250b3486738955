"""URL rules learned from confirmed near-duplicates (DUST: different URLs, similar text).

Pure: no Scrapy import. A :class:`RuleBook` is fed two kinds of evidence, both
from pages the crawl fetched and fingerprinted:

- :meth:`RuleBook.duplicate` ``(url, of)``: ``url`` was dropped as a
  near-duplicate of the kept page ``of``. Its differences from each URL already
  known to show that page (a host alias, a path substitution or a folder
  inserted, ``index.html`` versus ``/``, case, trailing slash, a set of query
  parameters, parameter order, or several of these at once) name candidate
  :class:`Rule` s;
- :meth:`RuleBook.kept` ``(url)``: ``url`` was kept as a distinct page.

Every URL fetched is thus known to show one page. A rule maps each URL it
speaks for to a key; each URL fetched whose key was met before is one
*instance*: a success when the two URLs showed one page, a counterexample when
they showed two (the rule is then retired for good).

Safety is a statistical bound: a rule is active (skips requests) only while the
Wilson lower bound at 99% of its precision over its instances (the pairs on one
page are alike, so at most :data:`PAIRS_PER_PAGE` of them count for a narrow rule
and one for a broad rule) is at least the threshold of its
breadth (:meth:`RuleBook.threshold`). Requests an active rule would skip are
fetched anyway to verify it, more of them early and for broad rules
(:meth:`RuleBook._decide`); each verification is one more instance.

Cost: a candidate is built only once two pairs on two different pages suggested
it (a pair that no other page repeats, such as ``/p/5`` = ``/p/1234``, costs one
dictionary entry, dropped when the per-host table of such suggestions is full);
a rule whose two sides differ in the last path segment only speaks for one pair
and is never suggested. Candidates are indexed by the folders or path pattern
they speak for, so a URL fetched meets only the rules that could map it; at
most :data:`MAX_LIVE` candidates per host.

The state is rebuilt from the evidence (replayed from a log on resume or from
the other processes of a crawl); which rules exist and their counts and states
depend on that evidence only, not on the order it arrives in, as long as no
per-host table is full and no page has more than :data:`MAX_CLUSTER` URLs.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

__all__ = ["Decision", "Rule", "RuleBook", "RuleEvent", "Url", "candidate_rule",
           "candidate_rules", "parse_url", "path_pattern", "wilson_lower"]

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
#: Instances counted per page (rule key) for a narrow rule (one for a broad rule): a page
#: met under twenty session ids is not twenty pages of the family.
PAIRS_PER_PAGE = 2
#: A broad rule needs the precision bound of a narrow one plus this (0.3 -> 0.8).
BROAD_MARGIN = 0.5
#: Candidates built (not retired) per host; suggestions awaiting a second page per host.
MAX_LIVE = 64
MAX_PENDING = 4096
#: z of the two-sided 99% Wilson interval (its lower end: 99.5% one-sided).
Z99 = 2.5758293035489
#: Broad rules: at least this many times ``verify_first`` checks after activation, and
#: this many times ``verify_share``.
BROAD_VERIFY = 3
BROAD_SHARE = 2
#: Early on, at least (1 - the precision bound) / EARLY_SHARE of the requests a rule would
#: skip are fetched to check it: 8.6% at activation on three instances, 5% from ten.
EARLY_SHARE = 8


def wilson_lower(successes: int, n: int, z: float = Z99) -> float:
    """Lower end of the Wilson score interval of a proportion (0 when ``n`` is 0)."""
    if n <= 0:
        return 0.0
    p = successes / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (centre - spread) / (1 + z2 / n)


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


def _dirs(path: str) -> list[str]:
    """Every folder of ``path`` from the root: ``/a/b/c.html`` -> ``/``, ``/a/``, ``/a/b/``."""
    out = []
    i = path.find("/")
    while i != -1:
        out.append(path[: i + 1])
        i = path.find("/", i + 1)
    return out


class PathSub(NamedTuple):
    """Path segments ``a`` and ``b`` are interchangeable after ``prefix``, before a tail of
    ``tail`` segments whose last has extension ``ext``; one side may be empty (a folder
    inserted: ``/mirror/X.html`` = ``/X.html``). ``a`` is the canonical side."""

    prefix: tuple[str, ...]
    a: tuple[str, ...]
    b: tuple[str, ...]
    tail: int
    ext: str

    def text(self) -> str:
        shape = "/".join(["*"] * (self.tail - 1) + [f"*.{self.ext}" if self.ext else "*"])
        return f"{'/'.join(self.prefix)}/{{{'/'.join(self.a)}|{'/'.join(self.b)}}}/{shape}"

    def heads(self) -> list[str]:
        n = "/".join(self.prefix)
        return [n + "/" + ("/".join(side) + "/" if side else "") for side in (self.a, self.b)]

    def apply(self, path: str) -> str | None:
        segs = path.split("/")
        n = len(self.prefix)
        if tuple(segs[:n]) != self.prefix:
            return None
        for side in (self.b, self.a):
            m = n + len(side)
            if len(segs) - m == self.tail and tuple(segs[n:m]) == side:
                if self.ext and _ext(segs[-1]) != self.ext:
                    return None
                return "/".join((*self.prefix, *self.a, *segs[m:]))
        return None


def _sub(p: str, q: str) -> PathSub | None:
    """The substitution turning one path into the other, when something follows it."""
    sp, sq = p.split("/"), q.split("/")
    i = 0
    while i < min(len(sp), len(sq)) - 1 and sp[i] == sq[i]:
        i += 1
    j = 0
    while j < min(len(sp), len(sq)) - i and sp[-1 - j] == sq[-1 - j]:
        j += 1
    a, b = tuple(sp[i: len(sp) - j]), tuple(sq[i: len(sq) - j])
    if i == 0 or j == 0 or a == b or not a and not b:
        # j == 0: the last segment itself differs (/p/5 = /p/1234): no other URL
        # can ever be mapped alike, so the pair is no family
        return None
    a, b = sorted((a, b), key=lambda s: (len(s), s))
    return PathSub(tuple(sp[:i]), a, b, j, _ext(sp[-1]))


def _param_class(name: str) -> str | None:
    """``utm_source`` -> ``utm_*``: the name's family, when it has a ``word_`` prefix."""
    head, sep, rest = name.partition("_")
    if sep and rest and 2 <= len(head) <= 12 and head.isalpha():
        return head + "_*"
    return None


class Rule:
    """One candidate rewrite: which URLs it speaks for, the evidence for it.

    Components (any that the pair differed in, so that a pair differing in two
    ways teaches the combination): ``origins`` (two for a host alias; the first is
    canonical), a path change (``path``: ``case``, ``slash``, ``index:<name>`` or a
    :class:`PathSub`), dropped query parameters (``names``, with ``utm_*``-style
    classes) on one path pattern (``pattern``) or the whole host (``None``), and
    parameter order (``order``). ``key(url)`` is the URL with the rule applied, or
    ``None`` when the rule does not speak for it: two URLs with one key are, by the
    rule, one page. The key of a key is itself.
    """

    def __init__(self, origins: tuple[str, ...], path: PathSub | str | None = None,
                 names: frozenset[str] = frozenset(), pattern: str | None = None,
                 order: bool = False) -> None:
        self.origins = origins
        self.path = path
        self.names = frozenset(n for n in names if not n.endswith("*"))
        self.classes = tuple(sorted(n[:-1] for n in names if n.endswith("*")))
        self.pattern = pattern
        self.order = order
        #: Ever active (a retired rule that never was is a rejected candidate).
        self.was_active = False
        parts, kinds = [], []
        where = origins[0] if len(origins) == 1 else ""
        if len(origins) == 2:
            parts.append(f"host {origins[0]} = {origins[1]}")
            kinds.append("host")
            where = origins[0]
        if isinstance(path, PathSub):
            parts.append(f"path {where}{path.text()}")
            kinds.append("path")
        elif path is not None:
            kind, _, name = path.partition(":")
            parts.append(f"index {where} {name} = /" if kind == "index" else f"{kind} {where}")
            kinds.append(kind)
        if names:
            label = ",".join(sorted(names))
            parts.append(f"param {where}{pattern if pattern is not None else '/**'} "
                         f"ignore {label}")
            kinds.append("param")
        if order:
            parts.append(f"order {where}{pattern}")
            kinds.append("order")
        self.id = " + ".join(parts)
        self.kind = "+".join(kinds)
        # broad: speaks for a whole host, or for a folder and its sub-folders
        self.broad = bool(
            len(origins) == 2 or (path is not None and not isinstance(path, PathSub))
            or (isinstance(path, PathSub) and path.tail >= 2)
            or (names and pattern is None)
        )
        self.support = 0  # instances counted for the bound (see PAIRS_PER_PAGE)
        self.pairs = 0  # supporting pairs, all of them
        self.pages = 0  # pages (rule keys) with a supporting pair
        self.examples: list[Pair] = []
        self.counterexamples: list[Pair] = []
        self.active = False
        self.retired = False
        self.skips = 0
        self.verified = 0  # supporting pairs met after activation
        # keys are held as their 64-bit hashes (a third of the memory of the strings; two
        # keys of one rule share a hash with odds of about n^2 / 2^65)
        self._keys: dict[int, str] = {}  # key -> first URL with it that the rule changes
        self._per_page: dict[int, int] = {}  # key -> supporting pairs on it
        self._would = 0  # requests for new pages it would have skipped since activation
        self._would_known = 0  # ... for pages it was already seen to join to a copy
        self._checks = 0  # ... of which fetched to check it
        self._verify_left = 0

    def drops(self, name: str) -> bool:
        return name in self.names or name.startswith(self.classes)

    def key(self, url: Url) -> str | None:
        if url.origin not in self.origins:
            return None
        path = url.path
        rewrite = self.path
        if rewrite is not None:
            if rewrite.__class__ is PathSub:
                path = rewrite.apply(path)  # type: ignore[union-attr]
                if path is None:
                    return None
            elif rewrite == "case":
                path = path.lower()
            elif rewrite == "slash":
                path = path.rstrip("/") or "/"
            else:
                name = rewrite[6:]  # type: ignore[index]
                if path.endswith("/" + name):
                    path = path[: -len(name)]
        if self.pattern is not None and path_pattern(path) != self.pattern:
            return None
        query = url.query
        if self.names or self.classes:
            query = tuple(p for p in query if not self.drops(p[0]))
        if self.order:
            query = tuple(sorted(query))
        if not query:
            return self.origins[0] + path
        return self.origins[0] + path + "?" + "&".join(n + v for n, v in query)

    def slots(self) -> list[tuple[str, str]]:
        """Where the rule is indexed: ``(origin, folder)`` for the URLs under a folder,
        ``(origin, "=" + pattern)`` for one path pattern."""
        if isinstance(self.path, PathSub):
            where = self.path.heads()
        elif self.pattern is not None and self.path is None:
            where = ["=" + self.pattern]
        else:
            where = ["/"]
        return [(o, w) for o in self.origins for w in where]

    def summary(self) -> dict:
        return {
            "rule": self.id, "kind": self.kind, "support": self.support, "pages": self.pages,
            "pairs": self.pairs, "precision_bound": round(wilson_lower(self.support,
                                                                       self.support), 3),
            "broad": self.broad, "counterexamples": len(self.counterexamples),
            "skips": self.skips, "verified": self.verified,
            "state": "retired" if self.retired else "active" if self.active else "candidate",
            "examples": [list(p) for p in self.examples],
            "counterexample_pairs": [list(p) for p in self.counterexamples],
        }


def candidate_rules(dropped: Url, kept: Url) -> list[Rule]:
    """The rules a confirmed pair suggests: every way the two URLs differ, together
    (the parameters also on the whole host, and ``utm_*``-style name classes); none when
    a difference has no family (the last path segment differs) or there is none."""
    if dropped == kept:
        return []
    origins = (dropped.origin,) if dropped.origin == kept.origin else tuple(
        sorted((dropped.origin, kept.origin)))
    p, q = dropped.path, kept.path
    path: PathSub | str | None = None
    canonical = p
    if p != q:
        if p.lower() == q.lower():
            path, canonical = "case", p.lower()
        elif (p.rstrip("/") or "/") == (q.rstrip("/") or "/"):
            path, canonical = "slash", p.rstrip("/") or "/"
        else:
            for long, short in ((p, q), (q, p)):
                head, _, name = long.rpartition("/")
                if name.lower() in INDEX_FILES and short == head + "/":
                    path, canonical = "index:" + name, short
                    break
            else:
                path = _sub(p, q)
                if path is None:
                    return []
                canonical = path.apply(p) or p
    pattern = path_pattern(canonical)
    if dropped.query == kept.query:
        return [Rule(origins, path)] if (path is not None or len(origins) == 2) else []
    if sorted(dropped.query) == sorted(kept.query):
        return [Rule(origins, path, pattern=pattern, order=True)]
    x: dict[str, list[str]] = {}
    y: dict[str, list[str]] = {}
    for n, v in dropped.query:
        x.setdefault(n, []).append(v)
    for n, v in kept.query:
        y.setdefault(n, []).append(v)
    names = frozenset(n for n in x.keys() | y.keys() if x.get(n) != y.get(n))
    rules = [Rule(origins, path, names, pattern)]
    classes = frozenset(_param_class(n) or n for n in names)
    if classes != names:
        rules.append(Rule(origins, path, classes, pattern))
    rules.append(Rule(origins, path, names, None))
    if classes != names:
        rules.append(Rule(origins, path, classes, None))
    return rules


def candidate_rule(dropped: Url, kept: Url) -> Rule | None:
    """The narrowest rule a confirmed pair suggests (see :func:`candidate_rules`)."""
    rules = candidate_rules(dropped, kept)
    return rules[0] if rules else None


def _subsumes(a: Rule, b: Rule) -> bool:
    """Whether rule ``a`` joins every pair of URLs that rule ``b`` joins."""
    if a.path != b.path or not set(b.origins) <= set(a.origins) or b.order and not a.order:
        return False
    if b.names or b.classes or b.order:
        if a.pattern is not None and a.pattern != b.pattern:
            return False
        if not set(b.classes) <= set(a.classes):
            return False
        return all(a.drops(n) for n in b.names)
    return a.pattern is None


class RuleEvent(NamedTuple):
    """Something a caller should log: ``kind`` is ``learned`` (a candidate built),
    ``activated``, ``retired`` (an active rule met a counterexample) or ``rejected`` (a
    candidate did); ``pair`` is the supporting pair or the counterexample."""

    kind: str
    rule: Rule
    pair: Pair


class Decision(NamedTuple):
    """An active rule maps a request to the kept page ``duplicate_of``; ``verify``
    says to fetch it anyway and let the fingerprint confirm or refute the rule."""

    rule: Rule
    duplicate_of: str
    verify: bool
    #: The rule was already seen to join this very page to a copy: no risk, no check.
    known: bool = False


class _Host:
    """What one origin's URLs and rules need: the URLs fetched per folder (for a new
    rule to meet), the rules indexed per folder or path pattern, suggestions pending."""

    __slots__ = ("by_dir", "by_slot", "pending", "live")

    def __init__(self) -> None:
        self.by_dir: dict[str, list[str]] = {}
        self.by_slot: dict[str, list[Rule]] = {}
        self.pending: dict[str, str] = {}  # rule id -> page of its first suggestion
        self.live = 0


class RuleBook:
    """Candidate and active rules, the evidence behind them, and the pages kept.

    ``min_support``: instances (on at least two pages) before a rule is active;
    ``min_precision``: the 99% lower bound of the precision a narrow rule needs to be
    active (a broad one, that plus :data:`BROAD_MARGIN`: :meth:`threshold`); ``verify_first``
    and ``verify_share``: the requests an active rule would skip that are fetched to
    check it (:meth:`_decide`). Which pair is shown as an example, ``verified`` and
    ``skips`` depend on the order of the evidence; a retired rule's counts stop at
    its counterexample.
    """

    def __init__(self, min_support: int = 3, verify_first: int = 2,
                 verify_share: float = 0.05, min_precision: float = 0.3) -> None:
        if min_support < 1:
            raise ValueError(f"min_support must be at least 1, got {min_support}")
        if not 0.0 <= verify_share <= 1.0:
            raise ValueError(f"verify_share must be from 0 to 1, got {verify_share}")
        if not 0.0 <= min_precision < 1.0:
            raise ValueError(f"min_precision must be from 0 to below 1, got {min_precision}")
        self.min_support = min_support
        self.verify_first = verify_first
        self.verify_share = verify_share
        self.min_precision = min_precision
        self.rules: dict[str, Rule] = {}
        self._hosts: dict[str, _Host] = {}
        self._active_rules: dict[str, list[Rule]] = {}  # origin -> active rules
        # origin -> slot -> the active rules no other active rule subsumes (for check)
        self._active: dict[str, dict[str, list[Rule]]] = {}
        self._page_of: dict[str, str] = {}  # URL fetched -> the kept URL of its page
        self._cluster: dict[str, list[str]] = {}  # kept URL -> other URLs that showed it
        self._touched: dict[str, Rule] = {}  # rules whose support grew since _settle

    def threshold(self, rule: Rule) -> float:
        """The precision bound ``rule`` needs to be active."""
        if rule.broad:
            return min(0.99, self.min_precision + BROAD_MARGIN)
        return self.min_precision

    # -- evidence --------------------------------------------------------------------------

    def kept(self, url: str) -> list[RuleEvent]:
        """``url`` was fetched and kept as a distinct page; returns the rules it retires."""
        u = parse_url(url)
        t = u.text()
        if t in self._page_of:
            return []
        return self._observe(u, t, t) + self._settle()

    def duplicate(self, url: str, of: str) -> list[RuleEvent]:
        """``url`` was dropped as a near-duplicate of the kept page ``of``: with every other
        URL already known to show that page it may suggest rules (``learned``), support
        them (``activated``) or refute them."""
        u = parse_url(url)
        t = u.text()
        if t in self._page_of:
            return []
        o = parse_url(of)
        ot = o.text()
        events: list[RuleEvent] = []
        if ot not in self._page_of:  # kept by another process, not heard of yet
            events += self._observe(o, ot, ot)
        page = self._page_of[ot]
        others = self._cluster.setdefault(page, [])
        cluster = [page, *others]
        events += self._observe(u, t, page)
        if len(others) < MAX_CLUSTER - 1:
            others.append(t)
        for other in cluster:
            for rule in candidate_rules(u, parse_url(other)):
                events += self._suggest(rule, page, (t, other))
        return events + self._settle()

    def _host(self, origin: str) -> _Host:
        host = self._hosts.get(origin)
        if host is None:
            host = self._hosts[origin] = _Host()
        return host

    def _suggest(self, rule: Rule, page: str, pair: Pair) -> list[RuleEvent]:
        """A pair suggests ``rule``: built once a second page suggests it."""
        if rule.id in self.rules:
            return []
        host = self._host(rule.origins[0])
        first = host.pending.get(rule.id)
        if first is None and self.min_support > 1:
            if len(host.pending) >= MAX_PENDING:
                host.pending.clear()
            host.pending[rule.id] = page
            return []
        if first == page or host.live >= MAX_LIVE:
            return []
        host.pending.pop(rule.id, None)
        host.live += 1
        self.rules[rule.id] = rule
        for origin, slot in rule.slots():
            self._host(origin).by_slot.setdefault(slot, []).append(rule)
        return [RuleEvent("learned", rule, pair), *self._backfill(rule)]

    def _observe(self, u: Url, t: str, page: str) -> list[RuleEvent]:
        """Record that fetching ``t`` showed ``page``; every rule that speaks for it meets it."""
        self._page_of[t] = page
        host = self._host(u.origin)
        path = u.path
        folder = path[: path.rfind("/") + 1]
        urls = host.by_dir.get(folder)
        if urls is None:
            urls = host.by_dir[folder] = []
        urls.append(t)
        slots = host.by_slot
        if not slots:
            return []
        events: list[RuleEvent] = []
        rules = slots.get("=" + path_pattern(path))
        if rules:
            for rule in rules[:]:
                events += self._meet(rule, u, t, page)
        for d in _dirs(folder):
            rules = slots.get(d)
            if rules:
                for rule in rules[:]:
                    events += self._meet(rule, u, t, page)
        return events

    def _backfill(self, rule: Rule) -> list[RuleEvent]:
        """A new rule meets every URL fetched before it, under the folders it speaks for."""
        events: list[RuleEvent] = []
        for origin in rule.origins:
            host = self._hosts.get(origin)
            if host is None:
                continue
            heads = tuple(slot for o, slot in rule.slots() if o == origin)
            if heads[0][0] == "=":  # one path pattern: its folder
                folders = [heads[0][1:].rpartition("/")[0] + "/"]
            else:
                folders = [d for d in host.by_dir if d.startswith(heads)]
            for d in folders:
                for t in host.by_dir.get(d, ())[:]:
                    events += self._meet(rule, parse_url(t), t, self._page_of[t])
                    if rule.retired:
                        return events
        return events

    def _meet(self, rule: Rule, u: Url, t: str, page: str) -> list[RuleEvent]:
        """``rule`` meets a URL fetched: an instance when its key was met before."""
        if rule.retired:
            return []
        key = rule.key(u)
        if key is None:
            return []
        h = hash(key)
        other = rule._keys.get(h)
        if other is None:
            if key == t:
                return []  # the rule leaves it as it is: found under its own URL later
            if key not in self._page_of:
                rule._keys[h] = t
                return []
            other = key
        if other == t:
            return []
        if self._page_of[other] != page:
            return [self._retire(rule, (other, t))]
        rule.pairs += 1
        n = rule._per_page.get(h, 0)
        rule._per_page[h] = n + 1
        if n < (1 if rule.broad else PAIRS_PER_PAGE):
            rule.support += 1
            rule.pages = len(rule._per_page)
            self._touched[rule.id] = rule
        if len(rule.examples) < MAX_EXAMPLES:
            rule.examples.append((t, other))
        if rule.active:
            rule.verified += 1
            if n == 0 and rule._verify_left > 0:
                # a fetch under way at activation met a new page of the rule: it counts
                # as one of the first checks
                rule._verify_left -= 1
                rule._checks += 1
                rule._would += 1
        return []

    def _retire(self, rule: Rule, pair: Pair) -> RuleEvent:
        rule.retired = True
        if len(rule.counterexamples) < MAX_EXAMPLES:
            rule.counterexamples.append(pair)
        for origin, slot in rule.slots():
            self._hosts[origin].by_slot[slot].remove(rule)
        self._host(rule.origins[0]).live -= 1
        was_active = rule.active
        if was_active:
            rule.active = False
            for origin in rule.origins:
                self._active_rules[origin].remove(rule)
            self._index_active(rule.origins)
        rule._keys, rule._per_page = {}, {}
        self._touched.pop(rule.id, None)
        return RuleEvent("retired" if was_active else "rejected", rule, pair)

    def _settle(self) -> list[RuleEvent]:
        """Activate the rules whose support grew enough: ``min_support`` instances on two pages and
        the precision bound at the rule's threshold (support only grows; a counterexample
        retires)."""
        if not self._touched:
            return []
        events: list[RuleEvent] = []
        for rule in self._touched.values():
            if (rule.retired or rule.active or rule.support < self.min_support
                    or rule.pages < min(2, self.min_support)):
                continue
            if wilson_lower(rule.support, rule.support) < self.threshold(rule):
                continue
            rule.active = rule.was_active = True
            rule._verify_left = self.verify_first * (BROAD_VERIFY if rule.broad else 1)
            for origin in rule.origins:
                self._active_rules.setdefault(origin, []).append(rule)
            self._index_active(rule.origins)
            events.append(RuleEvent("activated", rule, rule.examples[-1]))
        self._touched = {}
        return events

    def _index_active(self, origins: tuple[str, ...]) -> None:
        """Index the active rules of ``origins`` for :meth:`check`, leaving out those that
        another active rule subsumes (it joins every pair they join)."""
        for origin in origins:
            rules = self._active_rules.get(origin, [])
            slots: dict[str, list[Rule]] = {}
            for rule in rules:
                if any(other is not rule and _subsumes(other, rule)
                       and (not _subsumes(rule, other) or other.id < rule.id)
                       for other in rules):
                    continue
                for o, slot in rule.slots():
                    if o == origin:
                        slots.setdefault(slot, []).append(rule)
            self._active[origin] = slots

    # -- applying --------------------------------------------------------------------------

    def check(self, url: str) -> Decision | None:
        """The active rule mapping ``url`` to a page already fetched and kept (under another
        URL), if any, and whether to fetch it anyway to verify the rule. Only the rules
        indexed under the URL's path pattern and folders are tried."""
        origin_end = url.find("/", url.find("://") + 3)
        origin = (url if origin_end == -1 else url[:origin_end]).lower()
        if "?" in origin:
            origin = origin.partition("?")[0]
        slots = self._active.get(origin)
        if not slots:
            return None
        u = parse_url(url)
        path = u.path
        found = slots.get("=" + path_pattern(path))
        if found:
            decision = self._match(found, u)
            if decision is not None:
                return decision
        for d in _dirs(path[: path.rfind("/") + 1]):
            found = slots.get(d)
            if found:
                decision = self._match(found, u)
                if decision is not None:
                    return decision
        return None

    def _match(self, rules: list[Rule], u: Url) -> Decision | None:
        t = u.text()
        page_of = self._page_of
        for rule in rules:
            key = rule.key(u)
            if key is None:
                continue
            h = hash(key)
            other = rule._keys.get(h)
            if other is None:
                if key == t:
                    continue
                other = key
            page = page_of.get(other)
            if page is None or page == t or t in page_of:
                continue
            if h in rule._per_page:
                # the rule was already seen to join this very page to a copy: no risk
                rule._would_known += 1
                return Decision(rule, page, False, known=True)
            return self._decide(rule, page)
        return None

    def _decide(self, rule: Rule, kept: str) -> Decision:
        """Count a request for a new page ``rule`` would skip (a page it was already seen to
        join to a copy is skipped without this); fetch it to check the rule when it is one of
        the first after activation (``verify_first``, three times as many for a broad
        rule) or while fewer than the share of them were checked: ``verify_share``
        (twice that for a broad rule), or the 99% upper bound of the rule's error rate
        (one minus the precision bound) over ``EARLY_SHARE``, when that is larger."""
        rule._would += 1
        if rule._verify_left > 0:
            rule._verify_left -= 1
            verify = True
        else:
            share = self.verify_share * (BROAD_SHARE if rule.broad else 1)
            share = max(share, (1 - wilson_lower(rule.support, rule.support)) / EARLY_SHARE)
            verify = rule._checks < share * rule._would
        if verify:
            rule._checks += 1
        return Decision(rule, kept, verify)

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
        return sum(1 for url, page in self._page_of.items() if url == page)

    def summary(self) -> list[dict]:
        """Every rule (active first, then candidates, then retired), as plain dicts."""
        order = {"active": 0, "candidate": 1, "retired": 2}
        rows = [r.summary() for r in self.rules.values()]
        return sorted(rows, key=lambda r: (order[r["state"]], -r["support"], r["rule"]))
