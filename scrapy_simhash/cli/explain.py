"""``explain A B``: why two pages match or not.

Each side is a page (an HTML file, or a page of ``--pages``: JSON lines, WARC,
folders) or a URL of a crawl's state (``--state JOBDIR``: its fingerprint and sketch,
as a state keeps no page). The verdict is made of :class:`Check` s, one per
signature the drop decision uses: the fingerprints (the candidate, within k
bits) and the sketches (the confirmation).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from scrapy_simhash.cli import EXIT_OK
from scrapy_simhash.cli.errors import InputError, Problems
from scrapy_simhash.cli.fingerprints import format_fingerprint
from scrapy_simhash.cli.options import Commands, add_distance, int_in
from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE
from scrapy_simhash.cli.output import Progress
from scrapy_simhash.cli.pages import PAGES_HELP, Page, file_pages, iter_pages
from scrapy_simhash.cli.state import CrawlPages, open_crawl

_SCRIPT_TAGS = frozenset(("script", "style", "noscript", "template"))


class Side(NamedTuple):
    """One of the two pages compared."""

    label: str  #: "A" or "B"
    source: str  #: a path or URL
    fingerprint: int | None
    reason: str | None  #: why there is no fingerprint
    spots: int | None  #: distinct spot signatures (None: the page is not at hand)
    features: dict[str, float] | None  #: None: the page is not at hand (state only)
    text_chars: int | None  #: characters of the page's visible text
    feature_chars: int | None  #: of them, in the title, headings and main-text blocks
    sketch: bytes | None = None  #: the second signature confirming a drop (None: none)
    origin: str | None = None  #: where a side known only by its signature came from


class Check(NamedTuple):
    """One signature the drop decision compares."""

    name: str
    a: str | None
    b: str | None
    distance: int | None
    limit: int
    match: bool | None  #: None: not comparable (a side has no signature)
    reason: str


def page_side(label: str, page: Page, min_features: int) -> Side:
    """A side from the page itself: fingerprint, features, text share."""
    from scrapy_simhash.fingerprinting import page_features, page_main_text, parse_html
    from scrapy_simhash.fingerprinting.signature import signature_details

    root = parse_html(page.html, page.encoding)
    if root is None:
        signature, result = signature_details(page.html, min_features=min_features,
                                              encoding=page.encoding)
        return Side(label, page.source, result.fingerprint, result.reason,
                    result.feature_count, {}, 0, 0, signature and signature.sketch)
    signature, result = signature_details(root, min_features=min_features)
    main = page_main_text(root)
    covered = sum(map(_chars, [main.title, *main.headings, *main.blocks]))
    return Side(label, page.source, result.fingerprint, result.reason, result.feature_count,
                page_features(root), _visible_chars(root), covered,
                signature and signature.sketch)


def state_side(label: str, url: str, fingerprint: int, sketch: bytes | None = None,
               origin: str = "the crawl's state") -> Side:
    """A side known only from what a crawl recorded (its state, its drop log): its
    fingerprint and sketch."""
    return Side(label, url, fingerprint, None, None, None, None, None, sketch, origin)


def _chars(text: str) -> int:
    return len(" ".join(text.split()))


def _visible_chars(root: Any) -> int:
    """Characters of a page's text (scripts and styles left out), spaces collapsed."""
    parts = []
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.lower() not in _SCRIPT_TAGS and el.text:
            parts.append(el.text)
        if el.tail and el is not root:
            parts.append(el.tail)
    return _chars(" ".join(parts))


def checks(a: Side, b: Side, k: int) -> list[Check]:
    """Every signature the drop decision (:func:`scrapy_simhash.is_duplicate`)
    uses, compared: the fingerprints (the candidate) and the sketches (the
    confirmation)."""
    return [simhash_check(a, b, k), sketch_check(a, b)]


def sketch_check(a: Side, b: Side) -> Check:
    """The confirmation: whether the pages' own texts agree (exactly, or by
    the sketch's bins), and why (:func:`~scrapy_simhash.fingerprinting.signature.confirmation`)."""
    from scrapy_simhash.fingerprinting.signature import CONFIRM, confirmation

    sa, sb = a.sketch, b.sketch
    if sa is None or sb is None:
        missing = a if sa is None else b
        return Check("sketch", None if sa is None else "present",
                     None if sb is None else "present", None, CONFIRM, None,
                     f"{missing.label} has no sketch (no fingerprint): nothing to confirm")
    found = confirmation(sa, sb)
    share = found.matches / found.filled if found.filled else 0.0
    words = f"{found.words[0]} and {found.words[1]} own words"
    if found.reason.startswith("exact"):
        text = f"{found.reason} ({words}): an exact copy"
    else:
        text = (f"{found.reason}: {found.matches} of {found.filled} filled bins of the own "
                f"texts agree (estimated resemblance {share:.2f}; {words}; the own text "
                f"confirms at {CONFIRM} of every 64)")
    return Check("sketch", f"{found.filled} bins", f"{found.filled} bins",
                 found.filled - found.matches, CONFIRM, found.confirms, text)


