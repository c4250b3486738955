"""The evaluation corpus rebuilt from public sources (evaluation/corpus.py), on stand-ins:
a fake Debian root holding documentation packages' folders and a fake trafilatura checkout."""

from __future__ import annotations

import json
import tarfile

import pytest

from evaluation import corpus as C


@pytest.fixture
def sources(tmp_path, monkeypatch):
    debian = tmp_path / "debian"
    for site, (_, folder) in C.DEBIAN_SITES.items():
        root = debian / folder
        (root / "sub").mkdir(parents=True)
        (root / "index.html").write_text(f"<p>{site} index</p>")
        (root / "sub" / "page.html").write_text(f"<p>{site} page</p>")
        (root / "jquery.js").symlink_to("/usr/share/javascript/jquery/jquery.js")
    trafilatura = tmp_path / "trafilatura"
    (trafilatura / "tests" / "eval").mkdir(parents=True)
    (trafilatura / "tests" / "cache").mkdir()
    (trafilatura / "tests" / "eval" / "a.html").write_text("<p>page a</p>")
    (trafilatura / "tests" / "cache" / "b.html").write_text("<p>page b</p>")
    entries = {
        "https://a.example/x ": {"file": "a.html", "with": ["page a"], "without": ["menu"]},
        "https://b.example/y": {"file": "b.html", "with": ["page b"], "without": []},
        "https://c.example/unused": {"file": "c.html", "with": [], "without": []},
    }
    (trafilatura / "tests" / "evaldata.json").write_text(json.dumps(entries))
    web_list = tmp_path / "web-pages.json"
    web_list.write_text(json.dumps({"urls": ["https://a.example/x ", "https://b.example/y"]}))
    monkeypatch.setattr(C, "DEBIAN_ROOTS", (debian,))
    monkeypatch.setattr(C, "PUBLIC", tmp_path / "public")
    monkeypatch.setattr(C, "WEB_LIST", web_list)
    return trafilatura, entries


def _members(path):
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def test_build_writes_every_archive_from_public_sources(sources):
    trafilatura, entries = sources
    assert sorted(C.build(trafilatura)) == sorted(C.ARCHIVE_PARTS)
    web = _members(C.PUBLIC / "web-dev.tar.xz")
    assert web["web/a.html"] == b"<p>page a</p>" and web["web/b.html"] == b"<p>page b</p>"
    segments = json.loads(web["web/segments.json"])
    assert segments == {u: entries[u] for u in ("https://a.example/x ", "https://b.example/y")}
    docs = _members(C.PUBLIC / "docs-dev.tar.xz")
    assert docs == {
        "python-3.11/index.html": b"<p>python-3.11 index</p>",
        "python-3.11/sub/page.html": b"<p>python-3.11 page</p>",
        "django-3.2/index.html": b"<p>django-3.2 index</p>",
        "django-3.2/sub/page.html": b"<p>django-3.2 page</p>",
    }
    docs2 = _members(C.PUBLIC / "docs-dev2.tar.xz")
    assert "docs2/git-2.39/sub/page.html" in docs2 and len(docs2) == 8
    # The archives unpack with the same safety filter the corpus reader uses.
    with tarfile.open(C.PUBLIC / "docs-dev2.tar.xz") as tar:
        tar.extractall(C.PUBLIC / "unpacked", filter="data")


def test_build_without_trafilatura_skips_web_and_says_why(sources, capsys):
    assert sorted(C.build(None)) == ["docs-dev.tar.xz", "docs-dev2.tar.xz"]
    assert not (C.PUBLIC / "web-dev.tar.xz").exists()
    assert "web-dev.tar.xz: skipped, web/ is trafilatura's evaluation set" in capsys.readouterr().out


def test_missing_page_in_checkout_refuses_web(sources, capsys):
    trafilatura, _ = sources
    (trafilatura / "tests" / "cache" / "b.html").unlink()
    assert "web-dev.tar.xz" not in C.build(trafilatura)
    assert "https://b.example/y is not in this trafilatura checkout" in capsys.readouterr().out


def test_sites_fall_back_to_debian_packages(sources, monkeypatch):
    monkeypatch.setattr(C, "corpus_dir", lambda: None)
    folder = C.site_dir("django-3.2")
    assert folder is not None and folder.name == "html"
    assert [p.name for p in C.site_pages("django-3.2")] == ["index.html", "page.html"]
    assert C.site_dir("cmake-3.25") == C.site_dir("docs2/cmake-3.25") is not None
    assert C.site_dir("no-such-site") is None
    status = C.availability()
    assert status["web"].startswith("missing: web/ is trafilatura's")
    assert not any(v.startswith("missing") for k, v in status.items()
                   if k != "web" and k not in C.ARCHIVE_ONLY_SITES)
    # docs-dev3's API references come from the shared archive only, and say so.
    assert all(status[site].startswith("missing: docs-dev3.tar.xz") for site in C.ARCHIVE_ONLY_SITES)
