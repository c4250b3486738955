"""The Redis index against a real redis-server: parity, atomicity, metadata, failures."""

from __future__ import annotations

import logging
import multiprocessing
import sys
import threading
import time

import numpy as np
import pytest
import xxhash

from scrapy_simhash.backends import BackendError, Duplicate
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION, Signature
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS
from scrapy_simhash.index import Match
from scrapy_simhash.index import TableLayout
from scrapy_simhash.backends.redis import RedisBackend
from scrapy_simhash.backends.redis_index import RedisSimhashIndex, import_redis
from scrapy_simhash.settings import SimhashSettings
from tests.fixtures_redis import fill_up, make_room

pytestmark = pytest.mark.redis

MASK = (1 << 64) - 1

SKETCH = bytes(range(1, SKETCH_BINS + 1))


def sig(fp: int, sketch: bytes = SKETCH) -> Signature:
    """A signature whose sketch confirms every other one made here."""
    return Signature(int(fp), sketch)


def brute_force(stored: list[tuple[int, int]], fp: int, k: int) -> list[Match]:
    """Every (key, fingerprint) within k of fp, sorted like the index sorts."""
    out = [Match(key, s, (s ^ fp).bit_count()) for key, s in stored]
    return sorted((m for m in out if m.distance <= k), key=lambda m: (m.distance, m.key))


def flip(fp: int, rng: np.random.Generator, bits: int) -> int:
    for pos in rng.choice(64, size=bits, replace=False).tolist():
        fp ^= 1 << pos
    return fp


