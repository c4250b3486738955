"""The demo spider: follows every link of one site, one item per article or product page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Request, Response


class DemoSpider(scrapy.Spider):
    """Crawl the site under ``start_url`` (spider argument, or the DEMO_START_URL setting).

    Near-duplicate pages are dropped by scrapy-simhash before :meth:`parse`
    runs, so their items are never produced and their links never followed.
    """

    name = "demo"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        start_url = kwargs.get("start_url") or crawler.settings.get("DEMO_START_URL")
        if not start_url:
            raise ValueError("demo spider: pass -a start_url=URL or set DEMO_START_URL")
        spider.start_url = start_url
        spider.host = urlsplit(start_url).netloc
        return spider

    async def start(self) -> AsyncIterator[Request]:
        yield Request(self.start_url, callback=self.parse, dont_filter=True)

    def parse(self, response: Response) -> Iterator[dict[str, str] | Request]:
        page_type = response.xpath('//meta[@property="og:type"]/@content').get()
        if page_type in ("article", "product"):
            yield {
                "url": response.url,
                "type": page_type,
                "title": response.xpath("normalize-space(//h1)").get()
                or response.xpath("normalize-space(//title)").get(),
            }
        for href in response.xpath("//a/@href").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc == self.host:
                yield Request(url, callback=self.parse)
