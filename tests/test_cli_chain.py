"""Commands chain: one fingerprint list format from `fingerprint` through
`find-all`, `clusters` and `query`, run as real pipelines of the console script."""

from __future__ import annotations

import io
import json
import random
import re
import subprocess
from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_simhash.cli import fingerprints
from scrapy_simhash.cli.errors import Problems
from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE as K, SKETCH_BINS
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


def numbered(seed):
    """Article 0 with a number after every second word of its paragraphs, drawn from
    ``seed``: two seeds give pages the fingerprint cannot tell apart (it leaves digits
    out) whose content differs (the sketch sees the numbers), as "Visual Studio 6"
    and "Visual Studio 8 2005" did in issue 12."""
    rng = random.Random(seed)

    def paragraph(m):
        words = m.group(1).split(" ")
        return "<p>" + " ".join(
            f"{w} {rng.randint(100, 99999)}" if i % 2 else w for i, w in enumerate(words)
        ) + "</p>"

    return re.sub(r"<p>(.*?)</p>", paragraph, article_html(0, words=1200))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Real HTML files: articles, edited copies (1-3 bits away for most), an exact
    copy, two pages whose fingerprints agree but whose numbers differ, a thin page
    without a fingerprint; and the library's signatures of them."""
    from scrapy_simhash.fingerprinting.signature import analyse
    from scrapy_simhash.fingerprinting.template import SiteTemplate

    root = tmp_path_factory.mktemp("cli-chain")
    pages = root / "pages"
    pages.mkdir()
    for seed in range(6):
        html = article_html(seed, words=1200)
        (pages / f"a{seed}.html").write_text(html)
        (pages / f"a{seed}-edited.html").write_text(
            html.replace("</p>", " And then the lantern was quiet. </p>", 2))
    (pages / "a0-copy.html").write_text(article_html(0, words=1200))
    (pages / "n1.html").write_text(numbered(1))
    (pages / "n2.html").write_text(numbered(2))
    (pages / "thin.html").write_text("<html><body><p>Hello there.</p></body></html>")
    sigs = {}
    # As `fingerprint` reads a folder: in path order, each page against the
    # template of the pages before it (as a crawl of the site would).
    template = SiteTemplate()
    for path in sorted(pages.iterdir()):
        found = analyse(path.read_bytes(), template=template)
        template.learn(found.evidence.block_hashes)
        if found.signature is not None:
            sigs[str(path.relative_to(root))] = found.signature
    return root, sigs


def fingerprints_of(sigs):
    return {key: sig.fingerprint for key, sig in sigs.items()}


def expected_pairs(sigs, confirm=True, k=None):
    """The pairs a crawl decides (``is_duplicate``), or with ``confirm=False`` the
    fingerprint pairs within ``k`` (default 3), as find-all without sketches."""
    from scrapy_simhash import is_duplicate

    pairs = {}
    for (ka, a), (kb, b) in combinations(sorted(sigs.items()), 2):
        d = (a.fingerprint ^ b.fingerprint).bit_count()
        if is_duplicate(a, b, k=k) if confirm else d <= (3 if k is None else k):
            pairs[(ka, kb)] = d
    return pairs


NUMBERED = ("pages/n1.html", "pages/n2.html")


