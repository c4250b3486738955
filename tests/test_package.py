import pytest

import scrapy_simhash

pytestmark = pytest.mark.scrapy


def test_version():
    assert scrapy_simhash.__version__


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        scrapy_simhash.does_not_exist  # noqa: B018
