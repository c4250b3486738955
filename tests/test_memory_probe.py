"""A probe's cost must not grow with the pages that share its fingerprint (issue 23).

Thousands of stored pages with one fingerprint and sketches that confirm
nothing (pages that differ only in numbers): a probe confirms at most
``FP_CAP`` of them, plus its other neighbours, never all; a copy stored
beyond the cap is still found (by its exact key), a near copy within it by its
sketch, and a distinct page is never dropped. Counted, not timed: the
candidates each probe confirmed (``MemoryBackend.last_candidates``).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.backends.memory import FP_CAP, MAX_CANDIDATES, MemoryBackend
from scrapy_simhash.fingerprinting.signature import (
    CONFIRM,
    GUARD,
    NEAR,
    OWN_BINS,
    SKETCH_BINS,
    Signature,
    confirms,
    confirms_many,
    exact_keys,
    sketch_keys,
)

import scrapy_simhash.fingerprinting.signature as SG  # noqa: E402

SHARED = 0x0123456789ABCDEF
PAGES = 3000
#: The rule's implementations for one sketch against others: numpy, and the
#: compiled twin (fingerprinting/_confirm.pyx) where the package was built with it.
COMPILED_RULE = SG._confirm
RULES = ("numpy", "compiled") if COMPILED_RULE is not None else ("numpy",)


@contextlib.contextmanager
def rule(way: str):
    """``confirms_many`` with only numpy (``"numpy"``) or the compiled twin too."""
    SG._confirm = COMPILED_RULE if way == "compiled" else None
    try:
        yield
    finally:
        SG._confirm = COMPILED_RULE


def test_the_compiled_rule_is_built():
    """CI builds the compiled modules (``make test`` imports them first);
    without it every probe would pay ~25 numpy calls, silently."""
    if not os.environ.get("CI"):
        pytest.skip("only where the package is known to be built (CI=true)")
    assert COMPILED_RULE is not None


def distinct_sketches(rng: np.random.Generator, n: int) -> np.ndarray:
    """Sketches that take the sketch path (template known, 200 own words,
    mostly prose) and confirm nothing among themselves."""
    out = rng.integers(1, 256, (n, SKETCH_BINS), dtype=np.uint8)
    out[:, 60], out[:, 61] = 300 % 256, 300 // 256  # 300 visible words
    out[:, 62], out[:, 63] = 200, 0xC0  # 200 own words | sketchable | known
    return out


@pytest.fixture(scope="module")
def crowded():
    """A backend holding PAGES pages of one fingerprint, plus 2,000 others."""
    rng = np.random.default_rng(7)
    backend = MemoryBackend(k=6, expected_size=8000)
    others = distinct_sketches(rng, 2000)
    for i, fp in enumerate(rng.integers(0, 2**63, 2000, dtype=np.uint64).tolist()):
        assert backend.query_and_add(Signature(fp, others[i].tobytes()), f"https://o/{i}") is None
    shared = distinct_sketches(rng, PAGES)
    for i in range(PAGES):
        found = backend.query_and_add(Signature(SHARED, shared[i].tobytes()), f"https://s/{i}")
        assert found is None
        assert backend.last_candidates <= FP_CAP
    return backend, shared, rng


def test_a_probe_confirms_at_most_the_cap_of_a_crowded_fingerprint(crowded):
    backend, shared, rng = crowded
    assert len(backend) == 2000 + PAGES
    for sketch in distinct_sketches(rng, 20):
        for fp in (SHARED, SHARED ^ 1 << 5, SHARED ^ 0b111):  # itself, 1 and 3 bits away
            assert backend.query_and_add(Signature(fp, sketch.tobytes()), "https://new/",
                                         add="never") is None
            assert backend.last_candidates == FP_CAP  # not PAGES: bounded
        # the unbounded way agrees: no stored page confirms a distinct one
        assert not confirms_many(shared, sketch).any()


def test_copies_are_found_beyond_and_within_the_cap(crowded):
    backend, shared, _ = crowded
    # an exact copy of a page stored beyond the cap (not in the tables)
    late = PAGES - 7
    found = backend.query_and_add(Signature(SHARED ^ 1, shared[late].tobytes()), "https://c/",
                                  add="never")
    assert found is not None and found.url == f"https://s/{late}" and found.distance == 1
    # a near copy of a page in the tables: 5 own bins and both exact hashes differ
    near = shared[10].copy()
    near[:5] ^= 0x5A
    near[48:60] ^= 0xFF
    assert confirms(near.tobytes(), shared[10].tobytes())
    assert not (exact_keys(near) == exact_keys(shared[10])).any()
    found = backend.query_and_add(Signature(SHARED, near.tobytes()), "https://n/", add="never")
    assert found is not None and found.url == "https://s/10"
    assert backend.last_candidates == FP_CAP


def test_kept_candidates_see_a_page_that_enters_the_tables_later():
    """A crowded fingerprint's candidates are kept between probes; a page
    within k bits that enters the tables afterwards is found by the next probe."""
    rng = np.random.default_rng(3)
    backend = MemoryBackend(k=6, expected_size=1000)
    shared = distinct_sketches(rng, FP_CAP + 40)
    for i, sketch in enumerate(shared):
        backend.query_and_add(Signature(SHARED, sketch.tobytes()), f"https://s/{i}")
    fresh = distinct_sketches(rng, 3)
    assert backend.query_and_add(Signature(SHARED, fresh[0].tobytes()), "u", add="never") is None
    assert backend.last_candidates == FP_CAP
    # a new page 2 bits away enters the tables...
    page = Signature(SHARED ^ 0b11, fresh[1].tobytes())
    assert backend.query_and_add(page, "https://g/") is None
    # ...and a near copy of it, probed with the crowded fingerprint, finds it
    near = fresh[1].copy()
    near[:3] ^= 0x21
    near[48:60] ^= 0xFF
    found = backend.query_and_add(Signature(SHARED, near.tobytes()), "u", add="never")
    assert found is not None and found.url == "https://g/" and found.distance == 2
    assert backend.last_candidates == FP_CAP + 1
    # a page stored beyond the cap after the probe is found as an exact copy
    backend.query_and_add(Signature(SHARED, fresh[2].tobytes()), "https://late/")
    found = backend.query_and_add(Signature(SHARED, fresh[2].tobytes()), "u", add="never")
    assert found is not None and found.url == "https://late/"


def test_a_probe_confirms_at_most_max_candidates():
    """Many distinct neighbours (each fingerprint once): the nearest
    MAX_CANDIDATES are confirmed, and a copy of a farther one is still found
    by its exact key."""
    rng = np.random.default_rng(5)
    backend = MemoryBackend(k=6, expected_size=4000)
    sketches = distinct_sketches(rng, 600)
    bits = rng.permuted(np.tile(np.arange(64), (600, 1)), axis=1)[:, :6]
    fps = [SHARED ^ int(sum(1 << int(b) for b in row[: 1 + i % 6])) for i, row in enumerate(bits)]
    for i, (fp, sketch) in enumerate(zip(fps, sketches)):
        backend.query_and_add(Signature(fp, sketch.tobytes()), f"https://m/{i}", add="always")
    probe = distinct_sketches(rng, 1)[0]
    assert backend.query_and_add(Signature(SHARED, probe.tobytes()), "u", add="never") is None
    assert backend.last_candidates == MAX_CANDIDATES
    far = int(np.argmax([(fp ^ SHARED).bit_count() for fp in fps]))
    found = backend.query_and_add(Signature(SHARED, sketches[far].tobytes()), "u", add="never")
    assert found is not None and found.url == f"https://m/{far}"


# -- the vectorised rule, against the docstring's rule written out for one pair ---------


def _reference(a: bytes, b: bytes) -> bool:
    """signature.py's three paths, read straight from its LAYOUT, one pair."""
    def fields(s: bytes):
        own_hash = int.from_bytes(s[48:54], "little")
        page_hash = int.from_bytes(s[54:60], "little")
        page_field = int.from_bytes(s[60:62], "little")
        meta = int.from_bytes(s[62:64], "little")
        return own_hash, page_hash, page_field, meta

    def agree(x: bytes, y: bytes, share: int) -> bool:
        matches = sum(1 for p, q in zip(x, y) if p == q and p)
        filled = sum(1 for p, q in zip(x, y) if p or q)
        return filled > 0 and matches * 64 >= share * filled

    own_a, page_a, field_a, meta_a = fields(a)
    own_b, page_b, field_b, meta_b = fields(b)
    words = 0x3FFF
    if meta_a & words and (own_a, meta_a & words) == (own_b, meta_b & words):
        return True
    if field_a & words and (page_a, field_a & words) == (page_b, field_b & words):
        return True
    if not (meta_a & 0xC000 == 0xC000 and meta_b & 0xC000 == 0xC000):
        return False
    if field_a & field_b & 0x8000 and not agree(a[OWN_BINS:48], b[OWN_BINS:48], GUARD):
        return False  # own texts mostly repeated blocks, and the rare ones differ
    if agree(a[:OWN_BINS], b[:OWN_BINS], CONFIRM):
        return True
    trusted = field_a & 0x4000 and field_b & 0x4000
    own, main = (a[:OWN_BINS], b[:OWN_BINS]), (a[64:], b[64:])
    return bool(trusted and agree(*own, GUARD) and agree(*main, CONFIRM) and agree(*main, NEAR))


