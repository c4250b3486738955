import errno
import logging
import os
import subprocess
import sys
import struct
import zlib

import numpy as np
import pytest

from scrapy_simhash.index.store import MAGIC, CorruptStateError, LogLockedError, RecordLog, salvage

HEADER = {"format": 1, "fingerprint_version": 3}
RECORDS = [
    (0, 0, b""),
    (2**64 - 1, 7, "https://example.com/é".encode()),
    (0x0123456789ABCDEF, 2**64 - 1, b"x" * 300),
    (42, 1, b""),
]


def write(path, records=RECORDS, header=HEADER):
    with RecordLog.open(path, header) as log:
        for fp, key, payload in records:
            log.append(fp, key, payload)
    return path


def record_size(payload):  # length, fingerprint, key, payload, crc
    return 24 + len(payload)


def test_round_trip(tmp_path):
    path = write(tmp_path / "log")
    contents = RecordLog.read(path)
    assert contents.header == HEADER
    assert contents.fingerprints.dtype == np.uint64 and contents.keys.dtype == np.uint64
    assert contents.fingerprints.tolist() == [r[0] for r in RECORDS]
    assert contents.keys.tolist() == [r[1] for r in RECORDS]
    assert contents.payloads == [r[2] for r in RECORDS]
    assert contents.truncated is False
    header, fps, keys, payloads, truncated = contents  # unpacks like a tuple
    assert len(fps) == len(payloads) == 4


def test_file_layout_is_documented(tmp_path):
    path = write(tmp_path / "log", [(5, 6, b"ab")])
    data = path.read_bytes()
    magic, version, hlen, hcrc = struct.unpack_from("<8sIII", data)
    assert (magic, version) == (MAGIC, 1)
    header = data[20:20 + hlen]
    assert zlib.crc32(header) == hcrc
    body = data[20 + hlen:]
    assert struct.unpack_from("<IQQ", body) == (2, 5, 6)
    assert body[20:22] == b"ab"
    assert struct.unpack_from("<I", body, 22)[0] == zlib.crc32(body[:22])
    assert len(body) == 26


def test_reopen_appends_and_keeps_header(tmp_path):
    path = write(tmp_path / "log")
    with RecordLog.open(path, {"other": True}) as log:
        assert log.header == HEADER
        log.append(9, 9, b"new")
        log.append_many(np.array([10, 11], np.uint64), np.array([1, 2], np.uint64), [b"a", b""])
    contents = RecordLog.read(path)
    assert contents.fingerprints.tolist()[-3:] == [9, 10, 11]
    assert contents.payloads[-3:] == [b"new", b"a", b""]


def test_reset_and_empty_file(tmp_path):
    path = write(tmp_path / "log")
    RecordLog.open(path, {"fresh": 1}, reset=True).close()
    contents = RecordLog.read(path)
    assert contents.header == {"fresh": 1} and len(contents.fingerprints) == 0
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    RecordLog.open(empty, HEADER).close()
    assert RecordLog.read(empty).header == HEADER


def test_every_truncation_of_the_last_record(tmp_path):
    path = write(tmp_path / "log")
    data = path.read_bytes()
    last = record_size(RECORDS[-1][2])
    for cut in range(1, last):
        part = tmp_path / f"cut{cut}"
        part.write_bytes(data[:-cut])
        contents = RecordLog.read(part)
        assert contents.truncated is True
        assert contents.fingerprints.tolist() == [r[0] for r in RECORDS[:-1]]
        # reopening cuts the partial record off, then appends after the intact ones
        with RecordLog.open(part, HEADER) as log:
            log.append(77, 78)
        contents = RecordLog.read(part)
        assert contents.truncated is False
        assert contents.keys.tolist() == [r[1] for r in RECORDS[:-1]] + [78]


