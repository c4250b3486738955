"""End to end: the example project crawls its demo site in a subprocess ``scrapy crawl``.

The demo site (``example_project/demo/site.py``) knows which of its pages are
copies of one another (``classify(url).group``), so every drop and every kept
page can be checked. Which copy of a page comes first depends on concurrency,
so the checks are order-independent: each group is kept at least once and at most
``run_demo.MAX_KEPT`` times (a copy the decision cannot confirm is kept: of one of the
site's first ``KNOWN_PAGES`` pages, signed before its template was known, or of a page
signed while the template was younger; a copy delivered for a link of its own).
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import scrapy.cmdline

from scrapy_simhash.fingerprinting import DEFAULT_MAX_DISTANCE, fingerprint, hamming

EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"
sys.path.insert(0, str(EXAMPLE))

import run_demo  # noqa: E402
from demo import content  # noqa: E402
from demo.site import LISTING_PAGES, DemoSite, classify, serve  # noqa: E402

pytestmark = pytest.mark.scrapy

K = DEFAULT_MAX_DISTANCE  # the default SIMHASH_MAX_DISTANCE, which the demo project keeps


def _copy_distances() -> list[tuple[str, int]]:
    """Distance of every printer and partner copy to its article (one view each)."""
    site = DemoSite(seed=0)
    fp = {path: fingerprint(site.render(path)[2]) for path in site.all_pages()}
    return [
        (f"/{kind}/{a.slug}.html", hamming(fp[f"/news/{a.slug}.html"], fp[f"/{kind}/{a.slug}.html"]))
        for a in content.ARTICLES
        for kind in ("print", "partner")
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    repo = str(EXAMPLE.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> run_demo.CrawlResult:
    """One ``scrapy crawl demo`` of a freshly served site; its outputs and the site's view log."""
    out = tmp_path_factory.mktemp("demo-crawl")
    with serve(seed=1) as site:
        result = run_demo.run_crawl(site, out, ["-s", "LOG_LEVEL=WARNING"], timeout=240)
    log = result.log_path.read_text() if result.log_path.exists() else ""
    assert result.returncode == 0, log[-3000:]
    return result


def _most_kept(crawl) -> int:
    """The most times one story or listing page was kept (at one URL each)."""
    kept = Counter(classify(u).group for u in set(crawl.kept))
    return max(n for g, n in kept.items() if g.startswith(("story:", "listing:")))


def _listing_kept_twice(crawl) -> bool:
    """Two views of one listing page both kept: to the rule learner a counterexample to
    "ignore sid", which it then retires (it never skips on doubt)."""
    kept = Counter(classify(u).group for u in set(crawl.kept))
    return any(n > 1 for g, n in kept.items() if g.startswith("listing:"))


def _for_links(crawl) -> int:
    """Near copies delivered, not dropped: each linked to a page no page delivered before
    linked to (an article met after its partner copy links to its printer version)."""
    return crawl.stats.get("simhash/kept_for_links_count", 0)


def test_drop_log_matches_stats(crawl):
    stats, drops = crawl.stats, crawl.drops
    assert stats["finish_reason"] == "finished"
    assert stats["simhash/response_count"] == len(crawl.fetched)
    assert stats["simhash/duplicate_count"] == len(drops) > 0
    # every page fetched is dropped, kept as new, or delivered for a link of its own
    assert stats["simhash/index_size"] + len(drops) + _for_links(crawl) == len(crawl.fetched)
    for distance, n in Counter(d["distance"] for d in drops).items():
        assert stats[f"simhash/duplicate_distance_count/{distance}"] == n
    for d in drops:
        assert set(d) >= {"time", "spider", "url", "duplicate_of", "distance", "fingerprint",
                          "duplicate_fingerprint", "action"}
        assert d["spider"] == "demo" and d["action"] == "drop"
        assert 0 <= d["distance"] <= K
        assert hamming(int(d["fingerprint"], 16), int(d["duplicate_fingerprint"], 16)) == d["distance"]