_FLAGS = st.sampled_from([0xC0, 0xC0, 0xC0, 0, 0x40, 0x80])


@st.composite
def sketch_rows(draw):
    """A sketch and a few others near it: some of their own and main bins
    changed (any share, each path's threshold crossed or not) or emptied,
    the tail's hashes, word counts and flags shared or not."""
    base = bytearray(draw(st.binary(min_size=SKETCH_BINS, max_size=SKETCH_BINS)))
    base[61] = base[61] & 0x3F | draw(_FLAGS)  # trusted, mostly repeated
    base[63] = base[63] & 0x3F | draw(_FLAGS)
    for first, end in ((0, OWN_BINS), (OWN_BINS, 48), (64, SKETCH_BINS)):
        if draw(st.integers(0, 5)) == 0:
            base[first:end] = bytes(end - first)
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        row = bytearray(base)
        for first, end in ((0, OWN_BINS), (OWN_BINS, 48), (64, SKETCH_BINS)):
            changed = draw(st.one_of(st.just(0), st.integers(0, 8), st.integers(0, end - first)))
            how = draw(st.sampled_from(["empty", "other", "next"]))
            for i in range(first, first + changed):
                row[i] = {"empty": 0, "other": row[i] ^ 0x80, "next": (row[i] + 1) % 256}[how]
        for i in draw(st.lists(st.integers(48, 63), max_size=3)):
            row[i] = draw(st.integers(0, 255))
        if draw(st.integers(0, 3)) == 0:
            row[61] ^= draw(st.sampled_from([0x40, 0x80]))
        rows.append(bytes(row))
    return bytes(base), rows