def test_torn_last_record_is_a_truncation(tmp_path):
    path = write(tmp_path / "log")
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # garbage inside the last record, which ends the file
    path.write_bytes(bytes(data))
    contents = RecordLog.read(path)
    assert contents.truncated and len(contents.keys) == len(RECORDS) - 1


def test_corruption_in_the_middle(tmp_path):
    path = write(tmp_path / "log")
    data = bytearray(path.read_bytes())
    hlen = struct.unpack_from("<I", data, 12)[0]
    first = 20 + hlen
    second = first + record_size(RECORDS[0][2])
    data[second + 10] ^= 0x01  # a bit of the second record's fingerprint
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStateError) as info:
        RecordLog.read(path)
    assert info.value.path == os.fspath(path)
    assert info.value.offset == second
    assert str(path) in str(info.value) and "checksum" in info.value.reason
    with pytest.raises(CorruptStateError):
        RecordLog.open(path, HEADER)
    assert bytes(data) == path.read_bytes()  # nothing lost or rewritten


def test_impossible_length(tmp_path):
    path = write(tmp_path / "log")
    data = bytearray(path.read_bytes())
    hlen = struct.unpack_from("<I", data, 12)[0]
    struct.pack_into("<I", data, 20 + hlen, 0xFFFFFFF0)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStateError, match="impossible record length"):
        RecordLog.read(path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: b"NOTALOG!" + d[8:], "not a simhash record log"),
        (lambda d: d[:8] + struct.pack("<I", 99) + d[12:], "unknown format version 99"),
        (lambda d: d[:21] + b"#" + d[22:], "bad JSON header"),
        (lambda d: d[:10], "shorter than the file header"),
        (lambda d: d[:25], "bad JSON header"),
    ],
)
def test_bad_header(tmp_path, mutate, message):
    path = write(tmp_path / "log")
    path.write_bytes(mutate(path.read_bytes()))
    with pytest.raises(CorruptStateError, match=message) as info:
        RecordLog.read(path)
    assert str(path) in str(info.value)


def test_bad_values(tmp_path):
    with RecordLog.open(tmp_path / "log", HEADER) as log:
        with pytest.raises(ValueError, match="unsigned 64-bit"):
            log.append(-1, 0)
        with pytest.raises(ValueError, match="unsigned 64-bit"):
            log.append(0, 2**64)
        with pytest.raises(ValueError, match="same length"):
            log.append_many([1, 2], [1])
        with pytest.raises(TypeError):
            RecordLog.open(tmp_path / "other", ["not", "a", "dict"])
    assert len(RecordLog.read(tmp_path / "log").keys) == 0


# -- torn tails and corruption (issue 16, item 2) ---------------------------------------

def thousand(tmp_path, name="seen"):
    """A valid 1,000-record log like a crawl's state file; record offsets."""
    path = tmp_path / name
    records = [(i * 0x9E3779B97F4A7C15 % 2**64, i, f"https://example.com/page/{i}".encode())
               for i in range(1000)]
    write(path, records)
    data = path.read_bytes()
    offsets = [20 + struct.unpack_from("<I", data, 12)[0]]
    for _, _, payload in records:
        offsets.append(offsets[-1] + record_size(payload))
    assert offsets[-1] == len(data)
    return path, records, offsets


def test_corrupted_length_field_is_corruption_not_a_torn_tail(tmp_path, caplog):
    """The issue's case: record 10 of 1,000 given length 500,000 used to cut the file
    to record 10 for good; now it is an error naming the offset, and nothing is cut."""
    path, records, offsets = thousand(tmp_path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, offsets[10], 500_000)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStateError) as info:
        RecordLog.read(path)
    assert info.value.offset == offsets[10] and info.value.path == os.fspath(path)
    assert f"valid record follows at byte {offsets[11]}" in info.value.reason
    with caplog.at_level(logging.WARNING), pytest.raises(CorruptStateError):
        RecordLog.open(path, HEADER)
    assert path.read_bytes() == bytes(data)  # never truncated
    assert "Cut" not in caplog.text
    report = salvage(path, tmp_path / "saved")
    assert (report.records, report.damage) == (999, [(offsets[10], offsets[11] - offsets[10])])
    assert report.bytes_skipped == offsets[11] - offsets[10]
    saved = RecordLog.read(tmp_path / "saved")
    assert saved.header == HEADER and not saved.truncated
    assert saved.keys.tolist() == [r[1] for r in records if r[1] != 10]
    assert saved.payloads == [r[2] for r in records if r[1] != 10]


