import contextlib
import logging
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_simhash.index import BatchMatches, Match, SimhashIndex
from scrapy_simhash.index import tables as index_tables
from scrapy_simhash.index import TableLayout
from scrapy_simhash.index import CorruptStateError, RecordLog

# SIMHASH_TEST_EXAMPLES=500 for a deeper search than the suite's budget allows
HYPOTHESIS = settings(max_examples=int(os.environ.get("SIMHASH_TEST_EXAMPLES", 40)), deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])


# -- brute force references --------------------------------------------------------------


def brute_query(fps, keys, q, k):
    d = np.bitwise_count(fps ^ np.uint64(q))
    hit = np.flatnonzero(d <= k)
    return sorted(Match(int(keys[i]), int(fps[i]), int(d[i])) for i in hit)


def sort_matches(matches):
    return sorted(matches, key=lambda m: (m.distance, m.key))


def brute_pairs(fps, keys, k):
    d = np.bitwise_count(fps[:, None] ^ fps[None, :])
    i, j = np.nonzero(np.triu(d <= k, 1))
    a, b = np.minimum(keys[i], keys[j]), np.maximum(keys[i], keys[j])
    return sorted(zip(a.tolist(), b.tolist(), d[i, j].tolist()))


def brute_clusters(fps, keys, k):
    parent = {int(key): int(key) for key in keys}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b, _ in brute_pairs(fps, keys, k):
        parent[find(a)] = find(b)
    groups = {}
    for key in keys.tolist():
        groups.setdefault(find(key), []).append(key)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


# -- data -------------------------------------------------------------------------------------


def planted(rng, n, k, centers):
    """Fingerprints around a few centers at distances 0..k+1, plus random ones."""
    centers = rng.integers(0, 2**64, centers, dtype=np.uint64, endpoint=False)
    fps = centers[rng.integers(0, len(centers), n)]
    for i in range(n):
        if rng.random() < 0.15:
            fps[i] = rng.integers(0, 2**64, dtype=np.uint64, endpoint=False)
            continue
        flips = rng.choice(64, size=int(rng.integers(0, k + 2)), replace=False)
        for bit in flips.tolist():
            fps[i] ^= np.uint64(1 << bit)
    return fps


def layouts_for(k):
    out = ["auto", TableLayout.even(k, k + 1)]
    if k >= 1:
        out.append(TableLayout.even(k, k + 3))
    if 1 <= k <= 3:
        out.append(TableLayout.even(k, 4, k + 1))  # two levels: 4, 6 x 3, 4 x 4 tables
    return out


@st.composite
def scenarios(draw):
    k = draw(st.integers(0, 6))
    layout = draw(st.sampled_from(layouts_for(k)))
    compress = draw(st.booleans())
    buffer_size = draw(st.sampled_from([3, 16, 2048]))
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(0, 160))
    centers = draw(st.integers(1, 12))
    rng = np.random.default_rng(seed)
    fps = planted(rng, n, k, centers)
    keys = rng.permutation(np.arange(1000, 1000 + n, dtype=np.uint64) * np.uint64(7919))
    split = draw(st.integers(0, n))
    return k, layout, compress, buffer_size, fps, keys, split, rng


def build(k, layout, compress, buffer_size, fps, keys, split):
    """Half as one array, the rest one at a time (buffer, levels, merges)."""
    index = SimhashIndex(k=k, layout=layout, expected_size=max(len(fps), 1),
                         compress=compress, buffer_size=buffer_size)
    index.add_many(fps[:split], keys[:split])
    for fp, key in zip(fps[split:].tolist(), keys[split:].tolist()):
        index.add(fp, key)
    assert len(index) == len(fps)
    return index


def probes(rng, fps, k):
    near = planted(rng, 20, k, 4) if len(fps) == 0 else fps[rng.integers(0, len(fps), 20)]
    for i in range(len(near)):
        for bit in rng.choice(64, size=int(rng.integers(0, k + 2)), replace=False).tolist():
            near[i] ^= np.uint64(1 << bit)
    return np.concatenate([fps[:10], near, rng.integers(0, 2**64, 5, dtype=np.uint64)])


# -- properties ------------------------------------------------------------------------------


