"""The ``scrapy-simhash`` command line (also ``scrapy simhash``).

Subcommands: ``fingerprint`` pages already on disk, ``find-all`` and
``clusters`` over a list of fingerprints (the seomoz simhash-cpp formats:
newline-separated decimal fingerprints in, newline-separated JSON arrays out),
``query`` a saved index or a crawl's state, ``plan`` a table layout, and
``report`` on what a crawl dropped.

Exit codes: 0 success; 1 bad input with ``--strict``, an unreadable input, or
no valid input at all; 2 usage error; 130 interrupted (Ctrl-C); 141 output
closed early (e.g. piped into ``head``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

EXIT_CODES_HELP = (
    "exit codes: 0 success; 1 bad input with --strict, an unreadable input or no "
    "valid input; 2 usage error; 130 interrupted; 141 output closed early"
)

HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jl")
WARC_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")
STATE_FILE = "simhash.seen"  # the crawler's persisted state inside JOBDIR

_MAX_REPORTED = 20  # bad lines printed before the rest are only counted
_READ_CHUNK = 1 << 22  # bytes of fingerprint input parsed per numpy pass
_U64_MAX_DIGITS = np.frombuffer(b"18446744073709551615", np.uint8) - np.uint8(48)
_HALF = 10.0 ** np.arange(9, -1, -1)
_POW10_SMALL = 10 ** np.arange(11, dtype=np.uint64)
_DECIMAL = re.compile(r"[0-9]+")


class InputError(Exception):
    """A bad input line or file; ``str()`` is ``file:line: message``."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        self.source, self.line, self.message = source, line, message
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {message}")


class UsageProblem(Exception):
    """A bad combination of arguments (exit code 2)."""


class Problems:
    """Collects input errors: prints them on stderr, or raises with ``--strict``."""

    def __init__(self, strict: bool = False, stream: IO[str] | None = None) -> None:
        self.strict = strict
        self.stream = stream or sys.stderr
        self.count = 0

    def add(self, source: str, line: int | None, message: str) -> None:
        error = InputError(source, line, message)
        if self.strict:
            raise error
        self.count += 1
        if self.count <= _MAX_REPORTED:
            print(f"scrapy-simhash: {error}", file=self.stream)

    def summary(self) -> None:
        if self.count > _MAX_REPORTED:
            print(
                f"scrapy-simhash: {self.count - _MAX_REPORTED} more bad inputs not shown",
                file=self.stream,
            )
        if self.count:
            print(f"scrapy-simhash: {self.count} bad inputs skipped", file=self.stream)


