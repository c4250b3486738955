import os
import struct
import zlib

import numpy as np
import pytest

from scrapy_simhash.index.store import MAGIC, CorruptStateError, RecordLog

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
