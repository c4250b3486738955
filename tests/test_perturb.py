"""The quality harness's page perturbations do what they claim (synthetic page, no corpus)."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from evaluation import perturb as P

ARTICLE = (
    "The river has been the heart of the town for centuries. It was used by the mills that "
    "were built along its banks, and it is still the place where people meet on summer evenings. "
    "The council has decided that the old bridge will be repaired next year. Engineers have "
    "found that the stones are in a better state than was feared, and the work can be done "
    "without closing the road. The mayor said that the town would not forget what the river "
    "had given it, and that the repairs were a way to give something back."
)

PAGE = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>The old bridge will be repaired | Town News</title></head>
<body>
<header class="site-header"><a href="/">Town News</a>
  <nav class="main-nav"><ul>
    <li><a href="/">Home</a></li><li><a href="/politics">Politics</a></li>
    <li><a href="/sport">Sport</a></li><li><a href="/culture">Culture</a></li>
    <li><a href="/weather">Weather</a></li>
  </ul></nav>
</header>
<div class="page has-sidebar">
  <article id="story">
    <h1>The old bridge will be repaired</h1>
    <p class="meta">Posted on March 5, 2023 at 10:20 · 1,234 views · updated 5 minutes ago</p>
    <time datetime="2023-03-05T10:20">05.03.2023</time>
    <div class="story-body">
      <p>{ARTICLE[:180]}</p>
      <p>{ARTICLE[180:360]}</p>
      <p>{ARTICLE[360:]}</p>
    </div>
  </article>
  <aside class="sidebar"><h3>Most read</h3><ul>
    <li><a href="/a">Flooding closes the market square</a></li>
    <li><a href="/b">New bakery opens in the old station</a></li>
  </ul></aside>
</div>
<footer><p>© Town News. Contact the newsroom.</p></footer>
</body></html>"""

SEGMENTS = [
    "The river has been the heart of the town",
    "the old bridge will be repaired next year",
]
WORD = re.compile(r"[^\W\d_]+")


def words(el) -> list[str]:
    return WORD.findall(el.text_content())


def story(html: str) -> list[str]:
    """The article paragraphs' words (what a perturbation other than edits must not touch)."""
    root = P.parse(html)
    return [w for p in root.xpath("//div[@class='story-body']/p") for w in words(p)]


def test_find_main_uses_segments_and_widens_to_the_article() -> None:
    root = P.parse(PAGE)
    main = P.find_main(root, SEGMENTS)
    assert main.get("id") == "story"  # widened from div.story-body up to the article
    assert P.find_main(root, ["no such text anywhere"]) is None
    # an annotated boilerplate snippet outside stops the widening at the story body
    narrow = P.find_main(root, SEGMENTS, boilerplate=["Posted on"])
    assert narrow.get("class") == "story-body"


@pytest.mark.parametrize("kind", sorted(P.PERTURBATIONS))
def test_perturbations_are_deterministic_and_change_the_page(kind: str) -> None:
    a, counts = P.perturb(PAGE, [kind], seed=1, segments=SEGMENTS)
    b, _ = P.perturb(PAGE, [kind], seed=1, segments=SEGMENTS)
    c, _ = P.perturb(PAGE, [kind], seed=2, segments=SEGMENTS)
    assert a == b
    assert a != c
    assert counts[kind] > 0
    assert a != P.serialize(P.parse(PAGE))


def test_ads_are_ad_containers_with_commercial_text_and_leave_the_story() -> None:
    html, counts = P.perturb(PAGE, ["ads"], seed=3, segments=SEGMENTS)
    root = P.parse(html)
    ad_tokens = {
        "ad",
        "adsbygoogle",
        "sponsored",
        "sponsored-content",
        "ad-slot",
        "banner-ad",
        "advertisement",
    }
    ads = [
        el
        for el in root.iter()
        if isinstance(el.tag, str)
        and P._tokens(el) & ad_tokens
        and not any(P._tokens(a) & ad_tokens for a in el.iterancestors())
    ]
    assert 3 <= len(ads) == counts["ads"] <= 5
    assert all(len(words(ad)) >= 8 for ad in ads)
    assert story(html) == story(PAGE)
    assert root.xpath(
        "//article//*[contains(@class, 'ad') or contains(@class, 'sponsored')]"
    )  # in-article ad


def test_timestamps_and_counters_change_but_nothing_else() -> None:
    html, counts = P.perturb(PAGE, ["timestamps"], seed=4, segments=SEGMENTS)
    root = P.parse(html)
    meta = root.xpath("//p[@class='meta']")[0].text_content()
    assert counts["timestamps"] >= 4  # date, time, counter, relative time, the <time> text
    assert "1,234 views" not in meta and "10:20" not in meta and "5 minutes ago" not in meta
    assert re.search(r"\d[\d,]* views", meta) and re.search(r"\b\d+ \w+ ago", meta)
    assert root.xpath("//time/@datetime")[0] != "2023-03-05T10:20"
    assert root.xpath("//time")[0].text != "05.03.2023"
    assert story(html) == story(PAGE)
    assert P.parse(html).findtext(".//h1") == "The old bridge will be repaired"


