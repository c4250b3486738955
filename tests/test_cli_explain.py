"""`explain A B` on real files: a pair that matches, one that does not, a page
without a fingerprint, URLs of a crawl's state, pages in JSON lines."""

from __future__ import annotations

import json

import pytest

from scrapy_simhash import features, fingerprint, is_duplicate, signature
from scrapy_simhash.fingerprinting import fingerprint_details
from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE as K, confirmation
from tests.fixtures_http import article_html
from tests.test_cli import make_state, run, table


@pytest.fixture
def pages(tmp_path):
    html = article_html(1, words=1200)
    (tmp_path / "a.html").write_text(html)
    (tmp_path / "a-edited.html").write_text(
        html.replace("</p>", " And then the lantern was quiet. </p>", 2))
    # the same visible words, its last paragraph set aside: outside the main text
    last = html.rindex("<p>")
    end = html.index("</p>", last) + len("</p>")
    (tmp_path / "a-moved.html").write_text(
        html[:last] + "<aside>" + html[last:end] + "</aside>" + html[end:])
    (tmp_path / "b.html").write_text(article_html(2, words=1200))
    (tmp_path / "thin.html").write_text("<html><body><p>Hello there.</p></body></html>")
    return tmp_path


def explain(*args, check=0):
    return json.loads(run("explain", *args, "--json", check=check).stdout)


def test_a_pair_that_matches(pages):
    """A copy laid out otherwise (the same visible words, fingerprints a few bits
    apart): explain's checks, verdict and features are the library's."""
    a, b = (pages / "a.html").read_text(), (pages / "a-moved.html").read_text()
    fa, fb = fingerprint(a), fingerprint(b)
    distance = (fa ^ fb).bit_count()
    assert 1 <= distance <= 3
    data = explain(pages / "a.html", pages / "a-moved.html", "--top", 1000)
    assert data["a"]["fingerprint"] == f"{fa:016x}" and data["b"]["fingerprint"] == f"{fb:016x}"
    assert data["checks"][0] == {"name": "simhash", "a": f"{fa:016x}", "b": f"{fb:016x}",
                                 "distance": distance, "limit": K, "match": True,
                                 "reason": f"{distance} bits apart, within k={K}"}
    # the second signature, as the crawl's is_duplicate compares it (each page
    # signed alone, as explain signs two files: only an exact copy confirms)
    sa, sb = signature(a), signature(b)
    found = confirmation(sa.sketch, sb.sketch)
    assert found.confirms and found.reason.startswith("exact")
    sketch_check = data["checks"][1]
    assert sketch_check["name"] == "sketch" and sketch_check["match"] is True
    assert sketch_check["reason"].startswith(found.reason)
    assert f"{found.words[0]} and {found.words[1]} own words" in sketch_check["reason"]
    assert data["a"]["sketch"] == sa.sketch.hex() and data["b"]["sketch"] == sb.sketch.hex()
    assert data["near_duplicates"] is is_duplicate(sa, sb) is True
    assert data["verdict"].startswith("near-duplicates")
    # the features are the library's, with their weights
    wa, wb = features(a), features(b)
    assert wa.keys() != wb.keys()
    shared = {r["feature"]: (r["weight_a"], r["weight_b"]) for r in data["features"]["shared"]}
    assert shared == {f: (wa[f], wb[f]) for f in wa.keys() & wb.keys()}
    assert {r["feature"] for r in data["features"]["only_a"]} == wa.keys() - wb.keys()
    assert {r["feature"] for r in data["features"]["only_b"]} == wb.keys() - wa.keys()
    assert data["a"]["features"] == len(wa)
    assert data["a"]["spots"] == fingerprint_details(a).feature_count
    assert 0 < data["a"]["feature_chars"] <= data["a"]["text_chars"]

    text = run("explain", pages / "a.html", pages / "a-moved.html", check=0).stdout
    assert f"{distance} bits apart, within k={K}" in text
    assert "verdict: near-duplicates" in text
    assert "of the page's" in text and "characters of visible text" in text
    # a smaller k turns the verdict
    data = explain(pages / "a.html", pages / "a-moved.html", "-d", distance - 1)
    assert data["near_duplicates"] is False

    # An edited copy, each page signed without its site's template: the
    # fingerprints agree, the sketches do not confirm it, and the reason says why.
    e = (pages / "a-edited.html").read_text()
    se = signature(e)
    assert 1 <= (fa ^ se.fingerprint).bit_count() <= 3
    found = confirmation(sa.sketch, se.sketch)
    assert not found.confirms and "only an exact copy" in found.reason
    data = explain(pages / "a.html", pages / "a-edited.html")
    assert data["checks"][0]["match"] is True
    assert data["checks"][1]["match"] is False
    assert data["checks"][1]["reason"].startswith(found.reason)
    assert data["near_duplicates"] is is_duplicate(sa, se) is False
    assert data["verdict"].startswith("not near-duplicates")