def planted_stream(seed: int, n: int, k: int) -> list[int]:
    """Random fingerprints, each followed by neighbours at distances 0..k+1 of
    an earlier one (flips in both 32-bit halves, top bit included)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**63, size=n, dtype=np.uint64).tolist()
    base = [b | (1 << 63) if i % 3 == 0 else b for i, b in enumerate(base)]
    out: list[int] = [0, MASK]
    for fp in base:
        out.append(fp)
        earlier = out[int(rng.integers(len(out)))]
        out.append(flip(earlier, rng, int(rng.integers(0, k + 2))))
    return out


def make_index(client, layout, prefix="test:simhash", expected_size=1 << 20, reset=False):
    index = RedisSimhashIndex(client, prefix, layout, expected_size=expected_size)
    index.open(reset=reset)
    return index


@pytest.mark.parametrize(
    ("k", "spec", "expected_size"),
    [
        (3, "16,16,16,16", 1 << 20),  # buckets of 15 of the 16 leading bits
        (3, "16,16,16,16", 64),  # coarse buckets: 1 bit, scans nearly everything
        (2, "11,11,11,11,10,10", 1 << 30),  # buckets of the full p bits
        (3, "16,16,16,16/12,12,12,12", 1 << 20),  # two-level, 16 tables
        (0, "32,32", 1 << 20),
    ],
)
def test_parity_with_brute_force(redis_client, k, spec, expected_size):
    layout = TableLayout.parse(spec, k)
    index = make_index(redis_client, layout, expected_size=expected_size)
    stored: list[tuple[int, int]] = []
    rng = np.random.default_rng(k)
    modes = ("if_new", "if_new", "always", "never")
    for fp in planted_stream(seed=k + len(spec), n=150, k=k):
        add = modes[int(rng.integers(len(modes)))]
        expected = brute_force(stored, fp, k)
        matches, url, new_key = index.query_and_add(fp, f"https://e.com/{fp:x}", add=add)
        assert matches == expected, (fp, add)
        if matches:
            assert url == f"https://e.com/{matches[0].fingerprint:x}"
        else:
            assert url is None
        if add == "always" or (add == "if_new" and not expected):
            assert new_key == len(stored) + 1
            stored.append((new_key, fp))
        else:
            assert new_key == 0
    assert len(index) == len(stored)
    assert any(len(brute_force(stored, fp, k)) > 1 for _, fp in stored)


def test_parity_with_simhash_index(redis_client):
    """The same stream gives the in-process index and the Redis index the same answers."""
    from scrapy_simhash.index import SimhashIndex

    k = 3
    layout = TableLayout.plan(k, 10_000)
    index = make_index(redis_client, layout, expected_size=10_000)
    local = SimhashIndex(k=k, layout=layout, expected_size=10_000)
    next_key = 1
    for fp in planted_stream(seed=7, n=300, k=k):
        ours, _, new_key = index.query_and_add(fp, "u")
        theirs = local.query_and_add(fp, next_key)
        assert ours == theirs
        if new_key:
            assert new_key == next_key
            next_key += 1


def test_confirmation_equals_is_duplicate(redis_client):
    """The index's verdicts (candidate within k, sketch confirming) are
    ``is_duplicate``'s on random pairs: near fingerprints, sketches agreeing in
    any number of bins, empty bins, stored pages without a sketch."""
    from scrapy_simhash.fingerprinting.signature import is_duplicate

    k = 5
    layout = TableLayout.plan(k, 1000)
    index = make_index(redis_client, layout, prefix="test:confirm", expected_size=1000)
    rng = np.random.default_rng(12)

    def random_sketch() -> bytes:
        values = rng.integers(1, 256, SKETCH_BINS, dtype=np.uint8)
        values[rng.random(SKETCH_BINS) < rng.random() * 0.5] = 0  # empty bins
        return values.tobytes()

    stored: list[tuple[int, Signature]] = []
    for _ in range(40):
        sig_ = Signature(int(rng.integers(0, 2**64, dtype=np.uint64)), random_sketch())
        _, _, key = index.query_and_add(sig_.fingerprint, "u", add="always", sketch=sig_.sketch)
        stored.append((key, sig_))
    verdicts = set()
    for _ in range(600):
        _, base = stored[int(rng.integers(len(stored)))]
        fp = base.fingerprint
        for bit in rng.choice(64, int(rng.integers(0, 8)), replace=False):
            fp ^= 1 << int(bit)
        sketch = bytearray(base.sketch)
        for i in rng.choice(SKETCH_BINS, int(rng.integers(0, 40)), replace=False):
            sketch[int(i)] = int(rng.integers(0, 256))
        probe = Signature(fp, bytes(sketch))
        matches, _, _ = index.query_and_add(fp, "", add="never", sketch=probe.sketch)
        expected = sorted(key for key, s in stored if is_duplicate(s, probe, k=k))
        assert sorted(m.key for m in matches) == expected
        verdicts.add(bool(expected))
    assert verdicts == {True, False}
    # A stored page without a sketch is never confirmed; without a sketch every
    # candidate counts (the index alone).
    fp = 0x1234_5678_9ABC_DEF0
    index.query_and_add(fp, "v", add="always")
    assert index.query_and_add(fp, "", add="never", sketch=SKETCH)[0] == []
    assert [m.fingerprint for m in index.query_and_add(fp, "", add="never")[0]] == [fp]


def test_bulk_load_then_query(redis_client):
    rng = np.random.default_rng(3)
    layout = TableLayout.parse("16,16,16,16", 3)
    index = make_index(redis_client, layout, expected_size=4096)
    fps = rng.integers(0, 2**64, size=3000, dtype=np.uint64, endpoint=False)
    keys = index.add_many(fps, [f"u{i}" for i in range(len(fps))])
    assert keys.tolist() == list(range(1, 3001))
    stored = list(zip(keys.tolist(), fps.tolist()))
    for i in range(0, 3000, 97):
        probe = flip(int(fps[i]), rng, 3)
        matches = index.query(probe)
        assert matches == brute_force(stored, probe, 3)
        assert Match(i + 1, int(fps[i]), 3) in matches
        assert index.url(i + 1) == f"u{i}"
    assert len(index) == 3000


def test_a_process_far_behind_reads_the_log_before_inserting(redis_client):
    """Another process stored more than TAIL_CAP pages since this one read the log: the
    script refuses to read such a tail, the process reads the log itself (1 MiB a
    GETRANGE), then inserts; a query reads it the same way."""
    from scrapy_simhash.backends.redis_index import TAIL_CAP

    layout = TableLayout.parse("16,16,16,16", 3)
    behind = make_index(redis_client, layout, expected_size=4096)
    querier = make_index(redis_client, layout, expected_size=4096)
    loader = make_index(redis_client, layout, expected_size=4096)
    fps = np.random.default_rng(8).integers(0, 2**64, size=3 * TAIL_CAP, dtype=np.uint64)
    loader.add_many(fps)
    assert behind.synced == querier.synced == 0
    fp = int(fps[100]) ^ 0b101
    matches, _, key = behind.query_and_add(fp ^ (1 << 63) ^ (1 << 40) ^ (1 << 20) ^ 1, "u")
    assert matches == [] and key == 3 * TAIL_CAP + 1 and behind.synced == key
    assert [m.key for m in querier.query(fp)] == [101]
    assert querier.synced == key


def test_redis_memory_stays_compact(redis_client):
    """The log keeps 8 bytes a page, whatever the number of tables."""
    layout = TableLayout.parse("16,16,16,16", 3)
    index = make_index(redis_client, layout, expected_size=20_000)
    fps = np.random.default_rng(5).integers(0, 2**63, size=20_000, dtype=np.uint64)
    index.add_many(fps)
    # MEMORY USAGE, not used_memory: the loading client's query buffer is counted
    # there until Redis frees it
    per_fp = redis_client.memory_usage(index.log_block(0)) / len(fps)
    assert 8 <= per_fp < 8 * 1.05, per_fp
    assert redis_client.keys("test:simhash:*") == [b"test:simhash:meta", b"test:simhash:log:0"] \
        or sorted(redis_client.keys("test:simhash:*")) == [b"test:simhash:log:0",
                                                          b"test:simhash:meta"]


def test_compact_url_format_keeps_8_bytes_a_page(redis_client):
    """SIMHASH_REDIS_URLS = "hash": an xxh3-64 hash per page in packed blocks, found
    again by key (bulk load and script write the same blocks)."""
    layout = TableLayout.parse("16,16,16,16", 3)
    make_index(redis_client, layout, prefix="compact:simhash", expected_size=20_000)  # full URLs
    index = RedisSimhashIndex(
        redis_client, "compact:simhash", layout, expected_size=20_000, url_format="hash"
    )
    with pytest.raises(ValueError, match="urls="):  # the format is part of the identity
        index.open()
    index.open(reset=True)
    fps = np.random.default_rng(6).integers(0, 2**63, size=20_000, dtype=np.uint64)
    urls = [f"https://www.example.com/news/2026/11/article-{i:07d}.html" for i in range(20_000)]
    index.add_many(fps[:10_000], urls[:10_000])
    # MEMORY USAGE of the keys (all fields): used_memory counts the loading
    # client's query buffer too
    before = redis_client.memory_usage(index.urls_key, samples=0)
    index._add_url_hashes(10_001, urls[10_000:19_999])
    per_url = (redis_client.memory_usage(index.urls_key, samples=0) - before) / 9_999
    index.add_many(fps[10_000:19_999])
    assert 8 <= per_url < 9.5, per_url
    assert redis_client.strlen(index.log_block(0)) == 19_999 * 8
    matches, nearest, key = index.query_and_add(int(fps[5]) ^ 1, urls[-1])
    assert matches[0].key == 6 and nearest == index.url_token(urls[5]) and key == 0
    assert nearest == "xxh3:" + xxhash.xxh3_64_hexdigest(urls[5].encode())
    _, _, key = index.query_and_add(int(fps[-1]), urls[-1])
    assert key == 20_000 and index.url(20_000) == index.url_token(urls[-1])
    assert index.url(12_345) == index.url_token(urls[12_344])


def test_new_settings_are_validated():
    from scrapy.settings import Settings

    def config(**values):
        return SimhashSettings.from_settings(Settings(values))

    assert config().redis_timeout == 0.5 and config().redis_queue == 100_000
    assert config().redis_key == "%(spider)s:simhash"
    assert config(SIMHASH_REDIS_CLUSTER=True).redis_key == "{%(spider)s}:simhash"
    for name, bad in [
        ("SIMHASH_REDIS_TIMEOUT", 0), ("SIMHASH_REDIS_TIMEOUT", "soon"),
        ("SIMHASH_REDIS_QUEUE", -1), ("SIMHASH_REDIS_URLS", "short"),
        ("SIMHASH_MAX_UNCHECKED_SHARE", 1.5), ("SIMHASH_REDIS_CLUSTER", "maybe"),
        ("SIMHASH_REDIS_SHARDED", "maybe"),
    ]:  # fmt: skip
        with pytest.raises(ValueError, match=f"Invalid {name} setting"):
            config(**{name: bad})


def test_rejects_bad_input(redis_client):
    index = make_index(redis_client, TableLayout.parse("16,16,16,16", 3))
    with pytest.raises(ValueError, match="64-bit"):
        index.query_and_add(1 << 64, "u")
    with pytest.raises(ValueError, match="64-bit"):
        index.query_and_add(-1, "u")
    with pytest.raises(ValueError, match="add must be one of"):
        index.query_and_add(1, "u", add="sometimes")
    assert len(index) == 0


# -- metadata: join, refuse, reset ---------------------------------------------


def test_second_process_joins_and_reads_the_log(redis_client):
    """A process joining an index reads its log into its own tables at open; a page
    stored by another process later reaches it with its next insert."""
    layout = TableLayout.parse("16,16,16,16", 3)
    first = make_index(redis_client, layout, expected_size=1000)
    first.query_and_add(0x1234, "https://a/")
    second = make_index(redis_client, layout, expected_size=10**8)
    assert second.synced == 1 and len(second.local) == 1
    matches, url, _ = second.query_and_add(0x1235, "https://b/")
    assert matches == [Match(1, 0x1234, 1)] and url == "https://a/"
    first.query_and_add(0xABC << 40, "https://c/")
    assert second.query_and_add(0x5A5A << 20, "https://d/") == ([], None, 3)
    assert second.synced == 3  # c came with the insert's reply
    first.query_and_add(0xABC << 40 | 0b11, "https://e/", add="always")
    matches, url, _ = second.query_and_add(0xABC << 40 | 1, "", add="never")
    assert [m.key for m in matches] == [2, 4] and url == "https://c/"


@pytest.mark.parametrize(
    ("other", "word"),
    [
        (dict(k=2, spec="16,16,16,16"), "k=3"),
        (dict(k=3, spec="13,13,13,13,12"), "layout="),
        (dict(k=3, spec="16,16,16,16", version=-5), f"fingerprint_version={FINGERPRINT_VERSION}"),
    ],
)
def test_mismatched_index_is_refused(redis_client, other, word):
    make_index(redis_client, TableLayout.parse("16,16,16,16", 3))
    layout = TableLayout.parse(other["spec"], other["k"])
    index = RedisSimhashIndex(
        redis_client,
        "test:simhash",
        layout,
        fingerprint_version=other.get("version", FINGERPRINT_VERSION),
    )
    with pytest.raises(ValueError, match="was built with " + word) as info:
        index.open()
    assert "SIMHASH_RESET" in str(info.value)


def test_reset_clears_and_close_keeps(redis_url, redis_client):
    backend = backend_for(redis_url)
    backend.open("spider")
    assert backend.query_and_add(sig(0xFF), "https://a/") is None
    backend.close()
    keys = ("spider:simhash:meta", "spider:simhash:log:0", "spider:simhash:urls")
    assert redis_client.exists(*keys) == 3
    again = backend_for(redis_url)
    assert again.open("spider") == 1
    assert again.query_and_add(sig(0xFE), "https://b/") == Duplicate("https://a/", 0xFF, 1)
    again.close()
    # a different k is refused, unless reset, which clears first
    with pytest.raises(BackendError, match="k=3"):
        backend_for(redis_url, max_distance=2).open("spider")
    fresh = backend_for(redis_url, max_distance=2, reset=True)
    assert fresh.open("spider") == 0
    assert fresh.query_and_add(sig(0xFE), "https://c/") is None
    assert len(fresh) == 1
    fresh.close()
    assert len(fresh) == 1


def test_replaced_index_is_noticed_mid_crawl(redis_url, redis_client):
    backend = backend_for(redis_url)
    backend.open("spider")
    backend_for(redis_url, max_distance=2, reset=True).open("spider")
    with pytest.raises(BackendError, match="replaced"):
        backend.query_and_add(sig(1), "https://a/")


# -- concurrency ------------------------------------------------------------------


def _pairs(n: int, seed: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """n pairs of fingerprints within 3 bits (0 included), as (pair, fp) items."""
    left, right = _groups(n, 2, seed)
    return left, right


def _groups(n: int, size: int, seed: int) -> list[list[tuple[int, int]]]:
    """n groups of ``size`` fingerprints within 3 bits of each other (0 included;
    with more than two, within 1 bit of the group's first), as one list of
    (group, fp) items per member."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False).tolist()
    members = [list(enumerate(first))]
    most = 3 if size == 2 else 1
    for _ in range(size - 1):
        members.append(
            [(g, flip(fp, rng, int(rng.integers(0, most + 1)))) for g, fp in enumerate(first)]
        )
    return members


def _insert_all(url: str, items: list[tuple[int, int]], start, results) -> None:
    redis = import_redis()
    client = redis.Redis.from_url(url)
    index = make_index(client, TableLayout.parse("16,16,16,16", 3), expected_size=256)
    start.wait()
    for pair, fp in items:
        # every sketch the same: each near pair is confirmed on the client
        _, _, key = index.query_and_add(fp, str(pair), sketch=SKETCH)
        results.put((pair, key))
    results.put(("conflicts", index.counts["conflict_count"]))
    client.close()


def _check_pairs(n: int, results: list[tuple[int, int]]) -> int:
    """Exactly one member of each group kept; returns the conflicts read again."""
    kept = [0] * n
    conflicts = 0
    for pair, key in results:
        if pair == "conflicts":
            conflicts += key
        else:
            kept[pair] += key > 0
    assert kept == [1] * n
    return conflicts


def test_concurrent_threads_keep_each_pair_once(redis_url):
    import queue

    left, right = _pairs(400, seed=11)
    out: queue.Queue = queue.Queue()
    start = threading.Barrier(4)
    # both members of a pair are sent at about the same moment: the race a
    # probe-then-insert without the conditional insert loses
    work = [left[:200], right[:200], left[200:], right[200:]]
    threads = [threading.Thread(target=_insert_all, args=(redis_url, w, start, out)) for w in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    results = [out.get_nowait() for _ in range(out.qsize())]
    assert len(results) == 800 + 4
    _check_pairs(400, results)


def test_concurrent_processes_keep_each_group_once(redis_url):
    """Four processes each send one member of the same 500 near-duplicate groups
    at the same moment: every group is kept exactly once (0 pages kept twice);
    the conditional insert had to send some writers back to read again."""
    n, procs_n = 500, 4
    results = _in_processes(_insert_all, redis_url, _groups(n, procs_n, seed=12))
    conflicts = _check_pairs(n, results)
    print(f"{procs_n} processes, {n} groups: each kept once, {conflicts} inserts read again")


def _in_processes(target, redis_url: str, members: list) -> list:
    """Run ``target(redis_url, member, start, out)`` in a process per member, all
    starting at once; return what they put in ``out`` (a result per item, then one)."""
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    start, out = ctx.Barrier(len(members)), ctx.Queue()
    procs = [ctx.Process(target=target, args=(redis_url, member, start, out))
             for member in members]  # fmt: skip
    for proc in procs:
        proc.start()
    results = [out.get(timeout=120) for _ in range(sum(map(len, members)) + len(members))]
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    return results


def test_insert_after_a_concurrent_change_reads_again(redis_client):
    """A near-duplicate stored by another writer between this probe's read and its
    insert: the insert is refused (the bucket grew) and the second read finds it."""
    other = make_index(redis_client, TableLayout.parse("16,16,16,16", 3), expected_size=256)

    class Interleaved(RedisSimhashIndex):
        raced = False

        def _confirmed(self, candidates, sketch):
            if not self.raced:
                self.raced = True
                other.query_and_add(0xABCDEF, "https://other/", sketch=SKETCH)
            return super()._confirmed(candidates, sketch)

    index = Interleaved(redis_client, "test:simhash", TableLayout.parse("16,16,16,16", 3),
                        expected_size=256)  # fmt: skip
    index.open()
    matches, url, key = index.query_and_add(0xABCDEE, "https://mine/", sketch=SKETCH)
    assert [m.fingerprint for m in matches] == [0xABCDEF] and url == "https://other/"
    assert key == 0 and index.counts["conflict_count"] == 1 and len(index) == 1


def test_pages_sharing_a_fingerprint_cost_a_bounded_call(redis_client):
    """3,000 distinct pages with one fingerprint (sketches that never confirm each
    other): none is dropped, each call stays short (SLOWLOG), the buckets stop
    growing at SAME_FINGERPRINT_CAP entries, and a copy of a stored one is found."""
    from scrapy_simhash.backends.redis_index import SAME_FINGERPRINT_CAP

    index = make_index(redis_client, TableLayout.plan(6, 100_000), expected_size=100_000)
    rng = np.random.default_rng(4)
    fp = int(rng.integers(0, 2**63))
    sketches = [rng.integers(1, 256, SKETCH_BINS, dtype=np.uint8).tobytes() for _ in range(3000)]
    redis_client.config_set("slowlog-log-slower-than", 0)
    redis_client.slowlog_reset()
    redis_client.config_set("slowlog-max-len", 100_000)
    durations: list[int] = []
    for i, sketch in enumerate(sketches):
        matches, _, _ = index.query_and_add(fp, f"https://e/{i}", sketch=sketch)
        assert matches == []  # never dropped, examined or not
        if i % 500 == 499:
            durations += [e["duration"] for e in redis_client.slowlog_get(100_000)]
            redis_client.slowlog_reset()
    redis_client.config_set("slowlog-log-slower-than", 10_000)
    # the script that scanned them all took 192 ms a call at 4,000; here the calls
    # stay short (a rare longer one is the shared machine descheduling Redis)
    assert len(durations) > 2 * 2900  # a metadata read and a GETRANGE of sketches a page
    assert np.percentile(durations, 99) <= 5000, sorted(durations)[-20:]  # microseconds
    slowest = max(durations)
    assert len(index) == SAME_FINGERPRINT_CAP
    assert index.counts["crowded_count"] == 3000 - SAME_FINGERPRINT_CAP
    assert redis_client.strlen(index.log_block(0)) == SAME_FINGERPRINT_CAP * 8
    copy, _, _ = index.query_and_add(fp ^ 1, "", add="never", sketch=sketches[3])
    assert [m.key for m in copy] == [4]
    print(f"3,000 pages sharing a fingerprint: slowest Redis command {slowest} us")


# -- the backend: connection and failures -------------------------------------------------


def backend_for(url: str, **overrides) -> RedisBackend:
    overrides.setdefault("max_distance", 3)  # the layouts these tests name are k=3's
    config = SimhashSettings(backend="redis", redis_url=url, **overrides)
    return RedisBackend.from_config(config)


def test_unreachable_at_startup_names_the_url():
    from tests.fixtures_redis import _free_port

    url = f"redis://:secret@127.0.0.1:{_free_port()}/0"
    config = SimhashSettings(backend="redis", redis_url=url)
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"Cannot reach Redis at redis://:\*\*\*@127\.0\.0\.1"):
        RedisBackend.from_config(config)
    assert time.monotonic() - started < 0.5  # one attempt, no retries


def _wait_for_retry(backend: RedisBackend) -> None:
    """Sleep out the hold-off after a failure (1 s after the first)."""
    time.sleep(max(0.0, backend._retry_at - time.monotonic()))


def test_redis_stopped_pages_queued_and_indexed_on_return(redis_server_factory, caplog):
    """Killed mid-crawl: each failing call is bounded by the timeout, later ones fail
    at once (hold-off); pages kept meanwhile are indexed when Redis is back."""
    server = redis_server_factory("--appendonly", "yes", "--appendfsync", "always")
    backend = backend_for(server.url, redis_timeout=0.3)
    backend.open("spider")
    assert backend.query_and_add(sig(0xABC), "https://a/") is None
    server.kill()  # SIGKILL: the append-only file has every write (fsync always)
    timings = []
    outage = [(0xABD, "https://b/"), (0xF0F0F0, "https://c/"), (0xF0F0F1, "https://d/")]
    for fp, url in outage:
        started = time.monotonic()
        with pytest.raises(BackendError, match="Redis at redis://127.0.0.1.*queued"):
            backend.query_and_add(sig(fp), url)
        timings.append(time.monotonic() - started)
    assert max(timings) < 0.3 + 0.3 and max(timings[1:]) < 0.05, timings  # hold-off: no call
    assert backend.stats()["redis/queue_length"] == 3
    server.start()  # the append-only file brings the index back
    _wait_for_retry(backend)
    with caplog.at_level("WARNING", logger="scrapy_simhash.backends.redis"):
        assert backend.query_and_add(sig(0x123456789), "https://e/") is None
    assert "answers again" in caplog.text
    stats = backend.stats()
    # b duplicates a (stored before), d duplicates c (kept in the same outage): both
    # were kept by the crawl and are only counted; c is indexed with its URL
    assert stats["redis/reindexed_count"] == 1 and stats["redis/reindexed_duplicate_count"] == 2
    assert stats["redis/queue_length"] == 0
    assert backend.query_and_add(sig(0xF0F0F2), "https://f/", add="never") == Duplicate(
        "https://c/", 0xF0F0F0, 1
    )
    assert len(backend) == 3  # a, c, e
    backend.close()
    assert backend.stats()["redis/unindexed_count"] == 0


def test_redis_hung_calls_bounded_and_the_lost_answer_not_stored_twice(redis_server_factory):
    """SIGSTOP: a call waits at most the timeout; the page whose answer never came was
    stored by Redis once it resumed, and its re-indexing finds it (not stored twice)."""
    server = redis_server_factory()
    backend = backend_for(server.url, redis_timeout=0.25)
    backend.open("spider")
    assert backend.query_and_add(sig(0x1), "https://a/") is None
    server.pause()
    try:
        started = time.monotonic()
        with pytest.raises(BackendError, match="Timeout"):
            backend.query_and_add(sig(0xFF00FF00), "https://b/")
        hung = time.monotonic() - started
        assert 0.2 <= hung < 0.25 + 0.3, hung  # not redis-py's 3 retries, nor 30 s
        _wait_for_retry(backend)
        started = time.monotonic()
        with pytest.raises(BackendError):  # reconnects (the kernel accepts), then times out
            backend.query_and_add(sig(0x0F0F0F0F0F), "https://c/")
        assert time.monotonic() - started < 0.25 + 0.3
    finally:
        server.resume()
    _wait_for_retry(backend)
    assert backend.query_and_add(sig(0x7777777777), "https://d/") is None
    stats = backend.stats()
    assert stats["redis/queued_count"] == 2 and stats["redis/queue_length"] == 0
    # b's read timed out (its insert was never sent) and c's reconnection timed out in
    # its handshake: both are stored now, once; had an insert run after its answer was
    # lost, re-indexing would find the page under its own URL (already stored)
    stored = stats.get("redis/reindexed_already_stored_count", 0)
    assert stored + stats.get("redis/reindexed_count", 0) == 2, stats
    assert len(backend) == 4  # a, b, c, d: each once
    backend.close()


@pytest.mark.parametrize("url_format", ["full", "hash"])
def test_redis_full_checks_but_queues_until_there_is_room(
    redis_server_factory, caplog, url_format
):
    """maxmemory + noeviction: pages are still checked against the stored ones; new
    ones wait in the queue and are stored once memory is freed."""
    server = redis_server_factory("--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
    backend = backend_for(server.url, redis_urls=url_format)
    backend.open("spider")
    assert backend.query_and_add(sig(0xAAAA), "https://a/") is None
    client = import_redis().Redis.from_url(server.url)
    filled = fill_up(client)
    with caplog.at_level("WARNING", logger="scrapy_simhash.backends.redis"):
        assert backend.query_and_add(sig(0xAAAB), "https://b/") is not None  # checked
        assert backend.query_and_add(sig(0x5555_0000_0000), "https://c/") is None  # kept
        # kept: c is not stored, so d cannot be found to repeat it
        assert backend.query_and_add(sig(0x5555_0000_0001), "https://d/") is None
    assert "out of memory" in caplog.text
    stats = backend.stats()
    assert stats["redis/unstored_count"] == 2 and stats["redis/queue_length"] == 2
    assert len(backend) == 1
    make_room(client, filled)
    time.sleep(max(0.0, backend._flush_after - time.monotonic()))
    assert backend.query_and_add(sig(0x9999_9999_0000_0000), "https://e/") is None
    stats = backend.stats()
    assert stats["redis/reindexed_count"] == 1 and stats["redis/reindexed_duplicate_count"] == 1
    assert len(backend) == 3
    found = backend.query_and_add(sig(0x5555_0000_0002), "https://f/", add="never")
    assert found.url == backend.index.url_token("https://c/")
    backend.close()
    client.close()


def test_queue_is_bounded_and_what_is_left_is_reported(redis_server_factory, caplog):
    server = redis_server_factory()
    backend = backend_for(server.url, redis_timeout=0.2, redis_queue=2)
    backend.open("spider")
    server.kill()
    for i in range(4):
        with pytest.raises(BackendError):
            backend.query_and_add(sig(i << 20), f"https://{i}/")
    with caplog.at_level("WARNING", logger="scrapy_simhash.backends.redis"):
        backend.close()
    stats = backend.stats()
    assert stats["redis/queued_count"] == 2 and stats["redis/queue_overflow_count"] == 2
    assert stats["redis/unindexed_count"] == 2
    assert "2 pages kept while Redis" in caplog.text and "never indexed" in caplog.text


def test_timeout_settings_override_redis_params():
    from scrapy_simhash.backends.redis import connection_params

    params = connection_params({"socket_timeout": 30, "db": 2, "retry_on_timeout": True}, 0.4)
    assert params["socket_timeout"] == params["socket_connect_timeout"] == 0.4
    assert params["retry"].get_retries() == 0 and params["db"] == 2
    assert "retry_on_timeout" not in params


def test_backend_duplicate_names_the_nearest(redis_url):
    backend = backend_for(redis_url)
    backend.open("spider")
    assert backend.query_and_add(sig(0b1111), "https://a/") is None
    assert backend.query_and_add(sig(0b1111 << 20), "https://b/") is None
    assert backend.query_and_add(sig(0b0111 | (0b1111 << 40)), "https://c/", add="never") is None
    assert backend.query_and_add(sig(0b0111), "https://d/", add="never") == Duplicate(
        "https://a/", 0b1111, 1
    )
    assert backend.query_and_add(sig(0b0011), "https://e/", add="always") == Duplicate(
        "https://a/", 0b1111, 2
    )
    assert backend.query_and_add(sig(0b0001), "https://f/") == Duplicate("https://e/", 0b0011, 1)
    assert len(backend) == 3
    backend.close()


def test_missing_redis_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)
    # a hint that works where the package is not published: the package itself, or the
    # checkout's extra
    with pytest.raises(ImportError, match=r"pip install 'redis>=5\.0' 'hiredis>=3\.0' \(or, in "
                                          r"a checkout of scrapy-simhash: pip install "
                                          r"'\.\[redis\]'\)"):
        import_redis()


def test_redis_params_and_key_template(redis_url, redis_client):
    """REDIS_PARAMS reach the client (here the database); the template names the keys."""
    backend = RedisBackend.from_config(
        SimhashSettings(
            backend="redis",
            redis_url=redis_url.rsplit("/", 1)[0],  # a database in the URL would win
            redis_params={"db": 3, "decode_responses": True},
            redis_key="crawl:%(spider)s:near",
            max_distance=3,
        )
    )
    backend.open("news")
    assert backend.query_and_add(sig(0x77), "https://a/") is None
    assert backend.query_and_add(sig(0x76), "https://b/") == Duplicate("https://a/", 0x77, 1)
    backend.close()
    assert redis_client.dbsize() == 0
    db3 = import_redis().Redis.from_url(redis_url.rsplit("/", 1)[0] + "/3")
    assert sorted(db3.keys()) == [
        b"crawl:news:near:log:0", b"crawl:news:near:meta", b"crawl:news:near:sketches:0",
        b"crawl:news:near:urls",
    ]
    db3.close()


def test_auto_layout_joins_whatever_the_expected_size(redis_url):
    small = backend_for(redis_url, expected_pages=1000)  # plans 16,16,16,16
    small.open("spider")
    small.query_and_add(sig(0xF0F0), "https://a/")
    large = backend_for(redis_url, expected_pages=10**8)  # would plan more tables
    assert large.open("spider") == 1
    assert large.index.layout.spec == "16,16,16,16"
    assert large.query_and_add(sig(0xF0F1), "https://b/") == Duplicate("https://a/", 0xF0F0, 1)
    explicit = backend_for(redis_url, layout="13,13,13,13,12")
    with pytest.raises(BackendError, match="layout="):
        explicit.open("spider")
    for backend in (small, large, explicit):
        backend.close()


def test_index_info_and_clear_for_tools(redis_client):
    from scrapy_simhash.backends.redis_index import clear_index, index_info

    assert index_info(redis_client, "tool:simhash") is None
    layout = TableLayout.parse("16,16,16,16/12,12,12,12", 3)
    index = make_index(redis_client, layout, prefix="tool:simhash", expected_size=1000)
    index.query_and_add(5, "https://a/", sketch=SKETCH)
    redis_client.set("tool:simhash:unrelated", 1)
    info = index_info(redis_client, "tool:simhash")
    assert info["k"] == 3 and info["size"] == 1 and info["layout"] == layout.to_dict()
    assert info["fingerprint_version"] == FINGERPRINT_VERSION
    assert clear_index(redis_client, "tool:simhash") == 4  # meta, urls, log:0, sketches:0
    assert redis_client.keys("tool:*") == [b"tool:simhash:unrelated"]


@pytest.mark.parametrize("url_format", ["full", "hash"])
def test_read_index_pages_reads_the_log(redis_client, url_format):
    """The command line's reader: every page in key order, with its sketch and URL
    (token), pages stored by the script and by a bulk load alike."""
    from scrapy_simhash.backends.redis_index import read_index_pages

    layout = TableLayout.parse("16,16,16,16", 3)
    index = RedisSimhashIndex(redis_client, "read:simhash", layout, expected_size=1000,
                              url_format=url_format)  # fmt: skip
    index.open()
    other = bytes(reversed(SKETCH))
    index.query_and_add(0xF00, "https://a/", sketch=SKETCH)
    index.add_many(np.array([0xABC << 30, 0x123 << 50], dtype=np.uint64),
                   ["https://b/", "https://c/"], sketches=[other, SKETCH])  # fmt: skip
    index.query_and_add(0x777 << 20, "https://d/")  # no sketch
    pages = read_index_pages(redis_client, "read:simhash")
    assert pages.k == 3
    assert pages.fingerprints.tolist() == [0xF00, 0xABC << 30, 0x123 << 50, 0x777 << 20]
    assert [row.tobytes() for row in pages.sketches] == [SKETCH, other, SKETCH, bytes(SKETCH_BINS)]
    assert pages.urls == [index.url_token(u) for u in ("https://a/", "https://b/", "https://c/",
                                                       "https://d/")]  # fmt: skip


def test_read_index_pages_in_bounded_commands(redis_client, monkeypatch):
    """The reader never reads a whole log block or the URL hash in one command (no
    call grows with the index, on a Redis the crawls share): GETRANGEs of
    READ_CHUNK bytes and HSCAN; and UNLINK clears it."""
    from scrapy_simhash.backends import redis_index
    from scrapy_simhash.backends.redis_index import clear_index, read_index_pages

    monkeypatch.setattr(redis_index, "READ_CHUNK", 40)  # five fingerprints a GETRANGE
    layout = TableLayout.parse("16,16,16,16", 3)
    index = RedisSimhashIndex(redis_client, "chunk:simhash", layout, expected_size=1000)
    index.open()
    fps = np.arange(1, 24, dtype=np.uint64) << np.uint64(40)
    urls = [f"https://e/{n}" for n in range(len(fps))]
    index.add_many(fps, urls, sketches=[SKETCH] * len(fps))
    redis_client.config_set("slowlog-log-slower-than", 0)
    redis_client.slowlog_reset()
    pages = read_index_pages(redis_client, "chunk:simhash")
    calls = [e["command"].split()[:2] for e in redis_client.slowlog_get(1000)]
    redis_client.config_set("slowlog-log-slower-than", 10000)
    commands = [c[0].upper() for c in calls]
    assert pages.fingerprints.tolist() == fps.tolist() and pages.urls == urls
    assert all(row.tobytes() == SKETCH for row in pages.sketches)
    whole = [c for c in calls if c[0].upper() in (b"GET", b"HGETALL", b"LRANGE")]
    assert whole == [[b"HGETALL", b"chunk:simhash:meta"]]  # the metadata, a few fields
    assert b"HSCAN" in commands
    assert commands.count(b"GETRANGE") >= 5  # 23 fingerprints, 5 a command
    assert clear_index(redis_client, "chunk:simhash") == 4
    assert redis_client.keys("chunk:*") == []


def test_redis_info_and_clear_commands(redis_url, redis_client):
    """The console script shows a shared index and deletes it only with --yes."""
    import json
    import subprocess

    layout = TableLayout.parse("16,16,16,16", 3)
    make_index(redis_client, layout, prefix="cli:simhash", expected_size=1000).query_and_add(
        7, "https://a/"
    )

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "scrapy_simhash", *args, "--url", redis_url],
            capture_output=True, text=True, timeout=60,
        )

    info = run("redis-info", "--key", "cli:simhash")
    assert info.returncode == 0, info.stderr
    meta = json.loads(info.stdout)
    assert meta["k"] == 3 and meta["size"] == 1 and meta["layout"] == layout.to_dict()
    refused = run("redis-clear", "--key", "cli:simhash")
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert redis_client.exists("cli:simhash:meta")
    cleared = run("redis-clear", "--key", "cli:simhash", "--yes")
    assert cleared.returncode == 0 and "1 pages" in cleared.stdout
    assert redis_client.keys("cli:*") == []
    assert "no simhash index" in run("redis-info", "--key", "cli:simhash").stdout
    down = subprocess.run(
        [sys.executable, "-m", "scrapy_simhash", "redis-info", "--key", "x",
         "--url", "redis://127.0.0.1:1"], capture_output=True, text=True, timeout=60,
    )
    assert down.returncode == 1 and "not reachable" in down.stderr


