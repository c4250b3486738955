import pytest

import scrapy_simhash

pytestmark = pytest.mark.scrapy


def test_every_public_name_resolves():
    for name in scrapy_simhash.__all__:
        assert getattr(scrapy_simhash, name) is not None, name
    assert callable(scrapy_simhash.fingerprint)  # not shadowed by its module


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        scrapy_simhash.does_not_exist  # noqa: B018