@HYPOTHESIS
@given(scenarios())
def test_query_and_query_many_equal_brute_force(scenario):
    k, layout, compress, buffer_size, fps, keys, split, rng = scenario
    index = build(k, layout, compress, buffer_size, fps, keys, split)
    qs = probes(rng, fps, k)
    batch = index.query_many(qs)
    assert isinstance(batch, BatchMatches)
    assert batch.query.dtype == np.intp and batch.key.dtype == np.uint64
    assert batch.fingerprint.dtype == np.uint64 and batch.distance.dtype == np.uint8
    for i, q in enumerate(qs.tolist()):
        expected = sort_matches(brute_query(fps, keys, q, k))
        got = index.query(q)
        assert got == expected
        assert all(type(v) is int for m in got for v in m)
        sel = batch.query == i
        rows = list(zip(batch.key[sel].tolist(), batch.fingerprint[sel].tolist(),
                        batch.distance[sel].tolist()))
        assert rows == [tuple(m) for m in expected]


@HYPOTHESIS
@given(scenarios())
def test_pairs_and_clusters_equal_brute_force(scenario):
    k, layout, compress, buffer_size, fps, keys, split, _ = scenario
    index = build(k, layout, compress, buffer_size, fps, keys, split)
    pairs, dist = index.pairs(with_distances=True)
    assert pairs.dtype == np.uint64 and pairs.shape == (len(dist), 2)
    got = list(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), dist.tolist()))
    assert got == brute_pairs(fps, keys, k)
    assert index.pairs().tolist() == pairs.tolist()
    clusters = index.clusters()
    assert all(c.dtype == np.uint64 for c in clusters)
    assert [c.tolist() for c in clusters] == brute_clusters(fps, keys, k)
    assert len(index) == len(fps)  # compacting kept everything


@HYPOTHESIS
@given(scenarios(), st.data())
def test_remove_and_query_and_add(scenario, data):
    k, layout, compress, buffer_size, fps, keys, split, rng = scenario
    index = build(k, layout, compress, buffer_size, fps, keys, split)
    gone = set()
    if len(keys):
        gone = data.draw(st.sets(st.sampled_from(keys.tolist()), max_size=len(keys)))
    for key in gone:
        assert index.remove(key) is True
        assert index.remove(key) is False
    keep = ~np.isin(keys, np.array(sorted(gone), dtype=np.uint64))
    fps, keys = fps[keep], keys[keep]
    assert len(index) == len(fps)
    for i, q in enumerate(probes(rng, fps, k)[:12].tolist()):
        expected = sort_matches(brute_query(fps, keys, q, k))
        mode = ("if_new", "always", "never")[i % 3]
        assert index.query_and_add(q, 10**9 + i, add=mode) == expected
        if mode == "always" or (mode == "if_new" and not expected):
            fps = np.append(fps, np.uint64(q))
            keys = np.append(keys, np.uint64(10**9 + i))
        assert len(index) == len(fps)
    pairs = index.pairs(with_distances=True)
    assert list(zip(*(a.tolist() for a in (pairs[0][:, 0], pairs[0][:, 1], pairs[1])))) == \
        brute_pairs(fps, keys, k)


def test_larger_index_with_levels():
    """Default buffer, many levels and merges, default layout: exact on 30k entries."""
    rng = np.random.default_rng(7)
    k = 3
    fps = planted(rng, 30000, k, 3000)
    keys = np.arange(len(fps), dtype=np.uint64)
    index = build(k, "auto", False, 2048, fps, keys, 10000)
    assert index.memory_usage()["levels"] >= 2
    qs = probes(rng, fps, k)
    batch = index.query_many(qs)
    for i, q in enumerate(qs.tolist()):
        expected = sort_matches(brute_query(fps, keys, q, k))
        assert index.query(q) == expected
        assert batch.key[batch.query == i].tolist() == [m.key for m in expected]
    small = SimhashIndex(k=k)
    small.add_many(fps[:3000], keys[:3000])
    got = small.pairs(with_distances=True)
    assert list(zip(got[0][:, 0].tolist(), got[0][:, 1].tolist(), got[1].tolist())) == \
        brute_pairs(fps[:3000], keys[:3000], k)


