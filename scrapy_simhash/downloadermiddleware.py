"""Downloader middleware skipping requests that learned URL rules map to a kept page.

The spider middleware confirms near-duplicates after download; this component
learns, from those confirmed drops (``simhash_duplicate``) and the pages kept
(``simhash_kept``), which URL differences never change the page on a site
(:mod:`scrapy_simhash.rules`), and, with ``SIMHASH_RULES = "apply"``, skips a
request before it is downloaded when an active rule maps it to a page already
fetched and kept. By default (``"learn"``) it only counts such requests: a skipped
request is never fetched, so no content confirms the skip, and a family of URLs
that is nearly always copies (untranslated pages in a language folder) passes any
statistical bound; a skip is a bet, a drop by content is not.

It runs in ``process_request`` rather than in the scheduler's dupefilter: a
request is checked when it is about to be downloaded, with the rules learned by
then (not those known when it was enqueued); ``DUPEFILTER_CLASS``, its
``requests.seen`` and scrapy-redis's dupefilter stay as they are; and a skipped
request's errback receives :class:`SkippedByRule`, an ``IgnoreRequest``.
Requests with ``dont_filter``, ``meta["simhash_rules"] = False`` (or
``simhash_enabled = False``) and Scrapy's own ``NO_CALLBACK`` downloads
(robots.txt, media) are never skipped; priorities are untouched.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Request
from scrapy.http.request import NO_CALLBACK

from scrapy_simhash import signals as simhash_signals
from scrapy_simhash.index.store import CorruptStateError
from scrapy_simhash.rules import RULES_FILE, FileRuleLog, RedisRuleLog, RuleBook, replay
from scrapy_simhash.middleware import start_failed
from scrapy_simhash.rules.learn import Rule, RuleEvent, wilson_lower
from scrapy_simhash.settings import (
    DEFAULTS,
    RULES_MODES,
    SimhashSettings,
    _get_choice,
    _get_float,
    _get_int,
    _get_path,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)

#: How often (seconds) a process reads the rules' evidence other processes shared.
SYNC_INTERVAL = 0.5
MIDDLEWARE_ORDER = 80  # after OffsiteMiddleware (50), before RobotsTxt (100) and the rest


def _requested_url(message: Request | Response) -> str:
    """The URL first requested for ``message``: a check answered through redirects
    is resolved under the URL it was fetched as (``redirect_urls``), not its last."""
    request = message if isinstance(message, Request) else getattr(message, "request", None)
    if request is None:
        return message.url
    return (request.meta.get("redirect_urls") or (request.url,))[0]


def _count(number: int, noun: str) -> str:
    """``1 rule``, ``2 rules``."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


class SkippedByRule(IgnoreRequest):
    """A request was not downloaded: a learned URL rule maps it to a kept page."""

    def __init__(self, request: Request, duplicate_of: str, rule: str) -> None:
        self.request = request
        self.duplicate_of = duplicate_of
        self.rule = rule
        super().__init__(f"{request} skipped: rule {rule!r} maps it to <{duplicate_of}>")


@dataclass(frozen=True)
class RulesSettings:
    """The validated ``SIMHASH_RULES*`` settings."""

    mode: str = DEFAULTS["SIMHASH_RULES"]
    min_support: int = DEFAULTS["SIMHASH_RULES_MIN_SUPPORT"]
    min_precision: float = DEFAULTS["SIMHASH_RULES_MIN_PRECISION"]
    verify_share: float = DEFAULTS["SIMHASH_RULES_VERIFY_SHARE"]
    verify_first: int = DEFAULTS["SIMHASH_RULES_VERIFY_FIRST"]
    path: str | None = DEFAULTS["SIMHASH_RULES_PATH"]

    @classmethod
    def from_settings(cls, settings: Any, config: SimhashSettings) -> RulesSettings:
        path = _get_path(settings, "SIMHASH_RULES_PATH")
        if path is None:
            jobdir = settings.get("JOBDIR") or None
            if jobdir:
                path = os.path.join(jobdir, RULES_FILE)
            elif config.persist_path:
                path = config.persist_path + ".rules"
        return cls(
            mode=_get_choice(settings, "SIMHASH_RULES", RULES_MODES),
            min_support=_get_int(settings, "SIMHASH_RULES_MIN_SUPPORT", 1),
            min_precision=_get_float(settings, "SIMHASH_RULES_MIN_PRECISION", 0, 0.99),
            verify_share=_get_float(settings, "SIMHASH_RULES_VERIFY_SHARE", 0, 1),
            verify_first=_get_int(settings, "SIMHASH_RULES_VERIFY_FIRST", 0),
            path=path,
        )


