"""The fingerprint list: the one text format every command reads and writes.

One fingerprint a line, alone or after a key (a URL, a path)::

    #source<TAB>fingerprint<TAB>...<TAB>sketch   optional header: names the columns
    pages/a.html<TAB>f20fd1b882e00196<TAB>...    KEY<TAB>FP[<TAB>more columns]
    f20fd1b882e00196                             FP alone
    17442479633473438102                         decimal, simhash-cpp's format

A fingerprint is 16 hex digits (as ``fingerprint`` and the drop log write it),
``0x`` and 1 to 16 hex digits, or a decimal number below 2**64. Whether an
input's bare fingerprints are hex or decimal is decided once per input, from
its first block of lines: hex when every one of them made of 1 to 20 hex
characters is 16 long, decimal otherwise (``--input-format`` decides instead).
A header line (``#`` then tab-separated names) places the fingerprint column
(``fingerprint``, ``fp``, ``simhash`` or ``hash``) and the key column
(``source``, ``url``, ``key``, ``path`` or ``id``); without one, a line with a
tab is ``KEY<TAB>FP``. Other
``#`` lines and blank lines are skipped; ``-`` as a fingerprint is a page that
has none (skipped, counted). JSON lines (objects with a ``fingerprint`` field,
hex string or number, and a ``source``/``url``/``key``) are read too, so the
output of ``fingerprint --json`` and the drop log chain as well (the drop log's
``open``, ``close`` and ``skip`` lines are not pages: they are skipped).

A column (or JSON field) named ``sketch`` carries each page's second signature,
its :data:`~scrapy_simhash.fingerprinting.signature.SKETCH_BINS`-byte sketch as
192 hex digits (``-``: none), as ``fingerprint`` writes it. It is optional:
``find-all``, ``clusters`` and ``query`` confirm a pair with the sketches as a
crawl does when every fingerprint of the input has one, and decide on the
fingerprints alone otherwise. A sketch that is not 192 hex digits makes its line
a bad line.

Lines are parsed in bulk with numpy (no Python object per line on the common
path), in blocks of :data:`READ_CHUNK` bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import IO, NamedTuple

import numpy as np

from scrapy_simhash.cli.errors import Problems, load_json_line
from scrapy_simhash.cli.output import Progress
from scrapy_simhash.fingerprinting.signature import SKETCH_BINS

#: Bytes of input parsed per numpy pass.
READ_CHUNK = 1 << 22
#: Column names that hold the fingerprint / the key, in a header line.
FINGERPRINT_COLUMNS = ("fingerprint", "fp", "simhash", "hash")
KEY_COLUMNS = ("source", "url", "key", "path", "id")
#: The column (and JSON field) name of the sketch.
SKETCH_COLUMN = "sketch"
NOTATIONS = ("auto", "hex", "decimal")

_WIDTH = 20  # longest field parsed in bulk: 20 decimal digits
_U64_MAX_DIGITS = np.frombuffer(b"18446744073709551615", np.uint8) - np.uint8(48)
_HALF = 10.0 ** np.arange(9, -1, -1)
_POW10 = 10 ** np.arange(11, dtype=np.uint64)
_HEX_VALUE = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX_VALUE[_c] = _i
    _HEX_VALUE[ord(chr(_c).upper())] = _i
_HEX_CHARS = np.frombuffer(b"0123456789abcdef", np.uint8)
_NL, _CR, _TAB, _HASH, _DASH = 10, 13, 9, 35, 45
_SKETCH_WIDTH = 2 * SKETCH_BINS  # hex digits of a sketch


class Keys:
    """The keys of a fingerprint list: UTF-8 in one buffer, ``offsets[i]:offsets[i+1]``."""

    __slots__ = ("data", "offsets")

    def __init__(self, data: bytes, offsets: np.ndarray) -> None:
        self.data = data
        self.offsets = offsets

    @classmethod
    def from_strings(cls, keys: Iterable[str]) -> Keys:
        encoded = [k.encode("utf-8", "surrogateescape") for k in keys]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    @classmethod
    def concat(cls, parts: Sequence[Keys]) -> Keys:
        offsets = [np.zeros(1, np.int64)]
        base = 0
        for part in parts:
            offsets.append(part.offsets[1:] + base)
            base += len(part.data)
        return cls(b"".join(p.data for p in parts), np.concatenate(offsets))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.data[start:end].decode("utf-8", "replace")


class FingerprintList(NamedTuple):
    """Fingerprints read from one input, with their keys when it has them."""

    fingerprints: np.ndarray  #: ``uint64``
    keys: Keys | None  #: None when no line carried a key
    notation: str  #: "hex" or "decimal": how the input wrote them
    without: int  #: rows whose fingerprint is ``-`` (pages without one)
    #: ``(n, SKETCH_BINS)`` ``uint8``: each row's sketch (zeros where it has none);
    #: None when no row has one
    sketches: np.ndarray | None = None
    unsketched: int = 0  #: rows with a fingerprint and no sketch

    def key(self, i: int) -> str | None:
        return None if self.keys is None else self.keys[i]

    @property
    def confirmable(self) -> bool:
        """Whether every fingerprint has its sketch (a pair can be confirmed)."""
        return self.sketches is not None and self.unsketched == 0


# -- one value ---------------------------------------------------------------


def parse_fingerprint(text: str, notation: str = "auto") -> int:
    """One fingerprint written as hex or decimal; ``ValueError`` saying what is wrong.

    ``0x`` always means hex; otherwise, in ``auto``, 16 hex digits are hex
    (what the tools print) and anything else decimal.
    """
    value = text.strip()
    if value[:2].lower() == "0x":
        return _hex(value[2:], text)
    if notation == "hex" or (notation == "auto" and len(value) == 16 and _is_hex(value)):
        return _hex(value, text)
    if not (value.isascii() and value.isdigit()):
        raise ValueError(f"not a fingerprint: {value[:40]!r} (16 hex digits or decimal)")
    number = int(value)
    if number >= 1 << 64:
        raise ValueError(f"out of the unsigned 64-bit range: {value[:40]}")
    return number


def _is_hex(value: str) -> bool:
    return value.isascii() and all(c in "0123456789abcdefABCDEF" for c in value)


def _hex(digits: str, text: str) -> int:
    if not 1 <= len(digits) <= 16 or not _is_hex(digits):
        raise ValueError(f"not a hex fingerprint: {text.strip()[:40]!r} (1 to 16 hex digits)")
    return int(digits, 16)


def format_fingerprint(value: int, decimal: bool = False) -> str:
    """The written form of one fingerprint: 16 hex digits, or decimal."""
    return str(value) if decimal else f"{value:016x}"


def format_fingerprints(values: np.ndarray, decimal: bool = False) -> list[str]:
    """:func:`format_fingerprint` of a ``uint64`` array (hex at numpy speed)."""
    values = np.asarray(values, dtype=np.uint64)
    if decimal:
        return list(map(str, values.tolist()))
    nibbles = values.astype(">u8").view(np.uint8).reshape(-1, 8)
    chars = np.empty((len(values), 16), np.uint8)
    chars[:, 0::2] = _HEX_CHARS[nibbles >> 4]
    chars[:, 1::2] = _HEX_CHARS[nibbles & 15]
    return chars.view("S16").ravel().astype(str).tolist()


def parse_sketch(text: str) -> bytes:
    """One sketch written as 192 hex digits; ``ValueError`` saying what is wrong."""
    value = text.strip()
    if len(value) != _SKETCH_WIDTH or not _is_hex(value):
        raise ValueError(f"not a sketch: {value[:40]!r} ({_SKETCH_WIDTH} hex digits)")
    return bytes.fromhex(value)


def format_sketches(sketches: np.ndarray) -> list[str]:
    """Each row of an ``(n, SKETCH_BINS)`` ``uint8`` array as 192 hex digits."""
    sketches = np.asarray(sketches, dtype=np.uint8).reshape(-1, SKETCH_BINS)
    chars = np.empty((len(sketches), _SKETCH_WIDTH), np.uint8)
    chars[:, 0::2] = _HEX_CHARS[sketches >> 4]
    chars[:, 1::2] = _HEX_CHARS[sketches & 15]
    return chars.view(f"S{_SKETCH_WIDTH}").ravel().astype(str).tolist()


# -- a whole input -------------------------------------------------------------


def read_fingerprint_list(stream: IO[bytes], name: str, problems: Problems,
                          progress: Progress | None = None,
                          notation: str = "auto") -> FingerprintList:
    """Read a fingerprint list (text or JSON lines), bad lines reported as ``name:line``."""
    reader = _Reader(name, problems, notation)
    carry = b""
    while True:
        block = stream.read(READ_CHUNK)
        data = carry + block
        if not block:
            if not data:
                break
            if not data.endswith(b"\n"):
                data += b"\n"
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        if cut:
            reader.block(data[:cut])
            if progress:
                progress(f"reading {name}", reader.total)
        if not block:
            break
    return reader.result()


def read_fingerprints(stream: IO[bytes], name: str, problems: Problems,
                      progress: Progress | None = None) -> np.ndarray:
    """The fingerprints of a list as a ``uint64`` array (keys dropped)."""
    return read_fingerprint_list(stream, name, problems, progress).fingerprints


class _Reader:
    """Parses one input block by block; the header and the notation carry over."""

    def __init__(self, name: str, problems: Problems, notation: str) -> None:
        if notation not in NOTATIONS:
            raise ValueError(f"notation must be one of {NOTATIONS}, got {notation!r}")
        self.name = name
        self.problems = problems
        self.notation = notation
        # (fingerprint, key, sketch) columns from a header
        self.columns: tuple[int, int | None, int | None] | None = None
        self.json: bool | None = None  # decided at the first data line
        self.line = 0  # lines before the current block
        self.total = 0
        self.without = 0
        self.values: list[np.ndarray] = []
        self.keys: list[Keys | None] = []  # per block, None when it had no key
        self.sketches: list[np.ndarray | None] = []  # per block, None when it had no sketch
        self.sketched = 0  # rows with a sketch

    def result(self) -> FingerprintList:
        values = (np.concatenate(self.values) if self.values else np.empty(0, np.uint64))
        keys = None
        if any(k is not None for k in self.keys):
            keys = Keys.concat([k if k is not None else _no_keys(len(v))
                                for k, v in zip(self.keys, self.values)])
        sketches = None
        if self.sketched:
            sketches = np.concatenate([
                s if s is not None else np.zeros((len(v), SKETCH_BINS), np.uint8)
                for s, v in zip(self.sketches, self.values)])
        notation = "hex" if self.notation == "auto" else self.notation
        return FingerprintList(values, keys, notation, self.without, sketches,
                               len(values) - self.sketched)

    # -- a block of whole lines ----------------------------------------------------

    def block(self, data: bytes) -> None:
        arr = np.frombuffer(data, np.uint8)
        ends = np.flatnonzero(arr == _NL)
        starts = np.empty_like(ends)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        if self.json is None:
            self._first_lines(data, starts, ends)
        if self.json:
            self._json_block(data)
        else:
            self._text_block(data, arr, starts, ends)
        self.line += len(ends)

    def _first_lines(self, data: bytes, starts: np.ndarray, ends: np.ndarray) -> None:
        """Header lines before the first data line, and whether the input is JSON lines."""
        for start, end in zip(starts.tolist(), ends.tolist()):
            text = data[start:end].strip()
            if not text:
                continue
            if text.startswith(b"#"):
                if self.columns is None:
                    self._header(text[1:].decode("utf-8", "replace"))
                continue
            # a table's line ends with a fingerprint or a column after it, never "}":
            # a key may start with "{"
            self.json = self.columns is None and text.startswith(b"{") and text.endswith(b"}")
            return

    def _header(self, text: str) -> None:
        names = [n.strip().lower() for n in text.split("\t")]
        fp = next((i for i, n in enumerate(names) if n in FINGERPRINT_COLUMNS), None)
        if fp is None:
            return  # a comment
        key = next((i for i, n in enumerate(names) if n in KEY_COLUMNS), None)
        sketch = next((i for i, n in enumerate(names) if n == SKETCH_COLUMN), None)
        self.columns = (fp, key, sketch)

    def _text_block(self, data: bytes, arr: np.ndarray, starts: np.ndarray,
                    ends: np.ndarray) -> None:
        n = len(ends)
        lend = ends.copy()
        lend -= (lend > starts) & (arr[np.maximum(lend - 1, 0)] == _CR)
        padded = np.concatenate([arr, np.zeros(_WIDTH + 2, np.uint8)])
        blank = lend == starts
        comment = padded[starts] == _HASH
        tabs = np.flatnonzero(arr == _TAB)
        sketch_col = None
        if self.columns is not None:
            fp_col, key_col, sketch_col = self.columns
            fp_cols = np.full(n, fp_col)
            key_cols = None if key_col is None else np.full(n, key_col)
        elif len(tabs):
            has_tab = np.zeros(n, bool)
            has_tab[np.searchsorted(ends, tabs)] = True
            fp_cols = has_tab.astype(np.int64)
            key_cols = np.where(has_tab, 0, -1)
        else:
            fp_cols, key_cols = np.zeros(n, np.int64), None
        field = _Fields(starts, lend, ends, tabs)
        s, e, present = field(fp_cols)
        dash = present & (e - s == 1) & (padded[s] == _DASH)
        values, ok = self._values(padded, s, e, present & ~blank & ~comment & ~dash)
        self.without += int(np.count_nonzero(dash & ~comment))
        sketches, sketched = None, 0
        if sketch_col is not None:
            # a sketch that is neither 192 hex digits nor '-' sends its line to _slow
            all_sketches, has, bad = _sketch_field(arr, *field(np.full(n, sketch_col)), ok)
            ok &= ~bad
            sketched = int(np.count_nonzero(has[ok]))
            sketches = all_sketches[ok] if sketched else None
        keys = None
        if key_cols is not None:
            ks, ke, kpresent = field(np.maximum(key_cols, 0))
            kpresent &= key_cols >= 0
            keys = _gather_keys(arr, ks[ok], np.where(kpresent, ke, ks)[ok])
        slow = np.flatnonzero(~ok & ~blank & ~comment & ~dash)
        extra_values, extra_keys, extra_sketches = self._slow(data, starts[slow], lend[slow],
                                                              slow)
        self._keep(values[ok], keys, extra_values, extra_keys, sketches, extra_sketches,
                   sketched)

    def _values(self, padded: np.ndarray, s: np.ndarray, e: np.ndarray,
                candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values of the fields ``padded[s:e]`` and where they parsed."""
        width = e - s
        prefixed = (width >= 3) & (padded[s] == 48) & ((padded[s + 1] | 32) == 120)
        s = s + 2 * prefixed
        width = width - 2 * prefixed
        windows = np.lib.stride_tricks.sliding_window_view(padded, _WIDTH)
        table = windows[np.minimum(s, len(padded) - _WIDTH)]
        inside = np.arange(_WIDTH) < width[:, None]
        values = np.zeros(len(s), np.uint64)
        ok = np.zeros(len(s), bool)
        # hex digits are looked at only where they can matter: to decide the
        # notation, in a hex input, on 0x-prefixed fields
        rows = (np.arange(len(s)) if self.notation != "decimal"
                else np.flatnonzero(prefixed & candidate))
        if len(rows):
            nibbles = np.where(inside[rows], _HEX_VALUE[table[rows]], 0)
            hex_chars = ((nibbles.max(axis=1) <= 15) & (width[rows] >= 1)
                         & (width[rows] <= _WIDTH))
            nibbles = nibbles[:, :16]
            is_hex = hex_chars & (width[rows] <= 16)
            if self.notation == "auto":
                voters = candidate[rows] & ~prefixed[rows] & hex_chars
                self._decide(voters, width[rows], nibbles)
            hex_ok = candidate[rows] & is_hex & (prefixed[rows] | (self.notation == "hex"))
            if hex_ok.any():
                sel = rows[hex_ok]
                nib = nibbles[hex_ok]
                packed = (nib[:, 0::2] << 4) | nib[:, 1::2]
                full = packed.astype(np.uint8).view(">u8").ravel().astype(np.uint64)
                values[sel] = full >> (np.uint64(4) * (16 - width[sel]).astype(np.uint64))
                ok[sel] = True
        if self.notation == "decimal":
            dec_ok, dec_values = _decimal(table, width, inside)
            dec_ok &= candidate & ~prefixed
            values = np.where(dec_ok, dec_values, values)
            ok |= dec_ok
        return values, ok

    def _decide(self, voters: np.ndarray, width: np.ndarray, nibbles: np.ndarray) -> None:
        """Hex when every unprefixed fingerprint of the first block is 16 hex digits.

        Only fields of 1 to 20 hex characters vote; lines with spaces or junk do not.
        """
        if not voters.any():
            return
        if (width[voters] == 16).all():
            self.notation = "hex"
            if not (nibbles[voters] > 9).any():
                self.problems.note(
                    f"{self.name}: every fingerprint is 16 digits without a hex letter: "
                    "read as hexadecimal (--input-format decimal if they are decimal)")
        else:
            self.notation = "decimal"

    def _slow(self, data: bytes, starts: np.ndarray, ends: np.ndarray, rows: np.ndarray
              ) -> tuple[list[int], list[str] | None, list[bytes | None]]:
        """Lines the bulk pass left: spaces, bad values. Each parsed or reported."""
        values: list[int] = []
        keys: list[str] = []
        sketches: list[bytes | None] = []
        keyed = False
        for start, end, row in zip(starts.tolist(), ends.tolist(), rows.tolist()):
            text = data[start:end].decode("utf-8", "replace")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            fields = text.split("\t")
            sketch_col = None
            if self.columns is not None:
                fp_col, key_col, sketch_col = self.columns
            else:
                fp_col, key_col = (1, 0) if len(fields) > 1 else (0, None)
            if fp_col >= len(fields):
                self.problems.add(self.name, self.line + row + 1,
                                  f"no fingerprint column {fp_col + 1}")
                continue
            fp_text = fields[fp_col].strip()
            if fp_text == "-":
                self.without += 1
                continue
            sketch_text = (fields[sketch_col] if sketch_col is not None
                           and sketch_col < len(fields) else "")
            try:
                value = parse_fingerprint(fp_text, self.notation)
                sketch = _optional_sketch(sketch_text)
            except ValueError as exc:
                self.problems.add(self.name, self.line + row + 1, str(exc))
                continue
            values.append(value)
            sketches.append(sketch)
            key = fields[key_col] if key_col is not None and key_col < len(fields) else ""
            keys.append(key)
            keyed |= key_col is not None
        return values, (keys if keyed else None), sketches

    def _json_block(self, data: bytes) -> None:
        values: list[int] = []
        keys: list[str] = []
        sketches: list[bytes | None] = []
        for i, line in enumerate(data.split(b"\n")[:-1]):
            line = line.strip()
            if not line or line.startswith(b"#"):
                continue
            where = self.line + i + 1
            try:
                obj = load_json_line(line)
            except ValueError as exc:
                self.problems.add(self.name, where, f"bad JSON: {exc}")
                continue
            if isinstance(obj, dict) and "fingerprint" not in obj and obj.get("event") in (
                    "open", "close", "skip"):
                continue  # the drop log's other lines: not pages
            if not isinstance(obj, dict) or "fingerprint" not in obj:
                self.problems.add(self.name, where, 'expected an object with a "fingerprint"')
                continue
            fp = obj["fingerprint"]
            if fp is None or fp == "-":
                self.without += 1
                continue
            try:
                if isinstance(fp, bool) or not isinstance(fp, (int, str)):
                    raise ValueError(f"not a fingerprint: {fp!r}")
                value = fp if isinstance(fp, int) else parse_fingerprint(fp, self.notation)
                if not 0 <= value < 1 << 64:
                    raise ValueError(f"out of the unsigned 64-bit range: {value}")
                sketch = obj.get(SKETCH_COLUMN)
                if sketch is not None and not isinstance(sketch, str):
                    raise ValueError(f"not a sketch: {sketch!r} ({_SKETCH_WIDTH} hex digits)")
                sketch = _optional_sketch(sketch or "")
            except ValueError as exc:
                self.problems.add(self.name, where, str(exc))
                continue
            values.append(value)
            sketches.append(sketch)
            key = next((obj[k] for k in KEY_COLUMNS if isinstance(obj.get(k), str)), "")
            keys.append(key)
        self._keep(np.empty(0, np.uint64), None, values, keys if any(keys) else None,
                   None, sketches)

    def _keep(self, values: np.ndarray, keys: Keys | None, extra_values: list[int],
              extra_keys: list[str] | None, sketches: np.ndarray | None = None,
              extra_sketches: list[bytes | None] | None = None, sketched: int = 0) -> None:
        """Keep a block's values (bulk-parsed, then line by line), their keys and
        sketches (``sketches``: the bulk rows', None when none has one; ``sketched``
        of them have one)."""
        more = [s for s in extra_sketches or () if s is not None]
        if more or sketches is not None:
            rows = np.zeros((len(values) + len(extra_values), SKETCH_BINS), np.uint8)
            if sketches is not None:
                rows[:len(values)] = sketches
            for i, sketch in enumerate(extra_sketches or ()):
                if sketch is not None:
                    rows[len(values) + i] = np.frombuffer(sketch, np.uint8)
            self.sketched += sketched + len(more)
            self.sketches.append(rows)
        else:
            self.sketches.append(None)
        if extra_values:
            values = np.concatenate([values, np.array(extra_values, dtype=np.uint64)])
            if keys is not None or extra_keys is not None:
                bulk = keys if keys is not None else _no_keys(len(values) - len(extra_values))
                more = Keys.from_strings(extra_keys or [""] * len(extra_values))
                keys = Keys.concat([bulk, more])
        self.values.append(values)
        self.keys.append(keys)
        self.total += len(values)


