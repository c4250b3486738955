"""Commands chain: one fingerprint list format from `fingerprint` through
`find-all`, `clusters` and `query`, run as real pipelines of the console script."""

from __future__ import annotations

import io
import json
import subprocess
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.cli import fingerprints
from scrapy_simhash.cli.errors import Problems
from tests.fixtures_http import article_html
from tests.test_cli import SCRIPT, make_state, run, table

U64 = np.uint64


def pipeline(*commands, cwd=None):
    """Run `scrapy-simhash A | scrapy-simhash B | ...`; return the last stdout and codes."""
    procs, stdin = [], None
    for args in commands:
        proc = subprocess.Popen([str(SCRIPT), *map(str, args)], stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
        if stdin is not None:
            stdin.close()  # the next process holds it
        stdin = proc.stdout
        procs.append(proc)
    out = procs[-1].stdout.read().decode()
    errors = []
    for proc in procs:
        proc.wait(timeout=120)
        errors.append(proc.stderr.read().decode())
        proc.stderr.close()
    procs[-1].stdout.close()
    return out, [p.returncode for p in procs], errors


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Real HTML files: articles, edited copies (1-3 bits away for most), an exact
    copy, a thin page without a fingerprint; and the library's fingerprints of them."""
    from scrapy_simhash import fingerprint

    root = tmp_path_factory.mktemp("cli-chain")
    pages = root / "pages"
    pages.mkdir()
    for seed in range(6):
        html = article_html(seed, words=1200)
        (pages / f"a{seed}.html").write_text(html)
        (pages / f"a{seed}-edited.html").write_text(
            html.replace("</p>", " And then the lantern was quiet. </p>", 2))
    (pages / "a0-copy.html").write_text(article_html(0, words=1200))
    (pages / "thin.html").write_text("<html><body><p>Hello there.</p></body></html>")
    fps = {}
    for path in sorted(pages.iterdir()):
        fp = fingerprint(path.read_bytes())
        if fp is not None:
            fps[str(path.relative_to(root))] = fp
    return root, fps


def expected_pairs(fps, k=3):
    pairs = {}
    for (ka, fa), (kb, fb) in combinations(sorted(fps.items()), 2):
        if (fa ^ fb).bit_count() <= k:
            pairs[(ka, kb)] = (fa ^ fb).bit_count()
    return pairs


def test_fingerprint_pipes_into_find_all(site):
    root, fps = site
    want = expected_pairs(fps)
    assert any(1 <= d <= 3 for d in want.values())  # near, not only identical
    assert want[("pages/a0-copy.html", "pages/a0.html")] == 0
    out, codes, errors = pipeline(["fingerprint", "pages"], ["find-all"], cwd=root)
    assert codes == [0, 0], errors
    names, rows = table(out)
    assert names == ["key_a", "key_b", "distance", "fingerprint_a", "fingerprint_b"]
    got = {(a, b): int(d) for a, b, d, _, _ in rows}
    assert got == want
    for a, b, _, fa, fb in rows:  # keys carried with their own fingerprints
        assert (int(fa, 16), int(fb, 16)) == (fps[a], fps[b])
    assert errors[1] == "scrapy-simhash: <stdin>: 1 row without a fingerprint ('-') skipped\n"


@pytest.mark.parametrize("flags", [["--json"], ["--decimal"], ["--no-header"],
                                   ["--json", "--decimal"]])
def test_every_fingerprint_output_chains(site, flags):
    root, fps = site
    out, codes, errors = pipeline(["fingerprint", "pages", *flags], ["find-all", "--json"],
                                  cwd=root)
    assert codes == [0, 0], errors
    got = {(r["key_a"], r["key_b"]): r["distance"] for r in map(json.loads, out.splitlines())}
    assert got == expected_pairs(fps)


def test_clusters_list_keys_once(site):
    root, fps = site
    out, codes, errors = pipeline(["fingerprint", "pages", "pages"], ["clusters"], cwd=root)
    assert codes == [0, 0], errors
    names, rows = table(out)
    assert names == ["cluster", "size", "key", "fingerprint"]
    clusters = {}
    for cluster, size, key, fp in rows:
        clusters.setdefault(cluster, []).append(key)
        assert int(fp, 16) == fps[key]
    for members in clusters.values():  # every page given twice, listed once
        assert len(members) == len(set(members)) == int(
            next(r[1] for r in rows if r[2] == members[0]))
    linked = {frozenset(p) for p in expected_pairs(fps)}
    for members in clusters.values():
        assert len(members) > 1
        assert any(frozenset((a, b)) in linked for a, b in combinations(members, 2))


def test_simhash_cpp_format_still_produced_and_read(site):
    root, fps = site
    out, codes, errors = pipeline(["fingerprint", "pages", "--simhash-cpp"],
                                  ["find-all", "--simhash-cpp"], cwd=root)
    assert codes == [0, 0], errors
    got = {tuple(json.loads(line)) for line in out.splitlines()}
    want = {tuple(sorted((fps[a], fps[b]))) for a, b in expected_pairs(fps)}
    values = list(fps.values())
    want |= {(v, v) for v in set(values) if values.count(v) > 1}
    assert got == want
    cpp = run("fingerprint", "pages", "--simhash-cpp", cwd=root, check=0).stdout
    assert cpp.splitlines() == [str(v) for v in fps.values()]  # bare decimal lines


def test_query_a_crawl_state_with_fingerprint_output(site, tmp_path):
    root, fps = site
    keys = sorted(fps)
    stored = [k for k in keys if not k.endswith(("-edited.html", "-copy.html"))]
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    make_state(jobdir / "simhash.seen", [fps[k] for k in stored],
               [f"https://example.com/{k}" for k in stored])
    out, codes, errors = pipeline(["fingerprint", "pages"],
                                  ["query", "--index", jobdir, "--json"], cwd=root)
    assert codes == [0, 0], errors
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["key"] for r in rows} == set(keys)
    for r in rows:
        assert r["query"] == f"{fps[r['key']]:016x}"
        if r["match"] is not None:
            stored_key = r["url"].removeprefix("https://example.com/")
            assert r["distance"] == (fps[stored_key] ^ fps[r["key"]]).bit_count() <= 3
    matched = {r["key"] for r in rows if r["match"] is not None}
    assert set(stored) <= matched  # each stored page finds itself
    # the hex that `fingerprint` printed is accepted as an argument
    fp = fps["pages/a1.html"]
    proc = run("query", f"{fp:016x}", "--index", jobdir, check=0)
    assert table(proc.stdout)[1][0][:3] == [f"{fp:016x}", f"{fp:016x}", "0"]
    proc = run("query", str(fp), "--index", jobdir, check=0)  # and decimal
    assert table(proc.stdout)[1][0][1] == f"{fp:016x}"