def test_timestamps_inserts_a_byline_when_the_page_has_none() -> None:
    page = re.sub(r'<p class="meta">.*?</p>|<time.*?</time>', "", PAGE)
    assert P.count_timestamps(P.parse(page)) == 0
    html, counts = P.perturb(page, ["timestamps"], seed=5, segments=SEGMENTS)
    assert counts["timestamps"] == 1
    assert P.count_timestamps(P.parse(html)) >= 2


def test_navigation_is_rotated_with_one_item_dropped_and_one_added() -> None:
    before = [a.text for a in P.parse(PAGE).xpath("//nav//a")]
    html, counts = P.perturb(PAGE, ["navigation"], seed=6, segments=SEGMENTS)
    after = [a.text for a in P.parse(html).xpath("//nav//a")]
    assert counts["navigation"] == 1
    assert len(after) == len(before)
    assert len(set(before) - set(after)) == 1 and len(set(after) - set(before)) == 1
    kept = [x for x in after if x in before]
    assert kept != [x for x in before if x in kept] or after[0] != before[0]  # order changed
    assert story(html) == story(PAGE)


def test_sidebar_is_swapped_but_the_has_sidebar_wrapper_is_not() -> None:
    teasers = [
        "Why the harbour will close for a week in May",
        "A guide to the best walks in the hills above town",
    ]
    html, counts = P.perturb(PAGE, ["sidebar"], seed=7, segments=SEGMENTS, teasers=teasers)
    root = P.parse(html)
    aside = root.xpath("//aside")[0].text_content()
    assert counts["sidebar"] == 1
    assert "Flooding" not in aside and "bakery" not in aside
    assert any(t.split()[0] in aside for t in teasers)
    assert root.xpath("//div[contains(@class, 'has-sidebar')]/article")  # the wrapper survived
    assert story(html) == story(PAGE)


def test_sidebar_is_added_when_the_page_has_none() -> None:
    page = re.sub(r"<aside.*?</aside>", "", PAGE, flags=re.DOTALL)
    html, counts = P.perturb(page, ["sidebar"], seed=8, segments=SEGMENTS)
    root = P.parse(html)
    assert counts["sidebar"] == 1
    assert root.xpath("//aside[@class='sidebar']//li")
    assert not root.xpath("//article//aside")  # next to the main content, not inside it


def test_edits_touch_about_one_percent_of_the_main_text_words() -> None:
    long_page = PAGE.replace(ARTICLE[:180], ARTICLE * 3)
    html, counts = P.perturb(long_page, ["edits"], seed=9, segments=SEGMENTS)
    before, after = (words(P.parse(h).find(".//article")) for h in (long_page, html))
    n = round(len(before) * 0.01)
    assert n >= 3 and counts["edits"] == n
    removed, added = Counter(before) - Counter(after), Counter(after) - Counter(before)
    assert 1 <= sum(removed.values()) + sum(added.values())
    assert sum(removed.values()) <= n and sum(added.values()) <= n  # one word per edit
    assert abs(len(after) - len(before)) <= n
    outside = lambda h: words(P.parse(h).find(".//nav")) + words(P.parse(h).find(".//aside"))
    assert outside(html) == outside(long_page)


def test_transplant_puts_the_article_in_the_other_template() -> None:
    other = (
        "<html><head><title>Harbour news | Coast Daily</title></head><body>"
        '<div id="menu"><a href="/">Coast Daily</a> <a href="/boats">Boats</a></div>'
        "<h1>The harbour closes in May</h1>"
        '<div id="content"><p>The harbour will be closed for a week while the quay is rebuilt.</p></div>'
        "<footer>Coast Daily, all rights reserved</footer></body></html>"
    )
    article, template = P.parse(PAGE), P.parse(other)
    before = P.serialize(template), P.serialize(article)
    page = P.transplant(
        article,
        P.find_main(article, SEGMENTS),
        template,
        template.xpath("//div[@id='content']")[0],
    )
    text = page.text_content()
    assert "The river has been the heart of the town" in text
    assert "harbour will be closed" not in text
    assert "Boats" in text and "all rights reserved" in text  # the other site's template stays
    assert page.findtext(".//title") == "The old bridge will be repaired | Town News"
    assert [h.text for h in page.iter("h1")] == ["The old bridge will be repaired"]
    assert (P.serialize(template), P.serialize(article)) == before  # inputs untouched


