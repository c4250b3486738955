"""``scrapy-simhash find-all`` end to end on 1M and 10M fingerprints.

Writes random 64-bit fingerprints with planted near-duplicates (1% of the
input, 1 to k bits away) and exact repeats to a file, then times the console
script in a subprocess: reading, indexing, finding all pairs, writing. Peak
memory is the child's maximum resident set (``os.wait4``). Checks that every
planted pair is in the output.

Reference, not measured here: seomoz simhash-cpp finds all pairs of 1M
fingerprints in 1.1-1.8 s through its Python binding (figure quoted in issue
6; the binary needs libJudy and does not build on this machine).

    python -m bench.bench_cli [--sizes 1000000,10000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "scrapy-simhash"


def make_input(path: Path, n: int, k: int, seed: int = 0) -> set[tuple[int, int]]:
    """Write n fingerprints (1% planted near-duplicates, 0.1% repeats); return planted pairs."""
    rng = np.random.default_rng(seed)
    n_near, n_same = n // 100, n // 1000
    base = rng.integers(0, 2**64, size=n - n_near - n_same, dtype=np.uint64)
    src = rng.choice(len(base), size=n_near + n_same, replace=False)
    near = base[src[:n_near]].copy()
    for i, d in enumerate(rng.integers(1, k + 1, size=n_near)):
        bits = rng.choice(64, size=d, replace=False).astype(np.uint64)
        near[i] ^= np.bitwise_or.reduce(np.uint64(1) << bits)
    same = base[src[n_near:]]
    fps = np.concatenate([base, near, same])
    rng.shuffle(fps)
    step = 1 << 20
    with path.open("w") as out:
        for start in range(0, len(fps), step):
            out.write("\n".join(map(str, fps[start:start + step].tolist())) + "\n")
    a, b = base[src[:n_near]], near
    planted = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    planted |= {(v, v) for v in same.tolist()}
    return planted


def run_once(args: list[str]) -> tuple[float, int, int]:
    """Wall seconds, peak RSS in MiB, exit code of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    return seconds, usage.ru_maxrss // 1024, proc.returncode


def phases(path: Path, k: int) -> str:
    """Seconds of each step in this process (no interpreter start-up)."""
    from scrapy_simhash.cli.errors import Problems
    from scrapy_simhash.cli.fingerprints import read_fingerprints
    from scrapy_simhash.index import SimhashIndex

    times = []
    start = time.perf_counter()
    with path.open("rb") as f:
        fps = read_fingerprints(f, str(path), Problems())
    times.append(("read+parse", time.perf_counter()))
    uniq = np.unique(fps)
    times.append(("unique", time.perf_counter()))
    index = SimhashIndex(k=k, expected_size=len(uniq))
    index.add_many(uniq, np.arange(len(uniq), dtype=np.uint64))
    times.append(("index", time.perf_counter()))
    index.pairs()
    times.append(("pairs", time.perf_counter()))
    parts, last = [], start
    for name, t in times:
        parts.append(f"{name} {t - last:.2f}")
        last = t
    return f"{index!r}: " + ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--repeats", type=int, default=3, help="runs per size under 5M")
    parser.add_argument("-k", "--distance", type=int, default=3)
    opts = parser.parse_args()
    k = opts.distance
    print(f"find-all, k={k}, end to end (read, index, pairs, write); median of repeats")
    print("reference (not measured): seomoz simhash-cpp, 1M fingerprints: 1.1-1.8 s")
    print(f"{'fingerprints':>12} {'seconds':>8} {'runs':>5} {'fps/s':>10} {'pairs':>9}"
          f" {'planted found':>14} {'peak MiB':>9} {'input MiB':>9}")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        for n in (int(s) for s in opts.sizes.split(",")):
            src, out = Path(tmp) / f"fps-{n}.txt", Path(tmp) / f"pairs-{n}.txt"
            planted = make_input(src, n, k)
            cmd = [str(SCRIPT), "find-all", "-i", str(src), "-o", str(out), "-d", str(k)]
            repeats = opts.repeats if n < 5_000_000 else 1
            runs = [run_once(cmd) for _ in range(repeats)]
            if any(code for *_, code in runs):
                raise SystemExit(f"find-all failed on {n} fingerprints: {runs}")
            seconds = statistics.median(r[0] for r in runs)
            peak = max(r[1] for r in runs)
            with out.open() as f:
                found = {tuple(json.loads(line)) for line in f}
            hit = len(planted & found)
            print(f"{n:>12,} {seconds:>8.2f} {repeats:>5} {n / seconds:>10,.0f} {len(found):>9,}"
                  f" {hit:>7,}/{len(planted):<6,} {peak:>9,} {src.stat().st_size / 2**20:>9,.0f}",
                  flush=True)
            if n <= 1_000_000:
                print(f"    in-process steps, seconds: {phases(src, k)}", flush=True)
            src.unlink()
            out.unlink()


if __name__ == "__main__":
    main()
