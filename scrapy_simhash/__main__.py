"""``python -m scrapy_simhash``: the ``scrapy-simhash`` command line."""

import sys

from scrapy_simhash.cli import main

sys.exit(main())
