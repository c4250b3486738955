"""Spider middleware dropping near-duplicate pages before the spider parses them.

Put it after ``HttpErrorMiddleware`` (order 50) so that error pages are not
fingerprinted; the add-on uses order 100. For a near-duplicate,
``process_spider_input`` logs, counts and signals it, then raises
:class:`NearDuplicate`: the callback never runs, so the page's outlinks never
reach the scheduler. Like ``HttpError``, the exception is swallowed by this
middleware's own ``process_spider_exception``; a request errback, when there is
one, receives it instead.
"""

from __future__ import annotations

import json
import logging
import os
import time
import weakref
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import scrapy
from packaging.version import Version
from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.defer import deferred_from_coro

from scrapy_simhash import signals as simhash_signals
from scrapy_simhash.backends import Backend, BackendError, Duplicate, load_backend
from scrapy_simhash.fingerprinting import Signature, plain_elements
from scrapy_simhash.fingerprinting.signature import signature
from scrapy_simhash.settings import SimhashSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)
drop_logger = logging.getLogger("scrapy_simhash.dropped")

# Scrapy honours CloseSpider raised from a spider_opened handler since 2.18.
_CLOSE_FROM_OPENED = Version(scrapy.__version__) >= Version("2.18")

_VERBS = {
    "drop": "Dropped near-duplicate",
    "drop_outlinks": "Dropped the outlinks of near-duplicate",
    "log": "Found near-duplicate",
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


def _close_spider(crawler: Crawler, reason: str) -> None:
    engine = crawler.engine
    if hasattr(engine, "close_spider_async"):  # Scrapy >= 2.14
        deferred_from_coro(engine.close_spider_async(reason=reason))
    else:
        engine.close_spider(crawler.spider, reason)


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
        self._flagged: weakref.WeakSet[Response] = weakref.WeakSet()
        self._seconds = 0.0
        self._audit: Any = None
        self._open_error: str | None = None
        self._closing = False
        self._warned: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SimhashMiddleware:
        config = SimhashSettings.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured
        backend = load_backend(config.backend).from_config(config)
        mw = cls(crawler, config, backend)
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    # -- lifecycle ---------------------------------------------------------

    def spider_opened(self, spider: Spider) -> None:
        try:
            if self.config.log_file:
                self._audit = self._open_audit(self.config.log_file)
            size = self.backend.open(spider.name)
        except (BackendError, OSError) as exc:
            self._open_error = str(exc)
            logger.error(
                "Cannot open the simhash index (SIMHASH_BACKEND=%(backend)s): %(error)s; "
                "closing the spider",
                {"backend": self.config.backend, "error": exc},
                extra={"spider": spider},
            )
            if _CLOSE_FROM_OPENED:
                raise CloseSpider("simhash_backend_error") from exc
            return  # older Scrapy: closed on the first response, see process_spider_input
        self.stats.set_value("simhash/initial_index_size", size)
        logger.info(
            "Simhash index opened: %(size)d pages, k=%(k)d, action=%(action)s",
            {"size": size, "k": self.config.max_distance, "action": self.action},
            extra={"spider": spider},
        )

    @staticmethod
    def _open_audit(path: str) -> Any:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        return open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115

    def spider_closed(self, spider: Spider) -> None:
        if self._audit is not None:
            self._audit.close()
            self._audit = None
        if self._open_error is not None:
            return
        try:
            self.backend.close()
        except BackendError as exc:
            logger.warning(
                "Could not close the simhash index: %(error)s",
                {"error": exc},
                extra={"spider": spider},
            )
        stats = self.stats
        size = len(self.backend)
        stats.set_value("simhash/index_size", size)
        stats.set_value("simhash/cpu_seconds", round(self._seconds, 6))
        logger.info(
            "Simhash: %(responses)d responses fingerprinted, %(duplicates)d near-duplicates "
            "(action %(action)s), %(size)d pages indexed, %(seconds).3f s spent",
            {
                "responses": stats.get_value("simhash/response_count", 0),
                "duplicates": stats.get_value("simhash/duplicate_count", 0),
                "action": self.action,
                "size": size,
                "seconds": self._seconds,
            },
            extra={"spider": spider},
        )

    # -- spider middleware hooks --------------------------------------------

    def process_spider_input(self, response: Response, spider: Spider | None = None) -> None:
        if not isinstance(response, HtmlResponse):
            self.stats.inc_value("simhash/skipped_count/non_html")
            return
        request = response.request
        if request is not None and not request.meta.get("simhash_enabled", True):
            self.stats.inc_value("simhash/skipped_count/disabled_meta")
            return
        if self._open_error is not None:
            self._stop_after_open_error()
            return
        start = time.thread_time()
        try:
            sig = self.signature_response(response)
            if sig is None:
                self.stats.inc_value("simhash/skipped_count/too_few_features")
                return
            fp = sig.fingerprint
            try:
                duplicate = self.backend.query_and_add(sig, response.url)
            except BackendError as exc:
                self._backend_error(exc)
                return
        finally:
            self._seconds += time.thread_time() - start
        self.stats.inc_value("simhash/response_count")
        if duplicate is None:
            return
        if request is not None and request.dont_filter:
            # never dropped; indexed like any other page when it is new
            self.stats.inc_value("simhash/kept_dont_filter_count")
            return
        self._report(response, fp, duplicate)
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

    def signature_response(self, response: HtmlResponse) -> Signature | None:
        """The page's signature (fingerprint and sketch) from the spider's own
        tree (read-only), or ``None`` when it has too few features; override to
        sign differently."""
        root = response.selector.root
        # parsel parses each response with a parser of its own: read it with
        # plain lxml elements (none is kept), the spider then gets lxml.html's.
        with plain_elements(root):
            return signature(root, min_features=self.min_features)

    def process_spider_exception(
        self, response: Response, exception: Exception, spider: Spider | None = None
    ) -> Any:
        if isinstance(exception, NearDuplicate):
            return ()
        return None

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

    def _report(self, response: Response, fp: int, duplicate: Duplicate) -> None:
        stats = self.stats
        stats.inc_value("simhash/duplicate_count")
        stats.inc_value(f"simhash/duplicate_distance_count/{duplicate.distance}")
        spider = self.crawler.spider
        record = {
            "url": response.url,
            "duplicate_of": duplicate.url,
            "distance": duplicate.distance,
            "fingerprint": f"{fp:016x}",
            "duplicate_fingerprint": f"{duplicate.fingerprint:016x}",
            "action": self.action,
        }
        if drop_logger.isEnabledFor(self.log_level):
            drop_logger.log(
                self.log_level,
                "%(verb)s %(response)s (distance %(distance)d to <%(duplicate_of)s>)",
                {
                    "verb": _VERBS[self.action],
                    "response": response,
                    "distance": duplicate.distance,
                    "duplicate_of": duplicate.url,
                },
                extra={"spider": spider, "simhash": record},
            )
        if self._audit is not None:
            line = {
                "time": datetime.now(timezone.utc).isoformat(),
                "spider": getattr(spider, "name", None),
                **record,
            }
            self._audit.write(json.dumps(line) + "\n")
        self.crawler.signals.send_catch_log(
            simhash_signals.simhash_duplicate,
            response=response,
            duplicate_of=duplicate.url,
            distance=duplicate.distance,
            fingerprint=fp,
            duplicate_fingerprint=duplicate.fingerprint,
            action=self.action,
            spider=spider,
        )

    def _backend_error(self, exc: BackendError) -> None:
        self.stats.inc_value("simhash/backend_error_count")
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        condition = type(cause).__name__
        stop = self.config.redis_on_error == "stop"
        if condition not in self._warned:
            self._warned.add(condition)
            logger.warning(
                "Simhash index error, %(what)s: %(error)s",
                {
                    "what": "closing the spider" if stop else "keeping pages unchecked",
                    "error": exc,
                },
                extra={"spider": self.crawler.spider},
            )
        if stop and not self._closing:
            self._closing = True
            _close_spider(self.crawler, "simhash_backend_error")

    def _stop_after_open_error(self) -> None:
        if not self._closing:
            self._closing = True
            _close_spider(self.crawler, "simhash_backend_error")