@settings(max_examples=400, deadline=None)
@given(sketch_rows())
def test_confirms_many_is_the_rule_one_row_against_many(drawn):
    """Both implementations, both orders, one against many and pair by pair."""
    probe, rows = drawn
    many = np.frombuffer(b"".join(rows), np.uint8).reshape(-1, SKETCH_BINS)
    one = np.frombuffer(probe, np.uint8)
    expected = [_reference(row, probe) for row in rows]
    for way in RULES:
        with rule(way):
            assert confirms_many(many, one).tolist() == expected
            assert confirms_many(one, many).tolist() == [_reference(probe, row) for row in rows]
            for row, verdict in zip(many, expected):
                assert confirms_many(row, one).tolist() == [verdict]
    pairs = np.broadcast_to(one, many.shape)
    assert confirms_many(many, pairs).tolist() == expected
    for row in rows:
        assert tuple(int(k) for k in exact_keys(np.frombuffer(row, np.uint8))[0]) == \
            sketch_keys(row)


def _pair(own_same: int, main_same: int, trusted: bool, rare_same: int | None = None,
          one_only: bool = False) -> tuple[bytes, bytes]:
    """Two sketchable sketches (templates known, different words) whose own
    bins agree on ``own_same`` of 40 and main bins on ``main_same`` of 32;
    with ``rare_same``, both are mostly repeated blocks (``one_only``: the
    first) and their rare bins agree on that many of 8."""
    a = np.full(SKETCH_BINS, 7, np.uint8)
    b = a.copy()
    b[own_same:OWN_BINS] = 9
    b[64 + main_same:] = 9
    if rare_same is not None:
        b[OWN_BINS + rare_same:48] = 9
    for row, words in ((a, 200), (b, 201)):
        row[48:60] = np.arange(12) + words  # different hashes
        row[60], row[61] = 44, 1 | 0x40 * trusted
        row[62], row[63] = words % 256, 0xC0
    if rare_same is not None:
        a[61] |= 0x80
        b[61] |= 0x80 * (not one_only)
    return a.tobytes(), b.tobytes()


