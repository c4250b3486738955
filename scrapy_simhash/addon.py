"""Scrapy add-on: ``ADDONS = {"scrapy_simhash.Addon": 0}`` is all a project needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_simhash.downloadermiddleware import MIDDLEWARE_ORDER as RULES_ORDER
from scrapy_simhash.downloadermiddleware import UrlRulesMiddleware
from scrapy_simhash.middleware import SimhashMiddleware
from scrapy_simhash.settings import SETTINGS

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

MIDDLEWARE_ORDER = 100  # after HttpErrorMiddleware (50): error pages are not fingerprinted


class Addon:
    """Enable :class:`~scrapy_simhash.SimhashMiddleware` at order 100 and
    register the ``SIMHASH_*`` defaults.

    A user's own ``SPIDER_MIDDLEWARES`` entry for the middleware (another
    order, or ``None`` to disable it) is kept. The defaults are set with the
    ``addon`` priority, below project, spider and command-line settings, so
    user settings always win; they make ``crawler.settings`` show every
    setting's effective value. (``scrapy settings --get`` does not load
    add-ons: it shows the project's own values only.)
    """

    def update_settings(self, settings: BaseSettings) -> None:
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", SimhashMiddleware, MIDDLEWARE_ORDER
        )
        for spec in SETTINGS:
            # set() keeps a value of a higher priority: only unset names get the default
            settings.set(spec.name, spec.default, priority="addon")
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", UrlRulesMiddleware, RULES_ORDER
        )
