"""Spider middleware dropping near-duplicate pages before the spider parses them.

Put it after ``HttpErrorMiddleware`` (order 50) so that error pages are not
fingerprinted; the add-on uses order 100. For a near-duplicate,
``process_spider_input`` logs, counts and signals it, then raises
:class:`NearDuplicate`: the callback never runs, so the page's outlinks never
reach the scheduler. Like ``HttpError``, the exception is swallowed by this
middleware's own ``process_spider_exception``; a request errback, when there is
one, receives it instead. A page is never dropped as a copy of its own URL
(fetched again after a crash, say): it is kept and counted. Nor is a near copy
that links to a page no page delivered so far links to
(:class:`~scrapy_simhash.links.DeliveredLinks`, fed by ``process_spider_input``
with the links of every page it lets through): dropping it could cut that
page off the crawl. It is delivered and counted (``simhash/kept_for_links_count``).

The settings are validated and the index is opened when the middleware is
built, so a bad value, an unreadable state file or an unreachable index stops
the crawl before it starts: one ERROR line, and ``scrapy crawl`` exits 1.

``SIMHASH_LOG_FILE`` is a JSON lines file, appended to by every run; each line
is an object with an ``"event"``:

- ``"open"``, the first line of a run: ``time`` (ISO 8601, UTC), ``spider``,
  ``version`` (of scrapy-simhash), ``fingerprint_version``, ``index_size``
  (pages already in the index) and ``settings`` (the effective settings);
- ``"drop"``, one per near-duplicate (in every action): ``time``, ``spider``,
  ``url``, ``duplicate_of``, ``distance``, ``fingerprint`` and
  ``duplicate_fingerprint`` (16 hex digits), ``action``, ``spot_signatures``
  (distinct spot signatures of the page's main text), and what reproduces the
  decision against the kept page's stored signature: ``sketch`` (the page's
  sketch, hex) and ``k`` (``SIMHASH_MAX_DISTANCE``);
- ``"skip"``, one per request the URL rules skipped before download
  (:mod:`scrapy_simhash.downloadermiddleware`): ``time``, ``spider``, ``url``,
  ``duplicate_of``, ``rule``;
- ``"close"``, the last line of a run that closed: ``time``, ``spider``,
  ``reason`` (Scrapy's finish reason), ``responses`` (fingerprinted),
  ``duplicates``, ``self_matches``, ``index_size`` and ``unpersisted`` (pages
  indexed but not written to the state file).

A run without a ``"close"`` line was killed (or failed to start after the
middleware was built). Lines written by earlier versions have no
``"event"`` key: they are drops.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import weakref
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from w3lib.url import canonicalize_url

from scrapy_simhash import __version__
from scrapy_simhash import keys
from scrapy_simhash import signals as simhash_signals
from scrapy_simhash.backends import (
    Backend,
    BackendError,
    Duplicate,
    PersistenceError,
    hashed_url,
    load_backend,
)
from scrapy_simhash.fingerprinting import (
    FINGERPRINT_VERSION,
    FingerprintResult,
    hamming,
    parse_html,
    plain_elements,
)
from scrapy_simhash.fingerprinting.signature import Analysis, analyse
from scrapy_simhash.fingerprinting.template import SiteTemplate, SiteTemplates
from scrapy_simhash.index import CorruptStateError
from scrapy_simhash.link_state import LinkLog
from scrapy_simhash.links import DeliveredLinks, page_links
from scrapy_simhash.settings import SimhashSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)
drop_logger = logging.getLogger("scrapy_simhash.dropped")

_VERBS = {
    "drop": "Dropped",
    "drop_outlinks": "Dropped the outlinks of",
    "log": "Found",
}
#: What became of the page, where the verb does not say it.
_KEPT = {
    "drop": "",
    "drop_outlinks": "",
    "log": ", kept: SIMHASH_ACTION = log is a dry run",
}


class NearDuplicate(IgnoreRequest):
    """A response is within k bits of a page already seen; it was dropped."""

    def __init__(
        self,
        response: Response,
        duplicate_of: str,
        distance: int,
        fingerprint: int,
        *,
        log_level: int = logging.INFO,
    ) -> None:
        self.response = response
        self.duplicate_of = duplicate_of
        self.distance = distance
        self.fingerprint = fingerprint
        self.log_level = log_level
        super().__init__(
            f"{response} is a near-duplicate of <{duplicate_of}> (distance {distance})"
        )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _same_page(url: str, other: str) -> bool:
    """Whether two URLs name the same page (canonical forms equal); ``other``
    may be a stored URL's hash (:func:`~scrapy_simhash.backends.hashed_url`)."""
    if other.startswith("xxh3:"):
        return other == hashed_url(url)
    return url == other or canonicalize_url(url) == canonicalize_url(other)