def test_a_pair_that_does_not_match(pages):
    data = explain(pages / "a.html", pages / "b.html")
    d = data["checks"][0]["distance"]
    assert d == (fingerprint((pages / "a.html").read_text())
                 ^ fingerprint((pages / "b.html").read_text())).bit_count() > K
    assert data["near_duplicates"] is False
    assert data["verdict"].startswith(
        f"not near-duplicates: simhash {d} bits apart, more than k={K}; sketch ")
    assert data["verdict"].endswith("Both are kept.")


def test_a_page_without_a_fingerprint(pages):
    data = explain(pages / "a.html", pages / "thin.html")
    assert data["b"]["fingerprint"] is None and data["near_duplicates"] is None
    assert "B has no fingerprint" in data["verdict"] and "never dropped" in data["verdict"]


def test_urls_of_a_crawl_state_and_pages_in_json_lines(pages, tmp_path):
    a = (pages / "a.html").read_text()
    b = (pages / "a-moved.html").read_text()
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    make_state(jobdir / "simhash.seen", [fingerprint(a), fingerprint(b)],
               ["http://x/a", "http://x/a-moved"], [signature(a).sketch, signature(b).sketch])
    data = explain("http://x/a", "http://x/a-moved", "--state", jobdir)
    assert data["near_duplicates"] is is_duplicate(signature(a), signature(b)) is True
    assert "features" not in data
    assert data["a"]["features"] is None  # a state keeps no page
    text = run("explain", "http://x/a", "http://x/a-moved", "--state", jobdir, check=0).stdout
    assert "from the crawl's state, which keeps its fingerprint and sketch only" in text

    lines = tmp_path / "pages.jsonl"
    lines.write_text(json.dumps({"url": "http://x/a", "html": a}) + "\n"
                     + json.dumps({"url": "http://x/b", "html": b}) + "\n")
    data = explain("http://x/a", "http://x/b", "--pages", lines)
    assert data["features"]["shared_count"] == len(features(a).keys() & features(b).keys())
    # one side a page, the other from the state
    data = explain("http://x/a", "http://x/a-moved", "--pages", lines, "--state", jobdir)
    assert data["a"]["features"] is not None and data["b"]["features"] is None
    proc = run("explain", "http://x/zzz", "http://x/a", "--state", jobdir, check=1)
    assert "http://x/zzz: not a file, not a URL of --state" in proc.stderr


def test_fingerprint_labels_both_counts(pages):
    """The spot-signature count (compared with min_features) and the feature count
    (features()) are separate, labelled columns."""
    html = ("<html><head><title>Annual report of the river board</title></head><body>"
            "<h1>Water levels and the spring floods</h1><p>" + (pages / "b.html").read_text()
            + "</p></body></html>")
    (pages / "titled.html").write_text(html)
    names, rows = table(run("fingerprint", pages / "titled.html", check=0).stdout)
    assert names[2:4] == ["spots_for_min_features", "features"]
    spots, total = int(rows[0][2]), int(rows[0][3])
    assert spots == fingerprint_details(html).feature_count
    assert total == len(features(html)) > spots
    assert "the count compared with --min-features" in run(
        "fingerprint", "--help", check=0).stdout.replace("\n", " ")


def test_a_file_of_several_pages_is_not_a_side(pages, tmp_path):
    lines = tmp_path / "two.jsonl"
    lines.write_text("".join(json.dumps({"url": f"http://x/{i}", "html": "<p>x</p>"}) + "\n"
                             for i in range(2)))
    proc = run("explain", lines, pages / "a.html", check=1)
    assert "holds 2 pages" in proc.stderr
