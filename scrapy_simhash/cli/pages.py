"""Pages on disk (HTML files, folders, JSON lines, WARC) and the ``fingerprint`` command."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from scrapy_simhash.cli import EXIT_INPUT, EXIT_OK
from scrapy_simhash.cli.errors import Problems, load_json_line
from scrapy_simhash.cli.fingerprints import SKETCH_COLUMN, format_fingerprint
from scrapy_simhash.cli.options import Commands, add_output, int_in
from scrapy_simhash.cli.output import Progress, Rows, open_output
from scrapy_simhash.extras import needs

HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jl")
WARC_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")

#: The columns of ``fingerprint``'s output.
FINGERPRINT_COLUMNS = ("source", "fingerprint", "spots_for_min_features", "features", "note",
                       SKETCH_COLUMN)

PAGES_HELP = (
    "pages: an HTML file; a folder (searched recursively for .html/.htm, .jsonl, "
    ".warc[.gz]); JSON lines of {\"url\", \"html\"} (.jsonl/.ndjson/.jl, or - for "
    "stdin); a WARC file (.warc[.gz], HTML responses only, needs warcio)."
)


class Page(NamedTuple):
    source: str  #: URL, or path[:line]
    html: str | bytes
    encoding: str | None


def _kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(WARC_SUFFIXES):
        return "warc"
    return "html"


def iter_pages(paths: Sequence[str], problems: Problems) -> Iterator[Page]:
    """Every page in ``paths``: HTML files, folders (recursively), JSON lines, WARC."""
    for arg in paths:
        if arg == "-":
            yield from jsonl_pages(sys.stdin.buffer, "<stdin>", problems)
            continue
        path = Path(arg)
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*")
                if p.is_file() and p.name.lower().endswith(
                    HTML_SUFFIXES + JSONL_SUFFIXES + WARC_SUFFIXES)
            )
        elif path.exists():
            files = [path]
        else:
            problems.add(arg, None, "no such file or directory")
            continue
        for file in files:
            yield from file_pages(file, problems)


def file_pages(path: Path, problems: Problems) -> Iterator[Page]:
    """The pages of one file, by its suffix."""
    kind = _kind(path)
    try:
        if kind == "html":
            yield Page(str(path), path.read_bytes(), None)
        elif kind == "jsonl":
            with path.open("rb") as stream:
                yield from jsonl_pages(stream, str(path), problems)
        else:
            yield from warc_pages(path, problems)
    except OSError as exc:
        problems.add(str(path), None, exc.strerror or str(exc))


def jsonl_pages(stream: IO[bytes], name: str, problems: Problems) -> Iterator[Page]:
    """Pages of JSON lines ``{"url": ..., "html": ...}`` (the source is ``name:line``
    when there is no URL)."""
    for line_no, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            obj = load_json_line(line)
        except ValueError as exc:
            problems.add(name, line_no, f"bad JSON: {exc}")
            continue
        html = obj.get("html") if isinstance(obj, dict) else None
        if not isinstance(html, str):
            problems.add(name, line_no, 'expected an object with an "html" string')
            continue
        url = obj.get("url")
        yield Page(url if isinstance(url, str) and url else f"{name}:{line_no}", html, None)


def warc_pages(path: Path, problems: Problems) -> Iterator[Page]:
    """The HTML responses of a WARC file."""
    try:
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed
    except ImportError:
        problems.add(str(path), None, needs("reading WARC files", "warcio", "warc"))
        return
    with path.open("rb") as stream:
        records = ArchiveIterator(stream)
        try:
            for record in records:
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                ctype = record.http_headers.get_header("Content-Type") or ""
                if ctype and "html" not in ctype.lower():
                    continue
                charset = re.search(r"charset=([\w.:-]+)", ctype, re.IGNORECASE)
                url = record.rec_headers.get_header("WARC-Target-URI") or (
                    f"{path}@{records.get_record_offset()}")
                yield Page(url, record.content_stream().read(),
                           charset.group(1) if charset else None)
        except ArchiveLoadFailed as exc:
            problems.add(str(path), None, f"not a readable WARC file: {exc}")


class Fingerprinted(NamedTuple):
    """A page's signature (fingerprint and sketch) and the two counts that explain it."""

    fingerprint: int | None
    spots: int  #: distinct spot signatures and content features: compared with min_features
    features: int  #: every feature (spots, title and heading words, content features)
    reason: str | None
    sketch: bytes | None = None  #: the sketch confirming a match (None without a fingerprint)


