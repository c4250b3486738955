"""A probe's cost when thousands of stored pages share one fingerprint (issue 23).

Pages that differ only in numbers share a fingerprint (digits do not move it)
and their sketches do not confirm each other: every probe of one more such page
meets all of them as candidates. The in-process backend bounds that work
(``FP_CAP`` pages of one fingerprint in the tables, ``MAX_CANDIDATES``
confirmed per probe, exact copies found through an index of their own) and
keeps a crowded fingerprint's candidates between its probes; a probe of a
fingerprint one bit away (not crowded itself, so nothing kept) meets the same
candidates through the tables each time; that probe also without the compiled
probe and rule (what a pure-Python install runs), interleaved. Beside them, in
the same run, the unbounded way (every candidate, each confirmed on its own),
which version 6 did.

``python -m bench.bench_probe [--shared 500 5000] [--others 100000] [--repeat 200] [-k K]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import scrapy_simhash.fingerprinting.signature as signature
from scrapy_simhash.backends.memory import MemoryBackend
from scrapy_simhash.index import tables
from scrapy_simhash.fingerprinting.signature import (
    DEFAULT_MAX_DISTANCE,
    SKETCH_BINS,
    Signature,
    confirms,
)

RESULTS = os.path.join(os.path.dirname(__file__), "results", "probe.txt")


def sketches(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random sketches that take the sketch path (template known, enough own
    words, mostly prose) and confirm nothing: distinct pages."""
    out = rng.integers(1, 256, (n, SKETCH_BINS), dtype=np.uint8)
    out[:, 62] = 200  # 200 own words (low byte)
    out[:, 63] = 0xC0  # sketchable | template known
    out[:, 60], out[:, 61] = 300 % 256, 300 // 256  # 300 visible words
    return out


def run(shared: int, others_count: int, repeat: int, k: int = DEFAULT_MAX_DISTANCE) -> list[str]:
    """One size: build, probe, and the result lines."""
    rng = np.random.default_rng(0)
    shared_fp = 0x0123456789ABCDEF
    backend = MemoryBackend(k=k, expected_size=others_count + shared)
    others = rng.integers(0, 2**63, others_count, dtype=np.uint64)
    stored = sketches(rng, others_count + shared)
    start = time.perf_counter()
    for i, fp in enumerate(others.tolist()):
        backend.query_and_add(Signature(fp, stored[i].tobytes()), f"https://x/{i}", add="always")
    for i in range(shared):
        row = others_count + i
        backend.query_and_add(Signature(shared_fp, stored[row].tobytes()), f"https://x/s{i}",
                              add="always")
    built = time.perf_counter() - start
    probes = sketches(rng, repeat)
    timings = {}
    compiled = tables._probe, signature._confirm
    python = []  # the same probes without the compiled probe and rule, interleaved
    for name, fp in (("crowded", shared_fp), ("near", shared_fp ^ 1 << 17)):
        spent, candidates = [], set()
        for sketch in probes:
            t = time.perf_counter()
            backend.query_and_add(Signature(fp, sketch.tobytes()), "https://x/new", add="never")
            spent.append(time.perf_counter() - t)
            candidates.add(backend.last_candidates)
            if name == "near" and all(compiled):
                tables._probe = signature._confirm = None
                try:
                    t = time.perf_counter()
                    backend.query_and_add(Signature(fp, sketch.tobytes()), "https://x/new",
                                          add="never")
                    python.append(time.perf_counter() - t)
                finally:
                    tables._probe, signature._confirm = compiled
        timings[name] = spent, candidates
    # The unbounded way: every stored page of the fingerprint, one confirmation each.
    rows = np.arange(others_count, others_count + shared)
    unbounded = []
    for sketch in probes[: max(5, repeat // 20)]:
        mine = sketch.tobytes()
        t = time.perf_counter()
        any(confirms(stored[r].tobytes(), mine) for r in rows)
        unbounded.append(time.perf_counter() - t)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    bounded = timings["crowded"][0]
    lines = [
        f"probe of a page whose fingerprint {shared:,} stored pages share "
        f"({others_count:,} others stored; k = {k}, {len(backend._index.layout.tables)} tables; "
        f"built in {built:.1f} s)  load average {load}",
    ]
    for name, label in (("crowded", "that fingerprint, candidates kept between probes"),
                        ("near", "a fingerprint 1 bit away, tables probed each time")):
        spent, candidates = timings[name]
        lines.append(
            f"  bounded (MemoryBackend.query_and_add), {label}: median "
            f"{statistics.median(spent) * 1e3:.3f} ms, "
            f"p90 {np.percentile(spent, 90) * 1e3:.3f} ms "
            f"over {len(spent)} probes; candidates confirmed a probe: "
            + ", ".join(map(str, sorted(candidates)))
        )
    if python:
        near = statistics.median(timings["near"][0])
        lines.append(
            f"  the same, 1 bit away, without the compiled probe and rule (a pure-Python "
            f"install: numpy only), interleaved: median {statistics.median(python) * 1e3:.3f} "
            f"ms; {statistics.median(python) / near:.2f}x the compiled"
        )
    else:
        lines.append("  (the compiled probe and rule are not built: numpy only above)")
    lines += [
        f"  unbounded (every candidate confirmed): median "
        f"{statistics.median(unbounded) * 1e3:.1f} ms over {len(unbounded)} probes; ratio "
        f"{statistics.median(unbounded) / statistics.median(bounded):.0f}x",
        ("PASS" if max(statistics.median(t[0]) for t in timings.values()) <= 1e-4 else "FAIL")
        + "  bounded medians <= 0.1 ms (issue 23)",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=int, nargs="+", default=[5000],
                        help="stored pages sharing one fingerprint, one run per size "
                        "(default 5000)")
    parser.add_argument("--others", type=int, default=100_000,
                        help="other stored pages (default 100000)")
    parser.add_argument("--repeat", type=int, default=200, help="probes timed (default 200)")
    parser.add_argument("-k", type=int, default=DEFAULT_MAX_DISTANCE,
                        help=f"the index's k (default {DEFAULT_MAX_DISTANCE}, the crawler's)")
    args = parser.parse_args(argv)
    lines = []
    for shared in args.shared:
        lines += run(shared, args.others, args.repeat, args.k)
        print("\n".join(lines[-6:]), flush=True)
    with open(RESULTS, "w", encoding="utf-8") as out:
        out.write("command: python -m bench.bench_probe " + " ".join(argv or sys.argv[1:]) + "\n")
        out.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
