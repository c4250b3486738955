"""HTTP test fixtures: owned by the Scrapy-layer work."""