def _close_spider(crawler: Crawler, reason: str) -> None:
    engine = crawler.engine
    if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
        deferred_from_coro(engine.close_spider_async(reason=reason))
    else:
        engine.close_spider(crawler.spider, reason)


def start_failed(error: Exception) -> None:
    """Report an error that stops the crawl before it starts, in one line.

    The error is raised on from the middleware's constructor, so the crawl
    fails and ``scrapy crawl`` exits 1. Under asyncio, the crawl task's
    exception is marked as seen: asyncio would otherwise log it again with
    its whole traceback ("Task exception was never retrieved").
    """
    logger.error("The crawl cannot start: %(error)s", {"error": error})
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop: Twisted's own reporting applies
        return
    if task is not None:
        task.add_done_callback(_retrieve_exception)


def _retrieve_exception(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # marks it as retrieved; it was logged in one line


class SimhashMiddleware:
    """Fingerprint each HTML response and drop, flag or log near-duplicates."""

    def __init__(self, crawler: Crawler, config: SimhashSettings, backend: Backend) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.backend = backend
        self.action = config.action
        self.min_features = config.min_features
        self.log_level = config.log_level
        self._log_every_drop = config.debug or config.log_level <= logging.DEBUG
        self._drops_logged = 0
        self._flagged: weakref.WeakSet[Response] = weakref.WeakSet()
        self._seconds = 0.0
        self._audit: Any = None
        self._initial_size = 0
        self._closing = False
        self._warned: set[str] = set()
        self._unpersisted = 0
        self._persist_error: str | None = None
        #: Each host's template, learned from the pages this crawl keeps: what
        #: a page's own text (the drop decision's evidence) leaves out.
        self.templates = SiteTemplates()
        #: The links of every page delivered to the spider: a near copy that
        #: carries another is delivered, not dropped (its drop would cut it off).
        self.links = DeliveredLinks()
        #: Where they are kept across a pause (``JOBDIR/simhash.links``), when open.
        self._link_log: LinkLog | None = None
        self._depth_limit = crawler.settings.getint("DEPTH_LIMIT")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashMiddleware:
        """Validate the settings and open the index, or stop the crawl before it starts."""
        for name, close in SimhashSettings.unknown(crawler.settings):
            logger.warning(
                "Unknown setting %(name)s: scrapy-simhash ignores it%(hint)s",
                {"name": name, "hint": f" (did you mean {close}?)" if close else ""},
            )
        try:
            config = SimhashSettings.from_crawler(crawler)
        except ValueError as exc:
            start_failed(exc)
            raise
        if not config.enabled:
            raise NotConfigured
        try:
            backend = load_backend(config.backend).from_config(config)
            mw = cls(crawler, config, backend)
            mw._open(_spider_name(crawler))
        except (BackendError, OSError) as exc:
            start_failed(exc)
            raise
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    # -- lifecycle ---------------------------------------------------------

    def _open(self, spider_name: str) -> None:
        """Open the audit file and the index (before the crawl starts)."""
        config = self.config
        if config.log_file:
            try:
                self._audit = self._open_audit(config.log_file)
            except OSError as exc:
                raise OSError(
                    f"Cannot open SIMHASH_LOG_FILE {config.log_file}: {exc.strerror or exc}"
                ) from exc
        try:
            self._initial_size = self.backend.open(spider_name)
            self._open_links()
        except BackendError:
            if self._audit is not None:
                self._audit.close()
                self._audit = None
            raise
        self._write_event(
            "open",
            spider_name,
            version=__version__,
            fingerprint_version=FINGERPRINT_VERSION,
            index_size=self._initial_size,
            settings=config.summary(),
        )

    def _open_links(self) -> None:
        """Read the links a paused crawl delivered (``JOBDIR/simhash.links``) and
        keep appending to them. A damaged file stops the start, as the state file
        does (it is never cut short but for a torn last record); one that cannot
        be written is left with a WARNING (a crawl that forgets links delivers
        copies it could drop: the safe side)."""
        path = self.config.links_path
        if path is None:
            return
        try:
            self._link_log, self.links = LinkLog.open(path, reset=self.config.reset)
        except CorruptStateError as exc:
            self.backend.close()
            raise BackendError(
                f"{exc}; delete the file or set SIMHASH_RESET=True to start empty"
            ) from exc
        except OSError as exc:
            self._links_failed(exc)
            return
        if len(self.links):
            logger.info(
                "Restored the links of the pages this crawl delivered before "
                "(%(links)s, %(hosts)s) from %(path)s",
                {"links": _plural(len(self.links), "link"),
                 "hosts": _plural(len(self.links.hosts), "host"), "path": path},
            )

    def spider_opened(self, spider: Spider) -> None:
        self.stats.set_value("simhash/initial_index_size", self._initial_size)
        summary = self.config.summary()
        logger.info(
            "scrapy-simhash %(version)s: %(pages)s in the index; %(settings)s",
            {
                "version": __version__,
                "pages": _plural(self._initial_size, "page"),
                "settings": ", ".join(f"{k}={v}" for k, v in summary.items()),
            },
            extra={"spider": spider},
        )

    @staticmethod
    def _open_audit(path: str) -> Any:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        return open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115

    def _write_event(self, event: str, spider_name: str | None, **fields: Any) -> None:
        if self._audit is None:
            return
        line = {
            "event": event,
            "time": datetime.now(timezone.utc).isoformat(),
            "spider": spider_name,
            **fields,
        }
        try:
            self._audit.write(json.dumps(line) + "\n")
        except OSError as exc:
            self._warn_once(
                "audit",
                "Cannot write to SIMHASH_LOG_FILE %(path)s: %(error)s",
                {"path": self.config.log_file, "error": exc},
            )

    def spider_closed(self, spider: Spider, reason: str = "finished") -> None:
        try:
            self.backend.close()
        except BackendError as exc:
            logger.warning(
                "Could not close the simhash index: %(error)s",
                {"error": exc},
                extra={"spider": spider},
            )
        if self._link_log is not None:
            try:
                self._link_log.close()
            except OSError as exc:
                self._links_failed(exc)
            self._link_log = None
        stats = self.stats
        size = len(self.backend)
        responses = stats.get_value("simhash/response_count", 0)
        duplicates = stats.get_value("simhash/duplicate_count", 0)
        stats.set_value("simhash/index_size", size)
        stats.set_value("simhash/cpu_seconds", round(self._seconds, 6))
        for name, value in self.backend.stats().items():
            stats.set_value(f"simhash/{name}", value)
        self._check_unchecked_share(spider)
        self._check_index_lost()
        self._write_event(
            "close",
            spider.name,
            reason=reason,
            responses=responses,
            duplicates=duplicates,
            self_matches=stats.get_value("simhash/self_match_count", 0),
            index_size=size,
            unpersisted=self._unpersisted,
        )
        if self._audit is not None:
            self._audit.close()
            self._audit = None
        logger.info(
            "Simhash: %(responses)s fingerprinted, %(duplicates)s (action %(action)s), "
            "%(size)s in the index, %(seconds).3f s of CPU",
            {
                "responses": _plural(responses, "response"),
                "duplicates": _plural(duplicates, "near-duplicate"),
                "action": self.action,
                "size": _plural(size, "page"),
                "seconds": self._seconds,
            },
            extra={"spider": spider},
        )
        if self._unpersisted:
            logger.error(
                "The simhash state file %(path)s misses %(pages)s indexed in this crawl "
                "(%(error)s): they were checked, but a resumed crawl will not know them",
                {
                    "path": self.config.persist_path,
                    "pages": _plural(self._unpersisted, "page"),
                    "error": self._persist_error,
                },
                extra={"spider": spider},
            )

    # -- spider middleware hooks --------------------------------------------

    def process_spider_input(self, response: Response, spider: Spider | None = None) -> None:
        self._check(response)  # raises NearDuplicate to drop the response
        self._record_links(response)  # it reaches the spider: its links are the crawl's

    def _check(self, response: Response) -> None:
        """Fingerprint ``response``, look it up, and drop, flag or log it."""
        if not isinstance(response, HtmlResponse):
            self.stats.inc_value("simhash/skipped_count/non_html")
            return
        request = response.request
        if request is not None and not request.meta.get("simhash_enabled", True):
            self.stats.inc_value("simhash/skipped_count/disabled_meta")
            return
        start = time.thread_time()
        template = self.templates[urlparse_cached(response).netloc]
        known = template.known  # as the page is signed against it
        try:
            analysis = self.analyse_response(response, template)
            sig, result = analysis.signature, analysis.details
            fp = result.fingerprint
            if sig is None:
                template.learn(analysis.evidence.block_hashes)
                self.stats.inc_value("simhash/skipped_count/too_few_features")
                return
            try:
                duplicate = self.backend.query_and_add(sig, response.url)
            except PersistenceError as exc:
                # checked against the index and added to it; only the state file lacks it
                self._persistence_error(exc)
                duplicate = None
            except BackendError as exc:
                template.learn(analysis.evidence.block_hashes, sig.fingerprint)
                self._backend_error(exc)
                return
            again = duplicate is not None and _same_page(response.url, duplicate.url)
            if duplicate is None or again or (request is not None and request.dont_filter):
                # A page kept as distinct teaches its site's template; a copy
                # never does (its blocks would pass for template), nor a page
                # with the fingerprint of one that did (it may be a copy).
                template.learn(analysis.evidence.block_hashes, sig.fingerprint)
        finally:
            self._seconds += time.thread_time() - start
        self.stats.inc_value("simhash/response_count")
        if duplicate is None:
            self.crawler.signals.send_catch_log(
                simhash_signals.simhash_kept, response=response, fingerprint=fp,
                conclusive=self._conclusive(template, fp, known), spider=self.crawler.spider,
            )
            return
        if again:
            # This URL was indexed before but is fetched again (its earlier
            # response may never have reached the spider, e.g. before a crash).
            self.stats.inc_value("simhash/self_match_count")
            logger.debug(
                "Kept %(response)s: its own URL is in the simhash index (fetched again)",
                {"response": response},
                extra={"spider": self.crawler.spider},
            )
            return
        if request is not None and request.dont_filter:
            # never dropped; indexed like any other page when it is new
            self.stats.inc_value("simhash/kept_dont_filter_count")
            return
        if self.action != "log":
            link = self._uncovered_link(response, duplicate.url)
            if link is not None:
                self.stats.inc_value("simhash/kept_for_links_count")
                logger.debug(
                    "Kept %(response)s, a near-duplicate of <%(duplicate_of)s>: it links to "
                    "<%(link)s>, which no page delivered so far links to",
                    {"response": response, "duplicate_of": duplicate.url, "link": link},
                    extra={"spider": self.crawler.spider},
                )
                return
        if request is not None:
            # a mark a callback (log, drop_outlinks) or an errback (drop) can read
            request.meta[keys.DUPLICATE_OF] = duplicate.url
            request.meta[keys.DISTANCE] = duplicate.distance
        self._report(response, sig.sketch, result, duplicate)
        if self.action == "drop":
            raise NearDuplicate(
                response,
                duplicate.url,
                duplicate.distance,
                fp,
                log_level=self.log_level,
            )
        if self.action == "drop_outlinks":
            self._flagged.add(response)

    def _conclusive(self, template: SiteTemplate, fingerprint: int, known: bool) -> bool:
        """Whether a page just kept was kept on its merits: it was signed with
        its host's template ``known``, and no page learned before that is within
        k bits of it (such a page confirms only an exact copy of itself)."""
        k = self.config.max_distance
        return known and all(hamming(fingerprint, other) > k for other in template.early)

    def analyse_response(self, response: HtmlResponse, template: SiteTemplate) -> Analysis:
        """The page's signature (None when it gets no fingerprint), the
        fingerprint's details and the page's evidence, from the spider's own
        tree (read-only), its own text read against its host's ``template``;
        override to sign differently."""
        try:
            root = response.selector.root
        except ValueError:  # a charset Python cannot read a page with (UnicodeError)
            return analyse(response.body, template=template, min_features=self.min_features)
        # parsel parses each response with a parser of its own: read it with
        # plain lxml elements (none is kept), the spider then gets lxml.html's.
        with plain_elements(root):
            return analyse(root, template=template, min_features=self.min_features,
                           body=response.body)

    def process_spider_exception(
        self, response: Response, exception: Exception, spider: Spider | None = None
    ) -> Any:
        if isinstance(exception, NearDuplicate):
            return ()
        return None

    def _uncovered_link(self, response: HtmlResponse, kept: str) -> str | None:
        """A link of this near copy of ``kept`` that no delivered page carries, or None."""
        start = time.thread_time()
        try:
            return self.links.uncovered(response.url, _hrefs(response), kept)
        finally:
            self._seconds += time.thread_time() - start

    def _record_links(self, response: Response) -> None:
        """Remember the links of a page that reaches the spider: those its callback
        may follow (none when ``drop_outlinks`` flagged it, or when it is at
        ``DEPTH_LIMIT``, where Scrapy's depth middleware drops its requests)."""
        request = response.request
        at_limit = bool(self._depth_limit) and request is not None and (
            request.meta.get("depth", 0) >= self._depth_limit)
        if isinstance(response, HtmlResponse) and response not in self._flagged and not at_limit:
            start = time.thread_time()
            new, host = self.links.record(response.url, _hrefs(response))
            if self._link_log is not None and (new or host):
                try:
                    self._link_log.append(new, host)
                except OSError as exc:
                    self._links_failed(exc)
            self._seconds += time.thread_time() - start

    def _links_failed(self, exc: OSError) -> None:
        """A links file that cannot be written is left (the crawl goes on; a resumed
        crawl then delivers copies whose links it forgot: the safe side)."""
        self._warn_once(
            "links",
            "Cannot write the simhash links file %(path)s: %(error)s. A resumed crawl "
            "will deliver near copies whose links it does not know",
            {"path": self.config.links_path, "error": exc},
        )
        if self._link_log is not None:
            try:
                self._link_log.close()
            except OSError:
                pass
            self._link_log = None

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Spider | None = None
    ) -> AsyncIterator[Any]:
        if response not in self._flagged:
            async for obj in result:
                yield obj
            return
        async for obj in result:
            if isinstance(obj, Request):
                self.stats.inc_value("simhash/outlinks_dropped_count")
                continue
            yield obj

    # -- reporting ------------------------------------------------------------

    def _report(
        self, response: Response, sketch: bytes, result: FingerprintResult, duplicate: Duplicate
    ) -> None:
        stats = self.stats
        stats.inc_value("simhash/duplicate_count")
        stats.inc_value(f"simhash/duplicate_distance_count/{duplicate.distance}")
        spider = self.crawler.spider
        fp = result.fingerprint
        record = {
            "url": response.url,
            "duplicate_of": duplicate.url,
            "distance": duplicate.distance,
            "fingerprint": f"{fp:016x}",
            "duplicate_fingerprint": f"{duplicate.fingerprint:016x}",
            "action": self.action,
            "spot_signatures": result.feature_count,
            # what reproduces the decision: the page's signature and k (`scrapy-simhash
            # explain URL KEPT_URL --state JOBDIR --drop-log FILE`)
            "sketch": sketch.hex(),
            "k": self.config.max_distance,
        }
        # Like DUPEFILTER_DEBUG: the first drop at SIMHASH_LOG_LEVEL with a
        # hint, the others at DEBUG unless SIMHASH_DEBUG.
        level = self.log_level
        hint = ""
        if not self._log_every_drop:
            if self._drops_logged:
                level = logging.DEBUG
            else:
                what = "drops" if self.action == "drop" else "near-duplicates"
                hint = (
                    f"; later {what} are logged at DEBUG (set SIMHASH_DEBUG = True to log "
                    f"every one at {logging.getLevelName(self.log_level)})"
                )
        self._drops_logged += 1
        if drop_logger.isEnabledFor(level):
            drop_logger.log(
                level,
                "%(verb)s %(response)s: a near-duplicate of <%(duplicate_of)s> "
                "(distance %(distance)d%(features)s)%(kept)s%(hint)s",
                {
                    "verb": _VERBS[self.action],
                    "response": response,
                    "distance": duplicate.distance,
                    "duplicate_of": duplicate.url,
                    "features": (
                        ", " + _plural(result.feature_count, "spot signature")
                        if result.feature_count
                        else ""  # unknown: an overridden signature_response did not count
                    ),
                    "kept": _KEPT[self.action],
                    "hint": hint,
                },
                extra={"spider": spider, "simhash": record},
            )
        if self._audit is not None:
            self._write_event("drop", getattr(spider, "name", None), **record)
        self.crawler.signals.send_catch_log(
            simhash_signals.simhash_duplicate,
            response=response,
            duplicate_of=duplicate.url,
            distance=duplicate.distance,
            fingerprint=fp,
            duplicate_fingerprint=duplicate.fingerprint,
            action=self.action,
            spot_signatures=result.feature_count,
            spider=spider,
        )

    def _warn_once(self, condition: str, message: str, args: dict[str, Any]) -> None:
        if condition not in self._warned:
            self._warned.add(condition)
            logger.warning(message, args, extra={"spider": self.crawler.spider})

    def _persistence_error(self, exc: PersistenceError) -> None:
        self.stats.inc_value("simhash/persist_error_count")
        self._unpersisted += 1
        self._persist_error = str(exc)
        self._warn_once(
            "persistence",
            "Simhash state not saved: %(error)s. Pages are still checked against the "
            "index in memory; the state file misses them from now on",
            {"error": exc},
        )

    def _backend_error(self, exc: BackendError) -> None:
        self.stats.inc_value("simhash/backend_error_count")
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        stop = self.config.redis_on_error == "stop"
        self._warn_once(
            type(cause).__name__,
            "Simhash index error, %(what)s: %(error)s",
            {
                "what": "closing the spider" if stop else "keeping pages unchecked",
                "error": exc,
            },
        )
        if stop and not self._closing:
            self._closing = True
            _close_spider(self.crawler, "simhash_backend_error")

    def _check_unchecked_share(self, spider: Spider) -> None:
        """A crawl that kept more than ``SIMHASH_MAX_UNCHECKED_SHARE`` of its pages
        unchecked (index errors) or unstored (a full Redis) ends with the finish
        reason ``simhash_unchecked`` and an ERROR, instead of a plain ``finished``."""
        stats = self.stats
        failed = stats.get_value("simhash/backend_error_count", 0)
        # pages checked but never stored (a full Redis) leave later copies unnoticed
        unchecked = failed + stats.get_value("simhash/redis/unstored_count", 0)
        total = failed + stats.get_value("simhash/response_count", 0)
        if not unchecked or unchecked <= self.config.max_unchecked_share * total:
            return
        logger.error(
            "Simhash: %(unchecked)d of %(total)d pages (%(share).1f%%) were kept without a "
            "complete near-duplicate check because the index failed or was full "
            "(SIMHASH_MAX_UNCHECKED_SHARE = %(limit)g)",
            {
                "unchecked": unchecked,
                "total": total,
                "share": 100 * unchecked / total,
                "limit": self.config.max_unchecked_share,
            },
            extra={"spider": spider},
        )
        # CoreStats wrote the finish reason before this handler; a finished crawl
        # that ran without deduplication says so
        if self.stats.get_value("finish_reason") == "finished":
            self.stats.set_value("finish_reason", "simhash_unchecked")

    def _check_index_lost(self) -> None:
        """A crawl whose shared index vanished under it (the backend's ERROR says
        when and how) ends with the finish reason ``simhash_index_lost``."""
        if self.stats.get_value("simhash/redis/index_lost_count", 0) and self.stats.get_value(
            "finish_reason"
        ) in ("finished", "simhash_unchecked"):
            self.stats.set_value("finish_reason", "simhash_index_lost")


def _hrefs(response: HtmlResponse) -> list[str]:
    """The page's link targets, from the spider's tree (from the body, as
    :meth:`SimhashMiddleware.analyse_response` reads it, when Python cannot
    decode the page's charset)."""
    try:
        root = response.selector.root
    except ValueError:
        root = parse_html(response.body)
        return page_links(root) if root is not None else []
    with plain_elements(root):  # as analyse_response reads it: no element is kept
        return page_links(root)


def _spider_name(crawler: Crawler) -> str:
    spider = getattr(crawler, "spider", None)  # created before the middlewares
    return (
        getattr(spider, "name", None)
        or getattr(crawler.spidercls, "name", None)
        or crawler.spidercls.__name__
    )
