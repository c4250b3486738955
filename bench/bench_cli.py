"""``scrapy-simhash find-all`` end to end on 1M and 10M fingerprints, before/after.

Writes random 64-bit fingerprints with planted near-duplicates (1% of the
input, 1 to k bits away) and exact repeats to a file, then times the console
script in a subprocess: reading, indexing, finding all pairs, writing. Peak
memory is the child's maximum resident set (``os.wait4`` in a small launcher
process, so that it does not count this process's memory; wall seconds include
the launcher's start). Checks that every planted pair is in the output.

Rows, in one run on the same files:

- ``baseline``: the command line of git revision ``--baseline`` (default: the
  commit before the fingerprint list format), decimal in, simhash-cpp out;
- ``decimal -> cpp``: this tree on the same input and output;
- ``decimal -> table``: this tree's default output (header, hex);
- ``hex -> table``: 16-hex-digit input, as ``fingerprint`` writes it;
- ``keyed -> table``: ``URL<TAB>hex`` lines (1M only): keys carried to the output.
- ``sketched -> table``: hex and each page's 96-byte sketch (192 hex digits), as
  ``fingerprint`` writes them (1M only): every candidate confirmed by the sketches
  (planted near-duplicates carry their original's sketch with a few bins changed);
  ``sketched, k=6`` the same at the crawler's default k, what find-all uses on
  such a list without ``-d``, beside ``hex, k=6``: fingerprints alone at that k.

Reference, not measured here: seomoz simhash-cpp finds all pairs of 1M
fingerprints in 1.1-1.8 s through its Python binding (figure quoted in issue
6; the binary needs libJudy and does not build on this machine).

    python -m bench.bench_cli [--sizes 1000000,10000000] [--repeats 3] [--baseline REV]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE, OWN_BINS, SKETCH_BINS

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "scrapy-simhash"
BASELINE = "146c188"  # the package split, before the fingerprint list format


def make_input(path: Path, n: int, k: int, seed: int = 0, with_sketches: bool = False
               ) -> tuple[np.ndarray, np.ndarray | None, set]:
    """n fingerprints (1% planted near-duplicates, 0.1% repeats), their sketches
    (``with_sketches``; a near-duplicate's: its original's with up to 8 of its own
    text's bins changed, its exact keys kept, which confirms it) and the planted pairs."""
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
    order = rng.permutation(len(fps))
    fps = fps[order]
    sketches = None
    if with_sketches:
        srng = np.random.default_rng(seed + 1)
        base_sketches = srng.integers(1, 256, size=(len(base), SKETCH_BINS), dtype=np.uint8)
        near_sketches = base_sketches[src[:n_near]].copy()
        for i in range(n_near):
            changed = srng.choice(OWN_BINS, size=srng.integers(0, 9), replace=False)
            near_sketches[i, changed] ^= 0x80
        sketches = np.concatenate([base_sketches, near_sketches,
                                   base_sketches[src[n_near:]]])[order]
    a, b = base[src[:n_near]], near
    planted = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    planted |= {(v, v) for v in same.tolist()}
    return fps, sketches, planted


def write_input(path: Path, fps: np.ndarray, form: str, sketches: np.ndarray | None) -> None:
    step = 1 << 20
    if form == "sketched":
        step = 1 << 16  # a small parent: a child's peak RSS counts the parent's at fork
        from scrapy_simhash.cli.fingerprints import format_fingerprints, format_sketches

        with path.open("w") as out:
            out.write("#fingerprint\tsketch\n")
            for start in range(0, len(fps), step):
                out.write("".join(f"{f}\t{s}\n" for f, s in zip(
                    format_fingerprints(fps[start:start + step]),
                    format_sketches(sketches[start:start + step]))))
        return
    with path.open("w") as out:
        for start in range(0, len(fps), step):
            chunk = fps[start:start + step].tolist()
            if form == "decimal":
                lines = map(str, chunk)
            elif form == "hex":
                lines = (f"{v:016x}" for v in chunk)
            else:
                lines = (f"https://example.com/page/{start + i}\t{v:016x}"
                         for i, v in enumerate(chunk))
            out.write("\n".join(lines) + "\n")


def read_pairs(path: Path, fps: np.ndarray, cpp: bool) -> set[tuple[int, int]]:
    """The fingerprint pairs of find-all's output (simhash-cpp or table)."""
    found = set()
    with path.open() as f:
        for line in f:
            if cpp:
                a, b = json.loads(line)
            elif line.startswith("#"):
                names = line[1:].rstrip("\n").split("\t")
                ia, ib = names.index("fingerprint_a"), names.index("fingerprint_b")
                continue
            else:
                cells = line.rstrip("\n").split("\t")
                a, b = int(cells[ia], 16), int(cells[ib], 16)
            found.add((min(a, b), max(a, b)))
    return found


#: Runs a command as its own fork and reports its rusage: a child's peak RSS
#: (ru_maxrss) counts what its parent held at fork, so the command must not be
#: forked from this process, which holds the inputs.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def run_once(args: list[str]) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds (user + system), peak RSS in MiB, exit code of one child."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", LAUNCHER, *args], capture_output=True,
                         text=True, check=True).stdout
    seconds = time.perf_counter() - start
    cpu, peak, code = out.split()
    return seconds, float(cpu), int(peak) // 1024, int(code)


