"""Build the optional compiled modules of ``scrapy_simhash``.

* ``fingerprinting/_walk.pyx``: the main-text walk, against lxml's C API;
* ``fingerprinting/_tokens.pyx``: the token loops (spot signatures, token
  hashes, shingles, the sketch);
* ``fingerprinting/_confirm.pyx``: the drop decision on a probe's candidates;
* ``index/_probe.pyx``: the index's single-fingerprint probe.

All are optional: where they cannot be built (no C compiler), the package
installs as pure Python and :mod:`scrapy_simhash.fingerprinting.extract`,
:mod:`scrapy_simhash.fingerprinting.features`,
:mod:`scrapy_simhash.fingerprinting.signature` and
:mod:`scrapy_simhash.index.tables` run their Python code, with the same
results, slower. Everything else is declared in pyproject.toml.
"""

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

walk = Extension(
    "scrapy_simhash.fingerprinting._walk",
    ["scrapy_simhash/fingerprinting/_walk.pyx"],
    include_dirs=lxml.get_include(),
)
tokens = Extension(
    "scrapy_simhash.fingerprinting._tokens",
    ["scrapy_simhash/fingerprinting/_tokens.pyx"],
)
confirm = Extension(
    "scrapy_simhash.fingerprinting._confirm",
    ["scrapy_simhash/fingerprinting/_confirm.pyx"],
)
probe = Extension(
    "scrapy_simhash.index._probe",
    ["scrapy_simhash/index/_probe.pyx"],
)
extensions = cythonize([walk, tokens, confirm, probe], language_level=3, quiet=True)
for extension in extensions:
    extension.optional = True  # cythonize() does not carry it over
setup(ext_modules=extensions)
