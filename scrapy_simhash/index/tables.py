"""Permuted-tables index of 64-bit fingerprints for k-bit Hamming queries.

Manku, Jain & Das Sarma (WWW 2007), §3: one sorted table of permuted
fingerprints per permutation of :class:`~scrapy_simhash.index.layout.TableLayout`;
a neighbour within k bits shares the leading p bits with the query in at least
one table, so a probe only compares the entries of one prefix bucket a table.

Storage, all ``uint64`` and vectorised:

* a *level* holds a master pair of arrays sorted by fingerprint (fingerprint,
  key: 16 bytes an entry) and one array a table: the fingerprints sorted by
  their permuted value (8 bytes an entry; a probe compares them with the query
  as they are, and the identity table is the master array itself), or with
  ``compress=True`` the master rows in that order (``uint32``, 4 bytes an
  entry: packed row ids instead of §3.2's delta coding, which cannot go below
  ~5.3 bytes an entry for 10M random 64-bit values). Each table has a
  directory of offsets on the permuted value's leading ``d`` bits
  (``2**d <= n / 8``, so at most 0.5 bytes an entry), one lookup a probe.
* online inserts go to a small buffer, compared by brute force; a full buffer
  becomes a level and levels merge LSM-style when the older one is at most
  ``MERGE_RATIO`` times the newer, so there are few levels and each entry is
  re-sorted O(log n) times.
* a merge started by single inserts runs in bounded steps (:class:`_Merge`),
  a slice of every table a step, spread over the next ``MERGE_SPREAD``
  buffers' worth of inserts (at least ``MERGE_STEP`` entries a step): no single
  :meth:`add` pays for a whole merge (5M sequential adds: the worst single
  add 1.9 s of CPU before, ~5 ms after; ``bench/results/index.txt``). The merged
  levels answer queries until the new level replaces them, so results stay
  exact. Bulk inserts (:meth:`add_many`, loading) merge at once.
* :meth:`remove` marks rows dead; a merge carries them over,
  :meth:`compact` (or a level more than half dead) drops them.

Persistence (:meth:`save`, :meth:`load`, :meth:`open`) is
:mod:`scrapy_simhash.index.snapshot`'s; an index it opened has a log
(``_log``) that each add and remove is appended to.
Nothing here imports Scrapy.
"""

from __future__ import annotations

import logging
import mmap
import sys
from array import array
from typing import Any, NamedTuple

import numpy as np

import scrapy_simhash.index.snapshot as snapshot
from scrapy_simhash.index.layout import F, TableLayout
from scrapy_simhash.index.store import RecordLog

try:  # the compiled probe, when the package was built with it
    import scrapy_simhash.index._probe as _probe
except ImportError:  # pure-Python install: the numpy probe, the same results
    _probe = None

logger = logging.getLogger(__name__)

__all__ = ["BatchMatches", "Match", "SimhashIndex"]

BUFFER_SIZE = 2048
MERGE_RATIO = 8
#: Fewest entries a step of an incremental merge produces.
MERGE_STEP = 1 << 13
#: An incremental merge ends within this many buffers' worth of inserts (the
#: levels flushed meanwhile wait, unmerged: at most MERGE_SPREAD - 1 of them).
MERGE_SPREAD = 4
#: Merge outputs from this size on get 4 KiB pages (numpy's huge pages start at 4 MiB).
PAGED_BYTES = 1 << 22
#: Bytes of a merged-away level's memory released an insert.
RELEASE_STEP = 2 << 20
# pairs(): up to this many tables, each pair is kept by the first table holding
# it (tables x tables vector passes); beyond, found pairs are sorted and deduplicated
CANONICAL_TABLES = 24
_CHUNK = 1 << 16
#: A probe computes this many leading permuted bits of the query a table at once
#: (:meth:`SimhashIndex._lead`), so directories use at most this many bits.
_LEAD_BITS = 32
_U64 = np.uint64
#: What ``query_and_add`` does with a new fingerprint.
ADD_MODES = ("if_new", "always", "never")


class Match(NamedTuple):
    """A stored entry within k bits of a query (Python ints)."""

    key: int
    fingerprint: int
    distance: int


class BatchMatches(NamedTuple):
    """Matches of :meth:`SimhashIndex.query_many`, one row a match, sorted by
    (query, distance, key): ``query`` is the position in the queried array."""

    query: np.ndarray  # intp
    key: np.ndarray  # uint64
    fingerprint: np.ndarray  # uint64
    distance: np.ndarray  # uint8


