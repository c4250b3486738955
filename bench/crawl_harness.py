"""Crawl harness: what a real crawl with the add-on loses, against the same crawl without it.

All-pairs checks miss the cascade: a dropped page's outlinks are never followed, so the
pages only it links to are never fetched. This harness measures a crawl. It serves a
documentation site (a folder of HTML files) and a mirror copy of it (the same files on a
second loopback port) from a small threaded HTTP server. The original's start page links
to the mirror's start page and to the mirror copies of a few pages further down the site,
which a crawl then reaches through the mirror before their originals. It crawls both twice
with a real Scrapy crawler, each crawl in a fresh process: once with ``ADDONS =
{"scrapy_simhash.Addon": 0}`` at its defaults (plus any ``-s NAME=VALUE``), once without
the add-on. A page is a file of the site; a crawl *delivers* it when a spider callback
receives it from the original or from the mirror. Against the crawl without the add-on:

* LOST: pages delivered without the add-on and not with it, whose content no delivered page
  has either (no delivered page's content container within 5-word-shingle Jaccard >= 0.5);
  split into pages dropped directly, skipped before download by a URL rule, and never
  requested (only linked from dropped pages: the cascade);
* every drop (and URL-rule skip), judged: the same page (a mirror copy of its original, or
  the other way round), near-identical content (Jaccard >= 0.5 of the site's content
  container, as ``bench/quality.py`` judges pairs), or WRONG (Jaccard < 0.5);
* fetches saved, the mirror's copies not delivered (dropped, skipped or never fetched),
  the pages delivered twice (both copies), and each crawl's wall time.

A site is a folder or a corpus site name (``docs3/qt-5.15``; its content container comes
from ``bench/quality.py``'s ``DOC_SITES``)::

    python -m bench.crawl_harness docs3/qt-5.15 --pages 1200
    python -m bench.crawl_harness path/to/html --xpath "//main" -s SIMHASH_MAX_DISTANCE=3

``--pages N`` serves the first N pages of a breadth-first walk of the links from the start
page (the rest of the site answers 404 and is never requested). Links are followed from
``a``/``area`` hrefs and ``frame``/``iframe`` sources, without query or fragment, to the
site's HTML pages. The output goes to ``bench/results/crawl_harness.txt`` (``--output``,
``--append``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urldefrag, urljoin, urlsplit

import scrapy
from lxml import etree
from lxml import html as lxml_html

from bench import quality as Q
from evaluation import perturb as P
from evaluation.corpus import site_dir
from scrapy_simhash.fingerprinting import FINGERPRINT_VERSION

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "crawl_harness.txt"
#: The links a crawl follows (the breadth-first page limit walks the same ones).
LINKS = "//a/@href | //area/@href | //frame/@src | //iframe/@src"
HTML_SUFFIXES = (".html", ".htm")
ORIGINAL, MIRROR = "original", "mirror"
#: Corpus sites whose start page is not ``index.html``.
START_PAGES = {"docs3/qt-5.15": "qtcore/qtcore-index.html"}
SCHEDULER_QUEUES = {
    "fifo": ("scrapy.squeues.FifoMemoryQueue", "scrapy.squeues.PickleFifoDiskQueue"),
    "lifo": ("scrapy.squeues.LifoMemoryQueue", "scrapy.squeues.PickleLifoDiskQueue"),
}
ADDON = {"scrapy_simhash.Addon": 0}


class HarnessError(Exception):
    """A site cannot be served or a crawl failed; the message says which and why."""


# --------------------------------------------------------------------------- pages and links


def page_key(path: str) -> str:
    """The site-relative file a URL path names (``dir/`` names ``dir/index.html``)."""
    key = unquote(path).lstrip("/")
    return key + "index.html" if key == "" or key.endswith("/") else key


def page_url(base: str, key: str) -> str:
    """The one URL of page *key* on the copy served at *base*."""
    return f"{base}/{quote(key)}"


def outlinks(url: str, hrefs: Iterable[str]) -> Iterator[str]:
    """The absolute URLs of a page's links, without query or fragment."""
    for href in hrefs:
        href = href.strip()
        if not href or href.startswith(("javascript:", "mailto:", "data:")):
            continue
        try:
            parts = urlsplit(urldefrag(urljoin(url, href))[0])
        except ValueError:  # a malformed href ("http://[x"): a browser would not follow it
            continue
        yield f"{parts.scheme}://{parts.netloc}{parts.path}"