def test_every_drop_names_a_kept_copy_of_the_same_page(crawl):
    kept = set(crawl.kept)
    for d in crawl.drops:
        assert classify(d["url"]).group == classify(d["duplicate_of"]).group, d
        assert d["duplicate_of"] in kept, d


def test_session_id_views_dropped_one_view_per_listing_page_kept(crawl):
    kept = Counter(classify(u).group for u in set(crawl.kept))  # kept at one URL
    views = Counter(classify(u).group for u in crawl.fetched if classify(u).kind == "listing")
    assert sorted(views) == [f"listing:{n}" for n in range(1, LISTING_PAGES + 1)]
    for n in range(1, LISTING_PAGES + 1):
        # once; more when a view was not confirmed: one of the site's first KNOWN_PAGES
        # pages, signed before the template was known (dropped only as exact copies:
        # Scrapy 2.13 processes a listing view second in about 3 runs of 7), or a view
        # signed while the template was younger; never again and again
        assert 1 <= kept[f"listing:{n}"] <= run_demo.MAX_KEPT
    # Every page links to listing page 1 with a fresh session id: URL dedup cannot help;
    # the URL rule learned from the dropped views skips many of them before download
    # (how many depends on the order Scrapy schedules them, and since version 7 a site's
    # first views are dropped only as exact copies, so the rule activates later: 10 of 32
    # in one run on Scrapy 2.13, most of them on 2.19).
    skipped = Counter(classify(s["url"]).group for s in crawl.skips)
    assert views["listing:1"] + skipped["listing:1"] > 10
    if not _listing_kept_twice(crawl):
        assert skipped["listing:1"] >= 5
    # else two views of one listing page were both kept: to the rule learner they are
    # a counterexample to "ignore sid", which it retires (it never skips on doubt)


def test_url_rules_skip_copies_of_kept_pages_only(crawl):
    kept = set(crawl.kept)
    stats = crawl.stats
    if _listing_kept_twice(crawl):
        # the session-id rule, which skips most, was retired (see above); the printer and
        # partner rules gather support only from dropped copies, which a rare order (1 CI
        # run on Scrapy 2.13 of about 20) does not give them: then nothing may be skipped
        doubted = sum(stats.get(f"simhash/rules_{k}_count", 0) for k in ("retired", "rejected"))
        assert crawl.skips or doubted >= 1
    else:
        assert crawl.skips
    for s in crawl.skips:
        assert classify(s["url"]).group == classify(s["duplicate_of"]).group, s
        assert s["duplicate_of"] in kept, s
        assert s["url"] not in crawl.fetched, s
    assert stats.get("simhash/requests_skipped_count", 0) == len(crawl.skips)
    # At least the rule that skipped these. How many more gather support depends on the
    # order Scrapy fetches in: the session-id rule is retired when a copy was kept twice
    # (its counterexample), and a printer copy links to the next story's printer view, so
    # it is delivered, not dropped (no pair for the printer rule), when that story's
    # article was not delivered yet (1 to 4 rules active in runs on Scrapy 2.13 and 2.19).
    # A rule that skipped may meet its counterexample later and be retired (1 demo crawl of
    # 14 on Scrapy 2.19 since the third path needs the same main text): it counts too.
    rules = stats.get("simhash/rules_active", 0) + stats.get("simhash/rules_retired_count", 0)
    assert rules >= (1 if crawl.skips else 0)
    for rule, n in Counter(s["rule"] for s in crawl.skips).items():
        assert stats[f"simhash/requests_skipped_count/{rule}"] == n
    # the copies cost few fetches: under 75% of the most the crawl fetches without rules,
    # and no more than that when a copy of one of the site's first pages was kept and the
    # session-id rule doubted: then only the printer and partner rules skip, in some orders
    # none. Crawls with no skip fetched 151 to 158 in seven runs on Scrapy 2.13 (four on
    # main 3d7eb02, three since long blocks a few pages repeat weigh 50 words at most) and
    # 135 to 154 in four on 2.19; with skips, 94 to 104 (152 was the bound before: one of
    # those main runs on 2.13 fetched 158). A near copy that links further is delivered
    # (an article met after its partner copy links to its printer version).
    bound = 1.0 if _listing_kept_twice(crawl) else 0.75
    assert len(crawl.fetched) <= bound * 170


