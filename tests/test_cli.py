"""The ``scrapy-simhash`` console script and ``scrapy simhash``, run in subprocesses."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE, SKETCH_BINS
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.cli import fingerprints
from scrapy_simhash.cli.errors import Problems

BIN = Path(sys.executable).parent
SCRIPT = BIN / "scrapy-simhash"
ROOT = Path(__file__).resolve().parent.parent
U64 = np.uint64


def run(*args, input=None, cwd=None, script=None, check=None):
    """Run the console script; return the CompletedProcess (text mode)."""
    cmd = [str(SCRIPT)] if script is None else script
    if cmd == [str(SCRIPT)] and not SCRIPT.exists():
        cmd = [sys.executable, "-m", "scrapy_simhash"]
    proc = subprocess.run(
        [*cmd, *map(str, args)], input=input, capture_output=True, text=True,
        cwd=cwd, timeout=120,
    )
    if check is not None:
        assert proc.returncode == check, proc.stderr
    return proc


# -- fingerprint lists ---------------------------------------------------------


def planted(n=400, k=3, seed=1):
    """Random fingerprints plus near-duplicates at 1..k bits, and exact repeats."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64, size=n, dtype=U64)
    near = []
    for i in range(0, n, 7):
        bits = rng.choice(64, size=rng.integers(1, k + 2), replace=False)  # some at k+1
        near.append(base[i] ^ np.bitwise_or.reduce(U64(1) << bits.astype(U64)))
    fps = np.concatenate([base, np.array(near, U64), base[:5], base[10:11], base[10:11]])
    # Edge values of the decimal range.
    return np.concatenate([fps, np.array([0, 1, 2**64 - 1, 2**64 - 2], U64)])


def brute_pairs(fps, k):
    uniq, counts = np.unique(fps, return_counts=True)
    d = np.bitwise_count(uniq[:, None] ^ uniq[None, :])
    i, j = np.nonzero(np.triu(d <= k, 1))
    pairs = {(int(uniq[a]), int(uniq[b])) for a, b in zip(i, j)}
    pairs |= {(int(v), int(v)) for v in uniq[counts > 1]}
    return pairs