class UrlRulesMiddleware:
    """Learn URL rules from confirmed near-duplicates; skip requests they map to kept pages."""

    def __init__(self, crawler: Crawler, config: SimhashSettings, rules: RulesSettings) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.settings = rules
        # SIMHASH_ACTION=log is a dry run: rules are learned, nothing is skipped
        self.apply = rules.mode == "apply" and config.action != "log"
        self.book = RuleBook(rules.min_support, rules.verify_first, rules.verify_share,
                             rules.min_precision)
        self.log: FileRuleLog | RedisRuleLog | None = None
        self._audit: Any = None
        # URL first requested to check rules (_requested_url) -> per check, the rule's id
        # and when the check stops holding the rule back
        self._verifying: dict[str, list[tuple[str, float]]] = {}
        self._check_timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT", 180)
        self._next_sync = 0.0
        self._redis_errors: tuple[type[BaseException], ...] = ()
        self._failed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlRulesMiddleware:
        try:
            config = SimhashSettings.from_settings(crawler.settings)
            rules = RulesSettings.from_settings(crawler.settings, config)
        except ValueError as exc:
            start_failed(exc)
            raise
        if not config.enabled or rules.mode == "off":
            raise NotConfigured
        mw = cls(crawler, config, rules)
        connect = crawler.signals.connect
        connect(mw.spider_opened, signal=signals.spider_opened)
        connect(mw.spider_closed, signal=signals.spider_closed)
        connect(mw.page_duplicate, signal=simhash_signals.simhash_duplicate)
        connect(mw.page_kept, signal=simhash_signals.simhash_kept)
        return mw

    # -- lifecycle ---------------------------------------------------------

    def spider_opened(self, spider: Spider) -> None:
        try:
            self.log = self._open_log(spider.name)
            events = self.log.open() if self.log is not None else []
        except (CorruptStateError, OSError, *self._redis_errors) as exc:
            # Without its evidence a rule could skip a page kept as distinct: fetch everything.
            self._stop_applying("cannot read the rules' evidence", exc)
            events = []
        if self.config.log_file:
            self._audit = open(self.config.log_file, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        replay(self.book, events)
        self.stats.set_value("simhash/rules_active", self.book.active_count)
        logger.info(
            "URL rules (SIMHASH_RULES=%(mode)s%(dry)s): %(active)s, %(rules)s learned, "
            "from %(events)s in %(where)s",
            {"mode": self.settings.mode, "dry": self._dry_run(),
             "active": _count(self.book.active_count, "active rule"),
             "rules": _count(len(self.book.rules), "rule"),
             "events": _count(len(events), "stored event"),
             "where": self._where()},
            extra={"spider": spider},
        )

    def _dry_run(self) -> str:
        """Why no request is skipped although the rules are learned, if that is so."""
        if self.settings.mode == "learn":
            return ": learned and counted, no request skipped"
        if not self.apply:
            return (", but SIMHASH_ACTION=log is a dry run: learned and counted, no request "
                    "skipped")
        return ""

    def _open_log(self, spider_name: str) -> FileRuleLog | RedisRuleLog | None:
        if self.config.backend == "redis":
            from scrapy_simhash.backends.redis import connect, import_redis

            redis = import_redis()
            self._redis_errors = (redis.RedisError, redis.exceptions.RedisClusterException)
            client = connect(self.config)
            key = (self.config.redis_key % {"spider": spider_name}) + ":rules"
            return RedisRuleLog(client, key, reset=self.config.reset)
        if self.settings.path:
            return FileRuleLog(self.settings.path, reset=self.config.reset)
        return None

    def _where(self) -> str:
        if isinstance(self.log, RedisRuleLog):
            return f"Redis list {self.log.key}"
        if isinstance(self.log, FileRuleLog):
            return self.log.path
        return "memory"

    def spider_closed(self, spider: Spider) -> None:
        if self.log is not None:
            self.log.close()
        if self._audit is not None:
            self._audit.close()
            self._audit = None
        self.stats.set_value("simhash/rules_active", self.book.active_count)
        rules = self.book.rules.values()
        if self.apply:
            outcome = _count(self.stats.get_value("simhash/requests_skipped_count", 0),
                             "request") + " skipped"
        else:
            outcome = (_count(self.stats.get_value("simhash/requests_skippable_count", 0),
                              "request") + " would have been skipped (none was)")
        logger.info(
            "URL rules: %(active)s, %(retired)s, %(rejected)s, %(learned)s learned; "
            "%(outcome)s",
            {"active": _count(self.book.active_count, "active rule"),
             "retired": _count(sum(r.retired and r.was_active for r in rules), "retired rule"),
             "rejected": _count(sum(r.retired and not r.was_active for r in rules),
                                "rejected candidate"),
             "learned": _count(len(self.book.rules), "rule"),
             "outcome": outcome},
            extra={"spider": spider},
        )

    # -- evidence ----------------------------------------------------------

    def page_kept(self, response: Response, conclusive: bool = True, **kwargs: Any) -> None:
        if not conclusive:
            # One of its host's first pages, or near one: kept unless an exact copy,
            # whatever it is, so its being kept is no evidence about its URL.
            self._verifying.pop(_requested_url(response), None)
            self.stats.inc_value("simhash/rules_inconclusive_count")
            return
        url = response.url
        self._record(["k", url])
        self._learn(self.book.kept, url)
        if self._verifying.pop(_requested_url(response), None) is not None:
            self.stats.inc_value("simhash/rules_verify_failed_count")

    def page_duplicate(self, response: Response, duplicate_of: str, **kwargs: Any) -> None:
        url = response.url
        self._record(["d", url, duplicate_of])
        self._learn(self.book.duplicate, url, duplicate_of)
        if self._verifying.pop(_requested_url(response), None) is not None:
            self.stats.inc_value("simhash/rules_verify_confirmed_count")

    def _learn(self, step: Any, *urls: str) -> None:
        try:
            events = step(*urls)
        except Exception as exc:  # a rule book left half-updated must not skip anything
            logger.error("URL rules: learning from %(urls)s failed", {"urls": urls},
                         exc_info=True, extra={"spider": self.crawler.spider})
            self._stop_applying("a learning step failed", exc)
            return
        self._report(events)

    def _record(self, event: list) -> None:
        if self.log is None:
            return
        try:
            self.log.append(event)
        except (OSError, *self._redis_errors) as exc:
            self._stop_applying("cannot store the rules' evidence", exc)

    def _report(self, events: list[RuleEvent]) -> None:
        if not events:
            return
        spider = self.crawler.spider
        for kind, rule, (a, b) in events:
            if kind == "retired":
                logger.warning(
                    "URL rule retired: %(rule)s maps <%(a)s> and <%(b)s>, two pages kept as "
                    "distinct (it had %(support)d supporting pages, %(skips)d skips)",
                    {"rule": rule.id, "a": a, "b": b, "support": rule.support,
                     "skips": rule.skips},
                    extra={"spider": spider},
                )
                self.stats.inc_value("simhash/rules_retired_count")
            elif kind == "rejected":
                logger.debug("URL rule candidate rejected: %(rule)s maps <%(a)s> and <%(b)s>, "
                             "two pages kept as distinct", {"rule": rule.id, "a": a, "b": b},
                             extra={"spider": spider})
                self.stats.inc_value("simhash/rules_rejected_count")
            elif kind == "activated":
                logger.info(
                    "URL rule active: %(rule)s (%(support)d supporting pages, precision "
                    "at least %(bound).2f at 99%% confidence, e.g. <%(a)s> = <%(b)s>)",
                    {"rule": rule.id, "support": rule.support,
                     "bound": wilson_lower(rule.support, rule.support), "a": a, "b": b},
                    extra={"spider": spider},
                )
            else:
                self.stats.inc_value("simhash/rules_learned_count")
        self.stats.set_value("simhash/rules_active", self.book.active_count)

    # -- downloader middleware hook -----------------------------------------

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if request.dont_filter or request.callback is NO_CALLBACK:
            return None
        meta = request.meta
        if not meta.get("simhash_rules", True) or not meta.get("simhash_enabled", True):
            return None
        if isinstance(self.log, RedisRuleLog) and time.monotonic() >= self._next_sync:
            self._sync()
        decision = self.book.check(request.url)
        if decision is None:
            return None
        rule = decision.rule
        if decision.verify:
            timeout = request.meta.get("download_timeout", self._check_timeout)
            self._verifying.setdefault(_requested_url(request), []).append(
                (rule.id, time.monotonic() + 2 * timeout))
            self.stats.inc_value("simhash/rules_verify_count")
            return None
        if not decision.known and self._awaiting(rule.id):
            # A check of the rule is still in flight: it may yet retire the rule.
            self.stats.inc_value("simhash/rules_verify_pending_count")
            return None
        if not self.apply:
            self.stats.inc_value("simhash/requests_skippable_count")
            logger.debug("Would skip %(request)s (not applying rules): rule %(rule)s maps it "
                         "to <%(of)s>", {"request": request, "rule": rule.id,
                                         "of": decision.duplicate_of},
                         extra={"spider": self.crawler.spider})
            return None
        self._skip(request, rule, decision.duplicate_of)
        raise SkippedByRule(request, decision.duplicate_of, rule.id)

    def process_response(self, request: Request, response: Response,
                         spider: Spider | None = None) -> Response:
        url = _requested_url(request)
        if url in self._verifying and not (
            isinstance(response, HtmlResponse) and 200 <= response.status < 300
        ):
            del self._verifying[url]  # no verdict will come: it checks nothing
        return response

    def process_exception(self, request: Request, exception: BaseException,
                          spider: Spider | None = None) -> None:
        self._verifying.pop(_requested_url(request), None)  # never downloaded: it checks nothing

    def _awaiting(self, rule_id: str) -> bool:
        """Whether a page fetched to check rule ``rule_id`` awaits its verdict (a
        check no verdict reached in twice the download timeout holds it back no longer)."""
        now = time.monotonic()
        awaiting = False
        for url, checks in list(self._verifying.items()):
            live = [(checked, until) for checked, until in checks if until >= now]
            if not live:
                del self._verifying[url]
                continue
            self._verifying[url] = live
            awaiting = awaiting or any(checked == rule_id for checked, _ in live)
        return awaiting

    def _skip(self, request: Request, rule: Rule, duplicate_of: str) -> None:
        first = rule.skips == 0
        self.book.skipped(rule.id)
        self._record(["s", rule.id])
        stats = self.stats
        stats.inc_value("simhash/requests_skipped_count")
        stats.inc_value(f"simhash/requests_skipped_count/{rule.id}")
        spider = self.crawler.spider
        level = logging.INFO if first else logging.DEBUG
        if logger.isEnabledFor(level):
            logger.log(
                level,
                "Skipped %(request)s before download: rule %(rule)s maps it to the kept page "
                "<%(of)s>%(more)s",
                {"request": request, "rule": rule.id, "of": duplicate_of,
                 "more": " (further skips of this rule at DEBUG)" if first else ""},
                extra={"spider": spider},
            )
        if self._audit is not None:
            self._audit.write(json.dumps({
                "event": "skip",
                "time": datetime.now(timezone.utc).isoformat(),
                "spider": getattr(spider, "name", None),
                "url": request.url,
                "duplicate_of": duplicate_of,
                "action": "skip",
                "rule": rule.id,
            }) + "\n")

    def _sync(self) -> None:
        self._next_sync = time.monotonic() + SYNC_INTERVAL
        assert self.log is not None
        try:
            events = self.log.poll()
        except self._redis_errors as exc:
            self._stop_applying("cannot read the shared rules' evidence", exc)
            return
        self._report(replay(self.book, events))

    def _stop_applying(self, what: str, exc: BaseException) -> None:
        if not self._failed:
            self._failed = True
            logger.warning(
                "URL rules: %(what)s (%(error)s); no request is skipped for the rest of the "
                "crawl", {"what": what, "error": exc}, extra={"spider": self.crawler.spider},
            )
        self.apply = False
        self.log = None
        self.stats.inc_value("simhash/rules_error_count")