def locate(url: str, bases: Mapping[str, str]) -> tuple[str, str] | None:
    """``(copy, page)`` for a URL of one of the served copies, else None."""
    for copy, base in bases.items():
        if url.startswith(base + "/"):
            return copy, page_key(urlsplit(url).path)
    return None


def bfs_pages(root: Path, start: str, limit: int | None = None) -> list[str]:
    """The site's pages reachable from *start*, breadth first, at most *limit* of them."""
    if not (root / start).is_file():
        raise HarnessError(f"{root}: no start page {start!r} (give --start)")
    base = "http://site"
    order: list[str] = []
    seen, queue = {start}, deque([start])
    while queue and (limit is None or len(order) < limit):
        key = queue.popleft()
        order.append(key)
        try:
            tree = lxml_html.fromstring((root / key).read_bytes())
        except (ValueError, etree.LxmlError):  # an empty or unparsable page links nowhere
            continue
        for url in outlinks(page_url(base, key), tree.xpath(LINKS)):
            found = locate(url, {"": base})
            if found is None or found[1] in seen or not found[1].endswith(HTML_SUFFIXES):
                continue
            seen.add(found[1])
            if (root / found[1]).is_file():
                queue.append(found[1])
    return order


def linkers(root: Path, pages: Sequence[str], targets: Iterable[str]) -> dict[str, list[str]]:
    """For each of *targets*, the pages of *pages* that link to it (what a crawl would
    have to deliver for it to be requested), in *pages*' order."""
    wanted = set(targets)
    found: dict[str, list[str]] = {key: [] for key in wanted}
    if not wanted:
        return found
    base = "http://site"
    for key in pages:
        try:
            tree = lxml_html.fromstring((root / key).read_bytes())
        except (ValueError, etree.LxmlError):
            continue
        linked = {hit[1] for url in outlinks(page_url(base, key), tree.xpath(LINKS))
                  if (hit := locate(url, {"": base})) is not None}
        for target in linked & wanted:
            if target != key:
                found[target].append(key)
    return found