class Progress:
    """One self-erasing status line on stderr, only when stderr is a terminal."""

    def __init__(self, stream: IO[str] | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self._last = 0.0
        self._shown = False

    def __call__(self, label: str, done: int | None = None, total: int | None = None,
                 *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        text = label
        if done is not None:
            text += f": {done:,}"
            if total:
                text += f"/{total:,} ({100 * done // total}%)"
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


# --------------------------------------------------------------------------
# reading fingerprints


def _parse_lines(lines: list[bytes], lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse decimal *lines* at once; return values and an ok mask.

    A line is accepted here when it is 1 to 20 ASCII digits (and an optional
    ``\r``) whose value fits in 64 bits; anything else (spaces, signs,
    overflow) is left to the slow path. *lengths* are the true byte lengths.
    """
    width = 21
    table = np.array(lines, dtype=f"S{width}").view(np.uint8).reshape(len(lines), width)
    rows = np.arange(len(lines))
    last = np.clip(lengths - 1, 0, width - 1)
    cr = (lengths >= 1) & (lengths <= width) & (table[rows, last] == 13)
    size = lengths - cr
    ok = (size >= 1) & (size <= 20)
    # Digits left-aligned, 0 past the end; non-digits (NUL included) wrap to > 9.
    digits = (table[:, :20] - np.uint8(48)) * (np.arange(20) < size[:, None])
    ok &= digits.max(axis=1) <= 9
    # Two 10-digit halves, exact in float64 (< 2**53), then shifted right by the
    # missing digits: value = hi * 10**(size-10) + lo // 10**(20-size).
    halves = (digits.reshape(-1, 10).astype(np.float64) @ _HALF).astype(np.uint64)
    hi, lo = halves[0::2], halves[1::2]
    pow10 = _POW10_SMALL
    values = np.where(
        size >= 10,
        hi * pow10[np.clip(size - 10, 0, 10)] + lo // pow10[np.clip(20 - size, 0, 10)],
        hi // pow10[np.clip(10 - size, 0, 10)],
    )
    # 20-digit lines may exceed 2**64 - 1: lexicographic order is numeric order there.
    full = np.flatnonzero(ok & (size == 20))
    if full.size:
        differ = digits[full] != _U64_MAX_DIGITS
        first = differ.argmax(axis=1)
        over = differ[np.arange(full.size), first] & (
            digits[full, first] > _U64_MAX_DIGITS[first])
        ok[full[over]] = False
    return values, ok


def _parse_one(text: str) -> int:
    """Slow path for one line: an int, or ValueError saying what is wrong."""
    value = text.strip()
    if not _DECIMAL.fullmatch(value):
        raise ValueError(f"not a decimal fingerprint: {value[:40]!r}")
    number = int(value)
    if number >= 1 << 64:
        raise ValueError(f"out of the unsigned 64-bit range: {value[:40]}")
    return number


def read_fingerprints(stream: IO[bytes], name: str, problems: Problems,
                      progress: Progress | None = None) -> np.ndarray:
    """Read newline-separated decimal fingerprints as a ``uint64`` array.

    Lines are parsed in bulk with numpy; blank lines are ignored; bad lines
    are reported to *problems* as ``name:line``.
    """
    parts: list[np.ndarray] = []
    carry = b""
    line_no = 0
    total = 0
    while True:
        block = stream.read(_READ_CHUNK)
        data = carry + block
        if not block:
            if not data:
                break
            data += b"\n"
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        if cut:
            values = _parse_block(data[:cut], name, line_no, problems)
            parts.append(values)
            line_no += data.count(b"\n", 0, cut)
            total += len(values)
            if progress:
                progress(f"reading {name}", total)
        if not block:
            break
    return np.concatenate(parts) if parts else np.empty(0, np.uint64)


def _parse_block(data: bytes, name: str, first_line: int, problems: Problems) -> np.ndarray:
    """Parse *data* (whole lines, ending with a newline)."""
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
    lengths = np.diff(ends, prepend=-1) - 1
    lines = data.split(b"\n")
    lines.pop()  # after the last newline
    values, ok = _parse_lines(lines, lengths)
    if ok.all():
        return values
    extra = []
    for i in np.flatnonzero(~ok).tolist():
        text = lines[i].decode("utf-8", "replace")
        if not text.strip():
            continue  # blank lines are allowed
        try:
            extra.append(_parse_one(text))
        except ValueError as exc:
            problems.add(name, first_line + i + 1, str(exc))
    values = values[ok]
    if extra:
        values = np.concatenate([values, np.array(extra, dtype=np.uint64)])
    return values


def parse_fingerprint(text: str) -> int:
    """A fingerprint given on the command line: decimal, or hex with ``0x``."""
    try:
        value = int(text, 16) if text.lower().startswith("0x") else _parse_one(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"out of the unsigned 64-bit range: {text}")
    return value


# --------------------------------------------------------------------------
# output


@contextlib.contextmanager
def open_output(path: str) -> Iterator[IO[bytes]]:
    """Binary output: stdout for ``-``; a file is written whole or not at all."""
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files
        with os.fdopen(fd, "wb") as out:
            yield out
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_arrays(out: IO[bytes], rows: Iterable[Sequence[int]]) -> int:
    """Write each row as a JSON array line; return the number of rows."""
    n = 0
    batch: list[str] = []
    for row in rows:
        batch.append("[" + ", ".join(map(str, row)) + "]\n")
        n += 1
        if len(batch) >= 65536:
            out.write("".join(batch).encode())
            batch.clear()
    out.write("".join(batch).encode())
    return n


# --------------------------------------------------------------------------
# find-all / clusters


def table_layout(args: argparse.Namespace) -> Any:
    """The layout argument of SimhashIndex from ``--blocks``/``--layout``."""
    from scrapy_simhash.index import TableLayout

    spec = str(args.blocks) if args.blocks is not None else args.layout
    if spec == "auto":
        return spec
    try:
        return TableLayout.parse(spec, args.distance)
    except ValueError as exc:
        option = "--blocks" if args.blocks is not None else "--layout"
        raise UsageProblem(f"bad {option} for --distance {args.distance}: {exc}") from None


def _build_index(fps: np.ndarray, args: argparse.Namespace, progress: Progress) -> Any:
    from scrapy_simhash.index import SimhashIndex

    layout = table_layout(args)
    progress(f"indexing {len(fps):,} fingerprints", force=True)
    index = SimhashIndex(k=args.distance, layout=layout, expected_size=max(len(fps), 1))
    index.add_many(fps, np.arange(len(fps), dtype=np.uint64))
    return index


def _read_input(args: argparse.Namespace, problems: Problems, progress: Progress
                ) -> np.ndarray:
    if args.input == "-":
        return read_fingerprints(sys.stdin.buffer, "<stdin>", problems, progress)
    try:
        with open(args.input, "rb") as stream:
            return read_fingerprints(stream, args.input, problems, progress)
    except OSError as exc:
        raise InputError(args.input, None, exc.strerror or str(exc)) from None


def _pair_array(pairs: Any) -> np.ndarray:
    """Index pairs as an ``(n, 2)`` uint64 array of keys, smaller key first."""
    arr = np.asarray(pairs if len(pairs) else np.empty((0, 2)), dtype=np.uint64)
    arr = arr.reshape(-1, 2)
    return np.sort(arr, axis=1)


def _distinct_index(
    args: argparse.Namespace, problems: Problems, progress: Progress
) -> tuple[np.ndarray, np.ndarray, Any] | None:
    """The input's distinct fingerprints, how often each occurs, and an index of
    them keyed by position; None when the input holds no valid fingerprint."""
    fps = _read_input(args, problems, progress)
    if not fps.size:
        return None
    uniq, counts = np.unique(fps, return_counts=True)
    return uniq, counts, _build_index(uniq, args, progress)


def cmd_find_all(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    found = _distinct_index(args, problems, progress)
    if found is None:
        return _no_input(args.input)
    uniq, counts, index = found
    progress("finding pairs", force=True)
    keys = _pair_array(index.pairs())
    pairs = uniq[keys]
    same = uniq[counts > 1]
    pairs = np.concatenate([pairs, np.stack([same, same], axis=1)])
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    progress(f"writing {len(pairs):,} pairs", force=True)
    with open_output(args.output) as out:
        _write_arrays(out, pairs.tolist())
    return EXIT_OK


def cmd_clusters(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    found = _distinct_index(args, problems, progress)
    if found is None:
        return _no_input(args.input)
    uniq, counts, index = found
    progress("finding clusters", force=True)
    clusters: list[list[int]] = []
    clustered = np.zeros(len(uniq), bool)
    for members in index.clusters():
        keys = np.sort(np.asarray(members, dtype=np.int64))
        clustered[keys] = True
        clusters.append(np.repeat(uniq[keys], counts[keys]).tolist())
    for key in np.flatnonzero((counts > 1) & ~clustered).tolist():
        clusters.append([int(uniq[key])] * int(counts[key]))
    clusters.sort()
    progress(f"writing {len(clusters):,} clusters", force=True)
    with open_output(args.output) as out:
        _write_arrays(out, clusters)
    return EXIT_OK


def _no_input(name: str) -> int:
    print(f"scrapy-simhash: no valid fingerprint in {name}", file=sys.stderr)
    return EXIT_INPUT


# --------------------------------------------------------------------------
# fingerprint


class Page(NamedTuple):
    source: str  # URL, or path[:line]
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
    """Every page in *paths*: HTML files, folders (recursively), JSON lines, WARC."""
    for arg in paths:
        if arg == "-":
            yield from _jsonl_pages(sys.stdin.buffer, "<stdin>", problems)
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
            yield from _file_pages(file, problems)


def _file_pages(path: Path, problems: Problems) -> Iterator[Page]:
    kind = _kind(path)
    try:
        if kind == "html":
            yield Page(str(path), path.read_bytes(), None)
        elif kind == "jsonl":
            with path.open("rb") as stream:
                yield from _jsonl_pages(stream, str(path), problems)
        else:
            yield from _warc_pages(path, problems)
    except OSError as exc:
        problems.add(str(path), None, exc.strerror or str(exc))


def _jsonl_pages(stream: IO[bytes], name: str, problems: Problems) -> Iterator[Page]:
    for line_no, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            problems.add(name, line_no, f"bad JSON: {exc}")
            continue
        html = obj.get("html") if isinstance(obj, dict) else None
        if not isinstance(html, str):
            problems.add(name, line_no, 'expected an object with an "html" string')
            continue
        url = obj.get("url")
        yield Page(url if isinstance(url, str) and url else f"{name}:{line_no}", html, None)


def _warc_pages(path: Path, problems: Problems) -> Iterator[Page]:
    try:
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed
    except ImportError:
        problems.add(str(path), None,
                     "reading WARC files needs warcio: pip install 'scrapy-simhash[warc]'")
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
                charset = re.search(r"charset=([\w.:-]+)", ctype, re.I)
                url = record.rec_headers.get_header("WARC-Target-URI") or (
                    f"{path}@{records.get_record_offset()}")
                yield Page(url, record.content_stream().read(),
                           charset.group(1) if charset else None)
        except ArchiveLoadFailed as exc:
            problems.add(str(path), None, f"not a readable WARC file: {exc}")


def cmd_fingerprint(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.fingerprinting import DEFAULT_MIN_FEATURES, fingerprint_details

    min_features = DEFAULT_MIN_FEATURES if args.min_features is None else args.min_features
    out = sys.stdout
    pages = 0
    for page in iter_pages(args.paths, problems):
        pages += 1
        progress("fingerprinting", pages)
        fp, count, reason = fingerprint_details(
            page.html, min_features=min_features, seed=args.seed, encoding=page.encoding
        )
        if args.json:
            record = {"source": page.source, "fingerprint": fp,
                      "hex": None if fp is None else f"{fp:016x}", "features": count}
            if fp is None:
                record["reason"] = f"no fingerprint: {reason}"
            line = json.dumps(record, ensure_ascii=False)
        elif fp is None:
            line = f"{page.source}\t-\t-\t{count}\tno fingerprint: {reason}"
        else:
            line = f"{page.source}\t{fp}\t{fp:016x}\t{count}"
        progress.clear()
        print(line, file=out)
    if not pages:
        print("scrapy-simhash: no page found in the given paths", file=sys.stderr)
        return EXIT_INPUT
    return EXIT_OK


# --------------------------------------------------------------------------
# crawl state, drop log, saved index


class State(NamedTuple):
    """A crawl's persisted state: stored fingerprints, their URLs and sketches."""

    path: str
    fingerprints: np.ndarray
    urls: list[str]
    sketches: np.ndarray  # uint8, a row a page: what confirms a candidate


class Drop(NamedTuple):
    url: str
    duplicate_of: str
    distance: int
    action: str


def _state_path(path: str) -> str:
    return str(Path(path) / STATE_FILE) if Path(path).is_dir() else path


def load_state(path: str) -> State:
    """Read ``JOBDIR/simhash.seen`` (or the JOBDIR) through ``read_state``
    (format and fingerprint version checked)."""
    from scrapy_simhash.backends.state import read_state
    from scrapy_simhash.index import CorruptStateError

    path = _state_path(path)
    try:
        state = read_state(path)
    except (CorruptStateError, ValueError) as exc:
        raise InputError(path, None, f"not a readable crawl state: {exc}") from None
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    if state.truncated:
        print(f"scrapy-simhash: {path}: ignored a truncated last record", file=sys.stderr)
    return State(path, state.fingerprints, state.urls, state.sketches)


def read_drop_log(path: str, problems: Problems) -> list[Drop]:
    """The JSON lines audit file written by the middleware (SIMHASH_LOG_FILE)."""
    drops = []
    try:
        with open(path, "rb") as stream:
            for line_no, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    drops.append(Drop(str(obj["url"]), str(obj["duplicate_of"]),
                                      int(obj["distance"]), str(obj.get("action", "drop"))))
                except KeyError as exc:
                    problems.add(path, line_no, f"bad drop record: no {exc} field")
                except (ValueError, TypeError) as exc:
                    problems.add(path, line_no, f"bad drop record: {exc}")
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    return drops


def _is_json_lines(path: str) -> bool:
    try:
        with open(path, "rb") as stream:
            head = stream.read(64).lstrip()
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None
    return head.startswith(b"{")


def cmd_query(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.index import SimhashIndex

    path = _state_path(args.index)
    urls: list[str] | None = None
    if Path(args.index).is_dir() or _looks_like_state(path):
        state = load_state(path)
        k = 3 if args.distance is None else args.distance
        index = SimhashIndex(k=k, expected_size=max(len(state.fingerprints), 1))
        index.add_many(state.fingerprints,
                       np.arange(len(state.fingerprints), dtype=np.uint64))
        urls = state.urls
    else:
        try:
            index = SimhashIndex.load(path)
        except OSError as exc:
            raise InputError(path, None, exc.strerror or str(exc)) from None
        except Exception as exc:  # whatever a foreign file makes the loader raise
            raise InputError(path, None, f"not a saved index or crawl state: {exc}") from None
        k = index.k if args.distance is None else args.distance
        if k > index.k:
            raise UsageProblem(f"{path} was built for k={index.k}; --distance {k} is larger")
    for fp in args.fingerprints:
        matches = [m for m in index.query(fp) if m.distance <= k]
        if not matches:
            print(f"{fp}\t-\t-\tno match within {k} bits")
        for m in matches:
            where = urls[m.key] if urls is not None else f"key {m.key}"
            print(f"{fp}\t{m.fingerprint}\t{m.distance}\t{where}")
    return EXIT_OK


def _looks_like_state(path: str) -> bool:
    from scrapy_simhash.index.store import MAGIC as magic

    try:
        with open(path, "rb") as stream:
            return stream.read(len(magic)) == magic
    except OSError as exc:
        raise InputError(path, None, exc.strerror or str(exc)) from None


def cmd_plan(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.index import layout as layout_module
    from scrapy_simhash.index import TableLayout

    n, k = args.pages, args.distance
    try:
        chosen = TableLayout.plan(k, n, max_tables=args.max_tables)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    print(f"k={k}, {n:,} pages; probe cost model: tables x {layout_module.TABLE_COST} us"
          f" + candidates x {layout_module.CANDIDATE_COST} us")
    print(f"  {'layout':<26} {'tables':>6} {'p':>7} {'candidates':>12} {'memory':>11}"
          f" {'cost us':>9}")
    for option in TableLayout.options(k, args.max_tables):
        ps = sorted(set(option.p_values))
        p_text = str(ps[0]) if len(ps) == 1 else f"{ps[0]}-{ps[-1]}"
        mark = "*" if option == chosen else " "
        print(f"{mark} {option.spec:<26} {len(option.tables):>6} {p_text:>7}"
              f" {sum(option.candidates(n)):>12,.4g} {_mib(option.memory_bytes(n)):>11}"
              f" {option.cost(n):>9,.1f}")
    print(f"\nchosen (*):\n{chosen.describe(n)}")
    return EXIT_OK


def _redis_client(args: argparse.Namespace) -> Any:
    from scrapy_simhash.backends.redis import import_redis

    try:
        redis = import_redis()
    except ImportError as exc:
        raise InputError(args.url, None, str(exc)) from None
    client = redis.Redis.from_url(args.url, socket_timeout=10, socket_connect_timeout=10)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise InputError(args.url, None, f"Redis is not reachable: {exc}") from None
    return client


def cmd_redis_info(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.backends.redis import index_info

    info = index_info(_redis_client(args), args.key)
    if info is None:
        print(f"no simhash index under {args.key!r} at {args.url}")
        return EXIT_OK
    print(json.dumps(info, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_redis_clear(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    from scrapy_simhash.backends.redis import clear_index, index_info

    client = _redis_client(args)
    info = index_info(client, args.key)
    if info is None:
        print(f"no simhash index under {args.key!r} at {args.url}")
        return EXIT_OK
    if not args.yes:
        raise UsageProblem(
            f"{args.key!r} holds {info.get('size', '?')} pages: add --yes to delete it"
        )
    deleted = clear_index(client, args.key)
    print(f"deleted {deleted} keys of {args.key!r} ({info.get('size', '?')} pages)")
    return EXIT_OK


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB" if size < 2**30 else f"{size / 2**30:,.2f} GiB"


def _nearest_distances(fps: np.ndarray, sample: int = 5000, seed: int = 0
                       ) -> tuple[np.ndarray, bool]:
    """Distance from each fingerprint (or a sample of them) to its nearest other one."""
    n = len(fps)
    if n < 2:
        return np.empty(0, np.uint8), False
    rows = np.arange(n)
    sampled = n > 4 * sample
    if sampled:
        rows = np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))
    out = np.empty(len(rows), np.uint8)
    step = max(1, 20_000_000 // n)
    for start in range(0, len(rows), step):
        chunk = rows[start:start + step]
        d = np.bitwise_count(fps[chunk, None] ^ fps[None, :])
        d[np.arange(len(chunk)), chunk] = 255  # not oneself
        out[start:start + step] = d.min(axis=1)
    return out, sampled


class _Clusters:
    """Union-find over URLs (drop edges and near pairs among stored pages)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, url: str) -> str:
        parent = self.parent.setdefault(url, url)
        while parent != url:
            grand = self.parent[parent]
            self.parent[url] = grand
            url, parent = parent, grand
        return url

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def groups(self) -> list[list[str]]:
        out: dict[str, list[str]] = {}
        for url in self.parent:
            out.setdefault(self.find(url), []).append(url)
        return sorted(out.values(), key=lambda g: (-len(g), g[0]))


def cmd_report(args: argparse.Namespace, problems: Problems, progress: Progress) -> int:
    states: list[State] = []
    drops: list[Drop] = []
    for path in args.paths:
        if not Path(path).is_dir() and _is_json_lines(path):
            drops.extend(read_drop_log(path, problems))
        else:
            states.append(load_state(path))
    if not states and not drops:
        print("scrapy-simhash: nothing to report: no stored page and no drop", file=sys.stderr)
        return EXIT_INPUT
    fps = (np.concatenate([s.fingerprints for s in states]) if states
           else np.empty(0, np.uint64))
    urls = [u for s in states for u in s.urls]
    sketches = [s.sketches for s in states]
    for s in states:
        print(f"state {s.path}: {len(s.fingerprints):,} pages stored")
    actions = Counter(d.action for d in drops)
    if drops:
        detail = ", ".join(f"{a} {n:,}" for a, n in sorted(actions.items()))
        print(f"drop log: {len(drops):,} near-duplicates ({detail})")
    seen = set(urls) | {d.url for d in drops}
    dropped = {d.url for d in drops if d.action == "drop"}
    print(f"pages seen: {len(seen):,}; dropped: {len(dropped):,}")

    clusters = _Clusters()
    distance_of = {d.url: d.distance for d in drops}
    for d in drops:
        clusters.union(d.duplicate_of, d.url)
    if len(fps) > 1:
        progress("clustering stored pages", force=True)
        index = _build_index(fps, argparse.Namespace(distance=args.distance, blocks=None,
                                                     layout="auto"), progress)
        from scrapy_simhash.fingerprinting.signature import confirms

        sketch = np.concatenate(sketches)
        for a, b in _pair_array(index.pairs()).tolist():
            # A pair is a cluster's when the sketches confirm it, as a crawl decides.
            if confirms(sketch[a].tobytes(), sketch[b].tobytes()):
                clusters.union(urls[a], urls[b])
    groups = [g for g in clusters.groups() if len(g) > 1]
    sizes = Counter(len(g) for g in groups)
    print(f"clusters: {len(groups):,} with {sum(map(len, groups)):,} pages"
          f" (stored pages within {args.distance} bits whose sketches confirm it,"
          " and each drop with its original)")
    if sizes:
        print("cluster sizes: " + ", ".join(f"{n:,} x {size} pages" for size, n in
                                            sorted(sizes.items())))
    for group in groups[:args.top]:
        first = [u for u in group if u not in distance_of] or group
        head = sorted(first)[0]
        print(f"\n{len(group)} pages, first {head}")
        for url in sorted(u for u in group if u != head)[:20]:
            dist = distance_of.get(url)
            print(f"  {url}" + ("" if dist is None else f"  (distance {dist})"))
        if len(group) > 21:
            print(f"  ... {len(group) - 21} more")
    if args.plot:
        progress("nearest-neighbour distances", force=True)
        nearest, sampled = _nearest_distances(fps)
        drop_distances = np.array([d.distance for d in drops], dtype=np.int64)
        draw_distances(args.plot, nearest, drop_distances, args.distance, sampled)
        progress.clear()
        print(f"plot written to {args.plot}")
    return EXIT_OK


def draw_distances(path: str, nearest: np.ndarray, drops: np.ndarray, k: int,
                   sampled: bool = False) -> None:
    """Histograms of nearest-neighbour distances among stored pages and of drops."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise UsageProblem(
            "--plot needs matplotlib: pip install 'scrapy-simhash[plot]'") from None
    fig = Figure(figsize=(9, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    bins = np.arange(0, 66) - 0.5
    ax1, ax2 = fig.subplots(1, 2)
    ax1.hist(nearest, bins=bins, color="tab:blue")
    ax1.set_title("nearest stored page" + (" (sample)" if sampled else ""))
    ax2.hist(drops, bins=bins, color="tab:red")
    ax2.set_title("distance of each drop")
    top = int(max(nearest.max(initial=0), drops.max(initial=0), k)) + 2
    for ax in (ax1, ax2):
        ax.axvline(k + 0.5, color="black", linestyle="--", label=f"k = {k}")
        ax.set_xlim(-0.5, min(64.5, top + 0.5))
        ax.set_xlabel("Hamming distance (bits)")
        ax.set_ylabel("pages")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, format="png")


# --------------------------------------------------------------------------
# argument parsing


class _Formatter(argparse.RawDescriptionHelpFormatter):
    pass


def _add_index_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-d", "--distance", type=_int_in(0, 32), default=3, metavar="K",
                        help="maximum Hamming distance of a match (default: 3)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-b", "--blocks", type=_int_in(1, 64), metavar="B",
                       help="split the 64 bits into B equal blocks (simhash-cpp style)")
    group.add_argument("--layout", default="auto", metavar="SPEC",
                       help='block widths such as "16,16,16,16", or "auto" (default)')


def _int_in(low: int, high: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}: {value}")
        return value

    return convert


_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9}


def _count(text: str) -> int:
    """A positive count: ``1000000``, ``1e6``, ``10M``, ``2k``."""
    value = text.strip().lower()
    scale = _SUFFIXES.get(value[-1:], 1)
    if scale > 1:
        value = value[:-1]
    try:
        number = float(value) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a count: {text!r}") from None
    if not 1 <= number < 2**63 or number != int(number):
        raise argparse.ArgumentTypeError(f"must be a positive whole number: {text!r}")
    return int(number)


def build_parser(prog: str = "scrapy-simhash") -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    from scrapy_simhash import __version__
    from scrapy_simhash.fingerprinting.signature import DEFAULT_MAX_DISTANCE

    parser = argparse.ArgumentParser(
        prog=prog, formatter_class=_Formatter,
        description="Near-duplicate tools: fingerprint pages, find near-duplicate "
                    "fingerprints, plan table layouts, report on a crawl.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, help_: str, example: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_, formatter_class=_Formatter,
                           epilog=f"example:\n  {example}\n\n{EXIT_CODES_HELP}")
        p.add_argument("--strict", action="store_true",
                       help="stop at the first bad input (exit 1) instead of skipping it")
        return p

    p = add("fingerprint", "fingerprint HTML files, folders, JSON lines or WARC files",
            f"{prog} fingerprint pages/ crawl.jsonl archive.warc.gz")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help='HTML file, folder (searched recursively), JSON lines of '
                        '{"url", "html"} (.jsonl, or - for stdin), WARC file (.warc[.gz])')
    p.add_argument("--min-features", type=_int_in(0, 1 << 30), default=None,
                   help="fewest features for a fingerprint (default: the library's)")
    p.add_argument("--seed", type=int, default=0, help="hash seed (default: 0)")
    p.add_argument("--json", action="store_true", help="one JSON object per page")
    p.set_defaults(func=cmd_fingerprint)

    for name, func, what in (("find-all", cmd_find_all, "all pairs"),
                             ("clusters", cmd_clusters, "all clusters")):
        p = add(name, f"{what} of fingerprints within K bits of each other "
                      "(newline-separated decimal fingerprints in, JSON arrays out)",
                f"{prog} {name} --input fps.txt --distance 3 --output {name}.txt")
        p.add_argument("-i", "--input", default="-", help="input file (default: - for stdin)")
        p.add_argument("-o", "--output", default="-",
                       help="output file (default: - for stdout)")
        _add_index_options(p)
        p.set_defaults(func=func)

    p = add("query", "fingerprints near the given ones in a saved index or a crawl's state",
            f"{prog} query 0x1f2e3d4c5b6a7988 --index crawls/site/simhash.seen")
    p.add_argument("fingerprints", nargs="+", type=parse_fingerprint, metavar="FP",
                   help="decimal, or hexadecimal with 0x")
    p.add_argument("--index", required=True, metavar="PATH",
                   help="a saved SimhashIndex, a crawl's JOBDIR or its simhash.seen file")
    p.add_argument("-d", "--distance", type=_int_in(0, 32), default=None, metavar="K",
                   help="maximum distance (default: the index's k, or 3 for a crawl state)")
    p.set_defaults(func=cmd_query)

    p = add("plan", "the table layouts considered for K and N pages, and the choice",
            f"{prog} plan --distance 3 --pages 10M")
    p.add_argument("-d", "--distance", type=_int_in(0, 32), default=3, metavar="K")
    p.add_argument("-n", "--pages", type=_count, required=True, metavar="N",
                   help="expected number of pages (1000000, 1e6, 10M)")
    p.add_argument("--max-tables", type=_count, default=None)
    p.set_defaults(func=cmd_plan)

    p = add("report", "what a crawl kept and dropped, from its state and/or drop log",
            f"{prog} report crawls/site drops.jsonl --plot distances.png")
    p.add_argument("paths", nargs="+", metavar="STATE_OR_LOG",
                   help="a JOBDIR, its simhash.seen file, or a drop log (JSON lines)")
    p.add_argument("-d", "--distance", type=_int_in(0, 32), default=DEFAULT_MAX_DISTANCE,
                   metavar="K", help="k for clusters among the stored pages (default: "
                   f"{DEFAULT_MAX_DISTANCE}, as SIMHASH_MAX_DISTANCE)")
    p.add_argument("--top", type=_int_in(0, 1000), default=5,
                   help="largest clusters to list (default: 5)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the nearest-neighbour and drop distance histograms "
                        "(needs matplotlib: the 'plot' extra)")
    p.set_defaults(func=cmd_report)

    for name, func, what, example in (
        ("redis-info", cmd_redis_info, "the metadata of a shared Redis index (k, layout, "
         "fingerprint version, size)", "redis-info --url redis://localhost:6379 --key demo:simhash"),
        ("redis-clear", cmd_redis_clear, "delete a shared Redis index (a crawl never does)",
         "redis-clear --url redis://localhost:6379 --key demo:simhash --yes"),
    ):
        p = add(name, what, f"{prog} {example}")
        p.add_argument("--url", default="redis://localhost:6379",
                       help="Redis URL (default: redis://localhost:6379)")
        p.add_argument("--key", required=True,
                       help="the index's key prefix: SIMHASH_REDIS_KEY with the spider name "
                            "filled in, e.g. demo:simhash")
        if name == "redis-clear":
            p.add_argument("--yes", action="store_true", help="really delete it")
        p.set_defaults(func=func)
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "scrapy-simhash") -> int:
    """Run one subcommand; return the exit code."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0)
    problems = Problems(strict=args.strict)
    progress = Progress()
    try:
        code = args.func(args, problems, progress)
        progress.clear()
        problems.summary()
        return code
    except InputError as exc:
        progress.clear()
        print(f"scrapy-simhash: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except UsageProblem as exc:
        progress.clear()
        parser.print_usage(sys.stderr)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        progress.clear()
        print("scrapy-simhash: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, without a second error at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # e.g. the output folder does not exist
        progress.clear()
        print(f"scrapy-simhash: {exc}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
