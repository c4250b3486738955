"""Permuted-table layouts for k-bit Hamming search over 64-bit fingerprints.

Manku, Jain & Das Sarma (WWW 2007), §3.1: split the 64 bits into ``b`` blocks.
Two fingerprints within ``k`` bits differ in at most ``k`` blocks, so at least
``b - k`` blocks are identical. One table per choice of ``b - k`` leading blocks
(the fingerprint's bits permuted so that those blocks come first) guarantees
that every neighbour shares the leading ``p`` bits with the query in at least
one table. A two-level layout splits the bits left after the leading outer
blocks again (the paper's 16 tables: 4 blocks of 16 bits, then 4 of 12).

A permutation is a few block moves, ``((x >> src) & mask) << dst``, applied to
Python ints or vectorised on ``uint64`` arrays. Nothing here imports Scrapy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

#: Bits in a fingerprint.
F = 64
_ALL = (1 << F) - 1

#: Tables a layout may have at most: each costs 8 bytes a stored fingerprint and a
#: probe per query, and building them costs time and memory before the first page
#: (64 one-bit blocks at k=6 would be C(64, 6) = 74,974,368 tables). The planner's
#: layouts stay far below (286 at k=10).
MAX_TABLES = 1000

# Planner cost model, in microseconds, measured on this index (numpy): the fixed
# cost of probing one table, and the cost of comparing one candidate.
TABLE_COST = 1.0
CANDIDATE_COST = 0.02


@dataclass(frozen=True)
class Table:
    """One permutation: ``segments`` of ``(src_shift, width, dst_shift)`` and
    ``p``, the number of leading permuted bits a neighbour must share."""

    segments: tuple[tuple[int, int, int], ...]
    p: int

    @classmethod
    def from_bits(cls, order: list[int], p: int) -> Table:
        """Build from the source bit positions (0 = least significant) listed
        from the permuted word's most significant bit down."""
        segments: list[tuple[int, int, int]] = []
        i = 0
        while i < F:
            j = i
            while j + 1 < F and order[j + 1] == order[j] - 1:
                j += 1
            width = j - i + 1
            segments.append((order[j], width, F - 1 - j))
            i = j + 1
        return cls(tuple(segments), p)

    def permute(self, x: int) -> int:
        out = 0
        for src, width, dst in self.segments:
            out |= ((x >> src) & ((1 << width) - 1)) << dst
        return out

    def permute_many(self, x: np.ndarray) -> np.ndarray:
        return _move(np.asarray(x, dtype=np.uint64), self.segments, inverse=False)

    def unpermute_many(self, y: np.ndarray) -> np.ndarray:
        return _move(np.asarray(y, dtype=np.uint64), self.segments, inverse=True)


def _move(x: np.ndarray, segments, *, inverse: bool) -> np.ndarray:
    if len(segments) == 1:  # the identity
        return x.copy()
    out = np.zeros_like(x)
    tmp = np.empty_like(x)
    for src, width, dst in segments:
        a, b = (dst, src) if inverse else (src, dst)
        np.right_shift(x, np.uint64(a), out=tmp)
        if width < F:
            np.bitwise_and(tmp, np.uint64((1 << width) - 1), out=tmp)
        np.left_shift(tmp, np.uint64(b), out=tmp)
        np.bitwise_or(out, tmp, out=out)
    return out


def _even(total: int, parts: int) -> tuple[int, ...]:
    width, extra = divmod(total, parts)
    return tuple(width + (i < extra) for i in range(parts))