def mirror_entries(pages: Sequence[str], count: int) -> list[str]:
    """The pages whose mirror copies the start page links to: the start page itself and
    ``count - 1`` more, evenly spread over the breadth-first order (so that a crawl meets
    their mirror copies first and their originals later)."""
    count = max(1, min(count, len(pages)))
    return list(dict.fromkeys(pages[i * len(pages) // count] for i in range(count)))


def inject_links(body: bytes, urls: Sequence[str]) -> bytes:
    """*body* with links to *urls* before its last ``</body>`` (or at its end)."""
    anchors = "".join(f'<p><a href="{url}">mirror</a></p>' for url in urls).encode()
    at = body.lower().rfind(b"</body>")
    return body + anchors if at < 0 else body[:at] + anchors + body[at:]


# --------------------------------------------------------------------------- the server


class MirroredSite:
    """A site's pages on two loopback ports: the original, whose start page (the first of
    *pages*) links to the mirror copies of the :func:`mirror_entries`, and the mirror (the
    files as they are). Counts the pages served per copy; any other path answers 404."""

    def __init__(self, root: Path, pages: Sequence[str], mirror_links: int = 3) -> None:
        self.root = root
        self.pages = frozenset(pages)
        self.served: Counter[tuple[str, str]] = Counter()
        self.not_found = 0
        self._lock = threading.Lock()
        self._servers = {
            copy: ThreadingHTTPServer(("127.0.0.1", 0), self._handler(copy))
            for copy in (ORIGINAL, MIRROR)
        }
        self.bases = {
            copy: f"http://127.0.0.1:{server.server_address[1]}"
            for copy, server in self._servers.items()
        }
        self.start = pages[0]
        self.entries = [
            page_url(self.bases[MIRROR], key) for key in mirror_entries(pages, mirror_links)
        ]
        self._threads = [
            threading.Thread(target=server.serve_forever, daemon=True)
            for server in self._servers.values()
        ]

    def _handler(self, copy: str) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                key = page_key(urlsplit(self.path).path)
                body = site.body(copy, key)
                with site._lock:
                    if body is None:
                        site.not_found += 1
                    else:
                        site.served[copy, key] += 1
                self.send_response(404 if body is None else 200)
                self.send_header("Content-Type", "text/plain" if body is None else "text/html")
                body = b"not found" if body is None else body
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        Handler.server_version = "crawl-harness"
        return Handler

    def body(self, copy: str, key: str) -> bytes | None:
        """The bytes served for page *key* of *copy*; None when it is not served."""
        if key not in self.pages:
            return None
        body = (self.root / key).read_bytes()
        if copy == ORIGINAL and key == self.start:
            body = inject_links(body, self.entries)
        return body

    def start_url(self, start: str) -> str:
        return page_url(self.bases[ORIGINAL], start)

    def reset(self) -> None:
        with self._lock:
            self.served.clear()
            self.not_found = 0

    def __enter__(self) -> MirroredSite:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()


# --------------------------------------------------------------------------- one crawl


class HarnessSpider(scrapy.Spider):
    """Follows every link to a served page of either copy; records the URLs it parses."""

    name = "crawl_harness"

    def __init__(self, start_url: str, bases: dict[str, str], pages: list[str], record: str,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_url = start_url
        self.bases = bases
        self.pages = frozenset(pages)
        self.record = Path(record)
        self.parsed: list[str] = []

    async def start(self):
        # Through the dupefilter (start_urls would bypass it): a later link to the start
        # page does not fetch it again.
        yield scrapy.Request(self.start_url)

    def parse(self, response):
        self.parsed.append(response.url)
        for url in outlinks(response.url, response.xpath(LINKS).getall()):
            found = locate(url, self.bases)
            if found is not None and found[1] in self.pages:
                yield scrapy.Request(page_url(self.bases[found[0]], found[1]))

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats.get_stats()
        self.record.write_text(
            json.dumps({"parsed": self.parsed, "reason": reason, "stats": stats}, default=str),
            encoding="utf-8",
        )


def worker(config: Path) -> int:
    """Run one crawl described by the JSON file *config* (in its own process: Scrapy's
    reactor cannot be restarted)."""
    from scrapy.crawler import CrawlerProcess

    cfg = json.loads(config.read_text(encoding="utf-8"))
    process = CrawlerProcess(cfg["settings"])
    process.crawl(HarnessSpider, **cfg["spider"])
    process.start()
    return 0 if Path(cfg["spider"]["record"]).is_file() else 1


@dataclass(frozen=True)
class Event:
    """A drop or a URL-rule skip of the crawl with the add-on: page, and the page it copies."""

    copy: str
    key: str
    of_copy: str
    of_key: str
    distance: int | None = None


@dataclass
class Crawl:
    """What one crawl did: pages delivered to the spider and served, drops and skips."""

    parsed: Counter[tuple[str, str]]
    served: Counter[tuple[str, str]]
    seconds: float
    drops: list[Event] = field(default_factory=list)
    skips: list[Event] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    def delivered(self) -> set[str]:
        return {key for _, key in self.parsed}


def crawl_settings(concurrency: int, order: str, extra: Mapping[str, str]) -> dict[str, Any]:
    """The settings of both crawls (the add-on's are added to one of them)."""
    memory, disk = SCHEDULER_QUEUES[order]
    return {
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "SCHEDULER_MEMORY_QUEUE": memory,
        "SCHEDULER_DISK_QUEUE": disk,
        "LOG_LEVEL": "INFO",
        **extra,
    }


def run_crawl(site: MirroredSite, start: str, settings: Mapping[str, Any], workdir: Path,
              plugin: bool, timeout: float, keep_state: bool = False) -> Crawl:
    """One crawl of *site* in a fresh ``python -m bench.crawl_harness --worker`` process;
    with *keep_state*, the crawl with the add-on also writes its index to
    ``with.state`` (``SIMHASH_PERSIST_PATH``: the kept pages' sketches, for ``explain``)."""
    label = "with" if plugin else "without"
    record, drops, log, state = (
        workdir / f"{label}.{ext}" for ext in ("json", "drops.jsonl", "log", "state")
    )
    rules = state.with_name(state.name + ".rules")  # the URL rules beside the state
    for path in (record, drops, log, state, rules):  # (a kept state or rules would be resumed)
        path.unlink(missing_ok=True)
    settings = {**settings, "LOG_FILE": str(log)}
    if plugin:
        settings = {"ADDONS": ADDON, **settings, "SIMHASH_LOG_FILE": str(drops)}
        if keep_state:
            settings["SIMHASH_PERSIST_PATH"] = str(state)
    config = workdir / f"{label}.config.json"
    config.write_text(json.dumps({
        "settings": settings,
        "spider": {"start_url": site.start_url(start), "bases": site.bases,
                   "pages": sorted(site.pages), "record": str(record)},
    }), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    site.reset()
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.crawl_harness", "--worker", str(config)],
            cwd=ROOT, env=env, timeout=timeout, check=False, capture_output=True, text=True,
        )
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(
            f"the crawl {label} the add-on ran over {timeout:.0f}s (log: {log})"
        ) from exc
    seconds = time.perf_counter() - started
    if proc.returncode != 0 or not record.is_file():
        tail = log.read_text(errors="replace").splitlines()[-20:] if log.is_file() else []
        raise HarnessError(
            f"the crawl {label} the add-on failed (exit {proc.returncode}):\n"
            + "\n".join(tail + proc.stderr.splitlines()[-20:])
        )
    data = json.loads(record.read_text(encoding="utf-8"))
    parsed = Counter(found for url in data["parsed"] if (found := locate(url, site.bases)))
    crawl = Crawl(parsed, Counter(site.served), seconds, stats=data["stats"])
    for event in read_events(drops, site.bases) if plugin else ():
        (crawl.drops if event[0] == "drop" else crawl.skips).append(event[1])
    return crawl


def read_events(path: Path, bases: Mapping[str, str]) -> Iterator[tuple[str, Event]]:
    """``("drop" | "skip", Event)`` for each line of a ``SIMHASH_LOG_FILE``."""
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        kind = record.get("event", "drop" if "duplicate_of" in record else None)
        if kind not in ("drop", "skip"):
            continue
        page, of = locate(record["url"], bases), locate(record["duplicate_of"], bases)
        if page is None or of is None:
            raise HarnessError(f"{path}: a {kind} of a URL the harness did not serve: {line}")
        yield kind, Event(*page, *of, record.get("distance"))


# --------------------------------------------------------------------------- the accounting


class Judge:
    """The 5-word shingles of each page's content container, as ``bench/quality.py``
    judges pairs of pages (cached; read from the site's files)."""

    def __init__(self, root: Path, xpaths: Sequence[str]) -> None:
        self.root = root
        self.xpaths = tuple(xpaths)
        self._cache: dict[str, frozenset[str]] = {}

    def shingles(self, key: str) -> frozenset[str]:
        if key not in self._cache:
            try:
                root = P.parse(Q.decode((self.root / key).read_bytes()))
                text = " ".join(el.text_content() for el in Q.content_container(root, self.xpaths))
            except (ValueError, etree.LxmlError):  # an empty page: no content of its own
                text = ""
            self._cache[key] = Q.shingles(text)
        return self._cache[key]

    def __call__(self, a: str, b: str) -> float:
        return Q.jaccard(self.shingles(a), self.shingles(b))

    def closest(self, key: str, among: Iterable[str]) -> tuple[float, str | None]:
        """The page of *among* whose content is closest to *key*'s, and their Jaccard."""
        mine = self.shingles(key)
        best: tuple[float, str | None] = (0.0, None)
        for other in among:
            theirs = self.shingles(other)
            if not mine and not theirs:
                return 1.0, other
            shared = len(mine & theirs)
            if shared:
                j = shared / (len(mine) + len(theirs) - shared)
                if j > best[0]:
                    best = (j, other)
        return best


@dataclass(frozen=True)
class Verdict:
    """A drop or skip judged: ``same page``, ``near-identical`` (J >= 0.5) or ``WRONG``."""

    event: Event
    kind: str
    jaccard: float


@dataclass
class Accounting:
    """The crawl with the add-on against the crawl without it (:func:`account`)."""

    pages: int
    off: Crawl
    on: Crawl
    undelivered: dict[str, tuple[float, str | None]]  # page -> closest delivered content
    lost: dict[str, str]  # page -> how: dropped, skipped, fetched, never requested
    drops: list[Verdict]
    skips: list[Verdict]
    mirror_off: int  # mirror copies delivered without the add-on
    mirror_missing: Counter[str]  # of those, not delivered with it: how
    both_off: int  # pages delivered from both copies, without the add-on
    both_on: int  # the same, with it
    #: mirror copies delivered with the add-on in place of their original (met first, the
    #: original then dropped, skipped or never requested): the copy kept, not a copy missed
    mirror_instead: int = 0

    def wrong(self) -> list[Verdict]:
        return [v for v in self.drops + self.skips if v.kind == "WRONG"]


def _judge(events: Iterable[Event], judge: Callable[[str, str], float]) -> list[Verdict]:
    verdicts = []
    for e in events:
        if e.key == e.of_key:
            verdicts.append(Verdict(e, "same page", 1.0))
        else:
            j = judge(e.key, e.of_key)
            verdicts.append(Verdict(e, "near-identical" if j >= Q.DUP_JACCARD else "WRONG", j))
    return verdicts


def account(pages: int, off: Crawl, on: Crawl, judge: Judge) -> Accounting:
    """What the crawl with the add-on (*on*) did not deliver that the crawl without it
    (*off*) did, and how; every drop and skip judged by the content containers."""
    delivered = on.delivered()
    dropped = {e.key for e in on.drops}
    skipped = {e.key for e in on.skips}
    fetched = {key for _, key in on.served}
    undelivered = {key: judge.closest(key, delivered)
                   for key in sorted(off.delivered() - delivered)}
    lost = {}
    for key, (j, _) in undelivered.items():
        if j < Q.DUP_JACCARD:
            lost[key] = ("dropped" if key in dropped else "skipped" if key in skipped
                         else "fetched, not parsed" if key in fetched else "never requested")
    mirror = {key for copy, key in off.parsed if copy == MIRROR}
    missing: Counter[str] = Counter()
    dropped_copies = {(e.copy, e.key) for e in on.drops}
    skipped_copies = {(e.copy, e.key) for e in on.skips}
    for key in mirror:
        where = (MIRROR, key)
        if where not in on.parsed:
            missing["dropped" if where in dropped_copies else "skipped" if where in skipped_copies
                    else "fetched, not parsed" if where in on.served else "never requested"] += 1

    def both(crawl: Crawl) -> int:
        return sum((ORIGINAL, key) in crawl.parsed and (MIRROR, key) in crawl.parsed
                   for key in crawl.delivered())

    instead = sum((MIRROR, key) in on.parsed and (ORIGINAL, key) not in on.parsed
                  for key in mirror)
    return Accounting(pages, off, on, undelivered, lost, _judge(on.drops, judge),
                      _judge(on.skips, judge), len(mirror), missing, both(off), both(on),
                      instead)


# --------------------------------------------------------------------------- the report


@dataclass
class SiteSpec:
    """A site to crawl: its folder, start page and content container XPaths."""

    name: str
    root: Path
    start: str
    xpaths: tuple[str, ...]


def resolve_site(spec: str, xpaths: Sequence[str] | None, start: str | None) -> SiteSpec:
    """A folder or a corpus site name, with its start page and content container."""
    folder = Path(spec)
    known = next((s for s in Q.DOC_SITES if spec in (s, s.rpartition("/")[2])
                  or folder.resolve().as_posix().endswith("/" + s)), None)
    if not folder.is_dir():
        found = site_dir(known) if known else None
        if found is None:
            raise HarnessError(f"{spec}: neither a folder nor a corpus site that is available "
                               f"({', '.join(Q.DOC_SITES)})")
        folder = found
    if not xpaths and known is None:
        raise HarnessError(f"{spec}: give its content container with --xpath")
    return SiteSpec(known or spec, folder, start or START_PAGES.get(known or "", "index.html"),
                    tuple(xpaths or Q.DOC_SITES[known]))


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def report(site: SiteSpec, files: int, acc: Accounting, show: int,
           parents: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The table and lists of one site; *parents*: the pages linking to each lost page
    that was never requested (:func:`linkers`), shown with what the crawl did to them."""
    off, on = acc.off, acc.on
    fetched_off, fetched_on = sum(off.served.values()), sum(on.served.values())
    lines = [
        f"{site.name}: {acc.pages:,} pages (breadth first from {site.start}; "
        f"{files:,} HTML files in {site.root}) and their mirror copies",
        f"  content container: {' | '.join(site.xpaths)} (first that matches, else the body)",
        f"  {'':<44}{'without add-on':>16}{'with add-on':>14}",
    ]
    rows = [
        ("pages delivered to the spider (either copy)", len(off.delivered()), len(on.delivered())),
        ("copies delivered (original + mirror)", len(off.parsed), len(on.parsed)),
        ("pages fetched (both copies)", fetched_off, fetched_on),
        ("pages delivered from both copies", acc.both_off, acc.both_on),
        ("wall time, seconds (process included)", f"{off.seconds:.1f}", f"{on.seconds:.1f}"),
    ]
    lines += [f"  {name:<44}{a!s:>16}{b!s:>14}" for name, a, b in rows]
    by_how = Counter(acc.lost.values())
    near = len(acc.undelivered) - len(acc.lost)
    saved = fetched_off - fetched_on
    lines += [
        f"  LOST: {len(acc.lost)} pages ({_pct(len(acc.lost), len(off.delivered()))} of those "
        "delivered without the add-on): "
        + (", ".join(f"{n} {how}" for how, n in by_how.most_common()) or "none"),
        f"    (not delivered: {len(acc.undelivered)}, of which {near} have near-identical content "
        f"delivered, Jaccard >= {Q.DUP_JACCARD})",
        f"  fetches saved: {saved} ({_pct(saved, fetched_off)})",
        f"  mirror copies not delivered: {sum(acc.mirror_missing.values())} of {acc.mirror_off} "
        f"({_pct(sum(acc.mirror_missing.values()), acc.mirror_off)}): "
        + (", ".join(f"{n} {how}" for how, n in acc.mirror_missing.most_common()) or "none"),
        f"    (delivered: {acc.mirror_off - sum(acc.mirror_missing.values())}, of which "
        f"{acc.mirror_instead} in place of their original, which the crawl met later)",
        f"  second copies not delivered: {len(on.delivered()) - acc.both_on} of "
        f"{len(on.delivered())} pages delivered "
        f"({_pct(len(on.delivered()) - acc.both_on, len(on.delivered()))}): "
        "delivered from one copy only",
    ]
    for label, verdicts in (("drops", acc.drops), ("URL-rule skips", acc.skips)):
        kinds = Counter(v.kind for v in verdicts)
        lines.append(
            f"  {label}: {len(verdicts)} = "
            + " + ".join(f"{kinds[k]} {k}" for k in ("same page", "near-identical", "WRONG"))
        )
    lines.append(f"    (same page: its own copy on the other server; near-identical: Jaccard >= "
                 f"{Q.DUP_JACCARD} of the content containers; WRONG: below)")
    if acc.lost:
        lines.append(f"  LOST pages (first {show}):")
        why = {v.event.key: v for v in acc.drops + acc.skips}
        for key in sorted(acc.lost)[:show]:
            v = why.get(key)
            detail = (f" as a copy of {v.event.of_key} (J={v.jaccard:.2f})" if v else "")
            lines.append(f"    {acc.lost[key]:<16} {key}{detail}")
            for parent in (parents or {}).get(key, ())[:show]:
                lines.append(f"      linked from {parent}: {_fate(acc, parent, why)}")
    wrong = sorted(acc.wrong(), key=lambda v: (v.jaccard, v.event.key))
    if wrong:
        lines.append(f"  WRONG drops and skips, lowest Jaccard first (first {show}):")
        for v in wrong[:show]:
            e = v.event
            lines.append(f"    J={v.jaccard:.2f} d={e.distance}  {e.copy} {e.key}  <-  "
                         f"{e.of_copy} {e.of_key}")
    return lines


def _fate(acc: Accounting, key: str, why: Mapping[str, Verdict]) -> str:
    """What the crawl with the add-on did to page *key*'s two copies."""
    on = acc.on
    seen = []
    for copy in (ORIGINAL, MIRROR):
        if (copy, key) in on.parsed:
            seen.append(f"{copy} delivered")
        elif any(e.copy == copy and e.key == key for e in on.drops):
            seen.append(f"{copy} dropped")
        elif any(e.copy == copy and e.key == key for e in on.skips):
            seen.append(f"{copy} skipped")
        elif (copy, key) in on.served:
            seen.append(f"{copy} fetched, not parsed")
        else:
            seen.append(f"{copy} never requested")
    v = why.get(key)
    detail = f" (as a copy of {v.event.of_key}, J={v.jaccard:.2f})" if v else ""
    return ", ".join(seen) + detail


def measure(
    site: SiteSpec, args: argparse.Namespace, workdir: Path
) -> tuple[Accounting, list[str]]:
    """Serve one site and its mirror, crawl it without and with the add-on, account."""
    files = sum(1 for p in site.root.rglob("*") if p.suffix in HTML_SUFFIXES and p.is_file())
    pages = bfs_pages(site.root, site.start, args.pages)
    settings = crawl_settings(args.concurrency, args.order, dict(args.settings))
    workdir.mkdir(parents=True, exist_ok=True)
    with MirroredSite(site.root, pages, args.mirror_links) as served:
        print(f"{site.name}: {len(pages)} pages and their mirror, crawl without the add-on...",
              flush=True)
        off = run_crawl(served, site.start, settings, workdir, False, args.timeout)
        print(f"{site.name}: ... and with it", flush=True)
        on = run_crawl(served, site.start, settings, workdir, True, args.timeout,
                       keep_state=args.keep is not None)
    acc = account(len(pages), off, on, Judge(site.root, site.xpaths))
    cascade = [key for key, how in acc.lost.items() if how == "never requested"]
    return acc, report(site, files, acc, args.show, linkers(site.root, pages, cascade))


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"-s takes NAME=VALUE, not {text!r}")
    return name, value


def _xpath(text: str) -> str:
    try:
        etree.XPath(text)
    except etree.XPathSyntaxError as exc:
        raise argparse.ArgumentTypeError(f"--xpath {text!r}: {exc}") from exc
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.crawl_harness", description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("sites", nargs="*", metavar="SITE",
                        help="a folder of HTML pages, or a corpus site (docs3/qt-5.15, qt-5.15)")
    parser.add_argument("--xpath", action="append", type=_xpath,
                        help="content container XPath judging distinct pages (repeat: first "
                        "that matches); default: the corpus site's")
    parser.add_argument("--start", help="start page, relative to the folder (default index.html)")
    parser.add_argument("--pages", type=int, metavar="N",
                        help="serve only the first N pages of a breadth-first walk from the start")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="CONCURRENT_REQUESTS (and per domain) of both crawls (default 8)")
    parser.add_argument("--order", choices=sorted(SCHEDULER_QUEUES), default="fifo",
                        help="scheduler queue order (default fifo: breadth first)")
    parser.add_argument("-s", "--set", dest="settings", action="append", type=_setting,
                        default=[], metavar="NAME=VALUE",
                        help="a Scrapy or SIMHASH_* setting for both crawls (repeat)")
    parser.add_argument("--mirror-links", type=int, default=3,
                        help="mirror copies the start page links to, its own first "
                        "(default 3)")
    parser.add_argument("--show", type=int, default=10, help="lost pages and wrong drops listed")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per crawl")
    parser.add_argument("--keep", type=Path,
                        help="keep each crawl's log, drops and record here, and the index of "
                        "the crawl with the add-on (with.state, for `scrapy-simhash explain`)")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"results file ({RESULTS})")
    parser.add_argument("--append", action="store_true", help="append to the results file")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a page is lost")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if not args.sites:
        parser.error("give at least one SITE")
    if args.pages is not None and args.pages < 1:
        parser.error("--pages must be at least 1")
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    try:
        sites = [resolve_site(s, args.xpath, args.start) for s in args.sites]
    except HarnessError as exc:
        parser.error(str(exc))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = shlex.join(argv if argv is not None else sys.argv[1:])
    extra = " ".join(f"{n}={v}" for n, v in args.settings)
    lines = [
        f"crawl harness  {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC  "
        f"FINGERPRINT_VERSION={FINGERPRINT_VERSION}  load average {load} (start)",
        f"command: python -m bench.crawl_harness {command}",
        f"crawls: concurrency {args.concurrency}, {args.order} order, add-on {ADDON} at its "
        f"defaults" + (f", settings {extra}" if extra else "")
        + (" (--keep: its index also written to a state file, SIMHASH_PERSIST_PATH)"
           if args.keep else ""),
    ]
    lost = 0
    with tempfile.TemporaryDirectory(prefix="crawl-harness-") as tmp:
        for site in sites:
            workdir = (args.keep or Path(tmp)) / site.name.replace("/", "_")
            try:
                acc, site_lines = measure(site, args, workdir)
            except HarnessError as exc:
                print(f"crawl harness: {exc}", file=sys.stderr)
                return 2
            lost += len(acc.lost)
            lines += [""] + site_lines
            print("\n".join(site_lines), flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("a" if args.append else "w", encoding="utf-8") as out:
        out.write(("\n" if args.append else "") + "\n".join(lines) + "\n")
    print(f"written to {args.output}")
    return 1 if lost and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
