"""Sphinx configuration of the scrapy-simhash documentation (``make docs``)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the checkout's package, also when it is not installed

import scrapy_simhash  # noqa: E402

project = "scrapy-simhash"
author = "scrapy-simhash developers"
copyright = "2026, scrapy-simhash developers"  # noqa: A001 - Sphinx's name
release = scrapy_simhash.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "simhash_docs",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
nitpicky = False
default_role = "literal"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_mock_imports = ["redis"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False

myst_heading_anchors = 2
suppress_warnings = ["myst.header"]

html_theme = "furo"
html_title = f"scrapy-simhash {release}"
html_static_path = []
