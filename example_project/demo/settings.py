"""Settings of the demo project: scrapy-simhash switched on with its add-on.

The crawl targets a loopback demo site (``demo.site``), so it may be fast; it
still obeys robots.txt and stays within one host.
"""

BOT_NAME = "demo"
SPIDER_MODULES = ["demo.spiders"]
NEWSPIDER_MODULE = "demo.spiders"

# All a user writes to switch the plugin on; SIMHASH_* settings tune it.
ADDONS = {"scrapy_simhash.Addon": 0}
# The demo opts in to URL rules skipping requests before download, to show them (its site
# has no family of URLs that is mostly copies and sometimes distinct). The default,
# "learn", only counts what they would skip: a page a rule maps wrongly is never fetched.
SIMHASH_RULES = "apply"

ROBOTSTXT_OBEY = True
USER_AGENT = "scrapy-simhash-demo (+https://github.com/scrapy-plugins)"
CONCURRENT_REQUESTS = 4
CONCURRENT_REQUESTS_PER_DOMAIN = 4
DOWNLOAD_DELAY = 0
DOWNLOAD_TIMEOUT = 15
AUTOTHROTTLE_ENABLED = False
# Safety nets: without near-duplicate dropping the session-id listing never ends.
DEPTH_LIMIT = 12
CLOSESPIDER_PAGECOUNT = 500

TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False  # Scrapy >= 2.19; ignored by older versions
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"

# Writes the final stats as JSON when DEMO_STATS_FILE is set (run_demo.py and tests use it).
EXTENSIONS = {"demo.extensions.StatsFile": 500}
DEMO_STATS_FILE = None
# Start URL when no ``-a start_url=...`` is given.
DEMO_START_URL = None
