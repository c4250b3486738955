"""URL rules learned from confirmed near-duplicates, to skip copies before download.

``learn`` holds the algorithm (:class:`RuleBook`: candidates, support,
counterexamples, matching), ``state`` where its evidence is kept (a JOBDIR
record log, a Redis list). Both are pure; the Scrapy component is
:class:`scrapy_simhash.downloadermiddleware.UrlRulesMiddleware`.
"""

from scrapy_simhash.rules.learn import Decision, Rule, RuleBook, RuleEvent, parse_url
from scrapy_simhash.rules.state import RULES_FILE, FileRuleLog, RedisRuleLog, read_rules, replay

__all__ = [
    "RULES_FILE",
    "Decision",
    "FileRuleLog",
    "RedisRuleLog",
    "Rule",
    "RuleBook",
    "RuleEvent",
    "parse_url",
    "read_rules",
    "replay",
]