def test_fingerprint_pipes_into_find_all(site):
    """The chain decides as a crawl does: a copy and edited copies are pairs, two
    pages whose fingerprints agree but whose content differs are not."""
    root, sigs = site
    fps = fingerprints_of(sigs)
    want = expected_pairs(sigs)
    assert any(1 <= d <= 3 for d in want.values())  # near, not only identical
    assert want[("pages/a0-copy.html", "pages/a0.html")] == 0
    assert (fps[NUMBERED[0]] ^ fps[NUMBERED[1]]).bit_count() <= K  # a candidate...
    assert NUMBERED not in want  # ...that the sketches refuse
    out, codes, errors = pipeline(["fingerprint", "pages"], ["find-all"], cwd=root)
    assert codes == [0, 0], errors
    names, rows = table(out)
    assert names == ["key_a", "key_b", "distance", "fingerprint_a", "fingerprint_b"]
    got = {(a, b): int(d) for a, b, d, _, _ in rows}
    assert got == want
    assert ("pages/a0-copy.html", "pages/a0.html") in got and NUMBERED not in got
    for a, b, _, fa, fb in rows:  # keys carried with their own fingerprints
        assert (int(fa, 16), int(fb, 16)) == (fps[a], fps[b])
    assert errors[1].splitlines() == [
        "scrapy-simhash: <stdin>: 1 row without a fingerprint ('-') skipped",
        f"scrapy-simhash: {len(want)} pairs within {K} bits confirmed by their sketches, as a "
        f"crawl decides ({len(expected_pairs(sigs, False, K)) - len(want)} candidate"
        f"{'' if len(expected_pairs(sigs, False, K)) - len(want) == 1 else 's'} not confirmed)"]

    # the raw fingerprint pairs on request: the numbered pages pair at distance 0
    out, codes, errors = pipeline(["fingerprint", "pages"], ["find-all", "--no-confirm"],
                                  cwd=root)
    assert codes == [0, 0], errors
    got = {(a, b): int(d) for a, b, d, _, _ in table(out)[1]}
    assert got == expected_pairs(sigs, confirm=False) and got[NUMBERED] == 0
    assert "confirm" not in errors[1]  # asked for: nothing said


@pytest.mark.parametrize("flags", [["--json"], ["--decimal"], ["--no-header"],
                                   ["--json", "--decimal"]])
def test_every_fingerprint_output_chains(site, flags):
    """Sketches travel in every form that names its columns; without a header a
    list is fingerprint-only, and find-all says so."""
    root, sigs = site
    out, codes, errors = pipeline(["fingerprint", "pages", *flags], ["find-all", "--json"],
                                  cwd=root)
    assert codes == [0, 0], errors
    got = {(r["key_a"], r["key_b"]): r["distance"] for r in map(json.loads, out.splitlines())}
    confirm = "--no-header" not in flags
    assert got == expected_pairs(sigs, confirm)
    assert ("no sketch column" in errors[1]) is not confirm


def test_clusters_list_keys_once(site):
    root, sigs = site
    fps = fingerprints_of(sigs)
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
    linked = {frozenset(p) for p in expected_pairs(sigs)}
    for members in clusters.values():
        assert len(members) > 1
        assert any(frozenset((a, b)) in linked for a, b in combinations(members, 2))
    # confirmed edges only: the numbered pages (distance 0) are in no cluster together
    assert not any(set(NUMBERED) <= set(m) for m in clusters.values())
    assert f"clusters linked by pairs within {K} bits confirmed" in errors[1]


def test_simhash_cpp_format_still_produced_and_read(site):
    root, sigs = site
    fps = fingerprints_of(sigs)
    out, codes, errors = pipeline(["fingerprint", "pages", "--simhash-cpp"],
                                  ["find-all", "--simhash-cpp"], cwd=root)
    assert codes == [0, 0], errors
    assert "no sketch column" in errors[1]  # simhash-cpp's input carries none
    got = {tuple(json.loads(line)) for line in out.splitlines()}
    want = {tuple(sorted((fps[a], fps[b]))) for a, b in expected_pairs(sigs, confirm=False)}
    values = list(fps.values())
    want |= {(v, v) for v in set(values) if values.count(v) > 1}
    assert got == want
    cpp = run("fingerprint", "pages", "--simhash-cpp", cwd=root, check=0).stdout
    assert cpp.splitlines() == [str(v) for v in fps.values()]  # bare decimal lines