def test_unknown_perturbation_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown perturbation.*'adz'"):
        P.perturb(PAGE, ["adz"], seed=0)


def test_seeds_are_stable_across_processes() -> None:
    assert P.page_seed("https://example.com/", "ads") == 3607583100  # CRC-32, the same everywhere
    assert (
        random.Random(P.page_seed(0, "x")).random() == random.Random(P.page_seed(0, "x")).random()
    )


# The harness's own arithmetic (bench/quality.py), on synthetic fingerprints.


def test_all_pairs_matches_brute_force() -> None:
    import numpy as np

    from bench import quality as Q

    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**64, size=40, dtype=np.uint64)
    flips = np.uint64(1) << rng.integers(0, 64, size=(40, 3), dtype=np.uint64)
    fps = np.concatenate([base, base ^ flips[:, 0] ^ flips[:, 1]])  # pairs at distance <= 2
    valid = np.ones(len(fps), dtype=bool)
    valid[5] = False  # no fingerprint: in no pair
    pages = [Q.Page(f"p{i}", f"site{i % 3}", "", shingles=frozenset([str(i)])) for i in range(80)]
    # Sketches: pages i and i + 40 agree when i is even (the decision confirms them).
    size = Q.SG.SKETCH_BINS
    sketches = [bytes([1 + i % 40] * size) if i % 2 == 0 or i < 40 else bytes([250] * size)
                for i in range(80)]
    sigs = Q.Signatures([
        Q.SG.Signature(int(fp), sketch) if ok else None
        for fp, sketch, ok in zip(fps, sketches, valid)
    ])
    for cross_only in (False, True):
        got = Q.all_pairs(pages, sigs, "t", cross_only=cross_only)
        want = {
            (a, b, (int(fps[a]) ^ int(fps[b])).bit_count())
            for a in range(80)
            for b in range(a + 1, 80)
            if valid[a] and valid[b] and (not cross_only or a % 3 != b % 3)
        }
        assert got.total == len(want)
        near = {w for w in want if w[2] <= 8}
        assert set(zip(got.i.tolist(), got.j.tolist(), got.d.tolist())) == near
        assert (got.jac == 0).all()  # distinct one-shingle texts
        decided = {
            (a, b): d if Q.SG.is_duplicate(sigs.sigs[a], sigs.sigs[b], k=64) else Q.NO_FP
            for a, b, d in near
        }
        assert dict(zip(zip(got.i.tolist(), got.j.tolist()), got.dd.tolist())) == decided
        assert Q.NO_FP in decided.values() and set(decided.values()) != {Q.NO_FP}


def test_quality_exits_clearly_without_the_corpus(monkeypatch, capsys) -> None:
    from bench import quality as Q

    monkeypatch.setattr(Q, "corpus_dir", lambda: None)
    monkeypatch.setattr(Q, "site_dir", lambda site: None)
    assert Q.main(["--quick"]) == 2
    assert "needs the evaluation corpus" in capsys.readouterr().err


def test_quality_measures_public_doc_sites_without_the_corpus(tmp_path, monkeypatch, capsys):
    """Without the shared corpus, the documentation sites (Debian's packages) are still
    measured: all pairs within a site and across sites, with their bars."""
    from bench import quality as Q
    from evaluation import corpus as C

    words = "river harbour ferry lantern orchard meadow quarry bakery chapel market".split()
    for s, site in enumerate(Q.DOC_SITES):
        folder = tmp_path / site.replace("/", "_")
        folder.mkdir()
        for n in range(4):
            topic = words[(n + 3 * s) % len(words)]
            text = " ".join(
                f"The {topic} is {w} and the {w} was {topic}." for w in words[n:] + words[:n]
            )
            (folder / f"p{n}.html").write_text(
                f"<html><head><title>{topic} {n}</title></head><body><div role='main' id='yui-main'>"
                f"<p>{text}</p></div></body></html>"
            )
    monkeypatch.setattr(Q, "corpus_dir", lambda: None)
    monkeypatch.setattr(C, "corpus_dir", lambda: None)
    dirs = {site: tmp_path / site.replace("/", "_") for site in Q.DOC_SITES}
    monkeypatch.setattr(Q, "site_dir", dirs.get)
    monkeypatch.setattr(C, "site_dir", dirs.get)
    assert Q.main(["--quick"]) == 0
    out = capsys.readouterr()
    assert "web/" in out.err
    for site in Q.DOC_SITES:  # the default: every site
        assert f"{site}: " in out.out
    assert "(of 6 pairs)" in out.out
    assert Q.main(["--quick", "--sites", "qt-5.15", "docs3/eigen-3.4", "commons-lang3-3.12"]) == 0
    out = capsys.readouterr().out
    for site in Q.DOC_SITES:
        assert (f"{site}: " in out) == site.startswith("docs3/")