def test_identical_fingerprints_are_pairs_and_one_cluster():
    index = SimhashIndex(k=3)
    index.add_many(np.array([5, 5, 5, 0xF0 << 56], np.uint64),
                   np.array([30, 10, 20, 40], np.uint64))
    index.add(5 ^ 0b111, 50)
    index.add(5 ^ 0b1111, 60)  # 4 bits from 5 but 1 bit from key 50's fingerprint
    assert index.pairs().tolist() == [[10, 20], [10, 30], [10, 50], [20, 30], [20, 50],
                                      [30, 50], [50, 60]]
    assert [c.tolist() for c in index.clusters()] == [[10, 20, 30, 50, 60]]
    assert index.query(5) == [Match(10, 5, 0), Match(20, 5, 0), Match(30, 5, 0),
                              Match(50, 5 ^ 0b111, 3)]


def test_query_and_add_modes():
    index = SimhashIndex(k=3)
    assert index.query_and_add(0xFF, 1) == []
    assert index.query_and_add(0xFE, 2) == [Match(1, 0xFF, 1)]  # not added
    assert len(index) == 1
    assert index.query_and_add(0xFE, 2, add="always") == [Match(1, 0xFF, 1)]
    assert index.query_and_add(0xF0F0, 3, add="never") == []
    assert len(index) == 2
    with pytest.raises(ValueError, match="add must be one of"):
        index.query_and_add(1, 1, add="sometimes")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda ix: ix.add(-1, 0), "fingerprint must be an unsigned 64-bit"),
        (lambda ix: ix.add(2**64, 0), "fingerprint must be an unsigned 64-bit"),
        (lambda ix: ix.add(1, "x"), "key must be an unsigned 64-bit"),
        (lambda ix: ix.query(2**64), "unsigned 64-bit"),
        (lambda ix: ix.add_many([1, 2], [1]), "2 fingerprints but 1 keys"),
        (lambda ix: ix.add_many(np.zeros((2, 2), np.uint64), [1, 2]), "1-d array"),
        (lambda ix: ix.add_many([-1], [1]), "negative"),
        (lambda ix: ix.add_many([1.5], [1]), "dtype float64"),
        (lambda ix: ix.query_many([-3]), "negative"),
    ],
)
def test_bad_input_is_a_clear_error_and_loses_nothing(call, message):
    index = SimhashIndex(k=3)
    index.add(7, 7)
    with pytest.raises(ValueError, match=message):
        call(index)
    assert len(index) == 1 and index.query(7) == [Match(7, 7, 0)]


def test_constructor_errors():
    with pytest.raises(ValueError, match="made for k=3"):
        SimhashIndex(k=2, layout=TableLayout.parse("16,16,16,16", 3))
    with pytest.raises(ValueError, match="layout must be"):
        SimhashIndex(k=2, layout=[16, 16])
    with pytest.raises(ValueError, match="need more than k"):
        SimhashIndex(k=3, layout="32,32")


def test_empty_index():
    index = SimhashIndex(k=3)
    assert len(index) == 0 and index.query(5) == []
    assert index.pairs().shape == (0, 2) and index.clusters() == []
    assert len(index.query_many(np.array([1, 2], np.uint64)).key) == 0
    assert index.remove(3) is False


@pytest.mark.parametrize("compress", [False, True])
def test_memory_bar(compress):
    rng = np.random.default_rng(3)
    n = 100_000
    index = SimhashIndex(k=3, expected_size=n, compress=compress)
    index.add_many(rng.integers(0, 2**64, n, dtype=np.uint64), np.arange(n, dtype=np.uint64))
    usage = index.memory_usage()
    tables = len(index.layout.tables)
    stored = usage["table_bytes"] + usage["directory_bytes"] + usage["master_bytes"]
    assert stored <= (8 * tables + 16) * n  # tables + master + keys + directories
    if compress:
        assert usage["bytes_per_table_entry"] <= 4.5


# -- persistence -------------------------------------------------------------------------