def simhash_check(a: Side, b: Side, k: int) -> Check:
    fa, fb = a.fingerprint, b.fingerprint
    text_a = None if fa is None else format_fingerprint(fa)
    text_b = None if fb is None else format_fingerprint(fb)
    if fa is None or fb is None:
        missing = a if fa is None else b
        return Check("simhash", text_a, text_b, None, k, None,
                     f"{missing.label} has no fingerprint ({missing.reason}): a page without "
                     "one is never compared, never dropped")
    d = (fa ^ fb).bit_count()
    if d <= k:
        return Check("simhash", text_a, text_b, d, k, True, f"{d} bits apart, within k={k}")
    return Check("simhash", text_a, text_b, d, k, False, f"{d} bits apart, more than k={k}")


def verdict(found: Sequence[Check]) -> tuple[bool | None, str]:
    """Near-duplicates when every check matches."""
    if any(c.match is None for c in found):
        return None, "not near-duplicates: " + "; ".join(
            c.reason for c in found if c.match is None) + ". Both are kept."
    if all(c.match for c in found):
        return True, ("near-duplicates: " + "; ".join(f"{c.name} {c.reason}" for c in found)
                      + ". A crawl keeps the one it fetches first and treats the other as "
                        "its duplicate (SIMHASH_ACTION: drop, drop_outlinks or log).")
    return False, ("not near-duplicates: " + "; ".join(
        f"{c.name} {c.reason}" for c in found if not c.match) + ". Both are kept.")


class Comparison(NamedTuple):
    shared: list[tuple[str, float, float]]  #: feature, weight in A, weight in B
    only_a: list[tuple[str, float]]
    only_b: list[tuple[str, float]]
    similarity: float  #: weighted Jaccard: sum of min weights / sum of max weights


def compare_features(a: dict[str, float], b: dict[str, float]) -> Comparison:
    shared = sorted(((f, a[f], b[f]) for f in a.keys() & b.keys()),
                    key=lambda t: (-(t[1] + t[2]), t[0]))
    only_a = sorted(((f, w) for f, w in a.items() if f not in b), key=lambda t: (-t[1], t[0]))
    only_b = sorted(((f, w) for f, w in b.items() if f not in a), key=lambda t: (-t[1], t[0]))
    keys = a.keys() | b.keys()
    high = sum(max(a.get(f, 0.0), b.get(f, 0.0)) for f in keys)
    low = sum(min(a.get(f, 0.0), b.get(f, 0.0)) for f in keys)
    return Comparison(shared, only_a, only_b, low / high if high else 0.0)