def brute_clusters(fps, k):
    uniq, counts = np.unique(fps, return_counts=True)
    parent = list(range(len(uniq)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    d = np.bitwise_count(uniq[:, None] ^ uniq[None, :])
    for a, b in zip(*np.nonzero(np.triu(d <= k, 1))):
        parent[find(int(a))] = find(int(b))
    groups = {}
    for a in range(len(uniq)):
        groups.setdefault(find(a), []).append(a)
    # a cluster: linked fingerprints, or one fingerprint seen more than once; members once
    return sorted(sorted(int(uniq[a]) for a in g) for g in groups.values()
                  if len(g) > 1 or counts[g[0]] > 1)


def table(text):
    """Rows of tabular output: the header's names and the tab-separated rows."""
    lines = text.splitlines()
    assert lines[0].startswith("#")
    return lines[0][1:].split("\t"), [line.split("\t") for line in lines[1:]]


def write_fps(path, fps):
    path.write_text("".join(f"{int(v)}\n" for v in fps))


@pytest.mark.parametrize("layout", [[], ["--blocks", "6"], ["--layout", "16,16,16,16"]])
def test_find_all_matches_brute_force(tmp_path, layout):
    fps = planted()
    write_fps(tmp_path / "fps.txt", fps)
    run("find-all", "--input", tmp_path / "fps.txt", "--output", tmp_path / "out.txt",
        "--distance", 3, "--simhash-cpp", *layout, check=0)
    assert (tmp_path / "out.txt").stat().st_mode & 0o044  # readable as umask allows
    lines = (tmp_path / "out.txt").read_text().splitlines()
    got = [tuple(json.loads(line)) for line in lines]
    assert len(got) == len(set(got))  # each pair once
    assert set(got) == brute_pairs(fps, 3)
    assert all(a <= b for a, b in got)
    assert got == sorted(got)
    assert (int(fps[10]), int(fps[10])) in got  # identical fingerprints are pairs too

    # The default output: a header, hex fingerprints, the distance of each pair.
    proc = run("find-all", "--input", tmp_path / "fps.txt", "-d", 3, *layout, check=0)
    names, rows = table(proc.stdout)
    assert names == ["fingerprint_a", "fingerprint_b", "distance"]
    pairs = {(int(a, 16), int(b, 16)) for a, b, _ in rows}
    assert pairs == brute_pairs(fps, 3) and len(rows) == len(pairs)
    assert all(len(a) == len(b) == 16 for a, b, _ in rows)
    assert all(int(d) == (int(a, 16) ^ int(b, 16)).bit_count() for a, b, d in rows)


def test_find_all_stdin_stdout_and_distance(tmp_path):
    fps = planted(seed=2)
    text = "".join(f"{int(v)}\n" for v in fps)
    for k in (0, 1, 4):
        proc = run("find-all", "-d", k, "--simhash-cpp", input=text, check=0)
        got = {tuple(json.loads(line)) for line in proc.stdout.splitlines()}
        assert got == brute_pairs(fps, k)
    # no progress line when stderr is not a terminal; that the pairs are not confirmed
    # (the list has no sketches) is said once
    assert proc.stderr.splitlines() == [
        f"scrapy-simhash: <stdin>: no sketch column: pairs decided on fingerprints alone "
        f"within {k} bits, not confirmed by sketches as a crawl does (`scrapy-simhash "
        "fingerprint` writes them; --no-confirm silences this)"]
    proc = run("find-all", "--no-confirm", "--simhash-cpp", input=text, check=0)
    assert {tuple(json.loads(line)) for line in proc.stdout.splitlines()} == brute_pairs(fps, 3)
    assert proc.stderr == ""  # the default k of fingerprint-only pairs is still 3


def test_clusters_match_brute_force(tmp_path):
    fps = planted(seed=3)
    write_fps(tmp_path / "fps.txt", fps)
    proc = run("clusters", "-i", tmp_path / "fps.txt", "-d", 3, "--simhash-cpp", check=0)
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    assert got == brute_clusters(fps, 3)
    assert [int(fps[10])] in got  # seen three times, no neighbour: listed once
    assert all(len(set(c)) == len(c) for c in got)  # each member once

    proc = run("clusters", "-i", tmp_path / "fps.txt", "-d", 3, "--decimal", check=0)
    names, rows = table(proc.stdout)
    assert names == ["cluster", "size", "fingerprint", "count"]
    members = {}
    for cluster, size, fp, count in rows:
        members.setdefault(int(cluster), []).append(int(fp))
        assert int(count) == int(np.count_nonzero(fps == U64(int(fp))))
    assert sorted(sorted(m) for m in members.values()) == brute_clusters(fps, 3)
    sizes = [len(m) for _, m in sorted(members.items())]
    assert sizes == sorted(sizes, reverse=True)  # largest first


def test_bad_lines_reported_and_skipped(tmp_path):
    path = tmp_path / "fps.txt"
    path.write_bytes(
        b"17\n"
        b"abc\n"                      # 2: not a number
        b"18446744073709551616\n"     # 3: 2**64
        b"\n"                         # 4: blank, ignored
        b"  19 \r\n"                  # 5: spaces and CRLF are fine
        b"-1\n"                       # 6: negative
        b"99999999999999999999999\n"  # 7: too long
        b"16\r\n"
        b"18446744073709551615"       # last line without a newline
    )
    proc = run("find-all", "-i", path, "-d", 2, "--simhash-cpp", check=0)
    assert {tuple(json.loads(line)) for line in proc.stdout.splitlines()} == {
        (16, 17), (16, 19), (17, 19)}
    errors = proc.stderr.splitlines()
    assert [e.split(": ")[1] for e in errors[:4]] == [
        f"{path}:2", f"{path}:3", f"{path}:6", f"{path}:7"]
    assert "out of the unsigned 64-bit range" in errors[1]
    assert "4 bad inputs skipped" in proc.stderr
    assert "Traceback" not in proc.stderr

    out = tmp_path / "out.txt"
    out.write_text("previous\n")
    proc = run("find-all", "-i", path, "-o", out, "--strict", check=1)
    assert proc.stderr.strip() == (
        f"scrapy-simhash: {path}:2: not a fingerprint: 'abc' (16 hex digits or decimal)")
    assert out.read_text() == "previous\n"  # a failed run leaves the output alone
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.txt")]


def test_no_valid_input_and_usage_errors(tmp_path):
    (tmp_path / "bad.txt").write_text("x\ny\n")
    assert "no valid fingerprint" in run("clusters", "-i", tmp_path / "bad.txt", check=1).stderr
    assert "No such file" in run("find-all", "-i", tmp_path / "missing", check=1).stderr
    run("find-all", "--blocks", 3, "--distance", 3, input="1\n", check=2)
    run("find-all", "--blocks", 4, "--layout", "16,16,16,16", input="1\n", check=2)
    run("find-all", "--layout", "1,2", input="1\n", check=2)
    proc = run("find-all", "-o", tmp_path / "no" / "out.txt", input="1\n", check=1)
    assert "No such file" in proc.stderr and "Traceback" not in proc.stderr
    run("nonsense", check=2)
    run(check=2)


def expected_parse(text, notation="auto"):
    """The per-line reference: values, bad-line count and '-' count of a list."""
    lines = text.split("\n")[:-1]
    if notation == "auto":
        votes = []
        for line in lines:
            field = line[:-1] if line.endswith("\r") else line
            if (field and field[:2].lower() != "0x" and 1 <= len(field) <= 20
                    and all(c in "0123456789abcdefABCDEF" for c in field)):
                votes.append(len(field) == 16)
        if votes:
            notation = "hex" if all(votes) else "decimal"
    values, bad, dashes = [], 0, 0
    for line in lines:
        value = line.strip()
        if not value:
            continue
        if value == "-":
            dashes += 1
            continue
        try:
            values.append(fingerprints.parse_fingerprint(value, notation))
        except ValueError:
            bad += 1
    return values, bad, dashes


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1).map(lambda v: f"{v:016x}"),
    st.integers(0, 2**64 - 1).map(hex),
    st.sampled_from([0, 2**64 - 1, 2**64, 10**19, 10**20, 9 * 10**19, -1, "-", "0x",
                     "0x" + "f" * 17, 10**15, "0000000000000012"]),
    st.text(alphabet="0123456789abcdefx +-\r", max_size=22),
), max_size=40))
def test_bulk_parser_agrees_with_the_line_parser(lines):
    """The vectorised reader accepts exactly the lines parse_fingerprint accepts,
    with the input's notation decided by the documented rule."""
    text = "\n".join(map(str, lines)) + "\n"
    expected, bad, dashes = expected_parse(text)
    problems = Problems(stream=io.StringIO())
    got = fingerprints.read_fingerprint_list(io.BytesIO(text.encode()), "t", problems)
    assert got.fingerprints.dtype == U64
    assert sorted(got.fingerprints.tolist()) == sorted(expected)
    assert problems.count == bad
    assert got.without == dashes