def fill(index, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    fps = planted(rng, n, index.k, 300)
    keys = np.arange(n, dtype=np.uint64)
    index.add_many(fps[: n // 2], keys[: n // 2])
    for fp, key in zip(fps[n // 2:].tolist(), keys[n // 2:].tolist()):
        index.add(fp, key)
    return fps, keys


def same_contents(a, b):
    assert len(a) == len(b)
    assert a.pairs().tolist() == b.pairs().tolist()
    fa, ka = a.entries()
    fb, kb = b.entries()
    assert sorted(zip(fa.tolist(), ka.tolist())) == sorted(zip(fb.tolist(), kb.tolist()))


@pytest.mark.parametrize("compress", [False, True])
def test_save_load_round_trip(tmp_path, compress):
    index = SimhashIndex(k=4, layout="11,11,11,11,10,10", compress=compress, fingerprint_version=3)
    fill(index)
    index.remove(5)
    path = tmp_path / "index.simhash"
    index.save(path)
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    loaded = SimhashIndex.load(path)
    assert (loaded.k, loaded.layout, loaded.compress) == (4, index.layout, compress)
    assert loaded.fingerprint_version == 3
    same_contents(index, loaded)
    assert loaded.query(int(index.entries()[0][0])) == index.query(int(index.entries()[0][0]))


def test_open_log_replay_and_truncated_tail(tmp_path, caplog):
    path = tmp_path / "state"
    index = SimhashIndex.open(path, k=3)
    fps, keys = fill(index, 500)
    index.remove(3)
    index.save()
    index.add(123456789, 9000)
    index.remove(4)
    index.add_many(np.array([1, 2], np.uint64), np.array([9001, 9002], np.uint64))
    index.close()
    reloaded = SimhashIndex.load(path)
    same_contents(index, reloaded)
    assert len(reloaded) == 500 - 2 + 3
    # a crash in the middle of the last record: it alone is lost
    log = str(path) + ".log"
    with open(log, "r+b") as stream:
        stream.truncate(os.path.getsize(log) - 5)
    with caplog.at_level(logging.WARNING):
        reloaded = SimhashIndex.load(path)
    assert "truncated" in caplog.text
    assert len(reloaded) == len(index) - 1
    assert reloaded.query(2) == [m for m in index.query(2) if m.key != 9002]
    assert reloaded.query(1) == [m for m in index.query(1) if m.key != 9002]
    assert Match(9001, 1, 0) in reloaded.query(1)
    # reopening cuts the partial record and goes on appending
    again = SimhashIndex.open(path, k=3)
    again.add(2, 9002)
    again.close()
    same_contents(index, SimhashIndex.load(path))


def test_open_without_snapshot_replays_log(tmp_path):
    path = tmp_path / "state"
    index = SimhashIndex.open(path, k=2, layout="22,21,21")
    fill(index, 100)
    index.close()
    assert not path.exists()
    again = SimhashIndex.open(path, k=2, layout="22,21,21")
    same_contents(index, again)
    again.close()
    snapshot = SimhashIndex.open(path, k=2)
    snapshot.save()
    snapshot.close()
    with pytest.raises(ValueError, match="k=2, not k=3"):
        SimhashIndex.open(path, k=3)
    fresh = SimhashIndex.open(path, k=3, reset=True)
    assert len(fresh) == 0
    fresh.close()


def test_stale_log_from_before_the_snapshot_is_ignored(tmp_path, caplog):
    """A crash between the snapshot's rename and the log reset."""
    path = tmp_path / "state"
    index = SimhashIndex.open(path, k=3)
    fill(index, 200)
    index.save()
    index.add(77, 77)
    index.close()
    stale = (str(path) + ".log", open(str(path) + ".log", "rb").read())
    index = SimhashIndex.open(path, k=3)
    index.save()  # the snapshot now holds key 77; the log is reset
    index.close()
    with open(stale[0], "wb") as stream:  # the old log comes back
        stream.write(stale[1])
    with caplog.at_level(logging.WARNING):
        loaded = SimhashIndex.load(path)
    assert "precedes the snapshot" in caplog.text
    assert len(loaded) == 201


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d[:-3], "expected 200 entries"),
        (lambda d: d[:-16] + bytes([d[-16] ^ 1]) + d[-15:], "array checksum mismatch"),
        (lambda d: b"XXXXXXXX" + d[8:], "not a simhash index snapshot"),
        (lambda d: d[:8] + b"\x07" + d[9:], "unknown snapshot version 7"),
        (lambda d: d[:30] + b"!" + d[31:], "bad JSON header"),
        (lambda d: d[:5], "shorter than the snapshot header"),
    ],
)
def test_corrupt_snapshot_is_a_clear_error(tmp_path, mutate, message):
    index = SimhashIndex(k=3)
    fill(index, 200)
    path = tmp_path / "snap"
    index.save(path)
    path.write_bytes(mutate(path.read_bytes()))
    with pytest.raises(CorruptStateError, match=message) as info:
        SimhashIndex.load(path)
    assert str(path) in str(info.value)


def test_corrupt_log_is_a_clear_error(tmp_path):
    path = tmp_path / "state"
    index = SimhashIndex.open(path, k=3)
    fill(index, 50)
    index.close()
    log = str(path) + ".log"
    data = bytearray(open(log, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(log, "wb").write(bytes(data))
    with pytest.raises(CorruptStateError, match="state.log"):
        SimhashIndex.open(path, k=3)
    assert RecordLog  # the log format is store.RecordLog's


def test_an_open_index_is_locked_against_a_second_writer(tmp_path):
    from scrapy_simhash.index.store import LogLockedError

    path = tmp_path / "state"
    index = SimhashIndex.open(path, k=3)
    index.add(1, 1)
    index.save()  # restarting the log keeps the lock
    with pytest.raises(LogLockedError, match="state.log is open for writing by this process"):
        SimhashIndex.open(path, k=3)
    with pytest.raises(LogLockedError):
        SimhashIndex.open(path, k=3, reset=True)  # and does not delete the files first
    index.add(2**64 - 1, 2)
    index.close()
    assert [m.key for m in SimhashIndex.load(path).query(2**64 - 1)] == [2]
    assert len(SimhashIndex.load(path)) == 2


# -- incremental merges (issue 16, item 7) ---------------------------------------------------


@pytest.fixture
def tiny_merge_steps():
    """Merge steps of one entry, so small indexes have merges pending across adds."""
    from scrapy_simhash.index import tables

    saved = tables.MERGE_STEP, tables.PAGED_BYTES, tables.RELEASE_STEP
    # one-entry steps; every merge output in its own mapping, released 4 KiB at a time
    tables.MERGE_STEP, tables.PAGED_BYTES, tables.RELEASE_STEP = 1, 1, 4096
    yield
    tables.MERGE_STEP, tables.PAGED_BYTES, tables.RELEASE_STEP = saved


def check_level(index, level):
    """A level's invariants: master sorted, each table sorted by its permutation
    with the same entries, each directory the one a fresh build computes."""
    from scrapy_simhash.index.tables import _directory

    fps = level.fps
    assert np.all(fps[:-1] <= fps[1:])
    n, shift = len(fps), level.shift
    d = 64 - shift
    bounds = np.arange(1, 1 << d, dtype=np.uint64) << np.uint64(shift) if d else None
    for t, table in enumerate(index.layout.tables):
        values = level.tables[t] if index._direct[t] else fps[level.tables[t]]
        if not index._direct[t]:
            assert sorted(level.tables[t].tolist()) == list(range(n))
        perm = table.permute_many(values)
        assert np.all(perm[:-1] <= perm[1:])
        assert sorted(values.tolist()) == fps.tolist()
        assert level.dirs[t].tolist() == _directory(perm, bounds, n).tolist()


@settings(HYPOTHESIS, suppress_health_check=[HealthCheck.too_slow,
                                              HealthCheck.function_scoped_fixture])
@given(scenarios(), st.data())
def test_merges_in_steps_stay_exact(tiny_merge_steps, scenario, data):
    k, layout, compress, _, fps, keys, _, rng = scenario
    index = SimhashIndex(k=k, layout=layout, compress=compress, buffer_size=4)
    live_fps, live_keys, pending, released = [], [], 0, 0
    for fp, key in zip(fps.tolist(), keys.tolist()):
        index.add(fp, key)
        live_fps.append(fp)
        live_keys.append(key)
        pending += index._merging is not None
        released += index._released > 0
        if live_keys and data.draw(st.integers(0, 9)) == 0:  # a remove, maybe mid-merge
            gone = live_keys[data.draw(st.integers(0, len(live_keys) - 1))]
            assert index.remove(gone)
            live_fps = [f for f, g in zip(live_fps, live_keys) if g != gone]
            live_keys = [g for g in live_keys if g != gone]
        if data.draw(st.integers(0, 3)) == 0:
            a, b = np.array(live_fps, np.uint64), np.array(live_keys, np.uint64)
            q = fp ^ (1 << data.draw(st.integers(0, 63)))
            assert index.query(q) == sort_matches(brute_query(a, b, q, k))
            batch = index.query_many(np.array([q, fp], np.uint64))
            assert batch.key[batch.query == 1].tolist() == \
                [m.key for m in sort_matches(brute_query(a, b, fp, k))]
    assert len(index) == len(live_keys)
    if len(fps) > 40:
        assert pending  # merges were pending across adds
        assert released  # and merged-away mappings were handed back
    for level in index._levels:
        check_level(index, level)
    index._finish_merge()
    for level in index._levels:
        check_level(index, level)
        assert {int(level.keys[r]) for r in level.dead}.isdisjoint(live_keys)
    a, b = np.array(live_fps, np.uint64), np.array(live_keys, np.uint64)
    for q in probes(rng, a, k).tolist():
        assert index.query(q) == sort_matches(brute_query(a, b, q, k))


def test_no_single_add_pays_for_a_whole_merge(tiny_merge_steps):
    """With the default buffer a merge of 20k entries is spread over the adds
    until the next flush: each add merges a bounded share of it."""
    from scrapy_simhash.index import tables

    rng = np.random.default_rng(11)
    index = SimhashIndex(k=3, layout="16,16,16,16", buffer_size=256)
    index.add_many(rng.integers(0, 2**64, 20_000, dtype=np.uint64),
                   np.arange(20_000, dtype=np.uint64))
    fps = rng.integers(0, 2**64, 3000, dtype=np.uint64).tolist()
    shares, seen = [], False
    for i, fp in enumerate(fps):
        before = index._merging.remaining if index._merging is not None else None
        index.add(fp, 20_000 + i)
        if before is not None and index._merging is not None:
            shares.append(before - index._merging.remaining)
        seen |= index._merging is not None
    assert seen and shares
    passes = 1 + 3  # the master and the three non-identity tables
    assert max(shares) <= 2 * passes * 22_528 / 256 + 4 * 256
    assert tables.MERGE_STEP == 1
    assert index._garbage or index._released == 0  # merged-away memory being handed back


def check_query_keys(index, fps, keys, q, k):
    """``query_keys`` (no limit reached) against brute force: every live entry
    within k bits, nearest first, and the count of entries holding ``q``."""
    want = brute_query(fps, keys, q, k)
    got, dist, same = index.query_keys(q, len(fps) + 1)
    assert sorted(zip(got.tolist(), dist.tolist())) == sorted((m.key, m.distance) for m in want)
    assert np.all(dist[:-1] <= dist[1:])
    assert same == sum(m.distance == 0 for m in want)


def grown(scenario, copies, data, check):
    """An index grown the hard way: several levels (a bulk one, flushed ones,
    one being merged), a buffer, removed rows and a crowded fingerprint (many
    entries of one: a bucket far above the mean). ``check(index, fps, keys,
    q, k)`` runs now and then as it grows, and on probes of the end result."""
    k, layout, compress, _, fps, keys, split, rng = scenario
    if len(fps):
        fps = np.concatenate([fps, np.full(copies, fps[0], np.uint64)])
        keys = np.concatenate([keys, np.arange(copies, dtype=np.uint64) + np.uint64(1)])
        split = min(split + copies, len(fps))
    index = SimhashIndex(k=k, layout=layout, compress=compress, buffer_size=5)
    index.add_many(fps[:split], keys[:split])
    live = dict(zip(keys[:split].tolist(), fps[:split].tolist()))

    def arrays():
        return np.array(list(live.values()), np.uint64), np.array(list(live.keys()), np.uint64)

    for fp, key in zip(fps[split:].tolist(), keys[split:].tolist()):
        index.add(fp, key)
        live[key] = fp
        if data.draw(st.integers(0, 7)) == 0:
            gone = data.draw(st.sampled_from(sorted(live)))
            assert index.remove(gone)
            del live[gone]
        if data.draw(st.integers(0, 3)) == 0:
            check(index, *arrays(), fp ^ (1 << data.draw(st.integers(0, 63))), k)
            check(index, *arrays(), fp, k)
    a, b = arrays()
    for q in probes(rng, a, k).tolist() if len(a) else []:
        check(index, a, b, q, k)


@settings(HYPOTHESIS, suppress_health_check=[HealthCheck.too_slow,
                                              HealthCheck.function_scoped_fixture])
@given(scenarios(), st.integers(0, 120), st.data())
def test_probes_of_levels_buffer_and_merges_stay_exact(tiny_merge_steps, scenario, copies, data):
    """The one-gather probe of a level (:meth:`_Level.gather`) and the
    table-by-table one find the same entries as brute force."""
    def check(index, fps, keys, q, k):
        check_query_keys(index, fps, keys, q, k)
        assert index.query(q) == sort_matches(brute_query(fps, keys, q, k))

    grown(scenario, copies, data, check)


def test_a_crowded_level_is_probed_table_by_table():
    """A level where one fingerprint fills a bucket many times the mean keeps
    no windows (each probe would read that bucket's length in every table)."""
    rng = np.random.default_rng(4)
    fps = np.concatenate([rng.integers(0, 2**64, 4000, dtype=np.uint64),
                          np.full(3000, 0x0123456789ABCDEF, np.uint64)])
    index = SimhashIndex(k=3, layout="16,16,16,16")
    index.add_many(fps, np.arange(len(fps), dtype=np.uint64))
    assert index._levels[0].gather() is None
    spread = SimhashIndex(k=3, layout="16,16,16,16")
    spread.add_many(fps[:4000], np.arange(4000, dtype=np.uint64))
    assert spread._levels[0].gather() is not None
    for q in [0x0123456789ABCDEF ^ 5, *fps[:50].tolist(), *(fps[:50] ^ np.uint64(3)).tolist()]:
        check_query_keys(index, fps, np.arange(len(fps), dtype=np.uint64), q, 3)


# -- the compiled probe (scrapy_simhash/index/_probe.pyx) -------------------------------------

COMPILED_PROBE = index_tables._probe
needs_compiled_probe = pytest.mark.skipif(
    COMPILED_PROBE is None, reason="scrapy_simhash.index._probe is not built (pure-Python install)")


@contextlib.contextmanager
def numpy_probe():
    """Queries through the numpy probe, as a pure-Python install runs them."""
    index_tables._probe = None
    try:
        yield
    finally:
        index_tables._probe = COMPILED_PROBE


def near_both_ways(index, q):
    """``_near`` compiled and in numpy, each as a set."""
    compiled = index._near(q)
    with numpy_probe():
        numpy = index._near(q)
    return (set() if compiled is None else set(compiled.tolist()),
            set() if numpy is None else set(numpy.tolist()))


def stored_within(index, q, k):
    """Brute force over every fingerprint the levels and the buffer hold
    (removed rows too: ``_near`` leaves them to the key lookups)."""
    stored = np.concatenate([lv.fps for lv in index._levels] + [index._buf_fps[:index._nbuf]])
    return set(stored[np.bitwise_count(stored ^ np.uint64(q)) <= k].tolist())


@needs_compiled_probe
@settings(HYPOTHESIS, suppress_health_check=[HealthCheck.too_slow,
                                              HealthCheck.function_scoped_fixture])
@given(scenarios(), st.integers(0, 60), st.data())
def test_compiled_probe_finds_what_the_numpy_probe_finds(tiny_merge_steps, scenario, copies,
                                                         data):
    """The compiled probe, the numpy one and brute force find the same
    fingerprints (compressed tables too); ``query_keys`` through the numpy
    probe stays exact (the suite's other tests run the compiled one)."""
    def check(index, fps, keys, q, k):
        compiled, numpy = near_both_ways(index, q)
        assert compiled == numpy == stored_within(index, q, k)
        with numpy_probe():
            check_query_keys(index, fps, keys, q, k)

    grown(scenario, copies, data, check)


@needs_compiled_probe
def test_the_numpy_gather_is_made_only_for_the_numpy_probe():
    """The numpy probe's windows (4 bytes a bucket a table) are made on its
    first probe of a level, and never by the compiled probe: memory_usage
    counts them only once they are made."""
    rng = np.random.default_rng(11)
    fps = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    index = SimhashIndex(k=3, layout="16,16,16,16")
    index.add_many(fps, np.arange(len(fps), dtype=np.uint64))
    before = index.memory_usage()["directory_bytes"]
    for q in fps[:20].tolist():
        index.query(q)
    assert index._levels[0]._gather is False
    assert index.memory_usage()["directory_bytes"] == before
    with numpy_probe():
        found = [index.query(q) for q in fps[:20].tolist()]
    assert index._levels[0]._gather is not False
    assert index.memory_usage()["directory_bytes"] > before
    assert found == [index.query(q) for q in fps[:20].tolist()]


@needs_compiled_probe
@pytest.mark.parametrize("compress", [False, True])
def test_compiled_probe_reads_wide_directories_and_rows(compress):
    """Levels past 2**31 entries have 8-byte directories, past 2**32 8-byte
    row ids: too big to build here, so a level's arrays are widened by hand
    and probed through the same scan."""
    from array import array

    rng = np.random.default_rng(7)
    fps = planted(rng, 3000, 3, 30)
    index = SimhashIndex(k=3, layout="16,16,16,16", compress=compress)
    index.add_many(fps, np.arange(len(fps), dtype=np.uint64))
    level = index._levels[0]
    wide_dirs = [array("q", d.tolist()) for d in level.dirs]
    wide_tables = [t if direct else t.astype(np.uint64)
                   for t, direct in zip(level.tables, index._direct)]
    assert compress == any(t.dtype == np.uint32 for t in level.tables)
    narrow = COMPILED_PROBE.LevelScan(level.fps, level.tables, level.dirs, index._direct,
                                      int(level.lead_shift))
    wide = COMPILED_PROBE.LevelScan(level.fps, wide_tables, wide_dirs, index._direct,
                                    int(level.lead_shift))
    prober = COMPILED_PROBE.Prober(index._lead_all)
    none = np.empty(0, np.uint64)
    for q in probes(rng, fps, 3).tolist():
        want = stored_within(index, q, 3)
        for scan in (narrow, wide):
            got = prober.near(q, 3, [scan], none)
            assert (set() if got is None else set(got.tolist())) == want


@needs_compiled_probe
def test_compiled_probe_refuses_arrays_it_cannot_read():
    index = SimhashIndex(k=3, layout="16,16,16,16")
    index.add_many(np.arange(3000, dtype=np.uint64), np.arange(3000, dtype=np.uint64))
    level = index._levels[0]
    with pytest.raises(ValueError, match="uint64"):
        COMPILED_PROBE.LevelScan(level.fps.astype(np.int64), level.tables, level.dirs,
                                 index._direct, int(level.lead_shift))
    with pytest.raises(ValueError, match="one directory"):
        COMPILED_PROBE.LevelScan(level.fps, level.tables, level.dirs[:1], index._direct,
                                 int(level.lead_shift))
    with pytest.raises(ValueError, match="shape"):
        COMPILED_PROBE.Prober(np.zeros((8, 255, 4), np.uint32))


def test_a_queried_index_still_copies():
    """The compiled probe's objects (kept on the index once it is queried)
    copy by their arguments: ``copy.deepcopy`` of an index works before and
    after a query and answers the same."""
    import copy

    rng = np.random.default_rng(3)
    fps = planted(rng, 3000, 3, 40)
    index = SimhashIndex(k=3, layout="16,16,16,16")
    index.add_many(fps, np.arange(len(fps), dtype=np.uint64))
    index.add(int(fps[0]) ^ 1, 99_999)
    before = copy.deepcopy(index).query(int(fps[1]))
    assert index.query(int(fps[1])) == before
    twin = copy.deepcopy(index)
    for q in probes(rng, fps, 3).tolist():
        assert twin.query(q) == index.query(q)
