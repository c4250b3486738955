# One entry point for every job; each target sets up what it needs itself.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
MIN_VENV ?= .venv-min
MIN_SCRAPY ?= scrapy==2.13.4

.PHONY: all venv test test-latest test-min demo redis-server java bench bench-fingerprint \
        bench-quality bench-index bench-middleware bench-redis bench-cli bench-spark clean

all: test

$(VENV)/.stamp: pyproject.toml setup.py scrapy_simhash/fingerprinting/_walk.pyx
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,bench,redis,plot,warc,spark]"
	touch $@

venv: $(VENV)/.stamp

$(MIN_VENV)/.stamp: pyproject.toml setup.py scrapy_simhash/fingerprinting/_walk.pyx
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install -q --upgrade pip
	$(MIN_VENV)/bin/python -m pip install -q -e ".[test,redis]" "$(MIN_SCRAPY)"
	touch $@

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

# The compiled walk must have been built (else the suite would test only the Python one).
test-latest: venv redis-server java
	$(PY) -c "import scrapy_simhash.fingerprinting._walk"
	$(PY) -m pytest tests

test-min: $(MIN_VENV)/.stamp redis-server
	$(MIN_VENV)/bin/python -c "import scrapy_simhash.fingerprinting._walk"
	$(MIN_VENV)/bin/python -m pytest tests -m scrapy

# The main job: serve the bundled demo site on loopback, crawl it, show what was dropped.
demo: venv
	$(PY) example_project/run_demo.py

bench: bench-fingerprint bench-quality bench-index bench-middleware bench-redis bench-cli

bench-fingerprint: venv
	$(PY) -m bench.bench_fingerprint --repeat 3

bench-quality: venv
	$(PY) -m bench.quality

bench-index: venv
	$(PY) -m bench.bench_index

bench-middleware: venv
	$(PY) -m bench.bench_middleware

bench-redis: venv redis-server
	$(PY) -m bench.bench_redis

bench-cli: venv
	$(PY) -m bench.bench_cli

bench-spark: venv java
	$(PY) -m bench.bench_spark --n 1000000

clean:
	rm -rf $(VENV) $(MIN_VENV) .cache .pytest_cache .hypothesis scrapy_simhash/fingerprinting/_walk.c scrapy_simhash/fingerprinting/_walk.html scrapy_simhash/fingerprinting/_walk.*.so build
