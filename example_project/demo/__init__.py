"""Example Scrapy project for scrapy-simhash: a demo site, a spider and their settings."""