class _Level:
    """Immutable sorted arrays of a batch of entries (plus dead rows).

    With uncompressed tables they lie back to back in ``block`` (table ``t``
    at ``block[t * n:(t + 1) * n]``; the identity table is ``fps``), so the
    numpy probe reads every table's bucket with one gather (:meth:`gather`).
    The compiled probe reads the buckets in place (``scan``, its
    ``_probe.LevelScan``): neither is made before a probe needs it."""

    __slots__ = ("fps", "keys", "tables", "dirs", "shift", "dead", "block", "_gather",
                 "rowstart", "lead_shift", "scan")

    def __init__(self, fps, keys, tables, dirs, shift, block=None):
        self.fps, self.keys, self.tables, self.dirs, self.shift = fps, keys, tables, dirs, shift
        self.dead: set[int] = set()
        self.block = block
        self.scan = None  # its _probe.LevelScan, made on its first compiled probe
        self._gather = False  # (windows, starts) or None once made: False until then
        d = F - shift
        self.lead_shift = np.uint32(_LEAD_BITS - d)
        self.rowstart = np.arange(len(dirs), dtype=np.intp) << d

    def gather(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(windows, starts)`` for the numpy probe's one gather, made on its
        first call: ``windows`` views the block as rows of ``width`` (the
        largest bucket) consecutive entries and ``starts`` holds each bucket's
        window (``rowstart[t] + bucket``), moved back at the very end so it
        stays inside the block. A window may read entries of neighbouring
        buckets, which are stored fingerprints too, so matches are unchanged.
        None without a block, or with a bucket far above the mean (many copies
        of one fingerprint): probes then slice table by table. Never made on
        an install with the compiled probe (4 bytes a bucket a table)."""
        if self._gather is False:
            self._gather = self._windows()
        return self._gather

    def _windows(self) -> tuple[np.ndarray, np.ndarray] | None:
        block, dirs = self.block, self.dirs
        if block is None or not len(self.fps):
            return None
        n, d = len(self.fps), F - self.shift
        offsets = np.stack([np.frombuffer(dr, dtype=dr.typecode) for dr in dirs])
        width = int(np.diff(offsets, axis=1).max())
        if width > 4 * (n >> d) + 32:  # a crowded bucket: a window a table would read it all
            return None
        starts = offsets[:, :-1].astype(np.int64)
        starts += np.arange(len(dirs), dtype=np.int64)[:, None] * n
        np.minimum(starts, len(block) - width, out=starts)
        starts = starts.ravel().astype(np.int32 if len(block) < 1 << 31 else np.intp)
        return np.lib.stride_tricks.sliding_window_view(block, width), starts

    @property
    def alive(self) -> int:
        return len(self.fps) - len(self.dead)

    def alive_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.dead:
            return self.fps, self.keys
        keep = np.ones(len(self.fps), dtype=bool)
        keep[np.fromiter(self.dead, dtype=np.intp, count=len(self.dead))] = False
        return self.fps[keep], self.keys[keep]


def _as_u64(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array, got shape {arr.shape}")
    if arr.dtype == np.uint64:
        return arr
    if arr.size == 0:
        return arr.astype(np.uint64)
    if arr.dtype.kind == "i":
        if arr.min() < 0:
            raise ValueError(f"{name} must be unsigned 64-bit integers, got a negative value")
        return arr.astype(np.uint64)
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64)
    if arr.dtype == object:
        try:
            return np.array([int(v) for v in arr], dtype=np.uint64)
        except (OverflowError, TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be unsigned 64-bit integers: {exc}") from None
    raise ValueError(f"{name} must be unsigned 64-bit integers, got dtype {arr.dtype}")


def _check_u64(value, name: str) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an unsigned 64-bit integer, got {value!r}") from None
    if not 0 <= v < 1 << F:
        raise ValueError(f"{name} must be an unsigned 64-bit integer, got {value!r}")
    return v


def _expand(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[start, start + length)``: (range number, position) of every element."""
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(lengths)), lengths)
    if total == 0:
        return owner, np.empty(0, dtype=np.intp)
    base = starts.astype(np.intp) - (np.cumsum(lengths) - lengths)
    return owner, base[owner] + np.arange(total)


def _directory(perm: np.ndarray, bounds: np.ndarray | None, n: int) -> array:
    """Offsets of each value of the leading bits in sorted ``perm``, as a
    compact array (indexing an ``array`` from Python is cheaper than numpy)."""
    code = "i" if n < 1 << 31 else "q"
    if bounds is None:
        return array(code, [0, n])
    offsets = np.empty(len(bounds) + 2, dtype=np.int32 if code == "i" else np.int64)
    offsets[0], offsets[-1] = 0, n
    offsets[1:-1] = np.searchsorted(perm, bounds)
    out = array(code)
    out.frombytes(offsets.tobytes())
    return out


def _fresh(n: int, dtype) -> np.ndarray:
    """An uninitialised array for a merge's output, in 4 KiB pages. numpy asks
    for 2 MiB pages for big arrays, and the first write into each of those
    costs milliseconds (zeroing, compaction) inside whichever insert does it."""
    size = n * np.dtype(dtype).itemsize
    if size < PAGED_BYTES or not size:
        return np.empty(n, dtype=dtype)
    buffer = mmap.mmap(-1, size)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        buffer.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buffer, dtype=dtype, count=n)


def _paged(arr: np.ndarray) -> bool:
    """Whether ``arr`` is an array :func:`_fresh` mapped itself."""
    return isinstance(arr.base, memoryview) and isinstance(arr.base.obj, mmap.mmap)


def _new_directory(d: int) -> np.ndarray | None:
    if not d:
        return None
    offsets = np.empty((1 << d) + 1, dtype=np.int64)
    offsets[0] = 0
    return offsets


def _finish_directory(offsets: np.ndarray | None, filled: int, n: int) -> array:
    code = "i" if n < 1 << 31 else "q"
    if offsets is None:
        return array(code, [0, n])
    offsets[filled + 1:] = n
    out = array(code)
    out.frombytes(offsets.astype(np.int32 if code == "i" else np.int64).tobytes())
    return out


