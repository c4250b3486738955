"""What a crawl left behind: its state (``JOBDIR/simhash.seen``), its drop log
(``SIMHASH_LOG_FILE``); the ``report`` and ``salvage`` commands.

The state is read only through :func:`scrapy_simhash.backends.state.read_state`,
which checks its format and fingerprint version.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from scrapy_simhash.cli import EXIT_INPUT, EXIT_OK
from scrapy_simhash.cli.errors import InputError, Problems, UsageProblem, load_json_line
from scrapy_simhash.cli.options import Commands, add_distance, int_in
from scrapy_simhash.cli.output import Progress
from scrapy_simhash.cli.pairs import build_index, resolve_layout
from scrapy_simhash.cli.state import load_state
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION
from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE
from scrapy_simhash.index.store import salvage


# -- the drop log ---------------------------------------------------------------


class Drop(NamedTuple):
    """One record of the drop log (a near-duplicate the crawl found)."""

    url: str
    duplicate_of: str
    distance: int
    action: str
    run: str | None  #: the record's ``run`` field, when the crawl wrote one
    time: str | None


#: The ``action`` of the marker :func:`read_drop_log` puts where a run starts.
RUN_START = "open"


def read_drop_log(path: str, problems: Problems) -> list[Drop]:
    """The near-duplicates in ``SIMHASH_LOG_FILE`` (JSON lines, see
    :mod:`scrapy_simhash.middleware`), in order, with a marker record (action
    :data:`RUN_START`) where the middleware wrote a run's ``open`` line; ``close``
    and ``skip`` lines (requests the URL rules skipped) are not drops. Lines of
    earlier versions have no ``event``: they are drops."""
    drops = []
    try:
        with open(path, "rb") as stream:
            for line_no, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    obj = load_json_line(line)
                    event = obj.get("event") or (
                        "skip" if obj.get("action") == "skip" else "drop")
                    if event == "open":
                        drops.append(Drop("", "", -1, RUN_START, None, obj.get("time")))
                        continue
                    if event != "drop":
                        continue
                    run = obj.get("run")
                    drops.append(Drop(str(obj["url"]), str(obj["duplicate_of"]),
                                      int(obj["distance"]), str(obj.get("action", "drop")),
                                      None if run is None else str(run), obj.get("time")))
                except KeyError as exc:
                    problems.add(path, line_no, f"bad drop record: no {exc} field")
                except (ValueError, TypeError, AttributeError) as exc:
                    problems.add(path, line_no, f"bad drop record: {exc}")
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    return drops


def split_runs(drops: Sequence[Drop]) -> tuple[list[list[Drop]], str]:
    """The drop log's records grouped by crawl run, and how runs were told apart.

    SIMHASH_LOG_FILE is appended to by every crawl, each run starting with an
    ``open`` line (a :data:`RUN_START` marker here; a run may have no drops).
    Older logs have no such line: records that carry a ``run`` field are grouped
    by it; otherwise a new run starts at a record whose URL already appeared in
    the current run (a crawl, resumed or not, fingerprints each URL once; a new
    crawl of the same site finds the same near-duplicates again).
    """
    if any(d.action == RUN_START for d in drops):
        out: list[list[Drop]] = []
        for d in drops:
            if d.action == RUN_START:
                out.append([])
            elif not out:  # lines of an older version before the first marked run
                out.append([d])
            else:
                out[-1].append(d)
        return out, "the run's open record"
    if drops and all(d.run is not None for d in drops):
        runs: dict[str, list[Drop]] = {}
        for d in drops:
            runs.setdefault(d.run, []).append(d)
        return list(runs.values()), "their run field"
    out = []
    seen: set[str] = set()
    for d in drops:
        if not out or d.url in seen:
            out.append([])
            seen = set()
        out[-1].append(d)
        seen.add(d.url)
    return out, "a URL appearing again"


def _is_json_lines(path: str) -> bool:
    try:
        with open(path, "rb") as stream:
            head = stream.read(64).lstrip()
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    return head.startswith(b"{")


class _Clusters:
    """Union-find over URLs (drop edges and near pairs among stored pages)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, url: str) -> str:
        parent = self.parent.setdefault(url, url)
        while parent != url:
            grand = self.parent[parent]
            self.parent[url] = grand
            url, parent = parent, grand
        return url

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def groups(self) -> list[list[str]]:
        out: dict[str, list[str]] = {}
        for url in self.parent:
            out.setdefault(self.find(url), []).append(url)
        return sorted(out.values(), key=lambda g: (-len(g), min(g)))