def _n(count: int | None, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _kind(name: str) -> str:
    if name.startswith("title:"):
        return "title word"
    if name.startswith("h:"):
        return "heading word"
    return "spot signature"


def describe(side: Side, min_features: int) -> list[str]:
    fp = "none" if side.fingerprint is None else format_fingerprint(side.fingerprint)
    lines = [f"{side.label}: {side.source}", f"  fingerprint {fp}"
             + (f" ({side.reason})" if side.reason else "")]
    if side.features is None:
        lines.append(f"  from {side.origin or 'the crawl'}, which keeps its fingerprint and "
                     "sketch only: its features and text cannot be shown (give the page "
                     "itself: an HTML file, --pages, or its URL without the record)")
        return lines
    titles = sum(f.startswith("title:") for f in side.features)
    headings = sum(f.startswith("h:") for f in side.features)
    spots = len(side.features) - titles - headings
    # the fingerprint's count: spot signatures plus the content features of tables,
    # code and lists (hashed, unnamed: not in side.features)
    content = max(0, (side.spots or 0) - spots)
    total = spots + content + titles + headings
    lines.append(f"  features: {total} = {_n(spots, 'spot signature')} + "
                 f"{_n(content, 'content feature')} (tables, code, lists) + "
                 f"{_n(titles, 'title word')} + {_n(headings, 'heading word')}; "
                 f"min_features={min_features} is compared with the first two: "
                 f"{spots + content}")
    if side.text_chars:
        share = side.feature_chars / side.text_chars
        lines.append(f"  text the features come from (title, headings, main-text blocks): "
                     f"{side.feature_chars:,} of the page's {side.text_chars:,} characters "
                     f"of visible text ({share:.0%})")
    else:
        lines.append("  the page has no visible text")
    return lines


def explain(a: Side, b: Side, k: int, min_features: int, top: int = 15) -> dict[str, Any]:
    """Everything ``explain`` prints, as plain values."""
    found = checks(a, b, k)
    near, reason = verdict(found)
    out: dict[str, Any] = {
        "a": _side_data(a), "b": _side_data(b), "k": k, "min_features": min_features,
        "checks": [c._asdict() for c in found], "near_duplicates": near, "verdict": reason,
    }
    if a.features is not None and b.features is not None:
        cmp = compare_features(a.features, b.features)
        out["features"] = {
            "similarity": round(cmp.similarity, 4), "shared_count": len(cmp.shared),
            "shared": [{"feature": f, "kind": _kind(f), "weight_a": wa, "weight_b": wb}
                       for f, wa, wb in cmp.shared[:top]],
            "only_a_count": len(cmp.only_a),
            "only_a": [{"feature": f, "kind": _kind(f), "weight": w} for f, w in cmp.only_a[:top]],
            "only_b_count": len(cmp.only_b),
            "only_b": [{"feature": f, "kind": _kind(f), "weight": w} for f, w in cmp.only_b[:top]],
        }
    return out


def _side_data(side: Side) -> dict[str, Any]:
    data = side._asdict()
    data["fingerprint"] = None if side.fingerprint is None else format_fingerprint(
        side.fingerprint)
    data["features"] = None if side.features is None else len(side.features)
    data["sketch"] = None if side.sketch is None else side.sketch.hex()
    return data


def render(a: Side, b: Side, data: dict[str, Any]) -> str:
    lines = [*describe(a, data["min_features"]), *describe(b, data["min_features"]), ""]
    for c in data["checks"]:
        lines.append(f"{c['name']}: A {c['a'] or 'none'}, B {c['b'] or 'none'}: {c['reason']}")
    feats = data.get("features")
    if feats is not None:
        lines.append(f"named features (spot signatures, title and heading words; content "
                     f"features are hashed, not named): {feats['shared_count']} shared, "
                     f"{feats['only_a_count']} only in A, {feats['only_b_count']} only in B; "
                     f"weighted overlap {feats['similarity']:.0%} (sum of the smaller "
                     "weights / sum of the larger)")
        for title, rows, both in (("shared", feats["shared"], True),
                                  ("only in A", feats["only_a"], False),
                                  ("only in B", feats["only_b"], False)):
            if not rows:
                continue
            lines.append(f"  {title} (heaviest first):")
            for r in rows:
                weight = f"{r['weight_a']:g} / {r['weight_b']:g}" if both else f"{r['weight']:g}"
                lines.append(f"    {weight:>9}  {r['feature']}  ({r['kind']})")
    lines.append("")
    lines.append(f"verdict: {data['verdict']}")
    return "\n".join(lines)


def _resolve(specs: Sequence[str], pages: Sequence[str], crawl: CrawlPages | None,
             drop_log: str | None, min_features: int, problems: Problems) -> list[Side]:
    """Each spec as a side: a page file, a page of ``pages``, a URL the crawl
    stored (its fingerprint and sketch), a URL of the drop log (the dropped page's
    fingerprint and sketch as the crawl computed them), or else the page fetched
    from its URL now."""
    sides: dict[int, Side] = {}
    labels = ("A", "B")
    wanted: dict[str, list[int]] = {}
    for i, spec in enumerate(specs):
        path = Path(spec)
        if path.is_file():
            found = list(file_pages(path, problems))
            if len(found) != 1:
                raise InputError(spec, None, f"holds {len(found)} pages: give one page, or "
                                             "this file as --pages and a URL of it")
            sides[i] = page_side(labels[i], found[0], min_features)
        else:
            wanted.setdefault(spec, []).append(i)
    if wanted and pages:
        for page in iter_pages(pages, problems):
            for i in wanted.pop(page.source, ()):
                sides[i] = page_side(labels[i], page, min_features)
            if not wanted:
                break
    if wanted and crawl is not None:
        for url in list(wanted):
            row = crawl.find(url)
            if row is not None:
                for i in wanted.pop(url):
                    sides[i] = state_side(labels[i], url, int(crawl.fingerprints[row]),
                                          crawl.sketches[row].tobytes(), "the crawl's state")
    if wanted and drop_log is not None:
        for url, (fp, sketch) in _drop_signatures(drop_log, set(wanted)).items():
            for i in wanted.pop(url):
                sides[i] = state_side(labels[i], url, fp, sketch, f"the drop log {drop_log}")
    def nowhere() -> list[str]:
        where = ["not a file"]
        if pages:
            where.append("not a page of --pages")
        where.append("not a URL of --state" if crawl is not None
                     else "no --state given to look URLs up in")
        if drop_log:
            where.append("not in --drop-log")
        return where

    for url in list(wanted):
        if url.lower().startswith(("http://", "https://")):
            try:
                page = fetch_page(url)
            except InputError as exc:
                raise InputError(url, None, ", ".join(nowhere()) + f", and {exc.message}"
                                 ) from None
            problems.note(f"{url}: not stored by the crawl"
                          + ("" if drop_log else " (a dropped page never is)")
                          + ": fetched now, which may differ from what the crawl saw"
                          + ("" if drop_log else "; --drop-log FILE (SIMHASH_LOG_FILE) "
                             "holds the signature the crawl computed"))
            for i in wanted.pop(url):
                sides[i] = page_side(labels[i], page, min_features)
    for spec in wanted:
        raise InputError(spec, None, ", ".join([*nowhere(), "not an http(s) URL to fetch"]))
    return [sides[0], sides[1]]


def _drop_signatures(path: str, urls: set[str]) -> dict[str, tuple[int, bytes]]:
    """The fingerprint and sketch the drop log recorded for each of ``urls`` (the
    last record of a URL wins: the latest run)."""
    found: dict[str, tuple[int, bytes]] = {}
    try:
        with open(path, "rb") as stream:
            for line in stream:
                try:
                    record = json.loads(line)
                    url = record.get("url")
                    if url in urls and record.get("sketch"):
                        found[url] = (int(record["fingerprint"], 16),
                                      bytes.fromhex(record["sketch"]))
                except (ValueError, TypeError, AttributeError, KeyError):
                    continue
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    return found


#: Seconds ``explain`` waits for a page it fetches.
FETCH_TIMEOUT = 30


def fetch_page(url: str) -> Page:
    """A page fetched from ``url`` now (a dropped page is not in the crawl's state)."""
    import urllib.error
    import urllib.request

    from scrapy_simhash import __version__

    request = urllib.request.Request(url, headers={
        "User-Agent": f"scrapy-simhash/{__version__} (explain)"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:  # noqa: S310
            body = response.read()
            charset = response.headers.get_content_charset()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise InputError(url, None, f"cannot fetch it: {reason}") from None
    return Page(url, body, charset)


def cmd_explain(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.fingerprinting import DEFAULT_MIN_FEATURES

    min_features = DEFAULT_MIN_FEATURES if args.min_features is None else args.min_features
    crawl = None if args.state is None else open_crawl(args.state, args.key)
    k = args.distance
    if k is None:
        k = crawl.k if crawl is not None and crawl.k is not None else DEFAULT_MAX_DISTANCE
    a, b = _resolve([args.a, args.b], args.pages or [], crawl, args.drop_log, min_features,
                    problems)
    data = explain(a, b, k, min_features, args.top)
    print(json.dumps(data, ensure_ascii=False) if args.json else render(a, b, data))
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    p = commands.add(
        "explain", cmd_explain, "why two pages match or not: fingerprints, features, verdict",
        formats=f"input: A, B: an HTML file each; or a URL/source of a page in --pages "
                f"({PAGES_HELP}); "
                "or a URL stored in a crawl's state (--state JOBDIR): the state keeps "
                "fingerprints, sketches and URLs only, so such a side shows its fingerprint, the "
                "distance and the verdict, not its features; or a URL of the drop log "
                "(--drop-log FILE: a dropped page, as the crawl signed it); or else an "
                "http(s) URL, fetched now. A drop of a crawl is explained by "
                "`explain DROPPED_URL KEPT_URL --state JOBDIR` (the dropped page fetched) "
                "or with --drop-log (its recorded signature).\n\noutput: for each page its "
                "fingerprint, its features (spot signatures, the count compared with "
                "min_features, plus title and heading words) and the share of its visible "
                "text they come from; the distance; the shared features and those of one "
                "side only, with their weights; the verdict and its reason. --json: one "
                "object.",
        example="explain DROPPED_URL KEPT_URL --state crawls/site --drop-log drops.jsonl",
    )
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    add_distance(p, default=None,
                 help=f"candidate distance k (default: the crawl's, which --state records; "
                      f"else the crawler's default, {DEFAULT_MAX_DISTANCE})")
    p.add_argument("--pages", action="append", metavar="PATH",
                   help="JSON lines, WARC files or folders to find A and B in (repeatable)")
    p.add_argument("--state", metavar="JOBDIR",
                   help="a crawl's JOBDIR (or a Redis URL with --key) to look URLs up in")
    p.add_argument("--key", metavar="PREFIX",
                   help="with a Redis URL as --state: the index's key prefix (e.g. myspider:simhash)")
    p.add_argument("--drop-log", metavar="FILE",
                   help="the crawl's SIMHASH_LOG_FILE: a dropped URL's fingerprint and sketch "
                        "as the crawl computed them")
    p.add_argument("--min-features", type=int_in(0, 1 << 30), default=None,
                   help="fewest spot signatures for a fingerprint (default: the library's)")
    p.add_argument("--top", type=int_in(0, 10_000), default=15,
                   help="features listed in each group (default: 15)")
    p.add_argument("--json", action="store_true", help="one JSON object")
