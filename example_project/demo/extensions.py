"""An extension that writes the crawl's final stats to a JSON file, for scripts and tests."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

logger = logging.getLogger(__name__)


class StatsFile:
    """Dump ``crawler.stats`` to ``DEMO_STATS_FILE`` once the engine has stopped.

    ``engine_stopped`` comes after every ``spider_closed`` handler, so stats
    that components record at close are included.
    """

    def __init__(self, crawler: Crawler, path: Path) -> None:
        self.crawler = crawler
        self.path = path

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFile:
        path = crawler.settings.get("DEMO_STATS_FILE")
        if not path:
            raise NotConfigured("DEMO_STATS_FILE is not set")
        ext = cls(crawler, Path(path))
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def engine_stopped(self) -> None:
        stats = self.crawler.stats.get_stats()
        self.path.write_text(json.dumps(stats, default=str, indent=1, sort_keys=True))
        logger.info("Wrote crawl stats to %s", self.path)
