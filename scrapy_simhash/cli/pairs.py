"""Near-duplicates in a fingerprint list: ``find-all``, ``clusters``, ``query``, ``plan``.

When every fingerprint of the input has its sketch (``fingerprint`` writes
them; a crawl's state holds them), a pair is what a crawl would drop: the
fingerprints within ``k`` bits (default :data:`DEFAULT_MAX_DISTANCE`, the
crawler's) and the sketches confirming it
(:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`). Otherwise,
or with ``--no-confirm``, a pair is decided on the fingerprints alone, with the
tighter default :data:`FINGERPRINT_ONLY_DISTANCE`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NamedTuple

import numpy as np

from scrapy_simhash.cli import EXIT_INPUT, EXIT_OK
from scrapy_simhash.cli.errors import InputError, Problems, UsageProblem
from scrapy_simhash.cli.fingerprints import (
    FingerprintList,
    Keys,
    format_fingerprint,
    format_fingerprints,
    parse_fingerprint,
    parse_sketch,
    read_fingerprint_list,
)
from scrapy_simhash.cli.options import (
    FINGERPRINT_FORMAT_HELP,
    Commands,
    add_distance,
    add_input,
    add_layout,
    add_output,
    count,
)
from scrapy_simhash.cli.output import Progress, Rows, open_output
from scrapy_simhash.cli.state import CrawlPages, crawl_note, is_crawl, open_crawl
from scrapy_simhash.fingerprinting.signature import (
    DEFAULT_MAX_DISTANCE,
    SKETCH_BINS,
    confirms_many,
)

#: k of find-all, clusters and query when they decide on fingerprints alone:
#: without a confirmation one 64-bit view needs a tighter distance.
FINGERPRINT_ONLY_DISTANCE = 3
#: Candidate pairs confirmed per numpy pass (64 bytes of each side's sketch a pair).
CONFIRM_CHUNK = 1 << 18


def read_list(path: str, problems: Problems, progress: Progress | None = None,
              notation: str = "auto") -> FingerprintList:
    """The fingerprint list in ``path`` (``-``: stdin)."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            found = read_fingerprint_list(sys.stdin.buffer, name, problems, progress, notation)
        else:
            with open(path, "rb") as stream:
                found = read_fingerprint_list(stream, path, problems, progress, notation)
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    if found.without:
        rows = f"{found.without:,} row{'s' if found.without != 1 else ''}"
        problems.note(f"{name}: {rows} without a fingerprint ('-') skipped")
    return found


def resolve_layout(k: int, size: int, blocks: int | None = None, layout: str = "auto") -> Any:
    """The table layout from ``--blocks``/``--layout`` (through ``TableLayout.resolve``)."""
    from scrapy_simhash.index import TableLayout

    spec = str(blocks) if blocks is not None else layout
    try:
        return TableLayout.resolve(spec, k, max(size, 1))
    except ValueError as exc:
        option = "--blocks" if blocks is not None else "--layout"
        raise UsageProblem(f"bad {option} for --distance {k}: {exc}") from None


def build_index(fps: np.ndarray, k: int, layout: Any, progress: Progress | None = None) -> Any:
    """A SimhashIndex of ``fps`` keyed by their position."""
    from scrapy_simhash.index import SimhashIndex

    if progress:
        progress(f"indexing {len(fps):,} fingerprints", force=True)
    index = SimhashIndex(k=k, layout=layout, expected_size=max(len(fps), 1))
    index.add_many(fps, np.arange(len(fps), dtype=np.uint64))
    return index


class Entries(NamedTuple):
    """The distinct members of a list. Without keys a member is a distinct
    fingerprint (with sketches: a distinct fingerprint and sketch), in fingerprint
    order; with keys, a distinct (key, fingerprint): row ``rows[i]`` of the list."""

    fingerprints: np.ndarray
    keys: Keys | None  #: the list's keys (None: it has none)
    rows: np.ndarray | None  #: each member's row in the list (None without keys)
    counts: np.ndarray  #: how often each member occurs
    #: ``(n, SKETCH_BINS)`` ``uint8``: each member's sketch; None: pairs are not confirmed
    sketches: np.ndarray | None = None

    def key(self, i: int) -> str:
        return self.keys[int(self.rows[i])]


