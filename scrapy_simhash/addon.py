"""Scrapy add-on: ``ADDONS = {"scrapy_simhash.Addon": 0}`` is all a project needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_simhash.downloadermiddleware import MIDDLEWARE_ORDER as RULES_ORDER
from scrapy_simhash.downloadermiddleware import UrlRulesMiddleware
from scrapy_simhash.middleware import SimhashMiddleware

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

MIDDLEWARE_ORDER = 100  # after HttpErrorMiddleware (50): error pages are not fingerprinted


class Addon:
    """Enable :class:`~scrapy_simhash.SimhashMiddleware` at order 100.

    A user's own ``SPIDER_MIDDLEWARES`` entry for the middleware (another
    order, or ``None`` to disable it) is kept. ``SIMHASH_*`` defaults live in
    the middleware, so the add-on sets none and user settings always win.
    """

    def update_settings(self, settings: BaseSettings) -> None:
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", SimhashMiddleware, MIDDLEWARE_ORDER
        )
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", UrlRulesMiddleware, RULES_ORDER
        )
