"""SimhashSettings: defaults, derived values, and errors naming the bad setting."""

from __future__ import annotations

import inspect
import logging
import os
import re

import pytest
from scrapy.settings import Settings

from scrapy_simhash import settings as settings_module
from scrapy_simhash.fingerprinting import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_FEATURES
from scrapy_simhash.settings import DEFAULTS, SETTINGS, SimhashSettings

pytestmark = pytest.mark.scrapy


def load(**values) -> SimhashSettings:
    return SimhashSettings.from_settings(Settings(values))


def test_defaults():
    config = load()
    assert config == SimhashSettings()
    assert config.enabled is True
    assert config.max_distance == DEFAULT_MAX_DISTANCE == 7
    assert config.layout == "auto"
    assert config.min_features == DEFAULT_MIN_FEATURES
    assert config.action == "drop"
    assert config.log_level == logging.INFO
    assert config.log_file is None
    assert config.persist_path is None
    assert config.reset is False
    assert config.backend == "memory"
    assert config.redis_url == "redis://localhost:6379"
    assert config.redis_params == {}
    assert config.redis_key == "%(spider)s:simhash"
    assert config.redis_on_error == "keep"


def test_values_from_strings():
    # As they arrive from the command line (-s NAME=value).
    config = load(
        SIMHASH_ENABLED="0",
        SIMHASH_MAX_DISTANCE="5",
        SIMHASH_LAYOUT="11,11,11,11,10,10",
        SIMHASH_EXPECTED_PAGES="5000",
        SIMHASH_MIN_FEATURES="10",
        SIMHASH_ACTION="Drop_Outlinks",
        SIMHASH_LOG_LEVEL="debug",
        SIMHASH_LOG_FILE="drops.jsonl",
        SIMHASH_RESET="true",
        SIMHASH_BACKEND="redis",
        SIMHASH_REDIS_ON_ERROR="stop",
        REDIS_PARAMS='{"socket_timeout": 5}',
    )
    assert config.enabled is False
    assert config.max_distance == 5
    assert config.layout == "11,11,11,11,10,10"
    assert config.expected_pages == 5000
    assert config.min_features == 10
    assert config.action == "drop_outlinks"
    assert config.log_level == logging.DEBUG
    assert config.log_file == "drops.jsonl"
    assert config.reset is True
    assert config.backend == "redis"
    assert config.redis_on_error == "stop"
    assert config.redis_params == {"socket_timeout": 5}


def test_layout_as_a_list_and_numeric_level():
    config = load(SIMHASH_LAYOUT=[16, 16, 16, 16], SIMHASH_MAX_DISTANCE=3, SIMHASH_LOG_LEVEL=25)
    assert config.layout == "16,16,16,16"
    assert config.log_level == 25


def test_persist_path_defaults_to_jobdir(tmp_path):
    assert load(JOBDIR=str(tmp_path)).persist_path == os.path.join(str(tmp_path), "simhash.seen")
    explicit = load(JOBDIR=str(tmp_path), SIMHASH_PERSIST_PATH="elsewhere.seen")
    assert explicit.persist_path == "elsewhere.seen"


def test_redis_url_precedence():
    assert load(REDIS_HOST="cache", REDIS_PORT=6380).redis_url == "redis://cache:6380"
    assert load(REDIS_URL="redis://a:1/2").redis_url == "redis://a:1/2"
    assert (
        load(REDIS_URL="redis://a:1/2", SIMHASH_REDIS_URL="redis://b:3/0").redis_url
        == "redis://b:3/0"
    )


def test_import_path_backend():
    assert load(SIMHASH_BACKEND="scrapy_simhash.backends.memory.MemoryBackend").backend == (
        "scrapy_simhash.backends.memory.MemoryBackend"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SIMHASH_ENABLED", "maybe"),
        ("SIMHASH_MAX_DISTANCE", -1),
        ("SIMHASH_MAX_DISTANCE", 11),
        ("SIMHASH_MAX_DISTANCE", "three"),
        ("SIMHASH_MAX_DISTANCE", 2.5),
        ("SIMHASH_MAX_DISTANCE", True),
        ("SIMHASH_LAYOUT", "16,16,16"),  # 48 bits
        ("SIMHASH_LAYOUT", "32,32"),  # 2 blocks cannot guarantee k=3
        ("SIMHASH_LAYOUT", "wide"),
        ("SIMHASH_LAYOUT", 64),
        ("SIMHASH_EXPECTED_PAGES", 0),
        ("SIMHASH_MIN_FEATURES", 0),
        ("SIMHASH_ACTION", "delete"),
        ("SIMHASH_LOG_LEVEL", "LOUD"),
        ("SIMHASH_LOG_FILE", 42),
        ("SIMHASH_RESET", "perhaps"),
        ("SIMHASH_BACKEND", "mongodb"),
        ("SIMHASH_BACKEND", "no_such_module.Backend"),
        ("SIMHASH_REDIS_URL", "localhost:6379"),
        ("SIMHASH_REDIS_KEY", "%(spider"),
        ("SIMHASH_REDIS_ON_ERROR", "retry"),
        ("REDIS_PORT", "port"),
        ("REDIS_PARAMS", "not json"),
    ],
)
def test_invalid_value_names_the_setting(name, value):
    with pytest.raises(ValueError, match=name) as info:
        load(**{name: value})
    assert repr(value) in str(info.value)


def test_settings_table_is_the_home_of_every_default():
    """SETTINGS names every SIMHASH_* setting the reader uses, once, with a default
    that from_settings applies and a one-line description."""
    names = [spec.name for spec in SETTINGS]
    assert len(names) == len(set(names))
    assert all(name.startswith("SIMHASH_") for name in names)
    assert all(spec.help and "\n" not in spec.help for spec in SETTINGS)
    source = inspect.getsource(settings_module)
    read = set(re.findall(r'"(SIMHASH_[A-Z_]+)"', source.split("SETTINGS: tuple")[1]))
    assert read == set(names)
    # the defaults as settings give the same configuration as no settings at all
    assert load(**{spec.name: spec.default for spec in SETTINGS}) == load()
    assert DEFAULTS["SIMHASH_MAX_DISTANCE"] == load().max_distance == DEFAULT_MAX_DISTANCE


@pytest.mark.parametrize(
    ("name", "default", "attribute", "value"),
    [
        ("SIMHASH_MAX_DISTANCE", 4, "max_distance", 4),
        ("SIMHASH_ACTION", "log", "action", "log"),
        ("SIMHASH_LOG_LEVEL", "WARNING", "log_level", logging.WARNING),
        ("SIMHASH_DEBUG", True, "debug", True),
        ("SIMHASH_MIN_FEATURES", 9, "min_features", 9),
    ],
)
def test_defaults_are_read_from_the_table(monkeypatch, name, default, attribute, value):
    monkeypatch.setitem(DEFAULTS, name, default)
    assert getattr(load(), attribute) == value