# -- start-up checks and a vanished index ----------------------------------------------


@pytest.mark.parametrize(
    ("denied", "named"),
    [("-evalsha", "EVALSHA"), ("-hset", "HSET"), ("-hmget", "HMGET"), ("-eval", "EVAL")],
)
def test_missing_permission_is_named_at_start(redis_server_factory, denied, named):
    """A Redis ACL user that may not run a command the backend needs is refused at
    open, in one line naming the command and the user (not page after page)."""
    server = redis_server_factory()
    admin = import_redis().Redis.from_url(server.url)
    admin.acl_setuser("crawler", enabled=True, passwords=["+pw"], keys=["*"],
                      commands=["+@all", denied])  # fmt: skip
    url = server.url.replace("redis://", "redis://crawler:pw@")
    backend = backend_for(url)
    with pytest.raises(BackendError) as info:
        backend.open("spider")
    message = str(info.value)
    assert "\n" not in message
    assert "Redis user 'crawler'" in message and f"may not run {named}" in message, message
    assert "redis://crawler:***@" in message
    backend.client.close()
    # allowed everything: it opens and works
    admin.acl_setuser("crawler", enabled=True, commands=["+@all"])
    backend = backend_for(url)
    backend.open("spider")
    assert backend.query_and_add(sig(0xF0), "https://a/") is None
    backend.close()
    admin.close()


