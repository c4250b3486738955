import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest

import scrapy_simhash

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.scrapy
def test_every_public_name_resolves():
    for name in scrapy_simhash.__all__:
        assert getattr(scrapy_simhash, name) is not None, name
    assert callable(scrapy_simhash.fingerprint)
    assert callable(scrapy_simhash.features)


@pytest.mark.scrapy
def test_pure_packages_do_not_import_scrapy():
    """The algorithms stay apart from the Scrapy layer (one-way dependency)."""
    code = (
        "import sys\n"
        "import scrapy_simhash, scrapy_simhash.fingerprinting, scrapy_simhash.index\n"
        "import scrapy_simhash.backends.memory, scrapy_simhash.backends.state\n"
        "import scrapy_simhash.backends.redis, scrapy_simhash.links, scrapy_simhash.link_state\n"
        "scrapy_simhash.fingerprint('<p>' + 'the cat sat on the mat and then it ran. ' * 9)\n"
        "scrapy_simhash.SimhashIndex(k=3).query(0)\n"
        "leaked = sorted(m for m in sys.modules if m == 'scrapy' or m.startswith('scrapy.'))\n"
        "assert not leaked, leaked\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.scrapy
def test_backends_satisfy_the_protocol():
    from scrapy_simhash.backends import Backend, load_backend
    from scrapy_simhash.backends.memory import MemoryBackend
    from scrapy_simhash.backends.redis import RedisBackend

    for cls in (MemoryBackend, RedisBackend):
        assert load_backend(cls.__name__.removesuffix("Backend").lower()) is cls
        for name in ("from_config", "open", "query_and_add", "close", "__len__"):
            assert callable(getattr(cls, name, None)), (cls, name)
    assert isinstance(MemoryBackend(), Backend)


@pytest.mark.scrapy
def test_unknown_attribute():
    with pytest.raises(AttributeError):
        scrapy_simhash.does_not_exist  # noqa: B018


@pytest.mark.scrapy
def test_python_m_runs_the_command_line():
    out = subprocess.run(
        [sys.executable, "-m", "scrapy_simhash", "--version"],
        capture_output=True, text=True, check=True,
    )
    assert scrapy_simhash.__version__ in out.stdout


PAGE = (
    "<html><head><title>Harbour notes</title></head><body><p>The harbour is quiet in winter "
    "and the boats are hauled out. A ferry has crossed the bay since the old pier was rebuilt, "
    "and the fishermen will mend their nets in the shed by the lighthouse. The council can "
    "repair the slipway if the grant is approved.</p></body></html>"
)


def _source_tree(dest: Path) -> Path:
    """The files a release is built from, copied without build products (``build/``, ``.so``)."""
    ignore = shutil.ignore_patterns(
        "__pycache__", "*.so", "*.c", "*.html", "build", "dist", "*.egg-info", "_build"
    )
    dest.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE",
                 "CHANGELOG.md", "ARCHITECTURE.md", "Makefile"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("scrapy_simhash", "docs", "tests", "evaluation", "example_project"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    return dest


def test_build_sdist_and_wheel_install_in_a_clean_venv(tmp_path):
    """``python -m build`` gives an sdist and a wheel that pass ``twine check``; the wheel
    holds the compiled walk and the license, no C or Cython source, and installs into a
    fresh venv where the package imports, fingerprints and its console script runs."""
    src = _source_tree(tmp_path / "src")
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(src)],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
        capture_output=True, text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr

    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = HeaderParser().parsestr(
            zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        )
    for module in ("_walk", "_tokens"):
        assert any(n.startswith(f"scrapy_simhash/fingerprinting/{module}.")
                   and n.endswith((".so", ".pyd")) for n in names), names
    assert not [n for n in names if n.endswith((".c", ".pyx"))]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "scrapy_simhash/data/antecedents.txt" in names
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert meta["Requires-Python"] == ">=3.10"
    classifiers = meta.get_all("Classifier")
    for wanted in ("Framework :: Scrapy", "Development Status :: 4 - Beta",
                   *(f"Programming Language :: Python :: 3.{m}" for m in range(10, 14))):
        assert wanted in classifiers
    assert meta.get_all("Project-URL")
    with tarfile.open(sdist) as tf:
        members = {m.split("/", 1)[1] for m in tf.getnames() if "/" in m}
    assert {"LICENSE", "CHANGELOG.md", "setup.py",
            "scrapy_simhash/fingerprinting/_walk.pyx",
            "scrapy_simhash/fingerprinting/_tokens.pyx", "docs/conf.py"} <= members

    # A fresh venv holding only the wheel; the dependencies come from this test's
    # environment through a .pth line (a clean install of them would take minutes).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    Path(site, "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
         "--no-deps", "--no-index", str(wheel)],
        check=True,
    )
    code = (
        "import scrapy_simhash, scrapy_simhash.fingerprinting._walk as w\n"
        "import scrapy_simhash.fingerprinting._tokens as t\n"
        "assert scrapy_simhash.__file__.startswith(%r), scrapy_simhash.__file__\n"
        "assert w.__file__.startswith(%r), w.__file__\n"
        "assert t.__file__.startswith(%r), t.__file__\n"
        "print(scrapy_simhash.fingerprint(%r))\n"
    ) % (site, site, site, PAGE)
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    expected = scrapy_simhash.fingerprint(PAGE)
    assert expected is not None and int(run.stdout) == expected
    script = venv / "bin" / "scrapy-simhash"
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0 and scrapy_simhash.__version__ in out.stdout, out.stderr