class _Merge:
    """Consecutive levels (oldest first) merged into one, a step at a time.

    Pass 0 merges the master arrays (and records where each source row lands),
    then one pass a non-identity table merges the sources' sorted tables. A
    step takes up to ``count`` entries from each source, up to the smallest of
    the last values taken from sources that go on, so everything taken sorts
    before anything left; the directory is filled as sorted values come out.
    The sources are not changed; dead rows are mapped into the new level when
    it is finished, so removes during the merge are kept."""

    def __init__(self, index: SimhashIndex, sources: list[_Level]):
        self.index = index
        self.sources = sources
        self.n = n = sum(len(s.fps) for s in sources)
        self.d = index._directory_bits(n)
        self.shift = F - self.d
        self.passes = [None] + [t for t, ident in enumerate(index._identity) if not ident]
        self.deadline = 0  # the insert count it must be done by
        self.remaining = n * len(self.passes)
        # uncompressed: every table (the identity one is ``fps``) in one block
        self.block = None if index.compress else _fresh(n * len(index._tables), np.uint64)
        ident = index._identity.index(True) if any(index._identity) else None
        if self.block is not None and ident is not None:
            self.fps = self.block[ident * n:(ident + 1) * n]
        else:
            self.fps = _fresh(n, np.uint64)
        self.keys = _fresh(n, np.uint64)
        row_type = np.uint32 if n < 1 << 32 else np.uint64
        self.rows = [_fresh(len(s.fps), row_type) for s in sources]
        self.tables: list[Any] = [None] * len(index._tables)
        self.dirs: list[Any] = [None] * len(index._tables)
        self._start_pass(0)

    def _start_pass(self, i: int) -> None:
        self.pass_index = i
        self.cursors = [0] * len(self.sources)
        self.out = 0
        self.filled = 0
        if i == len(self.passes):
            self.offsets = self.values = None
            return
        self.offsets = _new_directory(self.d)
        t = self.passes[i]
        if t is not None:
            if self.block is not None:
                self.values = self.block[t * self.n:(t + 1) * self.n]
            else:
                dtype = np.uint64 if self.index._direct[t] else self.rows[0].dtype
                self.values = _fresh(self.n, dtype)

    @property
    def done(self) -> bool:
        return self.pass_index == len(self.passes)

    def nbytes(self) -> int:
        arrays = [self.fps, self.keys, *self.rows, *(t for t in self.tables if t is not None)]
        if not self.done and self.passes[self.pass_index] is not None:
            arrays.append(self.values)
        return sum(a.nbytes for a in arrays)

    def step(self, budget: int) -> None:
        """Produce at least ``budget`` entries of output (or finish)."""
        produced = 0
        while produced < budget and not self.done:
            produced += self._chunk(max(budget - produced, 1))

    def _chunk(self, chunk: int) -> int:
        index, t = self.index, self.passes[self.pass_index]
        table = None if t is None else index._tables[t]
        direct = t is None or index._direct[t]
        perms, vals, extra, bound = [], [], [], None
        largest = max(len(src.fps) for src in self.sources)
        for j, src in enumerate(self.sources):
            c = self.cursors[j]
            # a source's share of the value range ``chunk`` entries of the
            # largest one cover (plus a margin): no permuting of entries a
            # chunk cannot take
            count = min(chunk, (chunk * len(src.fps)) // largest * 5 // 4 + 256)
            if t is None:
                v = src.fps[c:c + count]
                p = v
                extra.append(src.keys[c:c + count])
            elif direct:
                v = src.tables[t][c:c + count]
                p = table.permute_many(v)
            else:
                rows = src.tables[t][c:c + count]
                p = table.permute_many(src.fps[rows])
                v = self.rows[j][rows]
            perms.append(p)
            vals.append(v)
            if c + count < len(src.fps) and (bound is None or p[-1] < bound):
                bound = p[-1]
        if bound is not None:  # take what sorts before anything left in any source
            for j, p in enumerate(perms):
                take = int(p.searchsorted(bound, side="right"))
                perms[j], vals[j] = p[:take], vals[j][:take]
                if t is None:
                    extra[j] = extra[j][:take]
        taken = [len(p) for p in perms]
        perm = np.concatenate(perms)
        total, out = len(perm), self.out
        if t is None:
            order = np.argsort(perm, kind="stable")
            perm = perm[order]
            self.fps[out:out + total] = perm
            self.keys[out:out + total] = np.concatenate(extra)[order]
            where = np.empty(total, dtype=self.rows[0].dtype)
            where[order] = np.arange(out, out + total, dtype=where.dtype)
            start = 0
            for j, n in enumerate(taken):
                c = self.cursors[j]
                self.rows[j][c:c + n] = where[start:start + n]
                start += n
        elif direct:
            perm.sort(kind="stable")
            self.values[out:out + total] = table.unpermute_many(perm)
        else:
            order = np.argsort(perm, kind="stable")
            perm = perm[order]
            self.values[out:out + total] = np.concatenate(vals)[order]
        if self.offsets is not None and total and (t is not None or any(index._identity)):
            shift = np.uint64(self.shift)
            first, last = int(perm[0] >> shift), int(perm[-1] >> shift)
            if first > self.filled:
                self.offsets[self.filled + 1:first + 1] = out
            if last > first:
                bounds = np.arange(first + 1, last + 1, dtype=np.uint64) << shift
                self.offsets[first + 1:last + 1] = out + perm.searchsorted(bounds)
            self.filled = max(self.filled, last)
        for j, n in enumerate(taken):
            self.cursors[j] += n
        self.out += total
        self.remaining -= total
        if self.out == self.n:
            self._end_pass(t)
        return total

    def _end_pass(self, t: int | None) -> None:
        directory = _finish_directory(self.offsets, self.filled, self.n)
        if t is None:
            for i, ident in enumerate(self.index._identity):
                if ident:
                    self.tables[i], self.dirs[i] = self.fps, directory
        else:
            self.tables[t], self.dirs[t] = self.values, directory
            self.values = None
        self._start_pass(self.pass_index + 1)

    def result(self) -> _Level:
        level = _Level(self.fps, self.keys, self.tables, self.dirs, self.shift, self.block)
        for src, rows in zip(self.sources, self.rows):
            if src.dead:
                level.dead |= set(rows[np.fromiter(src.dead, np.intp, len(src.dead))].tolist())
        return level


def _run_pairs(a: np.ndarray, p: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (i, j), i < j, of sorted ``a`` sharing the leading p bits and
    within k bits, and their distances: each run compared offset by offset."""
    n = len(a)
    empty = np.empty(0, dtype=np.intp)
    if n < 2:
        return empty, empty, np.empty(0, dtype=np.uint8)
    prefix = a >> _U64(F - p) if p < F else a
    start = np.empty(n, dtype=bool)
    start[0] = True
    np.not_equal(prefix[1:], prefix[:-1], out=start[1:])
    del prefix
    run_starts = np.flatnonzero(start)
    run_ends = np.append(run_starts[1:], n)
    # later elements of the same run after each position
    rem = run_ends[np.cumsum(start) - 1] - np.arange(1, n + 1)
    del start
    most = int(rem.max())
    if most == 0:
        return empty, empty, np.empty(0, dtype=np.uint8)
    # positions by decreasing rem: at offset o the active ones are a prefix
    rem_type = np.uint16 if most < 1 << 16 else np.int64
    order = np.argsort((most - rem).astype(rem_type), kind="stable")
    active_count = np.cumsum(np.bincount(rem, minlength=most + 1)[::-1])[::-1]
    a_order = a[order]
    out_i, out_j, out_d = [], [], []
    for offset in range(1, most + 1):
        count = int(active_count[offset])
        active = order[:count]
        other = active + offset
        dist = np.bitwise_count(a_order[:count] ^ a[other])
        hit = np.flatnonzero(dist <= k)
        if hit.size:
            out_i.append(active[hit])
            out_j.append(other[hit])
            out_d.append(dist[hit])
    if not out_i:
        return empty, empty, np.empty(0, dtype=np.uint8)
    return np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_d).astype(np.uint8)


def component_labels(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The connected components of the graph on nodes ``0..n-1`` with edges
    ``a[i]-b[i]``: each node's label, the smallest node of its component."""
    labels = np.arange(n)
    while a.size:
        low = np.minimum(labels[a], labels[b])
        before = labels.copy()
        np.minimum.at(labels, a, low)
        np.minimum.at(labels, b, low)
        while True:
            jumped = labels[labels]
            if np.array_equal(jumped, labels):
                break
            labels = jumped
        if np.array_equal(before, labels):
            break
    return labels


class SimhashIndex:
    """Fingerprints with integer keys, queried for neighbours within ``k`` bits.

    ``layout``: ``"auto"`` (:meth:`TableLayout.plan` for ``expected_size``),
    a :class:`TableLayout`, or a spec string such as ``"16,16,16,16"``.
    ``compress=True`` stores 4-byte row ids instead of 8-byte fingerprints.
    ``buffer_size``: inserts compared by brute force before they become a level.
    """

    def __init__(self, k: int = 3, layout: Any = "auto", expected_size: int = 1 << 20,
                 compress: bool = False, *, fingerprint_version: int | None = None,
                 buffer_size: int = BUFFER_SIZE):
        layout = TableLayout.resolve(layout, k, expected_size)
        self.k = int(k)
        self.layout: TableLayout = layout
        self.compress = bool(compress)
        self.fingerprint_version = fingerprint_version
        self._tables = layout.tables
        # the block moves that fill each table's leading p bits: enough for the
        # directory lookup of a probe (d <= p)
        self._pmin = min(t.p for t in layout.tables)
        self._lead_all = self._lead_tables()
        self._lead_luts = self._lead_rows(self._lead_all)
        self._prober = None  # the compiled probe (_probe.Prober), made on first use
        self._identity = [t.segments == ((0, F, 0),) for t in layout.tables]
        # direct tables hold fingerprints in permuted order; the others master rows
        self._direct = [ident or not self.compress for ident in self._identity]
        self._levels: list[_Level] = []
        self._merging: _Merge | None = None
        self._inserts = 0  # single inserts so far: the clock merge deadlines use
        self._garbage: list[np.ndarray] = []  # mapped arrays of merged-away levels
        self._released = 0  # bytes of _garbage[0] already handed back
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be positive, got {buffer_size}")
        self._buffer_size = int(buffer_size)
        self._buf_fps = np.empty(buffer_size, dtype=np.uint64)
        self._buf_keys = np.empty(buffer_size, dtype=np.uint64)
        self._nbuf = 0
        self._count = 0
        self._log: RecordLog | None = None
        self._path: str | None = None

    # -- building ---------------------------------------------------------------

    def _build(self, fps: np.ndarray, keys: np.ndarray) -> _Level:
        """A level of ``fps``/``keys`` (new arrays, sorted here)."""
        order = np.argsort(fps)
        fps, keys = fps[order], keys[order]
        del order
        n = len(fps)
        d = self._directory_bits(n)
        shift = F - d
        bounds = np.arange(1, 1 << d, dtype=np.uint64) << _U64(shift) if d else None
        block = None if self.compress else np.empty(n * len(self._tables), dtype=np.uint64)
        tables, dirs = [], []
        for t, table in enumerate(self._tables):
            if self._identity[t]:
                if block is not None:
                    block[t * n:(t + 1) * n] = fps
                    fps = block[t * n:(t + 1) * n]
                perm = values = fps
            elif self.compress:
                perm = table.permute_many(fps)
                values = np.argsort(perm).astype(np.uint32 if n < 1 << 32 else np.uint64)
                perm = perm[values]
            else:
                perm = table.permute_many(fps)
                perm.sort()
                values = block[t * n:(t + 1) * n]
                values[:] = table.unpermute_many(perm)
            tables.append(values)
            dirs.append(_directory(perm, bounds, n))
        return _Level(fps, keys, tables, dirs, shift, block)

    def _directory_bits(self, n: int) -> int:
        """Leading bits a level of ``n`` entries indexes: about 8 entries a bucket."""
        return max(0, min(self._pmin, _LEAD_BITS, (n >> 3).bit_length() - 1))

    def _push(self, level: _Level, *, at_once: bool) -> None:
        """Add a level; start the merge the ratio rule asks for (``at_once``, or
        in steps over the next inserts). While a merge runs, new levels wait
        after its sources; the rule looks at them when it ends."""
        if at_once:
            self._finish_merge()
        self._levels.append(level)
        if self._merging is None:
            self._start_merge(at_once)

    def _start_merge(self, at_once: bool) -> None:
        levels = self._levels
        group, size = 1, levels[-1].alive if levels else 0
        while group < len(levels) and levels[-group - 1].alive <= MERGE_RATIO * size:
            size += levels[-group - 1].alive
            group += 1
        if group > 1:
            self._merging = _Merge(self, levels[-group:])
            self._merging.deadline = self._inserts + MERGE_SPREAD * self._buffer_size - 1
            if at_once:
                self._finish_merge()

    def _merge_step(self) -> None:
        """The share of the pending merge one insert pays: enough to end it
        before its deadline (``MERGE_SPREAD`` buffers' worth of inserts)."""
        merge = self._merging
        left = max(merge.deadline - self._inserts, 1)
        merge.step(max(MERGE_STEP, -(-merge.remaining // left)))
        if merge.done:
            self._install(merge, gradual=True)

    def _finish_merge(self) -> None:
        while self._merging is not None:
            self._merging.step(self._merging.remaining)
            self._install(self._merging)

    def _install(self, merge: _Merge, *, gradual: bool = False) -> None:
        """Replace the merged levels by the merged one; maybe start the next
        merge. ``gradual``: the 4 KiB-page memory of the levels merged away is
        handed back a step an insert (:meth:`_release_step`), as unmapping
        hundreds of MB at once costs tens of ms."""
        first = next(i for i, lv in enumerate(self._levels) if lv is merge.sources[0])
        count = len(merge.sources)
        assert all(a is b for a, b in zip(self._levels[first:first + count], merge.sources))
        self._levels[first:first + count] = [merge.result()]
        self._merging = None
        if gradual:
            for arr in (*(a for lv in merge.sources
                          for a in (lv.fps, lv.keys, *lv.tables, lv.block) if a is not None),
                        *merge.rows):
                if _paged(arr) and not any(arr is g for g in self._garbage):
                    self._garbage.append(arr)
        merge.sources = merge.rows = []
        self._start_merge(at_once=False)

    def _release_step(self) -> None:
        """Hand ``RELEASE_STEP`` bytes of a merged-away array back to the system
        (MADV_DONTNEED on its mapping). An array something else still holds
        (its only references should be this list, the local name and the
        call's argument) is left to the garbage collector instead."""
        arr = self._garbage[0]
        buffer = arr.base.obj
        if sys.getrefcount(arr) > 3 or self._released >= len(buffer):
            self._garbage.pop(0)
            self._released = 0
            return
        size = min(RELEASE_STEP, len(buffer) - self._released)
        buffer.madvise(mmap.MADV_DONTNEED, self._released, size)
        self._released += size

    def _flush(self) -> None:
        n = self._nbuf
        if n:
            self._nbuf = 0
            self._push(self._build(self._buf_fps[:n].copy(), self._buf_keys[:n].copy()),
                       at_once=False)

    def compact(self) -> None:
        """Merge the buffer and every level into one level (drops removed rows)."""
        if not self._nbuf and len(self._levels) <= 1 and not any(lv.dead for lv in self._levels):
            return
        self._merging = None  # its sources are all rebuilt below
        self._garbage, self._released = [], 0
        parts = [lv.alive_arrays() for lv in self._levels]
        parts.append((self._buf_fps[:self._nbuf], self._buf_keys[:self._nbuf]))
        self._nbuf = 0
        self._levels = []
        fps = np.concatenate([p[0] for p in parts])
        if len(fps):
            self._levels.append(self._build(fps, np.concatenate([p[1] for p in parts])))

    def add(self, fp: int, key: int) -> None:
        """Insert one fingerprint under ``key``."""
        fp, key = _check_u64(fp, "fingerprint"), _check_u64(key, "key")
        if self._log is not None:
            self._log.append(fp, key)
        self._insert(fp, key)

    def _insert(self, fp: int, key: int) -> None:
        n = self._nbuf
        self._buf_fps[n] = fp
        self._buf_keys[n] = key
        self._nbuf = n + 1
        self._count += 1
        self._inserts += 1
        if n + 1 == self._buffer_size:
            self._flush()
        else:
            if self._merging is not None:
                self._merge_step()
            if self._garbage:
                self._release_step()

    def add_many(self, fps, keys) -> None:
        """Insert arrays of fingerprints and keys (one sort a table, not one a row)."""
        fps, keys = _as_u64(fps, "fingerprints"), _as_u64(keys, "keys")
        if len(fps) != len(keys):
            raise ValueError(f"{len(fps)} fingerprints but {len(keys)} keys")
        if self._log is not None and len(fps):
            self._log.append_many(fps, keys)
        self._add_arrays(fps, keys)

    def _add_arrays(self, fps: np.ndarray, keys: np.ndarray) -> None:
        if len(fps) < self._buffer_size - self._nbuf:
            for fp, key in zip(fps.tolist(), keys.tolist()):
                self._insert(fp, key)
            return
        self._flush()
        self._count += len(fps)
        self._push(self._build(fps.copy(), keys.copy()), at_once=True)

    def remove(self, key: int) -> bool:
        """Remove every entry stored under ``key``; whether there was one."""
        key = _check_u64(key, "key")
        found = self._remove(key)
        if found and self._log is not None:
            self._log.append(0, key, snapshot.REMOVE)
        return found

    def _remove(self, key: int) -> bool:
        found = 0
        for level in self._levels:
            rows = set(np.flatnonzero(level.keys == _U64(key)).tolist()) - level.dead
            level.dead |= rows
            found += len(rows)
        n = self._nbuf
        if n:
            keep = np.flatnonzero(self._buf_keys[:n] != _U64(key))
            if len(keep) != n:
                found += n - len(keep)
                self._buf_fps[:len(keep)] = self._buf_fps[keep]
                self._buf_keys[:len(keep)] = self._buf_keys[keep]
                self._nbuf = len(keep)
        self._count -= found
        if any(2 * len(lv.dead) > len(lv.fps) for lv in self._levels):
            self._finish_merge()
            self._levels = [lv for lv in self._levels if lv.alive]
            for i, lv in enumerate(self._levels):
                if 2 * len(lv.dead) > len(lv.fps):
                    self._levels[i] = self._build(*lv.alive_arrays())
        return found > 0

    def __len__(self) -> int:
        return self._count

    # -- queries -----------------------------------------------------------------

    def _lead_tables(self) -> np.ndarray:
        """The leading ``_LEAD_BITS`` bits each byte of a fingerprint gives
        each table's permuted value (``uint32`` of shape (8, 256, tables):
        byte, its value, table). A permutation moves bits, so a query's leading
        bits in a table are the OR of its eight bytes' entries."""
        bits = min(self._pmin, _LEAD_BITS)
        values = np.arange(256, dtype=np.uint64)
        lead = np.empty((F // 8, 256, len(self._tables)), dtype=np.uint32)
        for byte in range(F // 8):
            for t, table in enumerate(self._tables):
                field = table.permute_many(values << _U64(8 * byte)) >> _U64(F - bits)
                lead[byte, :, t] = field << _U64(_LEAD_BITS - bits)
        return lead

    @staticmethod
    def _lead_rows(lead: np.ndarray) -> list[tuple[int, list[int]]]:
        """:meth:`_lead_tables` for :meth:`_lead`: for each byte that reaches a
        leading bit, its shift and, for each of its 256 values, one Python
        int holding in 32-bit field ``t`` what it gives table ``t``."""
        return [(8 * byte, [int.from_bytes(row.astype("<u4").tobytes(), "little")
                            for row in lead[byte]])
                for byte in range(len(lead)) if lead[byte].any()]

    def _lead(self, q: int) -> np.ndarray:
        """The leading ``_LEAD_BITS`` bits of ``q`` permuted by every table
        (``uint32``, one a table): a few Python int operations, no loop over tables."""
        packed = 0
        for at, row in self._lead_luts:
            packed |= row[(q >> at) & 0xFF]
        return np.frombuffer(packed.to_bytes(4 * len(self._tables), "little"), dtype="<u4")

    def _near(self, q: int) -> np.ndarray | None:
        """The stored fingerprints within k bits of ``q`` (with repeats), or None."""
        if _probe is not None:  # the same loop in C (scrapy_simhash/index/_probe.pyx)
            if self._prober is None:
                self._prober = _probe.Prober(self._lead_all)
            scans = []
            for level in self._levels:
                if level.scan is None:
                    level.scan = _probe.LevelScan(level.fps, level.tables, level.dirs,
                                                  self._direct, int(level.lead_shift))
                scans.append(level.scan)
            return self._prober.near(q, self.k, scans, self._buf_fps[:self._nbuf])
        lead = self._lead(q)
        parts = []
        for level in self._levels:
            buckets = lead >> level.lead_shift
            gather = level.gather()
            if gather is not None:  # every table's bucket in one gather
                windows, starts = gather
                parts.append(windows[starts[buckets + level.rowstart]].ravel())
                continue
            tables, direct = level.tables, self._direct
            for t, b in enumerate(buckets.tolist()):
                directory = level.dirs[t]
                s, e = directory[b], directory[b + 1]
                if e > s:
                    parts.append(tables[t][s:e] if direct[t] else level.fps[tables[t][s:e]])
        if self._nbuf:
            parts.append(self._buf_fps[:self._nbuf])
        if not parts:
            return None
        x = np.concatenate(parts) if len(parts) > 1 else parts[0]
        hit = (np.bitwise_count(x ^ _U64(q)) <= self.k).nonzero()[0]
        return x[hit] if len(hit) else None

    def query(self, fp: int) -> list[Match]:
        """Every stored entry within k bits of ``fp``, sorted by (distance, key)."""
        q = _check_u64(fp, "fingerprint")
        found = self._near(q)
        return [] if found is None else self._matches(q, set(found.tolist()))

    def query_keys(self, fp: int, limit: int) -> tuple[np.ndarray, np.ndarray, int]:
        """At most ``limit`` keys of entries within k bits of ``fp``, nearest
        first (``uint64`` keys, ``uint8`` distances), and how many live
        entries hold ``fp`` itself. Vectorised: its cost grows with the
        distinct fingerprints examined, not with the entries that share one."""
        q = _check_u64(fp, "fingerprint")
        found = self._near(q)
        if found is None:
            return np.empty(0, np.uint64), np.empty(0, np.uint8), 0
        if len(found) > 1:  # distinct, nearest first (few numpy calls: a probe's cost)
            found.sort()
            edges = (found[1:] != found[:-1]).nonzero()[0]
            if len(edges):
                found = found[np.append(edges, len(found) - 1)]
                dist = np.bitwise_count(found ^ _U64(q))
                order = np.argsort(dist, kind="stable")
                found, dist = found[order], dist[order]
            else:
                found = found[:1]
        if len(found) == 1:
            dist = np.bitwise_count(found ^ _U64(q))
        keys: list[np.ndarray] = []
        dists: list[np.ndarray] = []
        taken = same = 0
        for u, d in zip(found, dist.tolist()):
            if taken >= limit and d:
                break
            before = taken
            for level in self._levels:
                fps = level.fps
                lo = int(fps.searchsorted(u))
                if lo == len(fps) or fps[lo] != u:
                    continue
                hi = int(fps.searchsorted(u, "right"))
                if level.dead:
                    ks = level.keys[[r for r in range(lo, hi) if r not in level.dead]]
                else:
                    ks = level.keys[lo:hi]
                same += len(ks) * (d == 0)
                keys.append(ks[: max(limit - taken, 0)])
                taken += len(keys[-1])
            if self._nbuf:
                hit = (self._buf_fps[: self._nbuf] == u).nonzero()[0]
                same += len(hit) * (d == 0)
                keys.append(self._buf_keys[hit[: max(limit - taken, 0)]])
                taken += len(keys[-1])
            if taken > before:
                dists.append(np.full(taken - before, d, np.uint8))
        if not dists:
            return np.empty(0, np.uint64), np.empty(0, np.uint8), same
        if len(dists) == 1:
            return np.concatenate(keys) if len(keys) > 1 else keys[0], dists[0], same
        return np.concatenate(keys), np.concatenate(dists), same

    def keys_at(self, fp: int, limit: int) -> np.ndarray:
        """At most ``limit`` keys (``uint64``) of the live entries holding
        exactly ``fp``, whatever k: a lookup by an exact key, one binary
        search a level, no table probed."""
        u = _U64(_check_u64(fp, "fingerprint"))
        keys = []
        for level in self._levels:
            fps = level.fps
            lo = int(fps.searchsorted(u))
            if lo < len(fps) and fps[lo] == u:
                hi = int(fps.searchsorted(u, "right"))
                if level.dead:
                    alive = [r for r in range(lo, hi) if r not in level.dead]
                    keys.append(level.keys[alive])
                else:
                    keys.append(level.keys[lo:hi])
        if self._nbuf:
            hit = (self._buf_fps[: self._nbuf] == u).nonzero()[0]
            if len(hit):
                keys.append(self._buf_keys[hit])
        if not keys:
            return np.empty(0, np.uint64)
        return (np.concatenate(keys) if len(keys) > 1 else keys[0])[:limit]

    def _matches(self, q: int, found: set[int]) -> list[Match]:
        """Every live entry of the fingerprints ``found``."""
        out = []
        for fp in found:
            dist = (fp ^ q).bit_count()
            u = _U64(fp)
            for level in self._levels:
                fps = level.fps
                row, n = int(fps.searchsorted(u)), len(fps)
                while row < n and fps[row] == u:  # usually none or one
                    if row not in level.dead:
                        out.append(Match(int(level.keys[row]), fp, dist))
                    row += 1
            if self._nbuf:
                for pos in (self._buf_fps[:self._nbuf] == u).nonzero()[0].tolist():
                    out.append(Match(int(self._buf_keys[pos]), fp, dist))
        out.sort(key=lambda m: (m.distance, m.key))
        return out

    def query_and_add(self, fp: int, key: int, add: str = "if_new") -> list[Match]:
        """The crawler's one call a page: matches found before inserting; insert
        when ``add="always"``, or ``"if_new"`` and nothing matched."""
        if add not in ADD_MODES:
            raise ValueError(f"add must be one of {ADD_MODES}, got {add!r}")
        matches = self.query(fp)
        if add == "always" or (add == "if_new" and not matches):
            self.add(fp, key)
        return matches

    def query_many(self, fps) -> BatchMatches:
        """Vectorised :meth:`query` of an array; see :class:`BatchMatches`."""
        qs = _as_u64(fps, "fingerprints")
        found = [self._query_chunk(qs[i:i + _CHUNK], i) for i in range(0, len(qs), _CHUNK)]
        if not found:
            return self._batch([], [], [], [])
        return BatchMatches(*(np.concatenate(col) for col in zip(*found)))

    @staticmethod
    def _batch(qi, keys, fps, dist) -> BatchMatches:
        def cat(parts, dtype):
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)

        qi, keys, fps, dist = (cat(qi, np.intp), cat(keys, np.uint64), cat(fps, np.uint64),
                               cat(dist, np.uint8))
        order = np.lexsort((keys, dist, qi))
        return BatchMatches(qi[order], keys[order], fps[order], dist[order])

    def _query_chunk(self, qs: np.ndarray, first: int) -> BatchMatches:
        k = self.k
        out_q, out_k, out_f, out_d = [], [], [], []
        for level in self._levels:
            shift = level.shift
            lq, lrows = [], []
            for t, table in enumerate(self._tables):
                directory = np.frombuffer(level.dirs[t], dtype=level.dirs[t].typecode)
                perm = table.permute_many(qs)
                if shift < F:
                    b = (perm >> _U64(shift)).astype(np.intp)
                else:
                    b = np.zeros(len(qs), np.intp)
                starts = directory[b]
                lengths = directory[b + 1] - starts
                ends = np.cumsum(lengths)
                if not len(ends) or not ends[-1]:
                    continue
                # positions of every candidate: sequential repeats, no gathers
                pos = np.arange(ends[-1], dtype=starts.dtype)
                pos += np.repeat(starts - (ends - lengths), lengths)
                if self._direct[t]:
                    x = level.tables[t][pos]
                else:
                    rows = level.tables[t][pos]
                    x = level.fps[rows]
                x ^= np.repeat(qs, lengths)
                hit = np.flatnonzero(np.bitwise_count(x) <= k)
                if not hit.size:
                    continue
                owner = np.searchsorted(ends, hit, side="right")
                hit_owner = owner
                if not self._direct[t]:
                    lq.append(hit_owner)
                    lrows.append(rows[hit].astype(np.intp))
                else:
                    # the fingerprints hit, then every master row holding them
                    fp = x[hit] ^ qs[hit_owner]
                    lo = np.searchsorted(level.fps, fp, side="left")
                    hi = np.searchsorted(level.fps, fp, side="right")
                    o2, rows = _expand(lo, hi - lo)
                    lq.append(hit_owner[o2])
                    lrows.append(rows)
            if not lq:
                continue
            q_all, rows_all = np.concatenate(lq), np.concatenate(lrows)
            pair = np.unique(q_all.astype(np.int64) * len(level.fps) + rows_all)
            q_all, rows_all = pair // len(level.fps), pair % len(level.fps)
            if level.dead:
                dead = np.fromiter(level.dead, dtype=np.intp, count=len(level.dead))
                keep = ~np.isin(rows_all, dead)
                q_all, rows_all = q_all[keep], rows_all[keep]
            f = level.fps[rows_all]
            out_q.append(q_all)
            out_k.append(level.keys[rows_all])
            out_f.append(f)
            out_d.append(np.bitwise_count(f ^ qs[q_all]))
        n = self._nbuf
        if n:
            buf = self._buf_fps[:n]
            step = max(1, (1 << 22) // n)
            for i in range(0, len(qs), step):
                d = np.bitwise_count(qs[i:i + step, None] ^ buf[None, :])
                qi, pos = np.nonzero(d <= k)
                out_q.append(qi + i)
                out_k.append(self._buf_keys[pos])
                out_f.append(buf[pos])
                out_d.append(d[qi, pos])
        result = self._batch(out_q, out_k, out_f, out_d)
        return result._replace(query=result.query + first)

    # -- all pairs and clusters -----------------------------------------------------

    def _fp_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Compact, then distinct-fingerprint pairs, each once, as master row
        ranges: (first row of a, first row of b, distance), fingerprint a < b."""
        self.compact()
        if not self._levels:
            e = np.empty(0, dtype=np.intp)
            return e, e, np.empty(0, dtype=np.uint8)
        level = self._levels[0]
        fa, fb, dd = [], [], []
        canonical = len(self._tables) <= CANONICAL_TABLES
        for t, table in enumerate(self._tables):
            if self._identity[t]:
                perm = level.fps
            elif self._direct[t]:
                perm = table.permute_many(level.tables[t])
            else:
                perm = table.permute_many(level.fps[level.tables[t]])
            distinct = np.empty(len(perm), dtype=bool)
            distinct[:1] = True
            np.not_equal(perm[1:], perm[:-1], out=distinct[1:])
            perm = perm[distinct]
            i, j, d = _run_pairs(perm, table.p, self.k)
            if not i.size:
                continue
            a = table.unpermute_many(perm[i])
            b = table.unpermute_many(perm[j])
            if canonical:
                # keep a pair in the first table where it shares the leading p bits
                first = np.ones(len(a), dtype=bool)
                for earlier in self._tables[:t]:
                    shift = _U64(F - earlier.p)
                    pa, pb = earlier.permute_many(a), earlier.permute_many(b)
                    first &= (pa >> shift) != (pb >> shift)
                a, b, d = a[first], b[first], d[first]
            fa.append(np.minimum(a, b))
            fb.append(np.maximum(a, b))
            dd.append(d)
        if not fa:
            e = np.empty(0, dtype=np.intp)
            return e, e, np.empty(0, dtype=np.uint8)
        a, b, d = np.concatenate(fa), np.concatenate(fb), np.concatenate(dd)
        if not canonical:  # many tables: sort the pairs and keep one of each
            order = np.lexsort((b, a))
            a, b, d = a[order], b[order], d[order]
            first = np.ones(len(a), dtype=bool)
            first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
            a, b, d = a[first], b[first], d[first]
        ra = np.searchsorted(level.fps, a, side="left")
        rb = np.searchsorted(level.fps, b, side="left")
        return ra, rb, d

    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Start row and size of each run of equal fingerprints in the compacted master."""
        fps = self._levels[0].fps
        start = np.ones(len(fps), dtype=bool)
        start[1:] = fps[1:] != fps[:-1]
        starts = np.flatnonzero(start)
        return starts, np.diff(np.append(starts, len(fps)))

    def pairs(self, *, with_distances: bool = False):
        """Every pair of entries within k bits (identical fingerprints too), once:
        an ``(n, 2)`` uint64 array of keys, smaller key first, sorted; with
        ``with_distances=True`` also the parallel uint8 distances. Compacts the
        index into one level first; each table's runs of equal leading p bits
        are compared offset by offset; a pair counts in the first table where it
        shares the leading bits."""
        ra, rb, d = self._fp_pairs()
        if not self._levels:
            empty = np.empty((0, 2), dtype=np.uint64)
            return (empty, np.empty(0, dtype=np.uint8)) if with_distances else empty
        level = self._levels[0]
        starts, sizes = self._groups()
        size_of = np.zeros(len(level.fps) + 1, dtype=np.intp)
        size_of[starts] = sizes
        ca, cb = size_of[ra], size_of[rb]
        owner, within = _expand(np.zeros(len(ra), np.intp), ca * cb)
        ia = ra[owner] + within // cb[owner]
        ib = rb[owner] + within % cb[owner]
        dist = d[owner]
        # identical fingerprints: every pair inside a group of equal rows
        si, sj, _ = _run_pairs(level.fps, F, 0)
        ia = np.concatenate([ia, si])
        ib = np.concatenate([ib, sj])
        dist = np.concatenate([dist, np.zeros(len(si), np.uint8)])
        ka, kb = level.keys[ia], level.keys[ib]
        lo, hi = np.minimum(ka, kb), np.maximum(ka, kb)
        order = np.lexsort((hi, lo))
        lo, hi, dist = lo[order], hi[order], dist[order]
        keep = lo != hi
        keep[1:] &= (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        keys = np.stack([lo[keep], hi[keep]], axis=1)
        return (keys, dist[keep]) if with_distances else keys

    def clusters(self) -> list[np.ndarray]:
        """Connected components of the match graph with two or more entries:
        sorted uint64 key arrays, ordered by their smallest key."""
        ra, rb, _ = self._fp_pairs()
        if not self._levels:
            return []
        level = self._levels[0]
        starts, sizes = self._groups()
        group_of = np.cumsum(np.isin(np.arange(len(level.fps)), starts)) - 1
        labels = component_labels(len(starts), group_of[ra], group_of[rb])
        row_label = labels[group_of]
        order = np.lexsort((level.keys, row_label))
        row_label, keys = row_label[order], level.keys[order]
        bounds = np.flatnonzero(np.diff(row_label)) + 1
        out = [c for c in np.split(keys, bounds) if len(c) > 1]
        out.sort(key=lambda c: int(c[0]))
        return out

    # -- statistics ---------------------------------------------------------------

    def memory_usage(self) -> dict[str, Any]:
        """Bytes held: tables, directories, master (fingerprints + keys), buffer."""
        tables = sum(t.nbytes for lv in self._levels for t in lv.tables if t is not lv.fps)
        dirs = sum(d.itemsize * len(d) for lv in self._levels for d in lv.dirs)
        dirs += sum(lv._gather[1].nbytes for lv in self._levels if lv._gather)
        master = sum(lv.fps.nbytes + lv.keys.nbytes for lv in self._levels)
        buffer = self._buf_fps.nbytes + self._buf_keys.nbytes
        merge = self._merging.nbytes() if self._merging is not None else 0
        merge += sum(a.nbytes for a in self._garbage) - self._released
        entries = sum(len(lv.fps) for lv in self._levels)
        total = tables + dirs + master + buffer + merge
        return {
            "entries": self._count,
            "tables": len(self._tables),
            "levels": len(self._levels),
            "table_bytes": tables,
            "directory_bytes": dirs,
            "master_bytes": master,
            "buffer_bytes": buffer,
            "merge_bytes": merge,
            "total_bytes": total,
            # the identity table, if any, is the master's fingerprint array
            "bytes_per_table_entry": (tables + dirs) / max(
                entries * (len(self._tables) - sum(self._identity)), 1),
            "bytes_per_fingerprint": total / max(self._count, 1),
        }

    def __repr__(self) -> str:
        return (f"SimhashIndex(k={self.k}, layout={self.layout.spec!r}, "
                f"compress={self.compress}, entries={self._count})")

    # -- persistence (snapshot.py) ----------------------------------------------------

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """Every live entry: ``uint64`` arrays of fingerprints and keys."""
        parts = [lv.alive_arrays() for lv in self._levels]
        parts.append((self._buf_fps[:self._nbuf], self._buf_keys[:self._nbuf]))
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    def save(self, path=None) -> None:
        """Write a snapshot atomically (temporary file, fsync, rename); with an
        open log (:meth:`open`), start a fresh log that follows it."""
        if path is None and self._path is None:
            raise ValueError("save() needs a path for an index not made by open()")
        snapshot.save(self, path if path is not None else self._path)

    @classmethod
    def load(cls, path, *, layout: Any = None) -> SimhashIndex:
        """Read a snapshot and replay the log that follows it (``path + ".log"``)."""
        return snapshot.load(cls, path, layout=layout)

    @classmethod
    def open(cls, path, k: int = 3, layout: Any = "auto", expected_size: int = 1 << 20,
             compress: bool = False, *, reset: bool = False,
             fingerprint_version: int | None = None) -> SimhashIndex:
        """An index persisted at ``path``: loaded (snapshot + log) when present,
        else new; every later add/remove is appended to ``path + ".log"``, which
        is locked against a second writer. A snapshot's own layout and
        compression win over the arguments; a different ``k`` is an error.
        ``reset=True`` starts empty (deleting both files)."""
        return snapshot.open_index(cls, path, k, layout, expected_size, compress,
                                   reset=reset, fingerprint_version=fingerprint_version)

    def close(self) -> None:
        """Close the log (the snapshot is only rewritten by :meth:`save`)."""
        if self._log is not None:
            self._log.close()
            self._log = None
