import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.index.layout import F, TableLayout

LAYOUTS = [
    (0, "64"),
    (1, "32,32"),
    (2, "22,21,21"),
    (3, "16,16,16,16"),
    (3, "13,13,13,13,12"),
    (3, "11,11,11,11,10,10"),
    (3, "16,16,16,16/12,12,12,12"),
    (4, "7,7,7,7,7,7,7,7,8"),
    (6, "8,8,8,8,8,8,8,8"),
    (2, "16,16,16,16/11,11,10"),
]


# -- the paper's Example 3.1: f = 64, k = 3, 2**34 fingerprints --------------------


@pytest.mark.parametrize(
    ("max_tables", "spec", "tables", "ps", "per_table"),
    [
        (20, "11,11,11,11,10,10", 20, {31, 32, 33}, {8, 4, 2}),
        (16, "16,16,16,16/12,12,12,12", 16, {28}, {64}),
        (10, "13,13,13,13,12", 10, {25, 26}, {512, 256}),
        (4, "16,16,16,16", 4, {16}, {2**18}),
    ],
)
def test_example_3_1(max_tables, spec, tables, ps, per_table):
    layout = TableLayout.plan(3, 2**34, max_tables=max_tables)
    assert layout.spec == spec
    assert len(layout.tables) == tables
    assert set(layout.p_values) == ps
    assert {round(c) for c in layout.candidates(2**34)} == per_table
    assert layout.memory_bytes(2**34) == (8 * tables + 16) * 2**34


def test_example_3_1_p_counts():
    # 20 tables from 6 blocks of 11,11,11,11,10,10: p=33 x4, p=32 x12, p=31 x4 (~8 candidates)
    layout = TableLayout.plan(3, 2**34)
    assert len(layout.tables) == 20
    assert sorted(layout.p_values).count(31) == 4
    assert sorted(layout.p_values).count(32) == 12
    assert sorted(layout.p_values).count(33) == 4
    text = layout.describe(2**34)
    assert "20 tables" in text and "p=31" in text and "~8 candidates" in text


def test_plan_weighs_table_cost():
    # at 1M fingerprints 4 tables (p=16, ~16 candidates each) beat 20 in numpy
    assert TableLayout.plan(3, 2**20).spec == "16,16,16,16"
    assert len(TableLayout.plan(3, 2**34).tables) == 20
    for k in range(0, 11):
        layout = TableLayout.plan(k, 10**6)
        assert layout.k == k
        assert len(layout.tables) >= 1
    assert TableLayout.plan(0, 10).spec == "64"


def test_plan_errors():
    with pytest.raises(ValueError, match="k must be"):
        TableLayout.plan(64, 100)
    with pytest.raises(ValueError, match="max_tables"):
        TableLayout.plan(3, 100, max_tables=0)
    with pytest.raises(ValueError, match="no layout"):
        TableLayout.plan(3, 100, max_tables=3)


# -- parse / to_dict ----------------------------------------------------------------


@pytest.mark.parametrize(("k", "spec"), LAYOUTS)
def test_parse_round_trip(k, spec):
    layout = TableLayout.parse(spec, k)
    assert layout.spec == spec
    assert TableLayout.from_dict(layout.to_dict()) == layout
    assert TableLayout.parse(layout.spec, k) == layout


def test_parse_shorthands():
    assert TableLayout.parse("4", 3).spec == "16,16,16,16"
    assert TableLayout.parse(" 16, 16,16,16 / 4", 3).spec == "16,16,16,16/12,12,12,12"
    assert len(TableLayout.parse("16,16,16,16/4", 3).tables) == 16


@pytest.mark.parametrize(
    ("spec", "k", "message"),
    [
        ("16,16,16", 3, "add up to 64"),
        ("16,16,16,16", 4, "need more than k"),
        ("a,b", 1, "comma-separated"),
        ("16,16,16,16/12,12,12,12/2", 3, "two levels"),
        ("16,16,16,16/12,12,12,11", 3, "inner block widths"),
        ("0", 0, "at least one block"),
        ("64/32,32", 0, "two-level"),
    ],
)
def test_parse_errors(spec, k, message):
    with pytest.raises(ValueError, match=message):
        TableLayout.parse(spec, k)


def test_from_dict_errors():
    with pytest.raises(ValueError, match="bad layout"):
        TableLayout.from_dict({"blocks": [32, 32]})
    with pytest.raises(ValueError):
        TableLayout.from_dict({"k": 1, "blocks": [30, 30]})


# -- permutations ---------------------------------------------------------------------


@pytest.mark.parametrize(("k", "spec"), LAYOUTS)
def test_tables_are_permutations(k, spec):
    layout = TableLayout.parse(spec, k)
    rng = random.Random(spec)
    xs = [rng.getrandbits(64) for _ in range(50)] + [0, 2**64 - 1, 1, 2**63]
    arr = np.array(xs, dtype=np.uint64)
    for table in layout.tables:
        covered = sorted(b for src, width, _ in table.segments for b in range(src, src + width))
        assert covered == list(range(F))
        perm = table.permute_many(arr)
        assert perm.tolist() == [table.permute(x) for x in xs]
        assert table.unpermute_many(perm).tolist() == xs
        # the single bits land where the segments say, so bit counts are kept
        assert [bin(table.permute(x)).count("1") for x in xs] == [bin(x).count("1") for x in xs]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), which=st.integers(0, len(LAYOUTS) - 1))
def test_every_neighbour_shares_a_prefix(data, which):
    """The layout's guarantee: within k bits, some table has equal leading p bits."""
    k, spec = LAYOUTS[which]
    layout = TableLayout.parse(spec, k)
    x = data.draw(st.integers(0, 2**64 - 1))
    bits = data.draw(st.sets(st.integers(0, 63), max_size=k))
    y = x
    for b in bits:
        y ^= 1 << b
    assert any(
        t.permute(x) >> (F - t.p) == t.permute(y) >> (F - t.p) for t in layout.tables
    )


def test_describe_lists_tables_and_memory():
    text = TableLayout.parse("16,16,16,16", 3).describe(2**20)
    assert "4 table(s) with p=16" in text
    assert "~16 candidates per table" in text
    assert "48 B a fingerprint" in text