@pytest.mark.parametrize("zeros", [1, 23, 4096, 1 << 20])
def test_zero_tail_is_a_torn_tail(tmp_path, caplog, zeros):
    """A power loss can leave the file longer than its data: zero bytes after the
    last record. They used to make the whole file unreadable (checksum mismatch)."""
    path, records, offsets = thousand(tmp_path)
    with open(path, "ab") as stream:
        stream.write(bytes(zeros))
    contents = RecordLog.read(path)
    assert contents.truncated and len(contents.keys) == 1000
    with caplog.at_level(logging.WARNING, logger="scrapy_simhash.index.store"):
        with RecordLog.open(path, HEADER) as log:
            log.append(1, 1000, b"after")
    assert f"Cut {zeros} zero bytes off {path} at byte {offsets[-1]}" in caplog.text
    contents = RecordLog.read(path)
    assert not contents.truncated and contents.keys.tolist() == list(range(1001))


def test_bad_checksum_mid_file_is_corruption_and_salvageable(tmp_path):
    path, records, offsets = thousand(tmp_path)
    data = bytearray(path.read_bytes())
    data[offsets[500] + 30] ^= 0x20  # one bit of record 500's URL
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStateError, match="record checksum mismatch") as info:
        RecordLog.open(path, HEADER)
    assert info.value.offset == offsets[500]
    assert f"valid record follows at byte {offsets[501]}" in str(info.value)
    assert path.read_bytes() == bytes(data)
    report = salvage(path, tmp_path / "saved")
    assert report.records == 999 and report.damage == [(offsets[500], offsets[501] - offsets[500])]
    assert RecordLog.read(tmp_path / "saved").keys.tolist() == [i for i in range(1000) if i != 500]


def test_damage_in_the_second_last_record_is_corruption(tmp_path):
    path, records, offsets = thousand(tmp_path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, offsets[998], 12)  # a plausible but wrong length
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStateError) as info:
        RecordLog.read(path)
    assert info.value.offset == offsets[998]


@pytest.mark.parametrize("fill", [b"", b"\x00" * 4096])
def test_torn_last_write_at_every_byte_offset(tmp_path, caplog, fill):
    """The last record written up to each of its bytes, then nothing (a crash) or
    zero bytes up to a preallocated extent (a power loss): the record alone is lost."""
    path, records, offsets = thousand(tmp_path)
    data = path.read_bytes()
    for cut in range(offsets[999] + 1, offsets[1000]):
        part = tmp_path / "part"
        part.write_bytes(data[:cut] + fill)
        contents = RecordLog.read(part)
        assert contents.truncated, cut
        assert contents.keys.tolist() == list(range(999)), cut
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="scrapy_simhash.index.store"):
            with RecordLog.open(part, HEADER) as log:
                log.append(*records[999])
        assert f"Cut {cut - offsets[999] + len(fill)} " in caplog.text
        assert part.read_bytes() == data, cut


def test_impossible_length_at_the_end_is_a_torn_tail(tmp_path):
    """Nothing valid after it: indistinguishable from a torn write, so it is cut."""
    path, records, offsets = thousand(tmp_path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, offsets[999], 0xFFFFFFF0)
    path.write_bytes(bytes(data))
    contents = RecordLog.read(path)
    assert contents.truncated and len(contents.keys) == 999


