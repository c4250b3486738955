"""What to install for an optional part: the one home of the "needs X" hints.

scrapy-simhash is installed from a checkout (it is not on PyPI), so a hint
naming ``scrapy-simhash[redis]`` would point at an index that does not hold it.
:func:`needs` names the packages themselves (``pip install redis``), which works
in any environment, and the extra for a checkout (``pip install '.[redis]'``).
The packages are read from the installed distribution's metadata (the extras
of pyproject.toml), so they are never written down twice.
"""

from __future__ import annotations

import re
from importlib import metadata

#: The distribution whose extras are named.
DISTRIBUTION = "scrapy-simhash"

_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([\w-]+)["']""")


def extra_packages(extra: str) -> list[str]:
    """The requirements of ``extra`` (``["redis>=5.0"]``), from the installed
    metadata; empty when the package is not installed (run from a checkout)."""
    try:
        requires = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return []
    found = []
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        names = _EXTRA_MARKER.findall(marker)
        if extra in names:
            found.append(spec.strip().replace(" ", ""))
    return found


def needs(what: str, module: str, extra: str) -> str:
    """One line: ``what`` needs ``module``, and the commands that install it."""
    packages = extra_packages(extra) or [module]
    quoted = " ".join(f"'{p}'" if any(c in p for c in "<>=!~[") else p for p in packages)
    return (f"{what} needs {module}, which is not installed: pip install {quoted} "
            f"(or, in a checkout of scrapy-simhash: pip install '.[{extra}]')")