class TableLayout:
    """Block widths (most significant first), optionally a second level, and
    the tables they imply for a maximum distance ``k``."""

    def __init__(self, k: int, blocks, inner=None):
        self.k = int(k)
        self.blocks = tuple(int(w) for w in blocks)
        self.inner = None if inner is None else tuple(int(w) for w in inner)
        if not 0 <= self.k < F:
            raise ValueError(f"k must be between 0 and {F - 1}, got {k}")
        if sum(self.blocks) != F or min(self.blocks, default=0) < 1:
            raise ValueError(f"block widths must be positive and add up to {F}, got {blocks}")
        if len(self.blocks) <= self.k:
            raise ValueError(
                f"{len(self.blocks)} blocks cannot guarantee k={self.k}: need more than k blocks"
            )
        if self.inner is not None:
            if len(self.inner) <= self.k or min(self.inner) < 1:
                raise ValueError(
                    f"inner blocks {inner}: need more than k={self.k} positive widths")
            if self.k == 0:
                raise ValueError("a two-level layout needs k >= 1")
        count = self.table_count(len(self.blocks), self.k, self.inner)
        if count > MAX_TABLES:
            raise ValueError(
                f"{len(self.blocks)} blocks"
                + ("" if self.inner is None else f" and {len(self.inner)} inner blocks")
                + f" with k={self.k} make {count:,} tables, more than {MAX_TABLES:,} "
                f"(each costs 8 bytes a fingerprint and a probe a page: "
                f"{8 * count / 2**30 * 1e6:,.1f} GiB a million pages); use fewer, wider blocks"
            )
        self.tables = self._tables()

    @staticmethod
    def table_count(blocks: int, k: int, inner: tuple[int, ...] | None = None) -> int:
        """Tables of a layout of ``blocks`` blocks (and ``inner`` second-level
        blocks), counted without building them."""
        count = math.comb(blocks, k)
        return count if inner is None else count * math.comb(len(inner), k)

    def _tables(self) -> tuple[Table, ...]:
        starts, top = [], F
        for width in self.blocks:
            top -= width
            starts.append(top)
        bits = [list(range(s + w - 1, s - 1, -1)) for s, w in zip(starts, self.blocks)]
        lead = len(self.blocks) - self.k
        tables = []
        for chosen in combinations(range(len(self.blocks)), lead):
            head = [b for i in chosen for b in bits[i]]
            rest = [b for i in range(len(self.blocks)) if i not in chosen for b in bits[i]]
            if self.inner is None:
                tables.append(Table.from_bits(head + rest, len(head)))
                continue
            if sum(self.inner) != len(rest):
                raise ValueError(
                    f"inner block widths {self.inner} must add up to the {len(rest)} bits "
                    "left after the leading outer blocks"
                )
            inner_bits, at = [], 0
            for width in self.inner:
                inner_bits.append(rest[at:at + width])
                at += width
            for sub in combinations(range(len(self.inner)), len(self.inner) - self.k):
                head2 = [b for i in sub for b in inner_bits[i]]
                rest2 = [b for i in range(len(self.inner)) if i not in sub for b in inner_bits[i]]
                tables.append(Table.from_bits(head + head2 + rest2, len(head) + len(head2)))
        return tuple(tables)

    # -- construction ---------------------------------------------------------

    @classmethod
    def parse(cls, spec: str, k: int) -> TableLayout:
        """``"16,16,16,16"`` (block widths) or ``"16,16,16,16/12,12,12,12"``
        (two levels); a bare number of blocks such as ``"5"`` splits evenly."""
        if not isinstance(spec, str):
            raise ValueError(f"layout spec must be a string, got {spec!r}")
        levels = []
        for part in spec.replace(" ", "").split("/"):
            try:
                widths = tuple(int(w) for w in part.split(","))
            except ValueError:
                raise ValueError(
                    f"bad layout spec {spec!r}: expected comma-separated widths") from None
            levels.append(widths)
        if len(levels) > 2:
            raise ValueError(f"bad layout spec {spec!r}: at most two levels")
        if len(levels[0]) == 1 and levels[0][0] < F:
            if levels[0][0] < 1:
                raise ValueError(f"bad layout spec {spec!r}: need at least one block")
            levels[0] = _even(F, levels[0][0])
        inner = levels[1] if len(levels) == 2 else None
        if inner is not None and len(inner) == 1:
            rest = F - sum(sorted(levels[0], reverse=True)[: len(levels[0]) - k])
            inner = _even(rest, inner[0])
        return cls(k, levels[0], inner)

    @classmethod
    def even(cls, k: int, blocks: int, inner: int | None = None) -> TableLayout:
        outer = _even(F, blocks)
        if inner is None:
            return cls(k, outer)
        return cls(k, outer, _even(F - sum(outer[: blocks - k]), inner))

    @classmethod
    def options(cls, k: int, max_tables: int | None = None) -> list[TableLayout]:
        """Even single- and two-level layouts for ``k`` (at most ``max_tables`` tables)."""
        found: list[TableLayout] = []
        limit = max_tables if max_tables is not None else 1000
        for b in range(k + 1, min(F, k + 9) + 1):
            if math.comb(b, k) <= limit:
                found.append(cls.even(k, b))
            if k == 0:
                break
            for b2 in range(k + 1, k + 5):
                if math.comb(b, k) * math.comb(b2, k) > limit:
                    break
                if F % b:  # uneven outer blocks leave different remainders
                    continue
                try:
                    found.append(cls.even(k, b, b2))
                except ValueError:
                    continue
        return found

    @classmethod
    def plan(cls, k: int, expected_size: int, max_tables: int | None = None) -> TableLayout:
        """The layout of least probe cost for ``expected_size`` fingerprints:
        tables × ``TABLE_COST`` + expected candidates × ``CANDIDATE_COST``
        (§3.1.2 weighs memory against candidates; in numpy a table's fixed
        cost dominates at small sizes, so fewer tables win there)."""
        if not 0 <= int(k) < F:
            raise ValueError(f"k must be between 0 and {F - 1}, got {k}")
        if max_tables is not None and max_tables < 1:
            raise ValueError(f"max_tables must be positive, got {max_tables}")
        options = cls.options(int(k), max_tables)
        if not options:
            raise ValueError(f"no layout for k={k} with at most {max_tables} tables")
        n = max(int(expected_size), 1)
        return min(options, key=lambda lay: (lay.cost(n), len(lay.tables)))

    @classmethod
    def resolve(cls, layout: TableLayout | str | None, k: int,
                expected_size: int) -> TableLayout:
        """The one place a layout setting becomes a layout: ``"auto"`` (or None)
        plans for ``expected_size``, a spec string is parsed, a layout is
        checked against ``k``. Raises ``ValueError`` naming what is wrong."""
        if isinstance(layout, TableLayout):
            if layout.k != k:
                raise ValueError(f"layout {layout.spec!r} was made for k={layout.k}, not k={k}")
            return layout
        if cls.is_auto(layout):
            return cls.plan(k, expected_size)
        if isinstance(layout, str):
            return cls.parse(layout, k)
        raise ValueError(
            f"layout must be 'auto', a spec string or a TableLayout, got {layout!r}")

    @staticmethod
    def is_auto(layout: object) -> bool:
        """Whether a layout setting asks the planner (``"auto"`` or None)."""
        return layout is None or (isinstance(layout, str) and layout.strip().lower() == "auto")

    # -- figures ----------------------------------------------------------------

    @property
    def spec(self) -> str:
        text = ",".join(map(str, self.blocks))
        return text if self.inner is None else text + "/" + ",".join(map(str, self.inner))

    @property
    def p_values(self) -> list[int]:
        return [t.p for t in self.tables]

    def candidates(self, n: int) -> list[float]:
        """Expected candidates per table and probe among ``n`` random fingerprints."""
        return [n / 2.0 ** t.p for t in self.tables]

    def cost(self, n: int) -> float:
        return len(self.tables) * TABLE_COST + sum(self.candidates(n)) * CANDIDATE_COST

    def memory_bytes(self, n: int) -> int:
        """Bytes of uncompressed tables plus the (fingerprint, key) master arrays."""
        return (8 * len(self.tables) + 16) * n

    def describe(self, n: int | None = None) -> str:
        """Tables, p per table, expected candidates per probe and memory."""
        lines = [f"layout {self.spec}, k={self.k}: {len(self.tables)} tables"]
        by_p: dict[int, int] = {}
        for t in self.tables:
            by_p[t.p] = by_p.get(t.p, 0) + 1
        for p, count in sorted(by_p.items()):
            line = f"  {count} table(s) with p={p}"
            if n:
                line += f": ~{n / 2.0 ** p:,.4g} candidates per table per probe"
            lines.append(line)
        if n:
            lines.append(
                f"  {n:,} fingerprints: ~{sum(self.candidates(n)):,.4g} candidates per probe, "
                f"{self.memory_bytes(n) / 2**20:,.1f} MiB "
                f"({8 * len(self.tables) + 16} B a fingerprint)"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "blocks": list(self.blocks),
                "inner": None if self.inner is None else list(self.inner)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableLayout:
        try:
            return cls(data["k"], data["blocks"], data.get("inner"))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"bad layout {data!r}: {exc}") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TableLayout) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.k, self.blocks, self.inner))

    def __repr__(self) -> str:
        return f"TableLayout(k={self.k}, spec={self.spec!r}, tables={len(self.tables)})"
