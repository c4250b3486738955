"""Benchmark the permuted-tables index against its peers, in one run.

    python -m bench.bench_index                 # N = 1M, k = 3, the peers too
    python -m bench.bench_index --n 10000000 --no-peers --qaa-n 10000000
    python -m bench.bench_index --pauses-only --pause-n 5000000   # single-add pauses

Random 64-bit fingerprints; keys 0..N-1. Ours: build from an array, bytes a
fingerprint (memory_usage() and tracemalloc), single query p50/p99 (random
probes and near-duplicate probes), query_many rate, N sequential
query_and_add calls from empty (the crawl pattern), pairs() time, and the
same with compress=True (bytes a table entry). Peers, same run: PyPI
``simhash.SimhashIndex``, ``datasketch.MinHashLSH`` (a fingerprint as the set
of its 64 (bit position, bit value) tokens: Hamming distance h gives Jaccard
(64-h)/(64+h); threshold that of 2k bits, 58/70 for k=3, as the one of k
bits, 61/67, finds only about half of the pages k bits away) and numpy brute force. Times are
wall-clock medians over --repeats with the process CPU time beside them (the
machine is shared: CPU time is what the code costs).

Single-add pauses: --pause-n sequential ``add`` calls from empty (the crawl's
insert pattern; level merges happen inside some of them), each timed in thread
CPU time: the worst call, p99.9, p99.99 and how many took over 10 / 100 ms.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np


from scrapy_simhash.index import SimhashIndex


def timed(func, repeats=1):
    """Median wall and CPU seconds of ``func()`` over ``repeats``, and its last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        gc.collect()
        w, c = time.perf_counter(), time.process_time()
        result = func()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), result


def per_call(func, args):
    """Per-call wall times in microseconds."""
    out = np.empty(len(args))
    clock = time.perf_counter
    for i, a in enumerate(args):
        t = clock()
        func(a)
        out[i] = clock() - t
    return out * 1e6


def near(rng, fps, count, k):
    """Stored fingerprints with 1..k random bits flipped."""
    qs = fps[rng.integers(0, len(fps), count)].copy()
    for i in range(count):
        for bit in rng.choice(64, size=int(rng.integers(1, k + 1)), replace=False).tolist():
            qs[i] ^= np.uint64(1 << bit)
    return qs


def traced_bytes(build):
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    obj = build()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used, obj


def line(name, value, note=""):
    print(f"  {name:<46} {value:>16} {note}", flush=True)


def bench_ours(fps, keys, args, rng, compress=False):
    n, k = len(fps), args.k
    print(f"\nscrapy_simhash.SimhashIndex, compress={compress}", flush=True)

    def build():
        index = SimhashIndex(k=k, expected_size=n, compress=compress)
        index.add_many(fps, keys)
        return index

    wall, cpu, index = timed(build, args.repeats)
    print(f"  layout {index.layout.spec} ({len(index.layout.tables)} tables)")
    line("build from an array", f"{wall:.3f} s", f"(cpu {cpu:.3f} s)")
    usage = index.memory_usage()
    tables = len(index.layout.tables)
    line("memory_usage() bytes a fingerprint", f"{usage['bytes_per_fingerprint']:.1f} B",
         f"(bar {8 * tables + 16} B = 8 x {tables} tables + 16)")
    line("  bytes a table entry (tables + directories)", f"{usage['bytes_per_table_entry']:.2f} B")
    del index
    gc.collect()
    traced, index = traced_bytes(build)
    line("tracemalloc bytes a fingerprint", f"{traced / n:.1f} B")

    probe = rng.integers(0, 2**64, args.queries, dtype=np.uint64).tolist()
    close = near(rng, fps, args.queries, k).tolist()
    for label, qs in (("random", probe), ("near-duplicate", close)):
        runs = [per_call(index.query, qs) for _ in range(args.repeats)]
        p50 = statistics.median(float(np.percentile(r, 50)) for r in runs)
        p99 = statistics.median(float(np.percentile(r, 99)) for r in runs)
        line(f"query ({label}) p50 / p99", f"{p50:.1f} / {p99:.1f} us")
    many = rng.integers(0, 2**64, args.many, dtype=np.uint64)
    wall, cpu, _ = timed(lambda: index.query_many(many), args.repeats)
    line("query_many rate", f"{len(many) / wall / 1e6:.2f} M/s",
         f"(cpu {len(many) / cpu / 1e6:.2f} M/s)")
    wall, cpu, pairs = timed(lambda: index.pairs(), args.repeats)
    line("pairs()", f"{wall:.3f} s", f"(cpu {cpu:.3f} s, {len(pairs)} pairs)")
    del index
    gc.collect()
    if compress:
        return

    m = min(args.qaa_n, n)
    seq_fps, seq_keys = fps[:m].tolist(), keys[:m].tolist()

    def crawl():
        index = SimhashIndex(k=k, expected_size=m)
        call = index.query_and_add
        for fp, key in zip(seq_fps, seq_keys):
            call(fp, key)
        return index

    wall, cpu, index = timed(crawl, 1)
    line(f"{m:,} sequential query_and_add from empty", f"{wall:.2f} s",
         f"(cpu {cpu:.2f} s, {wall / m * 1e6:.1f} us a call, {usage_levels(index)} levels)")