def test_query_a_crawl_state_with_fingerprint_output(site, tmp_path):
    """`fingerprint | query --index JOBDIR` confirms each match with the state's
    sketches, as the crawl that wrote the state would have decided."""
    from scrapy_simhash import is_duplicate

    root, sigs = site
    fps = fingerprints_of(sigs)
    keys = sorted(fps)
    stored = [k for k in keys if not k.endswith(("-edited.html", "-copy.html", "n2.html"))]
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    make_state(jobdir / "simhash.seen", [fps[k] for k in stored],
               [f"https://example.com/{k}" for k in stored], [sigs[k].sketch for k in stored])
    out, codes, errors = pipeline(["fingerprint", "pages"],
                                  ["query", "--index", jobdir, "--json"], cwd=root)
    assert codes == [0, 0], errors
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["key"] for r in rows} == set(keys)
    got = set()
    for r in rows:
        assert r["query"] == f"{fps[r['key']]:016x}"
        if r["match"] is not None:
            stored_key = r["url"].removeprefix("https://example.com/")
            assert r["distance"] == (fps[stored_key] ^ fps[r["key"]]).bit_count() <= K
            got.add((r["key"], stored_key))
    assert got == {(q, k) for q in keys for k in stored if is_duplicate(sigs[q], sigs[k])}
    matched = {r["key"] for r in rows if r["match"] is not None}
    assert set(stored) <= matched  # each stored page finds itself
    assert "pages/n2.html" not in matched  # n1 is stored at distance 0, and not confirmed
    assert f"matches within {K} bits confirmed by their sketches" in errors[1]
    out, codes, errors = pipeline(["fingerprint", "pages"],
                                  ["query", "--index", jobdir, "--json", "--no-confirm"],
                                  cwd=root)
    assert "https://example.com/pages/n1.html" in {
        r["url"] for r in map(json.loads, out.splitlines()) if r["key"] == "pages/n2.html"}
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


def read_in_blocks(text, chunk):
    """A list read as the reader sees a large input: whole lines in blocks of
    about ``chunk`` bytes."""
    reader = fingerprints._Reader("t", Problems(stream=io.StringIO()), "auto")
    data = text.encode()
    start = 0
    while start < len(data):
        cut = data.find(b"\n", start + chunk - 1)
        cut = len(data) if cut < 0 else cut + 1
        reader.block(data[start:cut])
        start = cut
    return reader.result()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(keys, st.integers(0, 2**64 - 1)), min_size=1, max_size=40),
       st.booleans(), st.sampled_from([1, 7, 64, 1 << 22]))
@example([("{", 0)], True, 1).via("a key starting with '{' once made a table JSON lines")
@example([("{", 0)], False, 1)
def test_keyed_lists_read_back(rows, header, chunk):
    """Keys and fingerprints come back in order, whatever the block boundaries."""
    text = "#source\tfingerprint\tspots\n" if header else ""
    text += "".join(f"{k}\t{v:016x}\t7\n" for k, v in rows)
    got = read_in_blocks(text, chunk)
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


# -- sketches: the format, and pairs confirmed as a crawl confirms them -------------------

