"""Print what the documentation build needs, one requirement a line: the package's
runtime dependencies and its ``docs`` extra, read from pyproject.toml (their one home).

``make docs`` installs them into ``.venv-docs``; Sphinx imports the package from the
checkout (``docs/conf.py``), so the package itself, its compiled parts and its heavy
extras (pyspark, the test and benchmark tools) are not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip's vendored copy of the same parser
    from pip._vendor import tomli as tomllib

project = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml")
                        .read_text(encoding="utf-8"))["project"]
sys.stdout.write("".join(f"{r}\n" for r in
                         [*project["dependencies"], *project["optional-dependencies"]["docs"]]))