def test_distinct_pages_all_kept_once(crawl):
    kept = Counter(classify(u).group for u in set(crawl.kept))  # kept at one URL
    distinct = {classify(u).group for u in crawl.fetched} - {
        g for g in kept if g.startswith(("story:", "listing:"))
    }
    assert {"home", "shop"} | {f"product:{p.slug}" for p in content.PRODUCTS} <= distinct
    assert {g: kept[g] for g in distinct if kept[g] != 1} == {}
    items = {(classify(i["url"]).group, i["title"]) for i in crawl.items}
    for a in content.ARTICLES:
        assert (f"story:{a.slug}", a.title) in items
    for p in content.PRODUCTS:
        assert (f"product:{p.slug}", p.name) in items


def test_each_story_kept_once_whichever_copy_came_first(crawl):
    views = Counter(classify(u).group for u in crawl.fetched if classify(u).kind != "home")
    kept = Counter(classify(u).group for u in set(crawl.kept))  # kept at one URL
    stories = [f"story:{a.slug}" for a in content.ARTICLES]
    # once; more as a copy the decision did not confirm, or for a link (see above)
    assert {g: kept[g] for g in stories if kept[g] < 1} == {}
    assert _most_kept(crawl) <= run_demo.MAX_KEPT
    # The article links its printer and partner copies: at least one copy was met, and
    # dropped or skipped.
    skipped = Counter(classify(s["url"]).group for s in crawl.skips)
    assert all(views[g] + skipped[g] >= 2 for g in stories)


def test_pages_linked_only_from_copies_are_reached(crawl):
    """The partner's front page and sections are linked only from partner copies: the
    first partner copy met links to them and no page delivered before does, so it is
    delivered, not dropped (its drop would cut them off), and each is kept once."""
    kept = Counter(classify(u).group for u in set(crawl.kept))
    partner = {"partner-index"} | {f"partner-section:{s}" for s in content.SECTIONS}
    assert {g: kept[g] for g in partner} == dict.fromkeys(partner, 1)
    assert _for_links(crawl) >= 1


def test_copies_within_k():
    """Printer and partner copies differ from their article in chrome only: the site name
    in the title, masthead, print timestamp, adverts, counters, navigation, layout."""
    assert [(path, d) for path, d in _copy_distances() if d > K] == []


def test_distinct_pages_more_than_k_apart():
    """Brute force over one view of every page; the 14 products share one template."""
    site = DemoSite(seed=0)
    fps = {path: fingerprint(site.render(path)[2]) for path in site.all_pages()}
    assert None not in fps.values()
    close = [
        (x, y, hamming(fps[x], fps[y]))
        for x, y in itertools.combinations(fps, 2)
        if classify(x).group != classify(y).group and hamming(fps[x], fps[y]) <= K
    ]
    assert close == []
    products = [fp for path, fp in fps.items() if classify(path).kind == "product"]
    assert len(products) == len(content.PRODUCTS)
    assert min(hamming(a, b) for a, b in itertools.combinations(products, 2)) > K


def test_articles_read_like_news():
    """Several paragraphs of 300-800 words, no paragraph repeated anywhere on the site."""
    for a in content.ARTICLES:
        words = sum(len(p.split()) for p in a.paragraphs)
        assert 300 <= words <= 800 and len(a.paragraphs) >= 5, (a.slug, words)
    paragraphs = [p for a in content.ARTICLES for p in a.paragraphs]
    assert len(set(paragraphs)) == len(paragraphs)