# -- report -----------------------------------------------------------------------------


class Report:
    """What ``report`` found, as plain values (printed as text or one JSON object)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.data: dict[str, Any] = {}
        self.fps = np.empty(0, np.uint64)  #: the stored fingerprints
        self.drops: list[Drop] | None = None  #: the drops counted; None: no drop log

    def say(self, text: str = "") -> None:
        self.lines.append(text)


def pick_run(runs: list[list[Drop]], run: str) -> tuple[list[Drop], str]:
    """The drops of the chosen run (``last``, ``all`` or a number from 1)."""
    if run == "all" or not runs:
        return [d for r in runs for d in r], "all runs"
    if run == "last":
        return runs[-1], f"run {len(runs)} (the last)"
    number = int(run)
    if not 1 <= number <= len(runs):
        raise UsageProblem(f"--run {run}: the drop log holds {len(runs)} run(s)")
    return runs[number - 1], f"run {number}"


def crawl_report(states: Sequence[Any], logs: Sequence[tuple[str, list[Drop]]], *, k: int,
                 top: int, run: str = "last", progress: Progress | None = None) -> Report:
    """Figures of a crawl from its states and drop logs (either may be missing)."""
    rep = Report()
    fps = (np.concatenate([s.fingerprints for s in states]) if states
           else np.empty(0, np.uint64))
    urls = [u for s in states for u in s.urls]
    stored = len(fps) if states else None
    for s in states:
        rep.say(f"state {s.path}: {len(s.fingerprints):,} pages stored (each page kept as new, "
                "once, with its URL, over every run of this JOBDIR; near-duplicates are "
                "never stored)")
    rep.data["states"] = [{"path": s.path, "stored": len(s.fingerprints)} for s in states]

    drops: list[Drop] | None = None
    runs_data = []
    if logs:
        drops = []
        for path, records in logs:
            runs, how = split_runs(records)
            records = [d for r in runs for d in r]
            actions = Counter(d.action for d in records)
            detail = ", ".join(f"{a} {n:,}" for a, n in sorted(actions.items()))
            rep.say(f"drop log {path}: {len(records):,} near-duplicates in {len(runs)} "
                    f"run{'s' if len(runs) != 1 else ''}" + (f" ({detail})" if detail else ""))
            chosen, label = pick_run(runs, run)
            if len(runs) > 1:
                for n, r in enumerate(runs, 1):
                    acts = Counter(d.action for d in r)
                    when = f", {r[0].time} to {r[-1].time}" if r and r[0].time else ""
                    detail = ", ".join(f"{a} {c:,}" for a, c in sorted(acts.items()))
                    rep.say(f"  run {n}: {len(r):,} near-duplicate{'s' if len(r) != 1 else ''}"
                            + (f" ({detail})" if detail else "") + when)
                rep.say(f"  SIMHASH_LOG_FILE appends across crawls (runs told apart by {how}): "
                        f"the figures below use {label}; --run all or --run N for others")
            drops.extend(chosen)
            runs_data.append({"path": path, "records": len(records), "runs": [
                {"records": len(r), "actions": dict(Counter(d.action for d in r)),
                 "first": r[0].time if r else None, "last": r[-1].time if r else None}
                for r in runs], "used": label})
    rep.data["drop_logs"] = runs_data

    if drops is None:
        rep.say("near-duplicates: unknown (no drop log given: the crawl writes one when "
                "SIMHASH_LOG_FILE is set; its stats count them as simhash/duplicate_count)")
    else:
        actions = Counter(d.action for d in drops)
        rep.say(f"near-duplicates: {len(drops):,} (" + ", ".join(
            f"{a} {n:,}" for a, n in sorted(actions.items())) + ")" if drops else
            "near-duplicates: 0 in the drop log")
    if stored is None:
        rep.say("pages stored: unknown (no state given: pass the crawl's JOBDIR)")
    if stored is not None and drops is not None:
        rep.say(f"responses fingerprinted: {stored + len(drops):,} = {stored:,} stored + "
                f"{len(drops):,} near-duplicates")
        rep.say("  (the crawl's simhash/response_count counts the same, except near-duplicates "
                "of dont_filter requests, kept and neither stored nor logged "
                "(simhash/kept_dont_filter_count); pages with too few features are not "
                "fingerprinted (simhash/skipped_count/too_few_features))")
    elif stored is not None:
        rep.say(f"responses fingerprinted: at least {stored:,} (the stored pages; "
                "near-duplicates unknown)")
    rep.data.update({
        "stored": stored,
        "near_duplicates": None if drops is None else len(drops),
        "actions": None if drops is None else dict(Counter(d.action for d in drops)),
        "responses_fingerprinted": (None if stored is None or drops is None
                                    else stored + len(drops)),
    })

    clusters = _Clusters()
    distance_of = {d.url: d.distance for d in drops or ()}
    for d in drops or ():
        clusters.union(d.duplicate_of, d.url)
    if len(fps) > 1:
        if progress:
            progress("clustering stored pages", force=True)
        from scrapy_simhash.fingerprinting.signature import confirms

        index = build_index(fps, k, resolve_layout(k, len(fps)), progress)
        sketches = np.concatenate([s.sketches for s in states])
        for a, b in index.pairs().tolist():
            # stored pages cluster when their sketches confirm it, as a crawl decides
            if confirms(sketches[a].tobytes(), sketches[b].tobytes()):
                clusters.union(urls[a], urls[b])
    groups = [g for g in clusters.groups() if len(g) > 1]
    sizes = Counter(len(g) for g in groups)
    rep.say(f"clusters: {len(groups):,} with {sum(map(len, groups)):,} pages"
            f" (stored pages within {k} bits whose sketches confirm it, and each"
            " near-duplicate with its original)")
    if sizes:
        rep.say("cluster sizes: " + ", ".join(f"{n:,} x {size} pages" for size, n in
                                              sorted(sizes.items())))
    shown = []
    for group in groups[:top]:
        first = [u for u in group if u not in distance_of] or group
        head = min(first)
        rest = sorted(u for u in group if u != head)
        rep.say(f"\n{len(group)} pages, first {head}")
        for url in rest[:20]:
            dist = distance_of.get(url)
            rep.say(f"  {url}" + ("" if dist is None else f"  (distance {dist})"))
        if len(rest) > 20:
            rep.say(f"  ... {len(rest) - 20} more")
        shown.append({"first": head, "members": [
            {"url": u, "distance": distance_of.get(u)} for u in rest]})
    rep.data["clusters"] = {"count": len(groups), "pages": sum(map(len, groups)),
                            "sizes": {str(s): n for s, n in sorted(sizes.items())},
                            "largest": shown}
    rep.data["k"] = k
    rep.fps, rep.drops = fps, drops
    return rep


def cmd_report(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.cli import plot

    if args.plot:
        plot.require_matplotlib()
    if args.run not in ("last", "all") and not args.run.isdigit():
        raise UsageProblem(f"--run must be last, all or a run number: {args.run!r}")
    states, logs = [], []
    for path in args.paths:
        if not Path(path).is_dir() and _is_json_lines(path):
            logs.append((path, read_drop_log(path, problems)))
        else:
            states.append(load_state(path))
    if not states and not any(records for _, records in logs):
        problems.note("nothing to report: no stored page and no drop")
        return EXIT_INPUT
    k = args.distance
    if k is None:  # the k the crawl recorded in its state, else the crawler's default
        recorded = {s.max_distance for s in states} - {None}
        k = recorded.pop() if len(recorded) == 1 else DEFAULT_MAX_DISTANCE
    rep = crawl_report(states, logs, k=k, top=args.top, run=args.run, progress=progress)
    if args.plot:
        progress("nearest-neighbour distances", force=True)
        nearest, sampled = plot.nearest_distances(rep.fps)
        drops = None if rep.drops is None else np.array([d.distance for d in rep.drops])
        names = ", ".join(args.paths)
        fig = plot.distance_figure(nearest, drops, k, sampled=sampled,
                                   title=f"scrapy-simhash report: {names}")
        plot.save_figure(fig, args.plot)
        progress.clear()
        rep.say(f"\nplot written to {args.plot}")
        rep.data["plot"] = args.plot
    progress.clear()
    if args.json:
        print(json.dumps(rep.data, ensure_ascii=False))
    else:
        print("\n".join(rep.lines))
    return EXIT_OK


# -- salvage --------------------------------------------------------------------------------


def cmd_salvage(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.index import CorruptStateError

    from scrapy_simhash.backends.state import state_header, state_path

    src = args.broken
    if os.path.isdir(src):
        src = state_path(src)
    # what a header damaged beyond repair is written as: this version's, or --fingerprint-version
    header = {**state_header(), "fingerprint_version": args.fingerprint_version}
    try:
        report = salvage(src, args.new, header=header)
    except FileExistsError:
        raise UsageProblem(f"{args.new} exists: salvage writes a new file, choose another "
                           "name") from None
    except CorruptStateError as exc:
        raise InputError(src, None, f"cannot salvage: {exc.reason}") from None
    except OSError as exc:
        raise InputError(exc.filename or src, None, exc.strerror or str(exc)) from None
    damage = [{"offset": int(o), "length": int(n)} for o, n in report.damage]
    if args.json:
        print(json.dumps({"source": report.source, "destination": report.destination,
                          "records": report.records, "bytes_skipped": report.bytes_skipped,
                          "damage": damage, "header": report.header}))
        return EXIT_OK
    if report.header == "repaired":
        print(f"the header of {report.source} was damaged: one flipped bit undone (its "
              "checksum confirms the repair)")
    elif report.header == "replaced":
        print(f"the header of {report.source} was damaged beyond repair: written anew with "
              f"format {header['format']}, fingerprint version {header['fingerprint_version']} "
              f"and {header['sketch_bytes']}-byte sketches (--fingerprint-version N if the "
              "crawl ran another scrapy-simhash)")
    print(f"{report.destination}: {report.records:,} records copied from {report.source}")
    if damage:
        where = ", ".join(f"byte {d['offset']:,} ({d['length']:,} bytes)" for d in damage[:20])
        more = f" and {len(damage) - 20} more" if len(damage) > 20 else ""
        print(f"skipped {report.bytes_skipped:,} damaged bytes in {len(damage)} stretch"
              f"{'es' if len(damage) != 1 else ''}: {where}{more}")
    else:
        print("no damage found: every record was copied")
    print(f"check it with `scrapy-simhash report {report.destination}`, then move it over "
          "the broken file to resume the crawl")
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    p = commands.add(
        "report", cmd_report, "what a crawl stored and dropped, from its state and/or drop log",
        formats="input: a JOBDIR or its simhash.seen state file (pages stored: fingerprints, "
                "sketches and URLs), and/or the drop log the crawl appends to with SIMHASH_LOG_FILE "
                "(JSON lines, one near-duplicate a line). Without a drop log the number of "
                "near-duplicates is unknown and said so. A drop log holding several crawls is "
                "split into runs (by a 'run' field, else where a URL drops again): the figures "
                "use the last run unless --run says otherwise.\n\noutput: text; --json: one "
                "JSON object; --plot FILE.png: histograms of the distance from each stored "
                "page to its nearest one and of each near-duplicate to its original.",
        example="report crawls/site drops.jsonl --plot distances.png",
    )
    p.add_argument("paths", nargs="+", metavar="STATE_OR_LOG",
                   help="a JOBDIR, its simhash.seen file, or a drop log (JSON lines)")
    add_distance(p, default=None,
                 help=f"k for clusters among the stored pages (default: the crawl's, which "
                      f"its state records, else the crawler's default, {DEFAULT_MAX_DISTANCE}; "
                      "a cluster edge is a confirmed pair)")
    p.add_argument("--top", type=int_in(0, 1000), default=5,
                   help="largest clusters to list (default: 5)")
    p.add_argument("--run", default="last", metavar="last|all|N",
                   help="which run of the drop log to count (default: last)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the distance histograms (needs matplotlib: the 'plot' extra)")
    p.add_argument("--json", action="store_true", help="one JSON object instead of text")

    p = commands.add(
        "salvage", cmd_salvage,
        "copy every readable record of a damaged state file into a new one",
        formats="input: a damaged simhash.seen (or its JOBDIR), which is only read. A "
                "header with one flipped bit is repaired; one damaged beyond that is written "
                "anew: format, this version's fingerprint version (--fingerprint-version) "
                "and sketch size.\n\noutput: a new "
                "state file holding every intact record (NEW_STATE must not exist), and a "
                "summary: records copied, bytes skipped and where; --json: as one object.",
        example="salvage crawls/site/simhash.seen simhash.seen.salvaged",
    )
    p.add_argument("broken", metavar="BROKEN_STATE")
    p.add_argument("new", metavar="NEW_STATE")
    p.add_argument("--fingerprint-version", type=int_in(1, 1 << 16), default=FINGERPRINT_VERSION,
                   metavar="N",
                   help="the fingerprint version written when the header is damaged beyond "
                        f"repair (default: this scrapy-simhash's, {FINGERPRINT_VERSION})")
    p.add_argument("--json", action="store_true", help="the summary as one JSON object")