def test_salvage_of_a_clean_log_and_its_refusals(tmp_path):
    path, records, offsets = thousand(tmp_path)
    report = salvage(path, tmp_path / "copy")
    assert (report.records, report.bytes_skipped, report.damage) == (1000, 0, [])
    assert (tmp_path / "copy").read_bytes() == path.read_bytes()
    with pytest.raises(FileExistsError):
        salvage(path, tmp_path / "copy")
    broken = tmp_path / "broken"
    broken.write_bytes(b"NOTALOG!" + path.read_bytes()[8:])
    with pytest.raises(CorruptStateError, match="not a simhash record log"):
        salvage(broken, tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_salvage_resynchronises_after_several_damaged_stretches(tmp_path):
    path, records, offsets = thousand(tmp_path)
    data = bytearray(path.read_bytes())
    data[offsets[3]:offsets[7]] = os.urandom(offsets[7] - offsets[3])  # four records of noise
    struct.pack_into("<I", data, offsets[600], 700_000)
    data += b"\x00" * 100  # and a zero tail
    path.write_bytes(bytes(data))
    report = salvage(path, tmp_path / "saved")
    kept = RecordLog.read(tmp_path / "saved").keys.tolist()
    assert kept == [i for i in range(1000) if i not in (3, 4, 5, 6, 600)]
    assert report.records == 995
    assert [offset for offset, _ in report.damage] == [offsets[3], offsets[600], offsets[1000]]
    assert report.bytes_skipped == (offsets[7] - offsets[3]) + (offsets[601] - offsets[600]) + 100


# -- one writer at a time ----------------------------------------------------------------

HOLD = """
import sys
from scrapy_simhash.index.store import RecordLog
log = RecordLog.open(sys.argv[1], {"format": 1})
log.append(1, 1, b"child")
print("ready", flush=True)
sys.stdin.read()
log.append(2, 2, b"child")
log.close()
"""


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    path = tmp_path / "seen"
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        with pytest.raises(LogLockedError) as info:
            RecordLog.open(path, {"format": 1})
        assert info.value.path == os.fspath(path) and info.value.pid == child.pid
        assert f"{path} is open for writing by process {child.pid}" in str(info.value)
        with pytest.raises(LogLockedError):
            RecordLog.open(path, {"format": 1}, reset=True)  # a reset must not wipe it
        assert isinstance(info.value, OSError)
    finally:
        child.communicate("", timeout=30)
    assert child.returncode == 0
    assert RecordLog.read(path).keys.tolist() == [1, 2]  # the child lost nothing
    with RecordLog.open(path, {"format": 1}) as log:  # released at exit
        log.append(3, 3)
        with pytest.raises(LogLockedError, match="this process"):
            RecordLog.open(path, {"format": 1})
    assert RecordLog.read(path).keys.tolist() == [1, 2, 3]


# -- a full disk ---------------------------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (needs root; skipped elsewhere)."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                          capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield where
    subprocess.run(["umount", "--lazy", str(where)], check=True)


def test_a_failed_append_leaves_no_partial_record(tiny_disk):
    path = tiny_disk / "seen"
    appended = []
    with RecordLog.open(path, HEADER) as log:
        with pytest.raises(OSError) as info:
            for i in range(1000):
                log.append(i, i, bytes([i % 251]) * 3000)
                appended.append(i)
        assert info.value.errno == errno.ENOSPC
        assert 5 < len(appended) < 30
        assert len(RecordLog.read(path).keys) == len(appended)  # no partial record on disk
        for i in range(1000, 1010):  # smaller records still fit; they follow the last good one
            log.append(i, i, b"small")
            appended.append(i)
        with pytest.raises(OSError):
            log.append_many(np.arange(50, dtype=np.uint64), np.arange(50, dtype=np.uint64),
                            [b"y" * 3000] * 50)
    contents = RecordLog.read(path)
    assert not contents.truncated
    assert contents.keys.tolist() == appended