def test_reader_spans_chunks(monkeypatch):
    monkeypatch.setattr(fingerprints, "READ_CHUNK", 7)
    text = b"123\n4567\n\n89\n1x\n5"
    problems = Problems(stream=io.StringIO())
    got = fingerprints.read_fingerprints(io.BytesIO(text), "t", problems)
    assert got.tolist() == [123, 4567, 89, 5]
    assert problems.stream.getvalue().startswith("scrapy-simhash: t:5: ")


# -- fingerprint -----------------------------------------------------------------

WORDS = ("the crawler keeps one copy of every page and drops the others when their "
         "main text says nearly the same thing about this small and quiet village "
         "near the river where people meet on market day to sell bread fish and wool").split()


def page(i, length=120):
    rng = np.random.default_rng(i)
    words = " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), length))
    return (f"<html><head><title>Page {i}</title></head><body><nav>Home | About</nav>"
            f"<article><h1>Story {i}</h1><p>{words}.</p><p>{words[::-1]}.</p></article>"
            "</body></html>")


def test_fingerprint_html_folder_jsonl_and_warc(tmp_path):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from scrapy_simhash import signature
    from scrapy_simhash.fingerprinting import fingerprint

    site = tmp_path / "site" / "sub"
    site.mkdir(parents=True)
    (site / "a.html").write_text(page(1))
    (site / "b.htm").write_bytes(page(2).encode("utf-8"))
    (site / "notes.txt").write_text("not a page")
    (tmp_path / "site" / "empty.html").write_text("<html><body><p>Hi</p></body></html>")
    with open(tmp_path / "pages.jsonl", "w") as f:
        f.write(json.dumps({"url": "http://example.com/3", "html": page(3)}) + "\n")
        f.write("{broken\n")
        f.write(json.dumps({"url": "http://example.com/4"}) + "\n")
        f.write(json.dumps({"html": page(5)}) + "\n")
    with open(tmp_path / "crawl.warc.gz", "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for i, ctype in ((6, "text/html; charset=utf-8"), (7, "image/png")):
            headers = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(
                f"http://example.com/{i}", "response", payload=io.BytesIO(page(i).encode()),
                http_headers=headers))

    proc = run("fingerprint", tmp_path / "site", tmp_path / "pages.jsonl",
               tmp_path / "crawl.warc.gz", tmp_path / "missing.html", check=0)
    names, rows = table(proc.stdout)
    assert names == ["source", "fingerprint", "spots_for_min_features", "features", "note",
                     "sketch"]
    expected = {
        str(tmp_path / "site" / "empty.html"): None,
        str(site / "a.html"): fingerprint(page(1)),
        str(site / "b.htm"): fingerprint(page(2)),
        "http://example.com/3": fingerprint(page(3)),
        f"{tmp_path / 'pages.jsonl'}:4": fingerprint(page(5)),
        "http://example.com/6": fingerprint(page(6)),
    }
    assert [r[0] for r in rows] == list(expected)
    pages_of = {str(site / "a.html"): page(1), str(site / "b.htm"): page(2),
                "http://example.com/3": page(3), f"{tmp_path / 'pages.jsonl'}:4": page(5),
                "http://example.com/6": page(6)}
    # As fingerprint signs them: in order, each against its site's template
    # (files one site, URLs theirs) learned from the pages before it.
    from urllib.parse import urlsplit

    from scrapy_simhash.fingerprinting.signature import analyse
    from scrapy_simhash.fingerprinting.template import SiteTemplates

    templates, sketches = SiteTemplates(), {}
    for source in expected:
        template = templates[urlsplit(source).netloc if "://" in source else ""]
        found = analyse(pages_of.get(source, "<html><body><p>Hi</p></body></html>"),
                        template=template)
        template.learn(found.evidence.block_hashes, found.details.fingerprint)
        sketches[source] = found.evidence.sketch.hex()
    for source, hex_fp, spots, count, note, sketch in rows:
        if expected[source] is None:
            assert hex_fp == sketch == "-"
            assert note.startswith("no fingerprint")
        else:
            assert expected[source] == int(hex_fp, 16) and note == "-"
            assert len(hex_fp) == 16 and int(spots) >= 6
            assert int(count) >= int(spots)
            assert sketch == sketches[source]  # one pass, both
    pages_jsonl = tmp_path / "pages.jsonl"
    assert f"{pages_jsonl}:2: bad JSON" in proc.stderr
    assert f"{pages_jsonl}:3: " in proc.stderr
    assert "missing.html: no such file" in proc.stderr

    proc = run("fingerprint", "--strict", "--json", tmp_path / "pages.jsonl", check=1)
    first = json.loads(proc.stdout.splitlines()[0])
    assert first["fingerprint"] == f"{fingerprint(page(3)):016x}"
    assert first["sketch"] == signature(page(3)).sketch.hex()  # JSON lines carry the sketch
    assert "pages.jsonl:2" in proc.stderr
    assert run("fingerprint", tmp_path / "site" / "sub" / "notes.txt").returncode == 0
    run("fingerprint", tmp_path / "missing", check=1)