def signature_groups(fps: np.ndarray, sketches: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (fingerprint, sketch) rows, in fingerprint order: the first row
    of each, each row's group, and how many rows each has. Only rows whose
    fingerprint repeats are compared by sketch."""
    order = np.argsort(fps, kind="stable")
    same = fps[order[1:]] == fps[order[:-1]]
    repeated = np.zeros(len(fps), bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    single, multi = order[~repeated], order[repeated]
    # (fingerprint, sketch) as one comparable value: big-endian fingerprint bytes first
    be = np.ascontiguousarray(fps[multi], dtype=">u8").view(np.uint8).reshape(-1, 8)
    keyed = np.ascontiguousarray(np.concatenate([be, sketches[multi]], axis=1))
    _, first, inverse, counts = np.unique(keyed.view(f"V{keyed.shape[1]}").ravel(),
                                          return_index=True, return_inverse=True,
                                          return_counts=True)
    firsts = np.concatenate([single, multi[first]])
    group = np.empty(len(fps), np.int64)
    group[single] = np.arange(len(single))
    group[multi] = len(single) + inverse.ravel()
    by_fp = np.argsort(fps[firsts], kind="stable")  # ties: already in sketch order
    rank = np.empty_like(by_fp)
    rank[by_fp] = np.arange(len(by_fp))
    sizes = np.concatenate([np.ones(len(single), np.int64), counts])
    return firsts[by_fp], rank[group], sizes[by_fp]


def distinct_entries(fl: FingerprintList, with_keys: bool = True,
                     confirm: bool = False) -> Entries:
    """Members listed once (a cluster must not list a page twice); by fingerprint
    (and sketch, with ``confirm``) alone when the list has no keys or ``with_keys``
    is false. With ``confirm`` each member carries its sketch (with keys, that of
    the member's first row)."""
    sketches = fl.sketches if confirm else None
    if fl.keys is None or not with_keys:
        if sketches is None:
            uniq, counts = np.unique(fl.fingerprints, return_counts=True)
            return Entries(uniq, None, None, counts)
        first, _, counts = signature_groups(fl.fingerprints, sketches)
        return Entries(fl.fingerprints[first], None, None, counts, sketches[first])
    fps = fl.fingerprints
    _, inverse, same_fp = np.unique(fps, return_inverse=True, return_counts=True)
    counts = np.ones(len(fps), np.int64)
    first: dict[tuple[int, str], int] = {}
    # only rows sharing a fingerprint can repeat a member
    for i in np.flatnonzero(same_fp[inverse] > 1).tolist():
        at = first.setdefault((int(fps[i]), fl.keys[i]), i)
        if at != i:
            counts[at] += 1
            counts[i] = 0
    rows = np.flatnonzero(counts)
    return Entries(fps[rows], fl.keys, rows, counts[rows],
                   None if sketches is None else sketches[rows])


def confirmed(sketches: np.ndarray, pairs: np.ndarray, progress: Progress | None = None
              ) -> np.ndarray:
    """Which ``(n, 2)`` pairs of rows of ``sketches`` the sketches confirm
    (:func:`~scrapy_simhash.fingerprinting.signature.confirms_many`, in chunks)."""
    if progress:
        progress(f"confirming {len(pairs):,} candidates", force=True)
    keep = np.empty(len(pairs), bool)
    for i in range(0, len(pairs), CONFIRM_CHUNK):
        chunk = pairs[i:i + CONFIRM_CHUNK]
        keep[i:i + CONFIRM_CHUNK] = confirms_many(sketches[chunk[:, 0]], sketches[chunk[:, 1]])
    return keep


def entry_pairs(entries: Entries, k: int, layout: Any, progress: Progress | None = None
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Every pair of members within ``k`` bits, confirmed by their sketches when the
    members have them: ``(n, 2)`` member positions (smaller first), distances, and
    the number of candidates the sketches did not confirm.

    Without keys a member seen more than once pairs with itself (distance 0),
    as simhash-cpp reports it (with sketches: when its sketch confirms itself,
    i.e. is not empty).
    """
    pairs, distances = candidate_pairs(entries.fingerprints, k, layout, progress)
    if entries.keys is None:
        same = np.flatnonzero(entries.counts > 1)
        pairs = np.concatenate([pairs, np.stack([same, same], axis=1)])
        distances = np.concatenate([distances, np.zeros(len(same), np.uint8)])
    if entries.sketches is None:
        return pairs, distances, 0
    keep = confirmed(entries.sketches, pairs, progress)
    return pairs[keep], distances[keep], int(len(keep) - np.count_nonzero(keep))


def candidate_pairs(fps: np.ndarray, k: int, layout: Any, progress: Progress | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of positions of ``fps`` within ``k`` bits (``int64``, smaller
    first) and their distances."""
    index = build_index(fps, k, layout, progress)
    if progress:
        progress("finding pairs", force=True)
    pairs, distances = index.pairs(with_distances=True)
    return pairs.astype(np.int64), distances


class Members(NamedTuple):
    """What find-all and clusters work on: the input's distinct members, the
    layout, the distance and whether pairs are confirmed."""

    entries: Entries
    layout: Any
    k: int
    confirm: bool


def decide(fl: FingerprintList, name: str, no_confirm: bool, distance: int | None,
           problems: Problems, what: str = "pairs", missing: str | None = None
           ) -> tuple[bool, int]:
    """Whether pairs are confirmed (every fingerprint has its sketch, nothing else
    ``missing``, and no ``--no-confirm``) and the distance (``distance``, else the
    default of the mode); says once on stderr when sketches are missing."""
    confirm = not no_confirm and fl.confirmable and missing is None
    k = distance if distance is not None else (
        DEFAULT_MAX_DISTANCE if confirm else FINGERPRINT_ONLY_DISTANCE)
    if not confirm and not no_confirm:
        if missing is None:
            missing = ("no sketch column" if fl.sketches is None else
                       f"{fl.unsketched:,} of {len(fl.fingerprints):,} fingerprints have "
                       "no sketch")
        problems.note(f"{name}: {missing}: {what} decided on fingerprints alone within {k} "
                      "bits, not confirmed by sketches as a crawl does (`scrapy-simhash "
                      "fingerprint` writes them; --no-confirm silences this)")
    return confirm, k


def input_of(args: argparse.Namespace) -> str:
    """The input named by the positional ``SOURCE`` or by ``-i`` (not both)."""
    if args.source is not None:
        if args.input != "-":
            raise UsageProblem("give the input once: SOURCE or -i/--input")
        args.input = args.source
    return args.input


def _members(args: argparse.Namespace, problems: Problems, progress: Progress
             ) -> Members | None:
    """The distinct members of the input (a fingerprint list, or a crawl's
    JOBDIR, state file or Redis index), the layout, k, and whether pairs are
    confirmed (None: no input)."""
    source = input_of(args)
    distance = args.distance
    if is_crawl(source):
        pages = open_crawl(source, args.key)
        fl = pages.fingerprint_list()
        if distance is None:
            distance = pages.k if pages.k is not None else DEFAULT_MAX_DISTANCE
        if not args.no_confirm:
            problems.note(crawl_note(pages, distance, args.distance is not None))
    else:
        fl = read_list(source, problems, progress, args.input_format)
    if not len(fl.fingerprints):
        return None
    name = "<stdin>" if source == "-" else source
    confirm, k = decide(fl, name, args.no_confirm, distance, problems)
    entries = distinct_entries(fl, with_keys=not args.simhash_cpp, confirm=confirm)
    size = len(entries.fingerprints)
    return Members(entries, resolve_layout(k, size, args.blocks, args.layout), k, confirm)


def _say_confirmed(problems: Problems, what: tuple[str, str], found: int, k: int,
                   rejected: int) -> None:
    """The summary of a confirmed run: ``what`` found (singular, plural), candidates refused."""
    problems.note(f"{found:,} {what[found != 1]} within {k} bits confirmed by their sketches, "
                  f"as a crawl decides ({rejected:,} candidate{'s' if rejected != 1 else ''} "
                  "not confirmed)")


def cmd_find_all(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    members = _members(args, problems, progress)
    if members is None:
        return _no_input(args.input, problems)
    entries = members.entries
    pairs, distances, rejected = entry_pairs(entries, members.k, members.layout, progress)
    fps = entries.fingerprints
    if entries.keys is None:
        # pairs of fingerprint values, each once (with sketches, two members may
        # share a fingerprint), in order
        values = np.unique(np.sort(fps[pairs], axis=1), axis=0).reshape(-1, 2)
        distances = np.bitwise_count(values[:, 0] ^ values[:, 1])
    if members.confirm:
        _say_confirmed(problems, ("pair", "pairs"), len(distances), members.k, rejected)
    progress(f"writing {len(distances):,} pairs", force=True)
    with open_output(args.output) as out:
        if args.simhash_cpp:
            write_arrays(out, values.tolist())
            return EXIT_OK
        if entries.keys is None:
            rows = Rows(out, ("fingerprint_a", "fingerprint_b", "distance"),
                        as_json=args.json, header=not args.no_header)
            a = _fp_column(values[:, 0], args)
            b = _fp_column(values[:, 1], args)
            for fa, fb, d in zip(a, b, distances.tolist()):
                rows.add(fa, fb, d)
        else:
            rows = Rows(out, ("key_a", "key_b", "distance", "fingerprint_a", "fingerprint_b"),
                        as_json=args.json, header=not args.no_header)
            found = []
            for (i, j), d in zip(pairs.tolist(), distances.tolist()):
                ki, kj = entries.key(i), entries.key(j)
                if (kj, fps[j]) < (ki, fps[i]):
                    i, j, ki, kj = j, i, kj, ki
                found.append((ki, kj, d, i, j))
            found.sort()
            for ka, kb, d, i, j in found:
                rows.add(ka, kb, d, _fp_cell(fps[i], args), _fp_cell(fps[j], args))
        rows.flush()
    return EXIT_OK


def cmd_clusters(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    members = _members(args, problems, progress)
    if members is None:
        return _no_input(args.input, problems)
    entries = members.entries
    groups, rejected = member_clusters(entries, members.k, members.layout, progress)
    if members.confirm:
        _say_confirmed(problems, ("cluster linked by pairs", "clusters linked by pairs"),
                       len(groups), members.k, rejected)
    fps = entries.fingerprints
    progress(f"writing {len(groups):,} clusters", force=True)
    if entries.keys is None:
        # each cluster's distinct fingerprints and the rows they stand for (with
        # sketches, members of one fingerprint and different sketches are one line)
        distinct = []
        for g in groups:
            values, at = np.unique(fps[g], return_inverse=True)
            distinct.append((values, np.bincount(at.ravel(), entries.counts[g]).astype(int)))
        distinct.sort(key=lambda c: (-len(c[0]), int(c[0][0])))
    with open_output(args.output) as out:
        if args.simhash_cpp:
            write_arrays(out, sorted(values.tolist() for values, _ in distinct))
            return EXIT_OK
        if entries.keys is None:
            rows = Rows(out, ("cluster", "size", "fingerprint", "count"),
                        as_json=args.json, header=not args.no_header)
            for n, (values, counts) in enumerate(distinct, 1):
                for value, seen in zip(values.tolist(), counts.tolist()):
                    rows.add(n, len(values), _fp_cell(value, args), seen)
        else:
            rows = Rows(out, ("cluster", "size", "key", "fingerprint"),
                        as_json=args.json, header=not args.no_header)
            for n, group in enumerate(groups, 1):
                for i in group.tolist():
                    rows.add(n, len(group), entries.key(i), _fp_cell(fps[i], args))
        rows.flush()
    return EXIT_OK


def member_clusters(entries: Entries, k: int, layout: Any, progress: Progress | None = None
                    ) -> tuple[list[np.ndarray], int]:
    """Connected groups of members linked by pairs within ``k`` bits, confirmed by
    their sketches when the members have them (a member seen several times without
    keys is a group too), largest first; members in key/fingerprint order. Also the
    number of candidates the sketches did not confirm."""
    rejected = 0
    if entries.sketches is None:
        index = build_index(entries.fingerprints, k, layout, progress)
        if progress:
            progress("finding clusters", force=True)
        groups = [g.astype(np.int64) for g in index.clusters()]
        repeated = entries.counts > 1
    else:
        groups, rejected = _confirmed_groups(entries, k, layout, progress)
        repeated = (entries.counts > 1) & entries.sketches.any(axis=1)
    if entries.keys is None:
        clustered = np.zeros(len(entries.fingerprints), bool)
        for g in groups:
            clustered[g] = True
        groups += [np.array([i]) for i in np.flatnonzero(repeated & ~clustered)]
        order = [np.sort(g) for g in groups]  # fingerprint order: entries are sorted
        order.sort(key=lambda g: (-len(g), int(entries.fingerprints[g[0]])))
        return order, rejected
    fps = entries.fingerprints
    order = [np.array(sorted(g.tolist(), key=lambda i: (entries.key(i), int(fps[i]))))
             for g in groups]
    order.sort(key=lambda g: (-len(g), entries.key(int(g[0]))))
    return order, rejected


def _confirmed_groups(entries: Entries, k: int, layout: Any, progress: Progress | None
                      ) -> tuple[list[np.ndarray], int]:
    """Groups of two or more members linked by confirmed pairs (member positions),
    and the candidates not confirmed.

    Members of one fingerprint and sketch are one node (they confirm each other,
    however many there are); a member whose sketch is empty confirms nothing."""
    from scrapy_simhash.index.tables import component_labels

    live = np.flatnonzero(entries.sketches.any(axis=1))
    first, node, _ = signature_groups(entries.fingerprints[live], entries.sketches[live])
    pairs, _ = candidate_pairs(entries.fingerprints[live[first]], k, layout, progress)
    keep = confirmed(entries.sketches[live[first]], pairs, progress)
    rejected = int(len(keep) - np.count_nonzero(keep))
    labels = component_labels(len(first), pairs[keep, 0], pairs[keep, 1])[node]
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    groups = [live[g] for g in np.split(order, bounds) if len(g) > 1]
    return groups, rejected


def _fp_column(values: np.ndarray, args: argparse.Namespace) -> list[Any]:
    """Fingerprints as written in a column: hex, or decimal (numbers in JSON)."""
    if args.json and args.decimal:
        return np.asarray(values, dtype=np.uint64).tolist()
    return format_fingerprints(values, args.decimal)


def _fp_cell(value: Any, args: argparse.Namespace) -> Any:
    """One fingerprint as written in a column."""
    value = int(value)
    return value if args.json and args.decimal else format_fingerprint(value, args.decimal)


def write_arrays(out: Any, rows: list[list[int]]) -> None:
    """simhash-cpp's output: each row a JSON array of decimal fingerprints."""
    batch: list[str] = []
    for row in rows:
        batch.append("[" + ", ".join(map(str, row)) + "]\n")
        if len(batch) >= 65536:
            out.write("".join(batch).encode())
            batch.clear()
    out.write("".join(batch).encode())


def _no_input(name: str, problems: Problems) -> int:
    problems.note(f"no valid fingerprint in {'<stdin>' if name == '-' else name}")
    return EXIT_INPUT


# -- query ------------------------------------------------------------------------


def cmd_query(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    if args.fingerprints:
        queries = _argument_queries(args.fingerprints, args.input_format)
        name = "FP arguments"
        missing = None if queries.confirmable else (
            "no sketches (write FP:SKETCH, the drop log's fingerprint and sketch fields, "
            "or read the drop log with -i)")
    else:
        missing = None
        queries = read_list(args.input, problems, progress, args.input_format)
        if not len(queries.fingerprints):
            return _no_input(args.input, problems)
        name = "<stdin>" if args.input == "-" else args.input
    stored = open_index(args.index, args.key)
    if stored.index is not None and queries.confirmable:
        name, missing = args.index, "a saved index keeps no sketches"
    distance = args.distance
    if distance is None and stored.index is not None:
        distance = stored.index.k  # a saved index: the k it was built for
    if stored.pages is not None and missing is None and queries.confirmable:
        if distance is None and stored.pages.k is not None:
            distance = stored.pages.k  # a crawl's state: the k the crawl decided at
        if not args.no_confirm:
            problems.note(crawl_note(stored.pages, distance or DEFAULT_MAX_DISTANCE,
                                     args.distance is not None))
    confirm, k = decide(queries, name, args.no_confirm, distance, problems, what="matches",
                        missing=missing)
    if stored.index is None:
        index = build_index(stored.fingerprints, k, resolve_layout(k, len(stored.fingerprints)))
    else:
        index = stored.index
        if k > index.k:
            raise UsageProblem(f"{args.index} was built for k={index.k}; --distance {k} "
                               "is larger")
    found = index.query_many(queries.fingerprints)
    keep = found.distance <= k
    qi, fps, dist, keys = (found.query[keep], found.fingerprint[keep], found.distance[keep],
                           found.key[keep])
    if confirm:
        pairs = np.stack([qi, keys.astype(np.int64) + len(queries.fingerprints)], axis=1)
        ok = confirmed(np.concatenate([queries.sketches, stored.sketches]), pairs, progress)
        qi, fps, dist, keys = qi[ok], fps[ok], dist[ok], keys[ok]
        _say_confirmed(problems, ("match", "matches"), len(qi), k, len(ok) - len(qi))
    where = stored.urls
    text_q = _fp_column(queries.fingerprints, args)
    text_m = _fp_column(fps, args)
    columns = ("query", "match", "distance", "url" if where is not None else "index_key")
    if queries.keys is not None:
        columns = ("key", *columns)
    starts = np.searchsorted(qi, np.arange(len(queries.fingerprints) + 1))
    unmatched = 0
    with open_output(args.output) as out:
        rows = Rows(out, columns, as_json=args.json, header=not args.no_header)
        for q in range(len(queries.fingerprints)):
            lead = (queries.keys[q],) if queries.keys is not None else ()
            matches = range(starts[q], starts[q + 1])
            if not matches:
                unmatched += 1
                rows.add(*lead, text_q[q], None, None, None)
            for m in matches:
                key = int(keys[m])
                rows.add(*lead, text_q[q], text_m[m], int(dist[m]),
                         where[key] if where is not None else key)
        rows.flush()
    if unmatched:
        problems.note(f"{unmatched:,} of {len(queries.fingerprints):,} fingerprints have no "
                      f"{'confirmed ' if confirm else ''}match within {k} bits")
    return EXIT_OK


def _argument_queries(values: list[str], notation: str) -> FingerprintList:
    """FP arguments, each ``FP`` or ``FP:SKETCH`` (2 x SKETCH_BINS hex digits, as the drop log
    and ``fingerprint`` write a sketch)."""
    fps, sketches = [], []
    try:
        for value in values:
            fp, _, sketch = value.partition(":")
            fps.append(parse_fingerprint(fp, notation))
            sketches.append(parse_sketch(sketch) if sketch else None)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    unsketched = sum(s is None for s in sketches)
    rows = None
    if unsketched < len(values):
        rows = np.zeros((len(values), SKETCH_BINS), np.uint8)
        for i, s in enumerate(sketches):
            if s is not None:
                rows[i] = np.frombuffer(s, np.uint8)
    return FingerprintList(np.array(fps, dtype=np.uint64), None, "hex", 0, rows, unsketched)


class Stored(NamedTuple):
    """What ``query --index`` searches: a saved index, or a crawl's stored pages
    (indexed by row once k is known)."""

    index: Any  #: the saved SimhashIndex; None for a crawl
    pages: CrawlPages | None  #: a crawl's state or Redis index

    @property
    def fingerprints(self) -> np.ndarray | None:
        return None if self.pages is None else self.pages.fingerprints

    @property
    def urls(self) -> list[str] | None:
        return None if self.pages is None else self.pages.urls

    @property
    def sketches(self) -> np.ndarray | None:  # a saved index keeps none
        return None if self.pages is None else self.pages.sketches


def open_index(path: str, key: str | None = None) -> Stored:
    """A crawl's state (``JOBDIR`` or its state file), a Redis index (a URL and
    ``key``), or a saved index."""
    from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION
    from scrapy_simhash.index import SimhashIndex

    if is_crawl(path):
        return Stored(None, open_crawl(path, key))
    try:
        index = SimhashIndex.load(path)
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    except Exception as exc:  # noqa: BLE001 (whatever a foreign file makes the loader raise)
        raise InputError(path, None, f"not a saved index or crawl state: {exc}") from None
    version = index.fingerprint_version
    if version is not None and version != FINGERPRINT_VERSION:
        raise InputError(path, None, f"holds fingerprints of version {version}, this "
                                     f"scrapy-simhash computes version {FINGERPRINT_VERSION}: "
                                     "they cannot be compared")
    return Stored(index, None)


# -- plan ---------------------------------------------------------------------------


def cmd_plan(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.index import TableLayout
    from scrapy_simhash.index import layout as layout_module

    n, k = args.pages, args.distance
    try:
        chosen = TableLayout.plan(k, n, max_tables=args.max_tables)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    options = TableLayout.options(k, args.max_tables)
    if args.json:
        rows = Rows(sys.stdout.buffer, ("chosen", "layout", "tables", "p", "candidates",
                                        "memory_bytes", "cost_us"), as_json=True)
        for option in options:
            rows.add(option == chosen, option.spec, len(option.tables),
                     sorted(set(option.p_values)), sum(option.candidates(n)),
                     option.memory_bytes(n), option.cost(n))
        rows.flush()
        return EXIT_OK
    print(f"k={k}, {n:,} pages; probe cost model: tables x {layout_module.TABLE_COST} us"
          f" + candidates x {layout_module.CANDIDATE_COST} us")
    print(f"  {'layout':<26} {'tables':>6} {'p':>7} {'candidates':>12} {'memory':>11}"
          f" {'cost us':>9}")
    for option in options:
        ps = sorted(set(option.p_values))
        p_text = str(ps[0]) if len(ps) == 1 else f"{ps[0]}-{ps[-1]}"
        mark = "*" if option == chosen else " "
        print(f"{mark} {option.spec:<26} {len(option.tables):>6} {p_text:>7}"
              f" {sum(option.candidates(n)):>12,.4g} {mib(option.memory_bytes(n)):>11}"
              f" {option.cost(n):>9,.1f}")
    print(f"\nchosen (*):\n{chosen.describe(n)}")
    return EXIT_OK


def mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB" if size < 2**30 else f"{size / 2**30:,.2f} GiB"


# -- the commands ---------------------------------------------------------------------


CRAWL_INPUT_HELP = (
    "SOURCE a crawl's JOBDIR (or its simhash.seen), or a Redis URL with --key: the pages "
    "the crawl stored, decided as the crawl decides (at its SIMHASH_MAX_DISTANCE, which the "
    "state records, confirmed by the stored sketches); the keys are the pages' URLs.")

CONFIRM_HELP = (
    "A pair is what a crawl drops: fingerprints within K bits whose sketches confirm it, "
    "when every fingerprint of the input has its sketch (as `fingerprint` writes them); "
    "stderr says how many candidates the sketches did not confirm. Without sketches a pair "
    "is decided on the fingerprints alone, which stderr says once; --no-confirm asks for "
    "that even when the sketches are there.")


def add_confirm(parser: argparse.ArgumentParser, what: str, more: str = "") -> None:
    """``--distance`` (its default follows the mode) and ``--no-confirm``."""
    add_distance(parser, default=None,
                 help=f"maximum Hamming distance of a candidate (default: the crawler's, "
                      f"{DEFAULT_MAX_DISTANCE}, when {what} confirmed by sketches; "
                      f"{FINGERPRINT_ONLY_DISTANCE} on fingerprints alone{more})")
    parser.add_argument("--no-confirm", action="store_true",
                        help="decide on the fingerprints alone, even when the sketches are "
                             "there (the raw fingerprint pairs)")


def add_key(parser: argparse.ArgumentParser) -> None:
    """``--key``: the key prefix of a Redis index (as ``redis-info`` takes it)."""
    parser.add_argument("--key", metavar="PREFIX",
                        help="with a Redis URL: the index's key prefix, SIMHASH_REDIS_KEY with "
                             "the spider name filled in (e.g. myspider:simhash)")


def add_commands(commands: Commands) -> None:
    for name, func, what, output in (
        ("find-all", cmd_find_all, "every pair of pages a crawl would call near-duplicates",
         (f"{CONFIRM_HELP}\n\n"
          "output: a '#' header line, then one pair a line: key_a, key_b, distance, "
          "fingerprint_a, fingerprint_b when the input has keys (pages with equal "
          "fingerprints pair at distance 0); fingerprint_a, fingerprint_b, distance when "
          "it has none (a fingerprint seen twice pairs with itself, if confirmed). --json: "
          "one object a pair; --simhash-cpp: simhash-cpp's format, [a, b] decimal fingerprint arrays.")),
        ("clusters", cmd_clusters, "groups of pages linked by near-duplicate pairs",
         (f"{CONFIRM_HELP} Clusters are linked by those pairs only.\n\n"
          "output: a '#' header line, then one member a line, each distinct member once, "
          "largest cluster first: cluster, size, key, fingerprint with keys; cluster, size, "
          "fingerprint, count (times seen) without. --json: one object a member; "
          "--simhash-cpp: one JSON array of distinct decimal fingerprints a cluster.")),
    ):
        p = commands.add(name, func, what,
                         formats=f"input: {CRAWL_INPUT_HELP} Or a fingerprint list (SOURCE or "
                                 f"-i; default stdin): {FINGERPRINT_FORMAT_HELP}\n\n{output}",
                         example=f"{name} crawls/site   (or: fingerprint pages/ | "
                                 f"scrapy-simhash {name})")
        p.add_argument("source", nargs="?", metavar="SOURCE",
                       help="a crawl's JOBDIR (or its simhash.seen), a Redis URL with --key, "
                            "or a fingerprint list (default: -i, else stdin)")
        add_key(p)
        add_input(p)
        add_output(p)
        p.add_argument("--simhash-cpp", action="store_true",
                       help="write simhash-cpp's output format (decimal JSON arrays)")
        add_confirm(p, "pairs are")
        add_layout(p)

    p = commands.add(
        "query", cmd_query, "fingerprints near the given ones in a crawl's state or a saved index",
        formats=f"input: FP arguments (FP, or FP:SKETCH with the sketch's {2 * SKETCH_BINS} "
                f"hex digits, "
                f"as the drop log's fingerprint and sketch fields hold them), or else a "
                f"fingerprint list (-i, default stdin; the drop log is one). "
                f"{FINGERPRINT_FORMAT_HELP}\n\nA match is what a crawl drops: within K bits "
                "(default: the crawl's k, which its state records) and confirmed by the "
                "sketches, when every query has its sketch and the index is a crawl's state "
                "or Redis index (which keep them); on the fingerprints alone otherwise (FP "
                "without sketch, a saved index, --no-confirm), said once on stderr.\n\noutput: a '#' header line, then one match a "
                "line: [key,] query, match, distance, url (the stored page's URL; "
                "index_key for a saved index); a query without a match gets one line of "
                "'-'. --json: one object a line.",
        example="query f20fd1b882e00196 --index crawls/site",
    )
    p.add_argument("fingerprints", nargs="*", metavar="FP",
                   help="16 hex digits, 0x-prefixed hex, or decimal; FP:SKETCH adds its sketch")
    p.add_argument("--index", required=True, metavar="PATH",
                   help="a crawl's JOBDIR, its simhash.seen file, a Redis URL (with --key) "
                        "or a saved SimhashIndex")
    add_key(p)
    add_confirm(p, "matches are", "; a saved index's own k")
    add_input(p)
    add_output(p)

    p = commands.add(
        "plan", cmd_plan, "the table layouts considered for K and N pages, and the choice",
        formats="input: K and N only.\n\noutput: a table of the layouts considered, the "
                "chosen one marked '*', then "
                "its description; --json: one object a layout.",
        example="plan --distance 3 --pages 10M",
    )
    add_distance(p)
    p.add_argument("-n", "--pages", type=count, required=True, metavar="N",
                   help="expected number of pages (1000000, 1e6, 10M)")
    p.add_argument("--max-tables", type=count, default=None)
    p.add_argument("--json", action="store_true", help="JSON lines, one object a layout")