def bench_pauses(args):
    """CPU time of each single ``add`` from empty to --pause-n entries."""
    m = args.pause_n
    fps = np.random.default_rng(2007).integers(0, 2**64, m, dtype=np.uint64)
    keys = np.arange(m, dtype=np.uint64)
    print(f"\nsingle-add pauses, {m:,} sequential add() from empty "
          f"(expected_size={m:,}), thread CPU time a call", flush=True)
    index = SimhashIndex(k=args.k, expected_size=m)
    add, clock = index.add, time.thread_time
    seq_fps, seq_keys = fps[:m].tolist(), keys[:m].tolist()
    cost = np.empty(m)
    gc.collect()
    gc.disable()
    try:
        total = clock()
        for i, (fp, key) in enumerate(zip(seq_fps, seq_keys)):
            t = clock()
            add(fp, key)
            cost[i] = clock() - t
        total = clock() - total
    finally:
        gc.enable()
    cost *= 1e3
    line(f"layout {index.layout.spec}, total", f"{total:.1f} s",
         f"(cpu, {total / m * 1e6:.1f} us an add incl. timing)")
    line("worst single add", f"{cost.max():.2f} ms", f"(at add #{int(cost.argmax()):,})")
    line("p99.9 / p99.99 single add",
         f"{np.percentile(cost, 99.9):.3f} / {np.percentile(cost, 99.99):.3f} ms")
    line("adds over 10 ms / over 100 ms",
         f"{int((cost > 10).sum())} / {int((cost > 100).sum())}")
    last = cost[-m // 5:]
    line(f"worst of the last {len(last):,} adds", f"{last.max():.2f} ms")


def usage_levels(index):
    return index.memory_usage()["levels"]


def bench_brute(fps, args, rng):
    print("\nnumpy brute force", flush=True)
    k = np.uint8(args.k)
    qs = rng.integers(0, 2**64, 200, dtype=np.uint64)

    def one(q):
        return np.flatnonzero(np.bitwise_count(fps ^ q) <= k)

    times = per_call(one, qs)
    line("query p50", f"{np.percentile(times, 50):.0f} us")


def bench_simhash(fps, args, rng):
    from simhash import Simhash
    from simhash import SimhashIndex as PeerIndex

    n = min(len(fps), args.peer_n)
    print(f"\nsimhash (PyPI) SimhashIndex, N = {n:,}", flush=True)
    objs = [(str(i), Simhash(int(v))) for i, v in enumerate(fps[:n].tolist())]
    wall, cpu, index = timed(lambda: PeerIndex(objs, f=64, k=args.k), 1)
    line("build", f"{wall:.1f} s", f"(cpu {cpu:.1f} s)")
    small = min(n, 100_000)
    traced, _ = traced_bytes(lambda: PeerIndex(objs[:small], f=64, k=args.k))
    line(f"tracemalloc bytes a fingerprint (at {small:,})", f"{traced / small:.0f} B",
         "(index only, without the Simhash objects)")
    qs = [Simhash(int(v)) for v in rng.integers(0, 2**64, 300, dtype=np.uint64).tolist()]
    times = per_call(index.get_near_dups, qs)
    line("query p50", f"{np.percentile(times, 50):.0f} us")


def minhashes(fps, num_perm, seed=1):
    """MinHash signatures of each fingerprint's 64 (position, bit) tokens, vectorised."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 2**32, (64, 2, num_perm), dtype=np.uint64)  # token -> hash per perm
    out = np.empty((len(fps), num_perm), dtype=np.uint64)
    shifts = np.arange(64, dtype=np.uint64)
    for i in range(0, len(fps), 4096):
        bits = ((fps[i:i + 4096, None] >> shifts) & np.uint64(1)).astype(np.intp)
        out[i:i + 4096] = table[np.arange(64), bits].min(axis=1)
    return out


def bench_datasketch(fps, args, rng):
    from datasketch import MinHash, MinHashLSH

    n = min(len(fps), args.minhash_n)
    num_perm = 128
    # the Jaccard similarity at 2k bits: a margin below the one at k bits
    threshold = (64 - 2 * args.k) / (64 + 2 * args.k)
    print(f"\ndatasketch MinHashLSH, N = {n:,}, num_perm={num_perm}, threshold {threshold:.3f}",
          flush=True)
    sigs = minhashes(fps[:n], num_perm)

    def build():
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        with lsh.insertion_session() as session:
            for i in range(n):
                sig = MinHash(num_perm=num_perm, hashvalues=sigs[i], scheme="affine32")
                session.insert(i, sig, check_duplication=False)
        return lsh

    wall, cpu, lsh = timed(build, 1)
    line("build", f"{wall:.1f} s", f"(cpu {cpu:.1f} s)")
    small = min(n, 20_000)
    traced, _ = traced_bytes(
        lambda: [build_small(MinHashLSH, MinHash, sigs, small, threshold, num_perm)])
    line(f"tracemalloc bytes a fingerprint (at {small:,})", f"{traced / small:.0f} B",
         "(LSH + MinHash objects)")
    idx = rng.integers(0, n, 300)
    qfps = fps[idx].copy()
    for i in range(len(qfps)):
        for bit in rng.choice(64, size=args.k, replace=False).tolist():
            qfps[i] ^= np.uint64(1 << bit)
    qsig = minhashes(qfps, num_perm)
    queries = [MinHash(num_perm=num_perm, hashvalues=s, scheme="affine32") for s in qsig]
    times = per_call(lsh.query, queries)
    found = [lsh.query(q) for q in queries]
    recall = np.mean([int(i) in f for i, f in zip(idx.tolist(), found)])
    line("query p50", f"{np.percentile(times, 50):.1f} us")
    line(f"recall of a stored page {args.k} bits away", f"{recall * 100:.1f} %")


def build_small(lsh_cls, mh_cls, sigs, n, threshold, num_perm):
    lsh = lsh_cls(threshold=threshold, num_perm=num_perm)
    for i in range(n):
        sig = mh_cls(num_perm=num_perm, hashvalues=sigs[i], scheme="affine32")
        lsh.insert(i, sig, check_duplication=False)
    return lsh


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=20_000, help="single-query probes")
    parser.add_argument("--many", type=int, default=1_000_000, help="query_many batch size")
    parser.add_argument("--qaa-n", type=int, default=1_000_000,
                        help="sequential query_and_add calls (at most N)")
    parser.add_argument("--peer-n", type=int, default=1_000_000, help="simhash peer size")
    parser.add_argument("--minhash-n", type=int, default=100_000, help="datasketch peer size")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-compress", action="store_true")
    parser.add_argument("--pause-n", type=int, default=5_000_000,
                        help="sequential adds timed one by one (0: skip)")
    parser.add_argument("--pauses-only", action="store_true",
                        help="only the single-add pause figures")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(20070508)
    if args.pauses_only:
        bench_pauses(args)
        return
    fps = rng.integers(0, 2**64, args.n, dtype=np.uint64)
    keys = np.arange(args.n, dtype=np.uint64)
    print(f"N = {args.n:,} random fingerprints, k = {args.k}, medians of {args.repeats} runs; "
          f"python {sys.version.split()[0]}, numpy {np.__version__}", flush=True)
    bench_ours(fps, keys, args, rng)
    if not args.no_compress:
        bench_ours(fps, keys, args, rng, compress=True)
    bench_brute(fps, args, rng)
    if not args.no_peers:
        bench_simhash(fps, args, rng)
        bench_datasketch(fps, args, rng)
    if args.pause_n:
        bench_pauses(args)


if __name__ == "__main__":
    main()