class _Fields:
    """Column ``c`` of each line: ``[start, end)`` and whether the line has it."""

    def __init__(self, starts: np.ndarray, lend: np.ndarray, ends: np.ndarray,
                 tabs: np.ndarray) -> None:
        self.starts, self.lend, self.tabs = starts, lend, tabs
        if len(tabs):
            line = np.searchsorted(ends, tabs)
            self.ntabs = np.bincount(line, minlength=len(ends))
            self.first = np.searchsorted(line, np.arange(len(ends)))
        else:
            self.ntabs = np.zeros(len(ends), np.int64)

    def __call__(self, col: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not len(self.tabs):
            return self.starts, self.lend, col == 0
        last = len(self.tabs) - 1
        before = self.tabs[np.clip(self.first + col - 1, 0, last)] + 1
        after = self.tabs[np.clip(self.first + col, 0, last)]
        start = np.where(col == 0, self.starts, before)
        end = np.where(self.ntabs > col, after, self.lend)
        present = self.ntabs >= col
        return np.where(present, start, self.starts), np.where(present, end, self.starts), present


def _optional_sketch(text: str) -> bytes | None:
    """A sketch field: None when empty or ``-``."""
    text = text.strip()
    return None if text in ("", "-") else parse_sketch(text)


def _sketch_field(arr: np.ndarray, s: np.ndarray, e: np.ndarray, present: np.ndarray,
                  ok: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sketch column ``arr[s:e]`` of the lines whose fingerprint parsed (``ok``):
    ``(n, SKETCH_BINS)`` sketches (zeros where none), where a line has one, and
    where its field is neither a sketch nor empty nor ``-``."""
    n = len(s)
    width = np.where(present, e - s, 0)
    empty = (width == 0) | ((width == 1) & (arr[np.minimum(s, len(arr) - 1)] == _DASH))
    sketches = np.zeros((n, SKETCH_BINS), np.uint8)
    has = np.zeros(n, bool)
    rows = np.flatnonzero(ok & (width == _SKETCH_WIDTH))
    if len(rows):
        fields = np.lib.stride_tricks.sliding_window_view(arr, _SKETCH_WIDTH)[s[rows]]
        try:  # every field 192 hex digits: one C pass (whitespace would shorten it)
            decoded = bytes.fromhex(fields.tobytes().decode("ascii"))
        except ValueError:
            decoded = b""
        if len(decoded) == len(rows) * SKETCH_BINS:
            sketches[rows] = np.frombuffer(decoded, np.uint8).reshape(-1, SKETCH_BINS)
        else:  # some are not: find them
            nibbles = _HEX_VALUE[fields]
            valid = nibbles.max(axis=1) <= 15
            rows, nibbles = rows[valid], nibbles[valid]
            sketches[rows] = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
        has[rows] = True
    return sketches, has, ok & ~has & ~empty


def _no_keys(count: int) -> Keys:
    return Keys(b"", np.zeros(count + 1, np.int64))


def _gather_keys(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Keys:
    """The byte ranges ``arr[starts:ends]`` (in order, not overlapping) as Keys."""
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    delta = np.zeros(len(arr) + 1, np.int8)
    used = lengths > 0
    delta[starts[used]] = 1
    delta[ends[used]] -= 1
    mask = np.cumsum(delta[:-1], dtype=np.int8).view(bool)
    return Keys(arr[mask].tobytes(), offsets)


def _decimal(table: np.ndarray, width: np.ndarray, inside: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Decimal fields (left-aligned in ``table``): values and where they are valid."""
    ok = (width >= 1) & (width <= 20)
    digits = (table - np.uint8(48)) * inside
    ok &= digits.max(axis=1) <= 9
    # Two 10-digit halves, exact in float64 (< 2**53), then shifted right by the
    # missing digits: value = hi * 10**(width-10) + lo // 10**(20-width).
    halves = (digits.reshape(-1, 10).astype(np.float64) @ _HALF).astype(np.uint64)
    hi, lo = halves[0::2], halves[1::2]
    values = np.where(
        width >= 10,
        hi * _POW10[np.clip(width - 10, 0, 10)] + lo // _POW10[np.clip(20 - width, 0, 10)],
        hi // _POW10[np.clip(10 - width, 0, 10)],
    )
    # 20-digit fields may exceed 2**64 - 1: lexicographic order is numeric order there.
    full = np.flatnonzero(ok & (width == 20))
    if full.size:
        differ = digits[full] != _U64_MAX_DIGITS
        first = differ.argmax(axis=1)
        over = differ[np.arange(full.size), first] & (
            digits[full, first] > _U64_MAX_DIGITS[first])
        ok[full[over]] = False
    return ok, values
