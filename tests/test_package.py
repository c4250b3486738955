import subprocess
import sys

import pytest

import scrapy_simhash

pytestmark = pytest.mark.scrapy


def test_every_public_name_resolves():
    for name in scrapy_simhash.__all__:
        assert getattr(scrapy_simhash, name) is not None, name
    assert callable(scrapy_simhash.fingerprint)
    assert callable(scrapy_simhash.features)


def test_pure_packages_do_not_import_scrapy():
    """The algorithms stay apart from the Scrapy layer (one-way dependency)."""
    code = (
        "import sys\n"
        "import scrapy_simhash, scrapy_simhash.fingerprinting, scrapy_simhash.index\n"
        "import scrapy_simhash.backends.memory, scrapy_simhash.backends.state\n"
        "import scrapy_simhash.backends.redis\n"
        "scrapy_simhash.fingerprint('<p>' + 'the cat sat on the mat and then it ran. ' * 9)\n"
        "scrapy_simhash.SimhashIndex(k=3).query(0)\n"
        "leaked = sorted(m for m in sys.modules if m == 'scrapy' or m.startswith('scrapy.'))\n"
        "assert not leaked, leaked\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_backends_satisfy_the_protocol():
    from scrapy_simhash.backends import Backend, load_backend
    from scrapy_simhash.backends.memory import MemoryBackend
    from scrapy_simhash.backends.redis import RedisBackend

    for cls in (MemoryBackend, RedisBackend):
        assert load_backend(cls.__name__.removesuffix("Backend").lower()) is cls
        for name in ("from_config", "open", "query_and_add", "close", "__len__"):
            assert callable(getattr(cls, name, None)), (cls, name)
    assert isinstance(MemoryBackend(), Backend)


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        scrapy_simhash.does_not_exist  # noqa: B018