def baseline_command(rev: str, into: Path) -> list[str]:
    """A command running the command line of git revision ``rev``."""
    archive = into / "baseline.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "scrapy_simhash"],
                       stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "baseline", filter="data")
    code = (f"import sys; sys.path.insert(0, {str(into / 'baseline')!r}); "
            "import scrapy_simhash.cli as c; "
            f"assert c.__file__.startswith({str(into / 'baseline')!r}), c.__file__; "
            "sys.exit(c.main())")
    return [sys.executable, "-c", code]


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
    parser.add_argument("--baseline", default=BASELINE,
                        help=f"git revision to compare with (default: {BASELINE}); '' for none")
    opts = parser.parse_args()
    k = opts.distance
    print(f"find-all, k={k}, end to end (read, index, pairs, write); median of repeats, "
          "runs of one size interleaved")
    print("reference (not measured): seomoz simhash-cpp, 1M fingerprints: 1.1-1.8 s")
    print("seconds: wall clock; cpu: the child's user + system CPU seconds (what a busy "
          "machine barely moves)")
    print(f"{'fingerprints':>12} {'run':<22} {'seconds':>8} {'cpu':>7} {'runs':>5} {'fps/s':>10}"
          f" {'planted found':>14} {'peak MiB':>9} {'input MiB':>9}")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        tmpdir = Path(tmp)
        old = baseline_command(opts.baseline, tmpdir) if opts.baseline else None
        new = [str(SCRIPT)]
        for n in (int(s) for s in opts.sizes.split(",")):
            fps, sketches, planted = make_input(tmpdir / "x", n, k,
                                                with_sketches=n <= 1_000_000)
            rows = []  # label, command prefix, input form, output is cpp, -d
            if old:
                rows.append((f"baseline {opts.baseline}", old, "decimal", True, k))
            rows += [("decimal -> cpp", new, "decimal", True, k),
                     ("decimal -> table", new, "decimal", False, k),
                     ("hex -> table", new, "hex", False, k)]
            if n <= 1_000_000:
                rows += [("keyed -> table", new, "keyed", False, k),
                         (f"hex, k={DEFAULT_MAX_DISTANCE}", new, "hex", False,
                          DEFAULT_MAX_DISTANCE),
                         ("sketched -> table", new, "sketched", False, k),
                         (f"sketched, k={DEFAULT_MAX_DISTANCE}", new, "sketched", False,
                          DEFAULT_MAX_DISTANCE)]
            files = {}
            for form in {r[2] for r in rows}:
                files[form] = tmpdir / f"fps-{n}.{form}"
                write_input(files[form], fps, form, sketches)
            del sketches
            repeats = opts.repeats if n < 5_000_000 else 1
            times: dict[str, list[tuple]] = {r[0]: [] for r in rows}
            for _ in range(repeats):
                for label, cmd, form, cpp, d in rows:
                    out = tmpdir / f"pairs-{n}.txt"
                    args = [*cmd, "find-all", "-i", str(files[form]), "-o", str(out),
                            "-d", str(d), *(["--simhash-cpp"] if cpp and cmd is new else [])]
                    times[label].append(run_once(args))
                    if times[label][-1][3]:
                        raise SystemExit(f"{label} failed on {n} fingerprints")
                    hit = len(planted & read_pairs(out, fps, cpp))
                    out.unlink()
                    times[label][-1] = (*times[label][-1], hit)
            for label, cmd, form, *_ in rows:
                runs = times[label]
                seconds = statistics.median(r[0] for r in runs)
                cpu = statistics.median(r[1] for r in runs)
                peak = max(r[2] for r in runs)
                hit = min(r[4] for r in runs)
                print(f"{n:>12,} {label:<22} {seconds:>8.2f} {cpu:>7.2f} {repeats:>5}"
                      f" {n / seconds:>10,.0f}"
                      f" {hit:>7,}/{len(planted):<6,} {peak:>9,}"
                      f" {files[form].stat().st_size / 2**20:>9,.0f}", flush=True)
            if n <= 1_000_000:
                print(f"    in-process steps, seconds: {phases(files['decimal'], k)}",
                      flush=True)
            for path in files.values():
                path.unlink()


if __name__ == "__main__":
    main()