SKETCH = SKETCH_BINS
sketch_bytes = st.binary(min_size=SKETCH, max_size=SKETCH)
#: these examples draw many bytes: slow generation on a busy machine is no failure
BIG_EXAMPLES = settings(deadline=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(BIG_EXAMPLES, max_examples=100)
@given(st.lists(st.tuples(keys, st.integers(0, 2**64 - 1), st.none() | sketch_bytes),
                min_size=1, max_size=40),
       st.sampled_from([1, 7, 300, 1 << 22]))
def test_sketches_read_back(rows, chunk):
    """Keys, fingerprints and sketches come back in order, whatever the block
    boundaries; '-' is a row without a sketch."""
    arr = np.array([r[1] for r in rows], dtype=U64)
    present = [r[2] for r in rows if r[2] is not None]
    written = fingerprints.format_sketches(
        np.frombuffer(b"".join(present), np.uint8).reshape(-1, SKETCH))
    assert written == [s.hex() for s in present]
    cells = iter(written)
    text = "#source\tfingerprint\tnote\tsketch\n" + "".join(
        f"{k}\t{fp}\t-\t{'-' if s is None else next(cells)}\n"
        for (k, _, s), fp in zip(rows, fingerprints.format_fingerprints(arr)))
    got = read_in_blocks(text, chunk)
    back = sorted(zip([got.keys[i] for i in range(len(got.keys))], got.fingerprints.tolist(),
                      [None if got.sketches is None else got.sketches[i].tobytes()
                       for i in range(len(got.fingerprints))]))
    zero = bytes(SKETCH)
    assert back == sorted((k, fp, zero if s is None and present else s) for k, fp, s in rows)
    assert got.unsketched == sum(s is None for *_, s in rows)
    assert got.confirmable == all(s is not None for *_, s in rows)


def test_sketches_in_json_lines_and_bad_sketches():
    sketch = bytes(range(1, SKETCH_BINS + 1))
    text = (json.dumps({"url": "http://a/1", "fingerprint": "f20fd1b882e00196",
                        "sketch": sketch.hex()}) + "\n"
            + json.dumps({"url": "http://a/2", "fingerprint": "f20fd1b882e00197",
                          "sketch": "ab"}) + "\n"
            + json.dumps({"url": "http://a/3", "fingerprint": "f20fd1b882e00198",
                          "sketch": None}) + "\n")
    problems = Problems(stream=io.StringIO())
    got = fingerprints.read_fingerprint_list(io.BytesIO(text.encode()), "t", problems)
    assert got.fingerprints.tolist() == [0xf20fd1b882e00196, 0xf20fd1b882e00198]
    assert got.sketches[0].tobytes() == sketch and not got.sketches[1].any()
    assert got.unsketched == 1 and not got.confirmable
    assert problems.stream.getvalue() == (
        f"scrapy-simhash: t:2: not a sketch: 'ab' ({2 * SKETCH_BINS} hex digits)\n")
    # in a table: a bad sketch makes a bad line, reported and skipped
    text = ("#url\tfingerprint\tsketch\n"
            f"http://a/1\tf20fd1b882e00196\t{sketch.hex()}\n"
            f"http://a/2\tf20fd1b882e00197\t{sketch.hex()[:-1]}x\n"
            f"http://a/3\tf20fd1b882e00198\t{sketch.hex()}0\n"
            f"http://a/4\t f20fd1b882e00199\t{sketch.hex().upper()}\n"
            f"http://a/5\tf20fd1b882e0019a\t{sketch.hex()[:-2]} 0\n"  # 128 wide, a space
            f"http://a/6\tf20fd1b882e0019b\t{sketch.hex()}\n")
    problems = Problems(stream=io.StringIO())
    got = fingerprints.read_fingerprint_list(io.BytesIO(text.encode()), "t", problems)
    assert got.fingerprints.tolist() == [0xf20fd1b882e00196, 0xf20fd1b882e0019b,
                                         0xf20fd1b882e00199]  # bulk rows first, then slow
    assert [got.sketches[i].tobytes() for i in range(3)] == [sketch] * 3
    assert got.confirmable
    assert [line.split(": ")[1] for line in problems.stream.getvalue().splitlines()] == [
        "t:3", "t:4", "t:6"]
    with pytest.raises(Exception, match="t:3: not a sketch"):
        fingerprints.read_fingerprint_list(io.BytesIO(text.encode()), "t", Problems(strict=True))


def test_a_list_partly_sketched_is_decided_on_fingerprints(tmp_path):
    """One fingerprint without its sketch: no pair is confirmed, all are decided as
    before (k=3), and stderr says why, once."""
    sketch = bytes(range(1, SKETCH_BINS + 1))
    src = tmp_path / "list.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in (
        {"url": "http://a/1", "fingerprint": "0000000000000000", "sketch": sketch.hex()},
        {"url": "http://a/2", "fingerprint": "0000000000000007", "sketch": bytes(SKETCH_BINS).hex()},
        {"url": "http://a/3", "fingerprint": "000000000000000f"})))
    proc = run("find-all", "-i", src, check=0)
    assert [r[:3] for r in table(proc.stdout)[1]] == [
        ["http://a/1", "http://a/2", "3"], ["http://a/2", "http://a/3", "1"]]
    assert proc.stderr.splitlines() == [
        f"scrapy-simhash: {src}: 1 of 3 fingerprints have no sketch: pairs decided on "
        "fingerprints alone within 3 bits, not confirmed by sketches as a crawl does "
        "(`scrapy-simhash fingerprint` writes them; --no-confirm silences this)"]