@pytest.mark.parametrize(
    ("own_same", "main_same", "trusted", "rare_same", "expected"),
    [
        (30, 0, False, None, True),  # 30 / 40 = CONFIRM / 64: the own texts agree
        (29, 32, False, None, False),  # just below, and the main texts are not trusted
        (29, 32, True, None, True),  # path 3: every main bin agrees, trusted, own texts guard
        (29, 31, True, None, False),  # one main bin apart: not the same main text
        (27, 24, True, None, False),  # main texts as alike as NonZeroU16 / NonZeroUsize's
        (26, 28, True, None, False),  # 28 / 32 (the old NEAR of 56 / 64) no longer confirms
        (13, 32, True, None, True),  # 13 / 40 >= GUARD / 64
        (12, 32, True, None, False),  # own texts below the guard
        (40, 0, False, 3, True),  # mostly repeated: 3 / 8 rare bins >= GUARD / 64
        (40, 0, False, 2, False),  # the rare blocks differ: however alike the rest
        (29, 32, True, 2, False),  # path 3 too
        (29, 32, True, 8, True),
    ],
)
def test_confirms_many_thresholds(own_same, main_same, trusted, rare_same, expected):
    a, b = _pair(own_same, main_same, trusted, rare_same)
    _check(a, b, expected)
    if rare_same is not None:  # one page mostly its own blocks: the own bins decide
        _check(*_pair(own_same, main_same, trusted, rare_same, one_only=True),
               _reference(*_pair(own_same, main_same, trusted)))


def _check(a: bytes, b: bytes, expected: bool) -> None:
    assert _reference(a, b) is expected
    x, y = np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8)
    for way in RULES:
        with rule(way):
            assert confirms_many(x, y).tolist() == [expected]
            assert confirms_many(np.stack([y, x, y]), x).tolist() == [expected, True, expected]
            assert confirms(a, b) is expected


def test_keys_at_is_the_exact_part_of_a_query():
    """SimhashIndex.keys_at: the keys of entries holding exactly a value, in
    levels and the insert buffer, removed ones left out, at most ``limit``."""
    from scrapy_simhash.index import SimhashIndex

    rng = np.random.default_rng(11)
    index = SimhashIndex(k=0, layout="64", expected_size=5000, buffer_size=64)
    values = rng.integers(0, 2**63, 300, dtype=np.uint64)
    index.add_many(values, np.arange(300, dtype=np.uint64))  # a level
    for key in range(300, 700):  # a level and the buffer: 4 more keys a value
        index.add(int(values[key % 100]), key)
    index.remove(5)
    index.remove(405)
    assert index._nbuf and index._levels and any(level.dead for level in index._levels)
    for v in (0, 5, 42, 150, 299):
        expected = sorted(m.key for m in index.query(int(values[v])))
        assert sorted(index.keys_at(int(values[v]), 256).tolist()) == expected
        assert len(index.keys_at(int(values[v]), 2)) == min(2, len(expected))
    assert sorted(index.keys_at(int(values[5]), 256).tolist()) == [305, 505, 605]
    assert index.keys_at(12345, 256).dtype == np.uint64 and not len(index.keys_at(12345, 256))


@pytest.mark.skipif(COMPILED_RULE is None, reason="fingerprinting/_confirm.pyx is not built")
def test_the_compiled_rule_refuses_a_layout_it_cannot_read():
    """Its constants come from signature.py; a sketch layout whose regions
    are not own bins, rare bins, 16 bytes of keys, main bins is refused."""
    with pytest.raises(ValueError, match="regions"):
        COMPILED_RULE.configure(bins=96, own_bins=40, tail=48, main=70, confirm=48, guard=20,
                                near=64, own_key=(0, 0), page_key=(0, 0), own_words=0,
                                page_words=0, both=0, both_trusted=0, repeated=0)
    rows = np.zeros((2, SKETCH_BINS), np.uint8)
    assert COMPILED_RULE.confirm_rows(rows, rows[0]).tolist() == \
        confirms_many(rows, rows[0]).tolist()
