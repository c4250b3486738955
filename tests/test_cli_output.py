"""Where output goes (`-o` to regular files, FIFOs, symlinks, devices) and
`salvage` of a damaged state file, through the console script."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading

import numpy as np
import pytest

from tests.test_cli import make_state, run, table

FPS = "1\n3\n7\n1000\n"


def test_output_to_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    run("find-all", "-d", 2, "-o", fifo, "--simhash-cpp", input=FPS, check=0)
    reader.join(timeout=60)
    assert got == ["[1, 3]\n[1, 7]\n[3, 7]\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary file left


def test_output_through_a_symlink_keeps_the_link(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    run("find-all", "-d", 2, "-o", link, input=FPS, check=0)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert table(target.read_text())[1] == [
        ["0000000000000001", "0000000000000003", "1"],
        ["0000000000000001", "0000000000000007", "2"],
        ["0000000000000003", "0000000000000007", "1"]]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640  # the file's mode is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real.txt"]


def test_output_to_a_device_stays_a_device(tmp_path):
    if os.geteuid() == 0:
        # a private null device first: a bug would replace it, not the system's
        node = tmp_path / "null"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        run("fingerprint", "-", "-o", node, input='{"html": "<p>hi</p>"}\n', check=0)
        assert stat.S_ISCHR(os.lstat(node).st_mode)
    run("find-all", "-o", os.devnull, input=FPS, check=0)
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)


def test_regular_output_is_replaced_whole(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("previous\n")
    run("find-all", "-o", out, "--strict", input="1\nnot a fingerprint\n", check=1)
    assert out.read_text() == "previous\n"  # a failed run leaves it alone
    run("find-all", "-o", out, input=FPS, check=0)
    assert out.read_text().startswith("#fingerprint_a")


# -- salvage -------------------------------------------------------------------------------


def record_offsets(path):
    """Byte offsets of the records of a state file (walking their length fields)."""
    import struct

    data = path.read_bytes()
    hlen = struct.unpack_from("<I", data, 12)[0]
    pos, out = 20 + hlen, []
    while pos < len(data):
        out.append(pos)
        pos += 24 + struct.unpack_from("<I", data, pos)[0]
    return out


@pytest.fixture
def state(tmp_path):
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**64, size=1000, dtype=np.uint64)
    urls = [f"http://example.com/{i}" for i in range(1000)]
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    make_state(jobdir / "simhash.seen", fps, urls)
    return jobdir / "simhash.seen", fps, urls


def read_back(path):
    from scrapy_simhash.backends.state import read_state

    got = read_state(path)
    return got.fingerprints.tolist(), got.urls


def test_salvage_skips_a_damaged_record(state, tmp_path):
    path, fps, urls = state
    offsets = record_offsets(path)
    data = bytearray(path.read_bytes())
    data[offsets[10]:offsets[10] + 4] = (500_000).to_bytes(4, "little")  # issue 16's case
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    new = tmp_path / "new.seen"
    proc = run("salvage", path, new, "--json", check=0)
    report = json.loads(proc.stdout)
    assert report["records"] == 999
    assert report["damage"] == [{"offset": offsets[10], "length": offsets[11] - offsets[10]}]
    assert report["bytes_skipped"] == offsets[11] - offsets[10]
    got_fps, got_urls = read_back(new)
    keep = [i for i in range(1000) if i != 10]
    assert got_fps == fps[keep].tolist() and got_urls == [urls[i] for i in keep]
    assert path.read_bytes() == before  # the broken file is only read
    # the new file is a state the other commands use
    assert "999 pages stored" in run("report", new, check=0).stdout


def test_salvage_of_a_zero_tail_keeps_every_record(state, tmp_path):
    path, fps, urls = state
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"\0" * 4096)  # what a power loss can leave
    proc = run("salvage", path.parent, tmp_path / "new.seen", check=0)  # a JOBDIR works too
    assert "1,000 records copied" in proc.stdout
    assert f"byte {size:,} (4,096 bytes)" in proc.stdout
    assert read_back(tmp_path / "new.seen") == (fps.tolist(), urls)


def test_salvage_refusals(state, tmp_path):
    path, _, _ = state
    existing = tmp_path / "exists.seen"
    existing.write_text("keep me")
    proc = run("salvage", path, existing, check=2)
    assert "exists" in proc.stderr and existing.read_text() == "keep me"
    broken = tmp_path / "broken.seen"
    broken.write_bytes(b"\0" * 64)
    proc = run("salvage", broken, tmp_path / "x.seen", check=1)
    assert "cannot salvage" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.seen").exists()
    run("salvage", tmp_path / "missing.seen", tmp_path / "y.seen", check=1)


def test_output_closed_early_exits_141(tmp_path):
    """`| head -1`: exit 141, quietly."""
    from tests.test_cli import SCRIPT

    src = tmp_path / "same.txt"
    src.write_text("".join(f"page-{i}\t000000000000000a\n" for i in range(200_000)))
    proc = subprocess.run(
        ["bash", "-c", f"'{SCRIPT}' clusters -i '{src}' | head -1; echo ${{PIPESTATUS[0]}}"],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.stdout.splitlines() == ["#cluster\tsize\tkey\tfingerprint", "141"]
    assert [line.split(": ")[2] for line in proc.stderr.splitlines()] == ["no sketch column"]
