# One entry point for every job; each target sets up what it needs itself.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
MIN_VENV ?= .venv-min
MIN_SCRAPY ?= scrapy==2.13.4
DEMO_VENV ?= .venv-demo
DOCS_VENV ?= .venv-docs
# pip's "new version available" notice is noise in a make run.
export PIP_DISABLE_PIP_VERSION_CHECK = 1
# setuptools' notice for an editable install of a flat layout ("be careful with folders
# named like your package"): informational only, and the suite imports from the checkout.
QUIET_EDITABLE = PYTHONWARNINGS="ignore:Editable installation:UserWarning"
# The package's sources: an installed (non-editable) copy is rebuilt when one changes.
PACKAGE_FILES := pyproject.toml setup.py $(shell find scrapy_simhash -name '*.py' -o -name '*.pyx' -o -path '*/data/*' 2>/dev/null)
# The optional compiled modules (setup.py): their sources, and the import that tells they were built.
PYX_FILES := $(sort $(shell find scrapy_simhash -name '*.pyx' 2>/dev/null))
empty :=
space := $(empty) $(empty)
comma := ,
CHECK_COMPILED := -c "import $(subst $(space),$(comma)$(space),$(subst /,.,$(PYX_FILES:.pyx=)))"

.PHONY: all venv test test-latest test-min demo docs compiler redis-server java corpus-debian corpus-public \
        bench bench-fingerprint bench-quality bench-index bench-middleware bench-redis bench-cli \
        bench-store bench-hostile bench-spark bench-crawl clean

all: test

$(VENV)/.stamp: pyproject.toml setup.py $(PYX_FILES)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e ".[test,bench,redis,plot,warc,docs,spark]"
	touch $@

venv: $(VENV)/.stamp

$(MIN_VENV)/.stamp: pyproject.toml setup.py $(PYX_FILES)
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install -q --upgrade pip
	$(QUIET_EDITABLE) $(MIN_VENV)/bin/python -m pip install -q -e ".[test,redis]" "$(MIN_SCRAPY)"
	touch $@

# The tests check that the compiled extensions were built: a C compiler and Python's
# headers; install Debian's when missing (python3-dev: the headers of Debian's python3).
compiler:
	@command -v cc >/dev/null 2>&1 || { \
	  echo "installing Debian's gcc"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq gcc libc6-dev >/dev/null; }
	@$(PYTHON) -c "import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" || { \
	  echo "installing Debian's python3-dev (Python.h)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-dev >/dev/null; }

# The Redis tests need Debian's redis-server; install it when it is missing.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "installing Debian's redis-server"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; }

# The Spark tests need a Java runtime; install Debian's when there is none.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing Debian's openjdk-17-jre-headless"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }

# The whole suite on the newest Scrapy, then the Scrapy layer on the oldest supported one.
test: test-latest test-min

# The compiled modules must have been built (else the suite would test only the Python code).
test-latest: compiler venv redis-server java
	$(PY) $(CHECK_COMPILED)
	$(PY) -m pytest tests

test-min: compiler $(MIN_VENV)/.stamp redis-server
	$(MIN_VENV)/bin/python $(CHECK_COMPILED)
	$(MIN_VENV)/bin/python -m pytest tests -m scrapy

# The demo needs the runtime dependencies only: its own venv, the package installed as a
# user would install it (not editable), rebuilt when a source file changes.
$(DEMO_VENV)/.stamp: $(PACKAGE_FILES)
	$(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install -q --upgrade pip
	$(DEMO_VENV)/bin/python -m pip install -q .
	touch $@

# The main job: serve the bundled demo site on loopback, crawl it, show what was dropped.
demo: $(DEMO_VENV)/.stamp
	$(DEMO_VENV)/bin/python example_project/run_demo.py

# The documentation site (docs/), warnings as errors; tests/test_docs.py builds it too.
# A venv of its own: the runtime dependencies and the docs extra (docs/requirements.py
# reads them from pyproject.toml), not the development one with pyspark; Sphinx imports
# the package from the checkout. --no-compile: no .pyc written at install time.
$(DOCS_VENV)/.stamp: pyproject.toml docs/requirements.py
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python docs/requirements.py > $(DOCS_VENV)/requirements.txt
	$(DOCS_VENV)/bin/python -m pip install -q --no-compile -r $(DOCS_VENV)/requirements.txt
	touch $@

docs: $(DOCS_VENV)/.stamp
	$(DOCS_VENV)/bin/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# The documentation sites of the evaluation corpus, from Debian 12's documentation
# packages (the shared corpus holds the same files); web pages are not in Debian.
# The packages are downloaded and unpacked into .cache/debian (no system install).
DEBIAN_DOCS = python3.11-doc python-django-doc cmake-doc libstdc++-12-doc postgresql-doc-15 git-doc
corpus-debian: .cache/debian/.stamp
.cache/debian/.stamp:
	@command -v apt-get >/dev/null 2>&1 || { echo "corpus-debian needs Debian's apt-get"; exit 1; }
	mkdir -p .cache/debian/debs
	cd .cache/debian/debs && { apt-get download $(DEBIAN_DOCS) 2>/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -qq && apt-get download $(DEBIAN_DOCS); }; }
	for deb in .cache/debian/debs/*.deb; do dpkg-deb -x "$$deb" .cache/debian; done
	rm -rf .cache/debian/debs
	$(PYTHON) -m evaluation.corpus
	touch $@

# The whole corpus as archives in .cache/public-corpus, from public sources only: the
# documentation sites from Debian's packages, web/ from a checkout of trafilatura's
# repository (TRAFILATURA=path; without it web-dev.tar.xz is skipped).
corpus-public: corpus-debian
	$(PYTHON) -m evaluation.corpus build $(if $(TRAFILATURA),--trafilatura "$(TRAFILATURA)")

bench: bench-fingerprint bench-quality bench-index bench-middleware bench-redis bench-cli \
       bench-store bench-hostile bench-spark

bench-fingerprint: venv
	$(PY) -m bench.bench_fingerprint --repeat 3

bench-quality: venv
	$(PY) -m evaluation.corpus
	$(PY) -m bench.quality

bench-index: venv
	$(PY) -m bench.bench_index

bench-middleware: venv
	$(PY) -m bench.bench_middleware

bench-redis: venv redis-server
	$(PY) -m bench.bench_redis

bench-cli: venv
	$(PY) -m bench.bench_cli

bench-store: venv
	$(PY) -m bench.bench_store

bench-hostile: venv
	$(PY) -m bench.bench_hostile
	$(PY) -m bench.bench_hostile --memory

bench-spark: venv java
	$(PY) -m bench.bench_spark --n 1000000

# The crawl harness (issue 23): docs-dev3's API references and PostgreSQL, each with a
# mirror, crawled with and without the add-on (~15 minutes on a shared 2-core machine).
bench-crawl: venv
	$(PY) -m bench.crawl_harness python-3.11 django-3.2 docs2/cmake-3.25 docs2/libstdc++-12 docs2/git-2.39 docs3/eigen-3.4 docs3/commons-lang3-3.12 --pages 1200
	$(PY) -m bench.crawl_harness docs3/qt-5.15 docs2/postgresql-15 --pages 1200 --append

clean:
	rm -rf $(VENV) $(MIN_VENV) $(DEMO_VENV) $(DOCS_VENV) docs/_build dist .cache .pytest_cache .hypothesis $(PYX_FILES:.pyx=.c) $(PYX_FILES:.pyx=.html) $(PYX_FILES:.pyx=.*.so) build