def test_run_demo_end_to_end(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "run_demo.py"), "--seed", "2", "--output", str(tmp_path)],
        env=_env(), capture_output=True, text=True, timeout=240,
    )
    out = proc.stdout
    summary = re.search(r"Crawled (\d+) pages.*\n  kept +(\d+) pages(.*)\n  dropped +(\d+) pages"
                        r".*\n  not followed +(\d+) links", out)
    assert summary, out[-3000:] + proc.stderr[-3000:]
    crawled, kept, more, dropped, unfollowed = summary.groups()
    crawled, kept, dropped, unfollowed = map(int, (crawled, kept, dropped, unfollowed))
    again = re.search(r"\((\d+) responses: ", more)
    responses = int(again.group(1)) if again else kept
    assert crawled == responses + dropped and dropped > 0 and unfollowed > 0
    assert re.search(r"product pages share one template; closest pair .* at distance \d+", out)
    assert (tmp_path / "drops.jsonl").exists() and (tmp_path / "stats.json").exists()
    table = re.search(r"pages fetched +(\d+) +(\d+)\n  distinct pages kept +(\d+) +(\d+)", out)
    assert table, out[-3000:]
    with_rules, without, kept_with, kept_without = map(int, table.groups())
    assert with_rules == crawled
    # the first rule, on every Scrapy version: the run's own checks
    lost = re.search(r"\[ok\] with URL rules no distinct page lost: (\d+) of the (\d+) ", out)
    assert lost and lost.group(1) == lost.group(2), out[-3000:]
    assert "[ok] every drop names a kept copy of the same page" in out, out[-3000:]
    assert "[ok] every other page kept exactly once" in out, out[-3000:]
    assert out.count("[ok] each of the ") == 2, out[-3000:]  # stories, listing pages
    if not hasattr(scrapy.cmdline, "AsyncCrawlerProcess"):
        # Scrapy 2.13 fetches in another order: the session-id rule activates later
        # and the counts below vary from run to run (since FINGERPRINT_VERSION 7)
        return
    assert re.search(r"/news/list\?page=1&sid=\w+ +/news/list\?page=1&sid=\w+ +0\n", out)
    # without rules a site's first near copies may be kept (v7 drops them only as exact
    # copies until the template is known), and the pages only they link to reached: the
    # crawl with rules may keep fewer, but loses no page reached through originals
    assert kept_with <= kept_without
    # a listing page kept twice is a counterexample to the session-id rule: then it saves
    # nothing, and either crawl may fetch more
    doubted = re.search(r"listing:\d+ kept [2-9] times", out)
    if not doubted:
        assert with_rules < without
    if not doubted:
        assert re.search(r"active +\d+ +\d+ +0 +\d+ +param /news/list ignore sid", out), out[-3000:]
    failed = [line for line in out.splitlines() if "[FAIL]" in line]
    assert (proc.returncode == 0) == (not failed), out[-3000:]
    assert proc.returncode == 0, out[-3000:]
    assert "All checks passed." in out
    # every page kept once (or more, counted): the summary's kept figure is the table's
    twice = re.search(r"copies kept besides the first: (\d+) \(", out)
    assert twice, out[-3000:]
    assert re.search(rf"distinct pages kept +{kept - int(twice.group(1))} ", out), out[-3000:]


def test_site_serves_standalone():
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "demo" / "site.py"), "--port", "0"],
        stdout=subprocess.PIPE, text=True, env=_env(),
    )
    try:
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:") and base.endswith("/")
        from urllib.request import urlopen

        with urlopen(base, timeout=10) as r:
            home = r.read().decode()
        assert content.SITE_NAME in home and "/news/list?page=1&amp;sid=" in home
        with urlopen(base + "shop/honey-jar.html", timeout=10) as r:
            assert "Water meadow honey" in r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