def fingerprint_page(page: Page, min_features: int, seed: int = 0,
                     templates: Any = None) -> Fingerprinted:
    """Fingerprint and sketch one page, with both counts (the tree is parsed
    once). ``templates``: a ``SiteTemplates`` the page is read against and
    learned into, keyed by its URL's host (one key for files), as a crawl
    learns each site's template from its pages."""
    from urllib.parse import urlsplit

    from scrapy_simhash.fingerprinting import analyse_page, parse_html
    from scrapy_simhash.fingerprinting.signature import analyse

    template = None
    if templates is not None:
        template = templates[urlsplit(page.source).netloc if "://" in page.source else ""]
    root = parse_html(page.html, page.encoding)
    found = analyse(page.html if root is None else root, template=template,
                    min_features=min_features, seed=seed, encoding=page.encoding,
                    body=page.html)
    if template is not None:
        template.learn(found.evidence.block_hashes, found.details.fingerprint)
    sig, result = found.signature, found.details
    if root is None:
        return Fingerprinted(result.fingerprint, result.feature_count, 0, result.reason,
                             None if sig is None else sig.sketch)
    analysed = analyse_page(root)
    # every feature: the weighted words, and the content features (tables, code)
    # that feature_count counts beside the distinct spots
    features = len(analysed.features) + result.feature_count - analysed.spot_count
    return Fingerprinted(result.fingerprint, result.feature_count, features, result.reason,
                         None if sig is None else sig.sketch)


def cmd_fingerprint(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.fingerprinting import DEFAULT_MIN_FEATURES

    from scrapy_simhash.fingerprinting.template import SiteTemplates

    min_features = DEFAULT_MIN_FEATURES if args.min_features is None else args.min_features
    templates = SiteTemplates()
    pages = 0
    with open_output(args.output) as out:
        rows = Rows(out, FINGERPRINT_COLUMNS, as_json=args.json,
                    header=not (args.no_header or args.simhash_cpp))
        for page in iter_pages(args.paths, problems):
            pages += 1
            progress("fingerprinting", pages)
            try:
                done = fingerprint_page(page, min_features, args.seed, templates)
            except Exception as exc:  # noqa: BLE001 (a library bug must not end the batch)
                problems.add(page.source, None, f"cannot fingerprint: {exc!r}")
                continue
            progress.clear()
            fp = done.fingerprint
            if args.simhash_cpp:
                if fp is not None:
                    out.write(b"%d\n" % fp)
                continue
            if args.json:
                text: int | str | None = (fp if args.decimal else
                                          None if fp is None else format_fingerprint(fp))
            else:
                text = None if fp is None else format_fingerprint(fp, args.decimal)
            note = None if done.reason is None else f"no fingerprint: {done.reason}"
            sketch = None if done.sketch is None else done.sketch.hex()
            rows.add(page.source, text, done.spots, done.features, note, sketch)
            rows.flush()  # one page at a time: a slow batch shows its progress
    if not pages:
        problems.note("no page found in the given paths")
        return EXIT_INPUT
    return EXIT_OK


def add_commands(commands: Commands) -> None:
    p = commands.add(
        "fingerprint", cmd_fingerprint,
        "fingerprint HTML files, folders, JSON lines or WARC files",
        formats=f"input: {PAGES_HELP}\n\noutput: a '#' header line, then one line a page: "
                "source, fingerprint (16 hex digits; '-' when the page has none), "
                "spots_for_min_features (distinct spot signatures and content features of the "
                "main text: the "
                "count compared with --min-features; title and heading words not counted), "
                "features (every weighted feature, as scrapy_simhash.features() returns), "
                "note (why there is no fingerprint), sketch (the second signature that "
                "confirms a match, 192 hex digits: the page's own text, read against its "
                "site's template as learned from the pages before it, as a crawl does). "
                "This output is a fingerprint list: "
                "pipe it into find-all, clusters or query, which confirm each pair with the "
                "sketches as a crawl does. --json: one object a page with "
                "the same names; --simhash-cpp: decimal fingerprints alone, one a line "
                "(simhash-cpp's input, without sketches).",
        example="fingerprint pages/ crawl.jsonl archive.warc.gz | scrapy-simhash find-all",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="pages to fingerprint (see below)")
    p.add_argument("--min-features", type=int_in(0, 1 << 30), default=None,
                   help="fewest spot signatures for a fingerprint (default: the library's)")
    p.add_argument("--seed", type=int, default=0, help="hash seed (default: 0)")
    add_output(p)
    p.add_argument("--simhash-cpp", action="store_true",
                   help="write decimal fingerprints only, one a line, no header "
                        "(simhash-cpp's input format)")