# -- plan, help, scrapy command ---------------------------------------------------


def test_plan_lists_options_and_the_choice():
    from scrapy_simhash.index import TableLayout

    proc = run("plan", "--distance", 3, "--pages", "10M", check=0)
    chosen = TableLayout.plan(3, 10**7)
    options = TableLayout.options(3)
    marked = [line for line in proc.stdout.splitlines() if line.startswith("* ")]
    assert len(marked) == 1 and marked[0].split()[1] == chosen.spec
    assert marked[0].split()[2] == str(len(chosen.tables))
    for option in options:
        assert f" {option.spec} " in proc.stdout
    assert chosen.describe(10**7) in proc.stdout
    proc = run("plan", "-d", 4, "-n", "1e6", "--max-tables", 20, check=0)
    assert TableLayout.plan(4, 10**6, max_tables=20).spec in proc.stdout
    run("plan", "-d", 3, "-n", "lots", check=2)


COMMANDS = ["fingerprint", "find-all", "clusters", "query", "plan", "explain", "report",
            "salvage", "rules", "redis-info", "redis-clear", "spark-pairs", "spark-clusters"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_help_with_formats_and_an_example(command):
    proc = run(command, "--help", check=0)
    assert "example:" in proc.stdout and f"scrapy-simhash {command}" in proc.stdout
    assert "exit codes: 0 success; 1 bad input" in proc.stdout
    assert "output:" in proc.stdout  # what it writes
    assert "input:" in proc.stdout  # what it reads


def test_every_command_is_listed():
    from scrapy_simhash.cli import build_parser

    listed = build_parser()._subparsers._group_actions[0].choices
    assert sorted(listed) == sorted(COMMANDS)


@pytest.mark.scrapy
def test_scrapy_simhash_command(tmp_path):
    scrapy = [str(BIN / "scrapy")]
    fps = planted(n=100, seed=4)
    write_fps(tmp_path / "fps.txt", fps)
    proc = run("simhash", "find-all", "-i", "fps.txt", "-d", 3, "--simhash-cpp", script=scrapy,
               cwd=tmp_path, check=0)
    assert {tuple(json.loads(x)) for x in proc.stdout.splitlines()} == brute_pairs(fps, 3)
    proc = run("simhash", "clusters", "--help", script=scrapy, cwd=tmp_path, check=0)
    assert "scrapy simhash clusters" in proc.stdout
    proc = run("simhash", "find-all", "-i", "missing.txt", script=scrapy, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    proc = run(script=scrapy, cwd=tmp_path, check=0)
    assert "simhash" in proc.stdout


# -- query and report on a crawl's state ------------------------------------------


def make_state(path, fps, urls, sketches=None):
    """A crawl state as the memory backend writes it: a sketch and a URL a page
    (random sketches unless given: no two pages confirm each other)."""
    from scrapy_simhash.backends.state import state_header
    from scrapy_simhash.fingerprinting.signature import SKETCH_BINS
    from scrapy_simhash.index import RecordLog

    if sketches is None:
        rng = np.random.default_rng(len(fps))
        sketches = [rng.integers(1, 256, SKETCH_BINS, dtype=np.uint8).tobytes() for _ in fps]
    log = RecordLog.open(str(path), state_header())
    for i, (fp, url, sketch) in enumerate(zip(fps, urls, sketches)):
        log.append(int(fp), i, sketch + url.encode())
    log.close()


def crawl_files(tmp_path, n=300):
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**64, size=n, dtype=U64)
    fps[1] = fps[0] ^ U64(0b101)  # stored pages 2 bits apart (kept with add="always")
    fps[-1] = fps[-2] ^ U64(0b1)  # 1 bit apart, but their sketches do not confirm it
    urls = [f"http://example.com/p{i}" for i in range(n)]
    rng = np.random.default_rng(6)
    sketches = [rng.integers(1, 256, SKETCH_BINS, dtype=np.uint8).tobytes() for _ in range(n)]
    sketches[1] = sketches[0]  # p0 and p1: the same page
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    make_state(jobdir / "simhash.seen", fps, urls, sketches)
    drops = []
    for i, d in ((0, 1), (0, 2), (0, 3), (7, 1), (9, 0)):
        drops.append({"time": "2025-01-01T00:00:00+00:00", "spider": "s",
                      "url": f"http://example.com/dup-{i}-{d}", "duplicate_of": urls[i],
                      "distance": d, "fingerprint": f"{int(fps[i]) ^ ((1 << d) - 1):016x}",
                      "duplicate_fingerprint": f"{int(fps[i]):016x}", "action": "drop"})
    log = tmp_path / "drops.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in drops) + "not json\n")
    return fps, urls, jobdir, log


def test_query_a_crawl_state_and_a_saved_index(tmp_path):
    fps, urls, jobdir, _ = crawl_files(tmp_path)
    q = int(fps[0]) ^ 0b1000
    # hex as `fingerprint` prints it, 0x hex and decimal are all accepted
    proc = run("query", f"{q:016x}", hex(int(fps[2])), str(int(fps[3])), "--index", jobdir,
               check=0)
    names, rows = table(proc.stdout)
    assert names == ["query", "match", "distance", "url"]
    h = [f"{int(v):016x}" for v in fps[:4]]
    assert rows == [
        [f"{q:016x}", h[0], "1", urls[0]],
        [f"{q:016x}", h[1], "3", urls[1]],
        [h[2], h[2], "0", urls[2]],
        [h[3], h[3], "0", urls[3]],
    ]
    proc = run("query", q, "--index", jobdir / "simhash.seen", "-d", 2, "--json", check=0)
    assert [json.loads(r) for r in proc.stdout.splitlines()] == [
        {"query": f"{q:016x}", "match": h[0], "distance": 1, "url": urls[0]}]
    proc = run("query", "0" * 16, "--index", jobdir, "-d", 0, check=0)
    assert table(proc.stdout)[1] == [["0" * 16, "-", "-", "-"]]
    assert "1 of 1 fingerprints have no match within 0 bits" in proc.stderr

    from scrapy_simhash.index import SimhashIndex

    index = SimhashIndex(k=3, expected_size=len(fps))
    index.add_many(fps, np.arange(len(fps), dtype=U64) + U64(1000))
    index.save(str(tmp_path / "index.snapshot"))
    proc = run("query", q, "--index", tmp_path / "index.snapshot", "--decimal", check=0)
    names, rows = table(proc.stdout)
    assert names == ["query", "match", "distance", "index_key"]
    assert [r[1:] for r in rows] == [[str(int(fps[0])), "1", "1000"],
                                     [str(int(fps[1])), "3", "1001"]]
    assert proc.stderr.splitlines() == [
        "scrapy-simhash: FP arguments: no sketches (write FP:SKETCH, the drop log's "
        "fingerprint and sketch fields, or read the drop log with -i): matches decided on "
        "fingerprints alone within 3 bits, not confirmed by sketches as a crawl does (`scrapy-simhash "
        "fingerprint` writes them; --no-confirm silences this)"]

    # a list with sketches against the state: matches confirmed by the stored sketches
    from scrapy_simhash.backends.state import read_state

    sketches = read_state(jobdir).sketches
    lst = tmp_path / "queries.txt"
    lst.write_text("#url\tfingerprint\tsketch\n" + "".join(
        f"q{i}\t{int(fps[i]):016x}\t{sketches[i].tobytes().hex()}\n" for i in (0, -1)))
    proc = run("query", "-i", lst, "--index", jobdir, check=0)
    h0, hb, ha = (f"{int(v):016x}" for v in (fps[0], fps[-2], fps[-1]))
    # p0 finds p1 (its copy, 2 bits); the last page is 1 bit from the one before it,
    # whose sketch does not confirm: only itself
    assert table(proc.stdout)[1] == [
        ["q0", h0, h0, "0", urls[0]], ["q0", h0, f"{int(fps[1]):016x}", "2", urls[1]],
        ["q-1", ha, ha, "0", urls[-1]]]
    assert proc.stderr == (
        f"scrapy-simhash: {jobdir / 'simhash.seen'}: 300 pages the crawl stored; decided as "
        f"the crawl decides, at k={DEFAULT_MAX_DISTANCE} (the default: this state does not "
        "record the crawl's k), confirmed by their sketches\n"
        f"scrapy-simhash: 3 matches within {DEFAULT_MAX_DISTANCE} bits confirmed by their "
        "sketches, as a crawl decides (1 candidate not confirmed)\n")
    proc = run("query", "-i", lst, "--index", jobdir, "--no-confirm", check=0)
    assert ["q-1", ha, hb, "1", urls[-2]] in table(proc.stdout)[1] and proc.stderr == ""
    proc = run("query", "-i", lst, "--index", tmp_path / "index.snapshot", check=0)
    assert len(table(proc.stdout)[1]) == 4  # fingerprints alone, the index's k (3)
    assert f"{tmp_path / 'index.snapshot'}: a saved index keeps no sketches: matches " \
           "decided on fingerprints alone within 3 bits" in proc.stderr

    run("query", "12x", "--index", jobdir, check=2)
    proc = run("query", 1, "--index", tmp_path / "drops.jsonl")
    assert proc.returncode == 1 and "drops.jsonl" in proc.stderr


def test_report_and_plot(tmp_path):
    import matplotlib.image

    _, urls, jobdir, log = crawl_files(tmp_path)
    png = tmp_path / "dist.png"
    proc = run("report", jobdir, log, "--plot", png, check=0)
    out = proc.stdout
    assert "300 pages stored" in out
    assert f"drop log {log}: 5 near-duplicates in 1 run (drop 5)" in out
    assert "near-duplicates: 5 (drop 5)" in out
    assert "responses fingerprinted: 305 = 300 stored + 5 near-duplicates" in out
    # Clusters: p0 + p1 (2 bits) + 3 drops; p7 + 1 drop; p9 + 1 drop.
    assert "clusters: 3 with 9 pages" in out
    assert "example.com/p299" not in out  # p298, p299: near fingerprints, not confirmed
    assert "cluster sizes: 2 x 2 pages, 1 x 5 pages" in out
    assert f"5 pages, first {urls[0]}" in out
    assert "http://example.com/dup-0-3  (distance 3)" in out
    assert f"{log}:6: bad drop record" in proc.stderr
    image = matplotlib.image.imread(png)
    assert image.shape[:2] == (450, 900)
    assert image[..., :3].std() > 0.05  # not blank
    assert len(np.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 10

    proc = run("report", log, "--top", 0, check=0)
    assert "near-duplicates: 5 (drop 5)" in proc.stdout
    assert "pages stored: unknown (no state given" in proc.stdout
    proc = run("report", jobdir, log, "--json", check=0)
    data = json.loads(proc.stdout)
    assert (data["stored"], data["near_duplicates"], data["responses_fingerprinted"]) == (
        300, 5, 305)
    assert data["clusters"]["count"] == 3
    (tmp_path / "junk").write_bytes(b"\x00garbage")
    assert run("report", tmp_path / "junk").returncode == 1


# -- terminal behaviour ------------------------------------------------------------


def test_progress_on_a_terminal_and_ctrl_c(tmp_path):
    """With stderr on a terminal a status line shows; SIGINT exits 130 without a traceback."""
    master, slave = pty.openpty()
    # SIGINT back to its default in the child: a job started in the background by a
    # non-interactive shell inherits it ignored, and Python then installs no handler
    proc = subprocess.Popen([str(SCRIPT), "find-all"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=slave,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    seen = b""
    try:
        proc.stdin.write(b"123456789\n" * (1 << 19))  # over one read chunk: progress shows
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while b"reading <stdin>" not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                seen += os.read(master, 4096)
        assert b"reading <stdin>" in seen
        proc.send_signal(signal.SIGINT)
        # A shell's Ctrl-C also ends the writer of the pipe. (A signal taken by a numpy
        # helper thread does not interrupt the main thread's blocked read by itself.)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 130
        while select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    assert b"interrupted" in seen
    assert b"Traceback" not in seen


def test_a_command_group_is_one_line(monkeypatch, tmp_path):
    """A module with add_commands() joins the parser through COMMAND_GROUPS alone."""
    import sys as _sys

    from scrapy_simhash import cli

    (tmp_path / "extra_group.py").write_text(
        "def hello(args, problems, progress):\n"
        "    print('hello', args.name)\n"
        "    return 0\n"
        "def add_commands(commands):\n"
        "    p = commands.add('hello', hello, 'say hello', formats='input: a name.\\n\\n"
        "output: one line.', example='hello world')\n"
        "    p.add_argument('name')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "COMMAND_GROUPS", (*cli.COMMAND_GROUPS, "extra_group"))
    assert cli.main(["hello", "world"]) == 0
    assert "hello" in cli.build_parser()._subparsers._group_actions[0].choices
    _sys.modules.pop("extra_group", None)


def test_fingerprint_goes_on_after_a_page_it_cannot_read(tmp_path):
    """A page whose content trips the library (issue 16: non-text codecs) does not end
    the batch: it is reported, the next files are still read."""
    from scrapy_simhash.fingerprinting import fingerprint

    (tmp_path / "a-codec.html").write_bytes(b'<meta charset="base64"><p>hi</p>')
    (tmp_path / "b-nul.html").write_bytes(b'<meta charset="utf\x008"><p>hi</p>')
    (tmp_path / "c.html").write_text(page(3))
    proc = run("fingerprint", tmp_path, check=0)
    _, rows = table(proc.stdout)
    assert rows[-1][:2] == [str(tmp_path / "c.html"), f"{fingerprint(page(3)):016x}"]
    assert "Traceback" not in proc.stderr