@st.composite
def signed_rows(draw):
    """Rows near a few bases: fingerprints a few bits apart, sketches a few bins apart
    (some emptied), so that candidates within k both confirm and do not."""
    bases = draw(st.lists(st.tuples(st.integers(0, 2**64 - 1), sketch_bytes),
                          min_size=1, max_size=4))
    rows = []
    for _ in range(draw(st.integers(1, 30))):
        fp, sketch = bases[draw(st.integers(0, len(bases) - 1))]
        for bit in draw(st.lists(st.integers(0, 63), max_size=8)):
            fp ^= 1 << bit
        sketch = bytearray(sketch)
        for at, value in draw(st.lists(st.tuples(st.integers(0, 63), st.integers(0, 255)),
                                       max_size=40)):
            sketch[at] = value
        if draw(st.integers(0, 20)) == 0:
            sketch = bytearray(SKETCH)  # an empty sketch confirms nothing
        rows.append((fp, bytes(sketch)))
    return rows


def brute_confirmed(rows, k):
    """{i < j: hamming <= k and the sketches confirm}: the crawl's decision, pair by pair."""
    from scrapy_simhash import Signature, is_duplicate

    return {(i, j) for i, j in combinations(range(len(rows)), 2)
            if is_duplicate(Signature(*rows[i]), Signature(*rows[j]), k=k)}


def run_main(*args):
    from scrapy_simhash.cli import main

    return main([str(a) for a in args])


@settings(BIG_EXAMPLES, max_examples=60)
@given(signed_rows(), st.none() | st.integers(0, 10))
def test_confirmed_pairs_and_clusters_match_brute_force(rows, k):
    """find-all and clusters on a list with sketches give exactly the pairs the
    crawl's decision gives, and clusters linked by those pairs only."""
    import tempfile
    from pathlib import Path

    pairs = brute_confirmed(rows, K if k is None else k)
    distance = [] if k is None else ["-d", k]
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "list.txt", Path(tmp) / "out.txt"
        src.write_text("#key\tfingerprint\tsketch\n" + "".join(
            f"r{i:02d}\t{fp:016x}\t{s.hex()}\n" for i, (fp, s) in enumerate(rows)))
        assert run_main("find-all", "-i", src, "-o", out, "--json", *distance) == 0
        got = {(r["key_a"], r["key_b"]): r["distance"]
               for r in map(json.loads, out.read_text().splitlines())}
        assert got == {(f"r{i:02d}", f"r{j:02d}"): (rows[i][0] ^ rows[j][0]).bit_count()
                       for i, j in pairs}

        assert run_main("clusters", "-i", src, "-o", out, "--json", *distance) == 0
        clusters = {}
        for r in map(json.loads, out.read_text().splitlines()):
            clusters.setdefault(r["cluster"], set()).add(int(r["key"][1:]))
        parent = list(range(len(rows)))

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x

        for i, j in pairs:
            parent[find(i)] = find(j)
        want = {}
        for i in range(len(rows)):
            want.setdefault(find(i), set()).add(i)
        assert sorted(map(sorted, clusters.values())) == sorted(
            sorted(g) for g in want.values() if len(g) > 1)

        # without keys: each pair of fingerprint values once
        src.write_text("#fingerprint\tsketch\n" + "".join(
            f"{fp:016x}\t{s.hex()}\n" for fp, s in rows))
        assert run_main("find-all", "-i", src, "-o", out, "--simhash-cpp", *distance) == 0
        got = {tuple(json.loads(line)) for line in out.read_text().splitlines()}
        assert got == {tuple(sorted((rows[i][0], rows[j][0]))) for i, j in pairs}
        assert len(out.read_text().splitlines()) == len(got)
        # and clusters: each cluster's distinct fingerprints, rows linked by confirmed pairs
        assert run_main("clusters", "-i", src, "-o", out, "--simhash-cpp", *distance) == 0
        got = sorted(json.loads(line) for line in out.read_text().splitlines())
        assert got == sorted(sorted({rows[i][0] for i in g}) for g in want.values()
                             if len(g) > 1)