# -- the parser, unit by unit ------------------------------------------------------------

u64s = st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=60)


@settings(max_examples=100, deadline=None)
@given(u64s, st.booleans())
def test_written_fingerprints_read_back(values, decimal):
    arr = np.array(values, dtype=U64)
    text = "".join(f"{s}\n" for s in fingerprints.format_fingerprints(arr, decimal))
    notation = "decimal" if decimal else "auto"
    got = fingerprints.read_fingerprint_list(io.BytesIO(text.encode()), "t",
                                             Problems(stream=io.StringIO()), notation=notation)
    assert got.fingerprints.tolist() == values
    assert got.notation == ("decimal" if decimal else "hex")
    assert fingerprints.format_fingerprints(arr, decimal) == [
        fingerprints.format_fingerprint(v, decimal) for v in values]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40).filter(
    lambda v: any(len(str(x)) != 16 for x in v)))
def test_decimal_lists_are_recognised(values):
    """simhash-cpp's decimal lists need no flag: one number not 16 digits long decides."""
    text = "".join(f"{v}\n" for v in values)
    got = fingerprints.read_fingerprint_list(io.BytesIO(text.encode()), "t",
                                             Problems(stream=io.StringIO()))
    assert got.fingerprints.tolist() == values and got.notation == "decimal"


keys = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\n\r"),
               max_size=30).filter(lambda k: not k.startswith("#"))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(keys, st.integers(0, 2**64 - 1)), min_size=1, max_size=40),
       st.booleans(), st.sampled_from([1, 7, 64, 1 << 22]))
def test_keyed_lists_read_back(rows, header, chunk):
    """Keys and fingerprints come back in order, whatever the block boundaries."""
    text = "#source\tfingerprint\tspots\n" if header else ""
    text += "".join(f"{k}\t{v:016x}\t7\n" for k, v in rows)
    reader = fingerprints._Reader("t", Problems(stream=io.StringIO()), "auto")
    data = text.encode()
    # feed whole lines in blocks of about `chunk` bytes
    start = 0
    while start < len(data):
        cut = data.find(b"\n", start + chunk - 1)
        cut = len(data) if cut < 0 else cut + 1
        reader.block(data[start:cut])
        start = cut
    got = reader.result()
    pairs = sorted(zip([got.keys[i] for i in range(len(got.keys))],
                       got.fingerprints.tolist()))
    assert pairs == sorted(rows)


def test_header_places_the_columns():
    text = b"#spots\tfingerprint\tnote\turl\n6\tf20fd1b882e00196\tx\thttp://a/\n"
    got = fingerprints.read_fingerprint_list(io.BytesIO(text), "t", Problems())
    assert got.fingerprints.tolist() == [0xf20fd1b882e00196]
    assert got.keys[0] == "http://a/"


def test_drop_log_is_a_fingerprint_list(tmp_path):
    """The audit log's JSON lines chain too (url + hex fingerprint)."""
    log = tmp_path / "drops.jsonl"
    log.write_text(
        json.dumps({"url": "http://a/1", "duplicate_of": "http://a/0", "distance": 1,
                    "fingerprint": "f20fd1b882e00196"}) + "\n"
        + json.dumps({"url": "http://a/2", "duplicate_of": "http://a/0", "distance": 2,
                      "fingerprint": "f20fd1b882e00197"}) + "\n")
    proc = run("find-all", "-i", log, check=0)
    assert table(proc.stdout)[1] == [
        ["http://a/1", "http://a/2", "1", "f20fd1b882e00196", "f20fd1b882e00197"]]


@pytest.mark.parametrize("value", ["f20fd1b882e00196", "0xF20FD1B882E00196",
                                   "17442390472229126550"])
def test_one_fingerprint_in_every_notation(value):
    assert fingerprints.parse_fingerprint(value) == 0xf20fd1b882e00196