@pytest.mark.parametrize("old", [1, 3])
def test_index_of_an_older_format_is_refused_clearly(redis_client, redis_url, old):
    """Formats 1 and 2 (a hash per table), 3 (buckets in Redis): refused, saying to clear."""
    redis_client.hset("spider:simhash:meta", mapping={
        "k": "3", "format": str(old), "size": "10", "signature": "x", "bucket_bits": "16",
        "tables": '"one_slot"' if old == 3 else "",
    })  # fmt: skip
    if old == 1:
        redis_client.hdel("spider:simhash:meta", "tables")
    with pytest.raises(BackendError, match=rf"older scrapy-simhash \(format {old};.*SIMHASH_RESET"):
        backend_for(redis_url).open("spider")
    backend = backend_for(redis_url, reset=True)
    assert backend.open("spider") == 0
    backend.close()


def test_index_lost_with_pages_queued_is_rebuilt_from_them(redis_server_factory, caplog):
    """Redis restarts empty (no persistence) while pages wait in the queue: the
    loss is detected, counted and reported at close, and the queued pages are
    indexed into the index created again."""
    server = redis_server_factory()
    backend = backend_for(server.url, redis_timeout=0.3)
    backend.open("spider")
    assert backend.query_and_add(sig(0xABC), "https://a/") is None
    server.kill()
    for fp, url in [(0xF0F0F0, "https://b/"), (0xF0F0F1, "https://c/")]:
        with pytest.raises(BackendError):
            backend.query_and_add(sig(fp), url)
    server.start()  # empty: the index is gone
    _wait_for_retry(backend)
    with caplog.at_level("WARNING", logger="scrapy_simhash.backends.redis"):
        assert backend.query_and_add(sig(0x123 << 40), "https://d/") is None
        # b was re-indexed into the new index: a copy of it is found
        assert backend.query_and_add(sig(0xF0F0F2), "https://e/", add="never") == Duplicate(
            "https://b/", 0xF0F0F0, 1
        )
        # a is gone with the old index
        assert backend.query_and_add(sig(0xABD), "https://f/", add="never") is None
        backend.close()
    stats = backend.stats()
    assert stats["redis/index_lost_count"] == 1
    assert stats["redis/reindexed_count"] == 1 and stats["redis/reindexed_duplicate_count"] == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("vanished" in m and "starting it again empty" in m for m in errors), errors
    assert any("vanished during the crawl" in m for m in errors), errors


