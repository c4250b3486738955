"""The add-on: ADDONS → SPIDER_MIDDLEWARES; the user's own settings win."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from scrapy_simhash import Addon, SimhashMiddleware
from scrapy_simhash.settings import SETTINGS, SimhashSettings
from tests.fixtures_http import crawl
from tests.test_crawl import SiteSpider, serve_dup_site

pytestmark = pytest.mark.scrapy

PATH = "scrapy_simhash.SimhashMiddleware"


def middlewares(settings: dict) -> dict:
    crawler = get_crawler(Spider, settings)
    return crawler.settings.getdict("SPIDER_MIDDLEWARES")


def order_of(mws: dict):
    keys = (SimhashMiddleware, PATH, "scrapy_simhash.middleware.SimhashMiddleware")
    found = [v for k, v in mws.items() if k in keys]
    assert len(found) == 1, mws
    return found[0]


@pytest.mark.parametrize("addon", [Addon, "scrapy_simhash.Addon"])
def test_addon_enables_the_middleware_at_100(addon):
    assert order_of(middlewares({"ADDONS": {addon: 0}})) == 100


@pytest.mark.parametrize("key", [SimhashMiddleware, PATH])
def test_user_order_wins(key):
    mws = middlewares({"ADDONS": {Addon: 0}, "SPIDER_MIDDLEWARES": {key: 543}})
    assert order_of(mws) == 543


def test_user_can_disable_it():
    mws = middlewares({"ADDONS": {Addon: 0}, "SPIDER_MIDDLEWARES": {PATH: None}})
    assert order_of(mws) is None


def test_user_simhash_settings_win():
    crawler = get_crawler(Spider, {"ADDONS": {Addon: 0}, "SIMHASH_ACTION": "log"})
    assert crawler.settings.get("SIMHASH_ACTION") == "log"


@deferred_f_from_coro_f
async def test_addon_crawl(site):
    serve_dup_site(site)
    crawler = await crawl(SiteSpider, {"ADDONS": {"scrapy_simhash.Addon": 0}}, base=site.base)
    assert "/m/a" not in crawler.spider.parsed
    assert crawler.stats.get_value("simhash/duplicate_count") == 1
    assert crawler.stats.get_value("simhash/response_count") == 5


def test_addon_registers_every_default_below_user_settings():
    crawler = get_crawler(
        Spider, {"ADDONS": {Addon: 0}, "SIMHASH_MAX_DISTANCE": 5}
    )
    settings = crawler.settings
    for spec in SETTINGS:
        if spec.name != "SIMHASH_MAX_DISTANCE":
            assert settings.get(spec.name) == spec.default, spec.name
            assert settings.getpriority(spec.name) == SETTINGS_PRIORITIES["addon"], spec.name
    assert settings.getint("SIMHASH_MAX_DISTANCE") == 5  # the project's value wins
    assert settings.get("SIMHASH_ACTION") == "drop"
    # without the add-on the names are unset, and the middleware uses the same defaults
    assert get_crawler(Spider, {}).settings.get("SIMHASH_ACTION") is None
    assert SimhashSettings.from_settings(settings) == SimhashSettings(max_distance=5)