def test_a_log_shorter_than_what_was_read_is_read_again(redis_client):
    """A failover to a replica that lagged: the same index (epoch), fewer pages than this
    process had read. Its tables are read again from the log there, and the next page
    gets the next key of that log (not one this process had seen)."""
    index = make_index(redis_client, TableLayout.parse("16,16,16,16", 3), expected_size=256)
    for i, fp in enumerate((0xA << 40, 0xB << 20, 0xC)):
        index.query_and_add(fp, f"https://{i}/")
    redis_client.hset(index.meta_key, "size", 1)  # the replica had the first page only
    redis_client.set(index.log_block(0), redis_client.getrange(index.log_block(0), 0, 7))
    assert index.query_and_add(0xD << 50, "https://d/") == ([], None, 2)
    assert index.counts["log_rewound_count"] == 1 and index.synced == 2
    assert index.query(0xC) == []  # lost with the master
    assert [m.key for m in index.query(0xD << 50)] == [2]
    assert [m.key for m in index.query(0xA << 40)] == [1]


def test_index_recreated_by_another_process_is_noticed(redis_url, redis_client):
    """FLUSHALL, then another process creates the index again before this one calls:
    the same settings give the same signature, the epoch tells them apart."""
    first = backend_for(redis_url)
    first.open("spider")
    assert first.query_and_add(sig(0xAAA), "https://a/") is None
    redis_client.flushall()
    second = backend_for(redis_url)
    assert second.open("spider") == 0
    assert second.query_and_add(sig(0xBBB << 30), "https://b/") is None
    assert first.query_and_add(sig(0xBBA << 30), "https://c/") == Duplicate(
        "https://b/", 0xBBB << 30, 1
    )
    assert first.stats()["redis/index_lost_count"] == 1
    assert "redis/index_lost_count" not in second.stats()
    first.close()
    second.close()


def test_a_process_joining_reads_the_log_and_answers_as_brute_force(redis_url, redis_client):
    """Four processes send the members of 300 near-duplicate groups at once: each group
    is kept once; a process opening the index afterwards reads the log into its tables,
    and its matches are brute force's over the log."""
    n = 300
    _check_pairs(n, _in_processes(_insert_all, redis_url, _groups(n, 4, seed=21)))
    index = make_index(redis_client, TableLayout.parse("16,16,16,16", 3), expected_size=256)
    assert index.synced == n
    stored = np.frombuffer(redis_client.get(index.log_block(0)), dtype=">u8").astype(np.uint64)
    assert len(stored) == n
    rng = np.random.default_rng(22)
    for fp in [int(stored[i]) for i in range(0, n, 7)] + rng.integers(
            0, 2**64, size=20, dtype=np.uint64).tolist():  # fmt: skip
        fp = flip(int(fp), rng, int(rng.integers(0, 6)))
        want = {i + 1 for i in np.flatnonzero(np.bitwise_count(stored ^ np.uint64(fp)) <= 3)}
        matches, _, _ = index.query_and_add(fp, add="never")
        assert {m.key for m in matches} == want
