"""Spot signatures: tokens of the main text anchored on a few function words.

SpotSigs (Theobald, Siddharth & Paepcke, SIGIR 2008): at each occurrence of an
*antecedent* (an article, a form of be/have/do/will/can, a CJK particle...) the
next :data:`CHAIN` tokens that are not antecedents form a feature. Templates
(menus, ads, link lists) are telegraphic and anchor almost no spots; running
prose anchors many. Weight = occurrence count; title and heading words give
features of their own, with their own weight. Preformatted blocks (code) give
none: ``x is not None`` is not prose, and would outweigh it on code pages.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import NamedTuple

import numpy as np
import xxhash
from lxml import etree

from scrapy_simhash.fingerprinting.extract import MainText, PageText, extract, extract_page

try:  # the compiled token loops, when the package was built with them
    import scrapy_simhash.fingerprinting._tokens as _tokens
except ImportError:  # pragma: no cover - a pure-Python install
    _tokens = None

#: Non-antecedent tokens chained after an antecedent.
CHAIN = 1
#: Weight of each title feature occurrence.
TITLE_WEIGHT = 2.0
#: Weight of each heading feature occurrence.
HEADING_WEIGHT = 3.0

_CJK = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\U00020000-\U0002fa1f\U00030000-\U0003134f"
)
_THAI_BASE = "\u0e01-\u0e30\u0e32\u0e33\u0e3f-\u0e46\u0e4f\u0e5a\u0e5b"
_THAI_MARK = "\u0e31\u0e34-\u0e3a\u0e47-\u0e4e"
# Letters and digits, with the combining marks of Indic and Thai scripts (not
# word characters for ``re``) kept inside their words.
_WORD = re.compile(r"[^\W_]+")
_HAS_MARKS = re.compile(r"[\u0300-\u036f\u0900-\u0eff]")
# Characters that need a closer look inside a word: Han/Kana, Thai, digits.
_SPECIAL = re.compile(rf"[{_CJK}\u0e00-\u0e7f\d]")
# Inside such a word: a Han/Kana character; a Thai character with its combining
# marks; or a run of other letters and digits (dropped if it holds a digit).
_PART = re.compile(
    rf"[{_CJK}]|[{_THAI_BASE}][{_THAI_MARK}]*|[^{_CJK}\u0e00-\u0e7f]+"
)
_DIGIT = re.compile(r"\d")


# Word characters with the marks above and "_" (replaced by a space first).
_WORD_OR_MARK = re.compile(r"[\w\u0300-\u036f\u0900-\u0963\u0966-\u0dff\u0e00-\u0eff]+")

# A fast path for Latin-1 text, most of the web's blocks. NFKC leaves Latin-1
# characters alone but for a few (superscripts, fractions, spacing accents...),
# which send a text to the general path (not the no-break space: NFKC makes it
# a space). One ``bytes.translate`` keeps word characters, turns digits into
# \x01 (a word holding one is dropped), the few characters NFKC changes into
# \x00, keeps the \x02 that joins texts, and turns everything else into
# spaces.
_NFKC_CHANGED = frozenset(
    b for b in range(0xA1, 0x100) if unicodedata.normalize("NFKC", chr(b)) != chr(b)
)
_LATIN1_WORDS = bytes(
    0 if b in _NFKC_CHANGED
    else 1 if chr(b).isdecimal()
    else 2 if b == 2
    else b if chr(b).isalnum()
    else 0x20
    for b in range(256)
)
# Separators outside Latin-1 common in Western text (quotes, dashes, spaces,
# bullets, the euro sign): NFKC keeps them, no pattern here takes them into a
# word, and none is a combining mark, so a space is the same.
_SEPARATORS = (
    "\u2018\u2019\u201a\u201c\u201d\u201e\u2039\u203a\u2010\u2012\u2013\u2014\u2212"
    "\u2026\u2022\u2009\u202f\u200b\u2028\u20ac"
)


#: Per-page budgets of the features (deterministic: a page past them is read
#: as its beginning). A text is tokenized from its first MAX_TOKEN_CHARS
#: characters, and a page's spots and content features come from the first
#: MAX_PAGE_TOKENS tokens of its main text (blocks, then preformatted blocks).
#: Pages of Latin script stay below both (extraction keeps ~200,000 characters,
#: ~40,000 tokens); a page of CJK or Thai text, a token a character or two,
#: reaches them, and costs no more than the longest Latin-script page
#: (``make bench-hostile``).
MAX_TOKEN_CHARS = 100_000
MAX_PAGE_TOKENS = 50_000
#: Characters of a page's text that take the general tokenizer (text outside
#: Latin-1: CJK, Thai, Cyrillic, marks and joiners), far slower than
#: the Latin-1 path, read at most. Past it such text gives no tokens and the
#: page is cut (:attr:`PageText.complete` False: a fingerprint of what was
#: read, dropped only as a byte copy). The corpus's longest
#: such text is 17,537 characters (PostgreSQL's ``functions-json.html``); no
#: corpus page reaches the budget (``python -m bench.token_budget``).
MAX_GENERAL_CHARS = 50_000


class TokenBudget:
    """What is left of a page's :data:`MAX_GENERAL_CHARS`; ``cut`` once a
    text was read short for want of it (every later one is then refused)."""

    __slots__ = ("left", "cut")

    def __init__(self, chars: int = MAX_GENERAL_CHARS) -> None:
        self.left = chars
        self.cut = False

    def take(self, text: str) -> str | None:
        """``text`` (as far as it is read), or None when the budget is spent:
        a text longer than what is left is read up to it, and cuts the page."""
        if self.cut:
            return None
        n = min(len(text), MAX_TOKEN_CHARS)
        if n > self.left:
            self.cut = True
            text = text[: self.left]
        self.left -= min(n, self.left)
        return text


def tokenize(text: str) -> list[str]:
    """NFKC, lower-case Unicode word tokens; Han, Kana and Thai as single
    characters; tokens containing digits left out. Only the first
    :data:`MAX_TOKEN_CHARS` characters are read."""
    return tokenize_many((text,))[0]


def tokenize_many(
    texts: Sequence[str], budget: TokenBudget | None = None
) -> list[list[str]]:
    """``[tokenize(text) for text in texts]``, the Latin-1 fast path taken once
    for all of them (a page's blocks) rather than once per text. With a
    ``budget``, the texts needing the general path draw on it in order: the
    one that spends it is read up to it, later ones give no tokens."""
    limit = MAX_TOKEN_CHARS
    if any(len(text) > limit for text in texts):
        texts = [text[:limit] for text in texts]
    joined = "\x02".join(texts)
    if joined.count("\x02") != len(texts) - 1:  # a text holds the joiner
        return [_general(text, budget) if "\x02" in text else tokenize_many((text,), budget)[0]
                for text in texts]
    if _tokens is not None:  # the same, compiled, and text by text
        parts = _separated(joined).lower().split("\x02")
        found = _tokens.latin1_tokens(parts, _LATIN1_WORDS)
        return [_general(text, budget) if t is None else t for text, t in zip(texts, found)]
    if joined.isascii():
        data = joined.lower().encode("ascii")
    else:
        for separator in _SEPARATORS:
            if separator in joined:
                joined = joined.replace(separator, " ")
        try:
            joined.encode("latin-1")
        except UnicodeEncodeError:  # some text needs the general path
            if len(texts) == 1:
                return [_general(texts[0], budget)]
            return [tokenize_many((text,), budget)[0] for text in texts]
        data = joined.lower().encode("latin-1")
    tokens = []
    append = tokens.append
    isalpha = str.isalpha
    for text, part in zip(texts, data.translate(_LATIN1_WORDS).split(b"\x02")):
        if b"\x00" in part:
            append(_general(text, budget))
        else:
            words = part.decode("latin-1").split()
            append(list(filter(isalpha, words)) if b"\x01" in part else words)
    return tokens


# The sketch's words (:mod:`scrapy_simhash.fingerprinting.signature`): ``\w+``
# of the NFKC, lower-cased text, digits and "_" kept. Its Latin-1 fast path is
# the one above with its own table: word characters and "_" kept, lower-cased
# (the compiled path reads a text through it without lower-casing it first),
# the characters NFKC changes into \x00 (the general path), the rest spaces.
_SKETCH_WORD = re.compile(r"\w+")
_LATIN1_SKETCH_WORDS = bytes(
    0 if b in _NFKC_CHANGED else ord(chr(b).lower()) if chr(b).isalnum() or b == 0x5F else 0x20
    for b in range(256)
)


def _separated(text: str) -> str:
    """``text`` with the :data:`_SEPARATORS` replaced by spaces."""
    if not text.isascii():
        for separator in _SEPARATORS:
            if separator in text:
                text = text.replace(separator, " ")
    return text


def sketch_words(texts: Sequence[str]) -> list[bytes]:
    """The UTF-8 words of ``texts`` joined by newlines: ``\\w+`` of their NFKC,
    lower-cased text (digits and "_" kept), as the sketch hashes them."""
    joined = "\n".join(texts)
    if joined.isascii():
        return joined.lower().encode("ascii").translate(_LATIN1_SKETCH_WORDS).split()
    try:
        data = _separated(joined).lower().encode("latin-1").translate(_LATIN1_SKETCH_WORDS)
    except UnicodeEncodeError:  # the general path
        data = b"\x00"
    if b"\x00" in data:
        return [word.encode("utf-8", "surrogatepass") for word in general_sketch_words(joined)]
    # bytes.split() splits at ASCII whitespace only, never inside a UTF-8 character
    return data.decode("latin-1").encode("utf-8").split()


def general_sketch_words(text: str) -> list[str]:
    """:func:`sketch_words` of any text, as ``str``: ``\\w+`` of its
    :func:`sketch_text`."""
    return _SKETCH_WORD.findall(sketch_text(text))


def sketch_text(text: str) -> str:
    """The text the sketch's words are read from on its general path: NFKC,
    lower-cased."""
    return _nfkc(text).lower()


def _nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, the ellipsis (U+2026) replaced
    by its NFKC form first (which leaves the NFKC the same): it is what most
    web pages that need normalising need it for, and a text that needs none
    is only checked."""
    if "\u2026" in text:
        text = text.replace("\u2026", "...")
    return unicodedata.normalize("NFKC", text)


def _general(text: str, budget: TokenBudget | None) -> list[str]:
    """:func:`_tokenize`, drawing on ``budget`` when there is one."""
    if budget is not None:
        text = budget.take(text)
        if text is None:
            return []
    return _tokenize(text)


def _tokenize(text: str) -> list[str]:
    """:func:`tokenize` for any text."""
    text = _nfkc(text)
    # Marks are word characters when the text holds any (as written: the
    # mark lower-casing "İ" adds is not one).
    if "\u0130" in text and _HAS_MARKS.search(text) is None:
        pattern = _WORD
    else:
        pattern = _WORD_OR_MARK  # the same words as _WORD on text without marks
    text = text.lower()
    if "_" in text:
        text = text.replace("_", " ")
    tokens: list[str] = []
    append = tokens.append
    special = _SPECIAL.search
    for word in pattern.findall(text):
        if word.isascii():
            if word.isalpha():
                append(word)
        elif special(word) is None:
            append(word)
        elif _DIGIT.search(word) is None:  # no part to drop: all of them, at C speed
            tokens += _PART.findall(word)
        else:
            for part in _PART.findall(word):
                if _DIGIT.search(part) is None:
                    append(part)
    return tokens


@lru_cache(maxsize=1)
def antecedents() -> frozenset[str]:
    """The curated antecedent words shipped in ``data/antecedents.txt``."""
    source = resources.files("scrapy_simhash").joinpath("data/antecedents.txt")
    words: set[str] = set()
    for line in source.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        _, _, entries = line.partition(":")
        for word in entries.split():
            words.update(tokenize(word))
    return frozenset(words)


def spots(tokens: list[str], counts: dict[str, float], weight: float = 1.0) -> None:
    """Add the spot signatures of ``tokens`` to ``counts``: each antecedent with
    the next :data:`CHAIN` non-antecedent tokens."""
    ante = antecedents()
    get = counts.get
    if CHAIN == 1:
        if _tokens is not None and type(tokens) is list:
            _tokens.spots(tokens, counts, weight, ante)
            return
        following = None
        for token in reversed(tokens):
            if token in ante:
                if following is not None:
                    key = token + " " + following
                    counts[key] = get(key, 0.0) + weight
            else:
                following = token
        return
    chain: list[str] = []  # the next CHAIN non-antecedent tokens, nearest first
    for token in reversed(tokens):
        if token in ante:
            if chain:
                key = token + " " + " ".join(chain)
                counts[key] = get(key, 0.0) + weight
        else:
            chain.insert(0, token)
            if len(chain) > CHAIN:
                chain.pop()


# Separators between a page's own title and the site's name or section.
_TITLE_PARTS = re.compile(r"\s+(?:[|\-\u2013\u2014\u00b7\u00bb:]|::|//)\s+|\s*[|\u00bb]\s*")


_TITLE_NOTE = re.compile(r"\s*[(\[][^()\[\]\s]{1,20}[)\]]\s*$")


def title_words(title: str) -> list[str]:
    """Tokens of a title's part with the most tokens (the first of equals), after
    a trailing one-word note such as ``(print)``: ``"Night trains | Rail News"``
    and ``"Night trains are back - Rail News (print)"`` give the page's own
    title; the site name that templates add to it is left out."""
    return list(_title_words(title))


@lru_cache(maxsize=64)
def _title_words(title: str) -> tuple[str, ...]:
    """:func:`title_words`, kept for the few titles last seen: the fingerprint
    and the sketch both read a page's title."""
    parts = _TITLE_PARTS.split(_TITLE_NOTE.sub("", title))
    best: list[str] = []
    for part in parts:
        tokens = tokenize(part)
        if len(tokens) > len(best):
            best = tokens
    return tuple(best)


def spot_count(tokens: list[str]) -> int:
    """Number of spot signatures in ``tokens`` (antecedents followed by a token
    that is not one)."""
    ante = antecedents()
    count = 0
    following = False
    for token in reversed(tokens):
        if token in ante:
            count += following
        else:
            following = True
    return count


def _spot_counts(token_lists: list[list[str]]) -> list[int]:
    """``[spot_count(t) for t in token_lists]``, with the antecedent look-ups
    done at C speed: a list's antecedents before its last other token."""
    if _tokens is not None and type(token_lists) is list:
        return _tokens.spot_counts(token_lists, antecedents())
    ante = antecedents().__contains__
    counts = []
    for tokens in token_lists:
        flags = list(map(ante, tokens))
        trailing = 0
        for flag in reversed(flags):
            if not flag:
                break
            trailing += 1
        counts.append(flags.count(True) - trailing)
    return counts


#: A page whose body blocks have fewer spot signatures than this share of
#: their tokens is not mostly prose (code listings, tables, reference lists):
#: its main-content region is located by spots plus
#: :data:`REGION_TOKEN_WEIGHT` per token, so that it is not the one line of
#: prose among them. Prose pages are located by their spots alone.
PROSE_PAGE_SPOT_SHARE = 0.1
#: Weight of a token in locating the region of a page that is not mostly prose.
REGION_TOKEN_WEIGHT = 0.1


def _region_weights(token_lists: list[list[str]]) -> list[float]:
    """Body blocks' weights for locating the main-content region: their spot
    signatures, plus :data:`REGION_TOKEN_WEIGHT` per token on a page that is
    not mostly prose (:data:`PROSE_PAGE_SPOT_SHARE`)."""
    spots = _spot_counts(token_lists)
    sizes = list(map(len, token_lists))
    total = sum(spots)
    if not total or total >= PROSE_PAGE_SPOT_SHARE * sum(sizes):
        return spots
    alpha = REGION_TOKEN_WEIGHT
    return [count + alpha * size for count, size in zip(spots, sizes)]


class PageFeatures(NamedTuple):
    """A page's main text and the weighted features the fingerprint is made of."""

    main: MainText
    #: Spot signatures, ``title:`` and ``h:`` words, with their weights.
    features: dict[str, float]
    #: Distinct spot signatures (title and heading words not counted): the
    #: figure ``min_features`` is compared with.
    spot_count: int


def analyse_main_text(
    main: MainText, tokens: Mapping[str, list[str]] | None = None
) -> PageFeatures:
    """Weighted features of a page's main text: spots of each block, plus the
    words of the title and of the headings. ``tokens`` maps block texts already
    tokenized to their tokens."""
    counts: dict[str, float] = {}
    if tokens is None:
        # Blocks are tokenized together (one Latin-1 pass).
        lists = tokenize_many(main.blocks)
    else:
        lists = [tokens.get(block) for block in main.blocks]
        missing = [block for block, known in zip(main.blocks, lists) if known is None]
        if missing:
            found = iter(tokenize_many(missing))
            lists = [next(found) if known is None else known for known in lists]
    words = [token for block in within_budget(lists) for token in block]
    # A chain may run into the next block only after a block's last word.
    spots(words, counts)
    spot_features = len(counts)  # the other keys hold a ":", spots never do
    title = _title_words(main.title)
    for token in title:
        key = "title:" + token
        counts[key] = counts.get(key, 0.0) + TITLE_WEIGHT
    # A headline repeating the title counts once: layouts without an <h1>
    # (printer versions, syndicated copies) then weigh the same.
    in_title = frozenset(title)
    for heading in tokenize_many(main.headings):
        for token in heading:
            if token not in in_title:
                key = "h:" + token
                counts[key] = counts.get(key, 0.0) + HEADING_WEIGHT
    return PageFeatures(main, counts, spot_features)


def within_budget(token_lists: list[list[str]], budget: int = MAX_PAGE_TOKENS) -> list[list[str]]:
    """``token_lists`` cut after their first ``budget`` tokens in all (the list
    reaching it cut short, those after it empty; as many lists as given)."""
    if sum(map(len, token_lists)) <= budget:
        return token_lists
    out = []
    left = budget
    for tokens in token_lists:
        out.append(tokens if len(tokens) <= left else tokens[:left])
        left -= len(out[-1])
    return out


def analyse_page(
    page: str | bytes | etree._Element, *, encoding: str | None = None
) -> PageFeatures:
    """A page's main text, located by spot weight (the region holding most
    spots; on a page that is not mostly prose, tokens weigh too), and its
    weighted features, each block tokenized once."""
    return analyse_main_text(*_main_text(page, encoding))


def _main_text(
    page: str | bytes | etree._Element, encoding: str | None
) -> tuple[MainText, dict[str, list[str]]]:
    """The main text of :func:`analyse_page`, and its blocks' tokens."""
    tokens: dict[str, list[str]] = {}
    budget = TokenBudget()
    main = extract(page, encoding=encoding, weigh_blocks=_weigher(tokens, budget))
    _tokenize_code(main, tokens, budget)
    return main, tokens


def read_page(
    page: str | bytes | etree._Element, encoding: str | None = None,
    budget: TokenBudget | None = None,
) -> tuple[PageText, dict[str, list[str]]]:
    """:func:`_main_text`, with every visible block of the page (one walk):
    what a signature is computed from. ``budget``: the page's general-path
    budget (a new one by default; pass one to read what the page spent)."""
    tokens: dict[str, list[str]] = {}
    budget = TokenBudget() if budget is None else budget
    page_text = extract_page(page, encoding=encoding, weigh_blocks=_weigher(tokens, budget))
    _tokenize_code(page_text.main, tokens, budget)
    if budget.cut:  # the page's text is not all there: dropped only as a byte copy
        page_text = page_text._replace(complete=False)
    return page_text, tokens


def _tokenize_code(main: MainText, tokens: dict[str, list[str]], budget: TokenBudget) -> None:
    """The preformatted blocks of ``main`` (not weighed) tokenized into
    ``tokens`` within the page's ``budget``."""
    missing = [text for text in main.code if text not in tokens]
    if missing:
        tokens.update(zip(missing, tokenize_many(missing, budget)))


def _weigher(tokens: dict[str, list[str]], budget: TokenBudget):
    """Block weights for locating the main-content region, by spots (and
    tokens on a page that is not mostly prose), each block tokenized once into
    ``tokens``, the page's general-path text within ``budget``."""

    def weigh_blocks(texts: list[str]) -> list[float]:
        new = [text for text in texts if text not in tokens]
        tokens.update(zip(new, tokenize_many(new, budget)))
        return _region_weights([tokens[text] for text in texts])

    return weigh_blocks


def main_text_features(
    main: MainText, tokens: Mapping[str, list[str]] | None = None
) -> dict[str, float]:
    """The features of :func:`analyse_main_text`."""
    return analyse_main_text(main, tokens).features


def page_main_text(page: str | bytes | etree._Element, *, encoding: str | None = None) -> MainText:
    """The main text the fingerprint is computed from (:func:`analyse_page`)."""
    return analyse_page(page, encoding=encoding).main


def page_features(
    page: str | bytes | etree._Element, *, encoding: str | None = None
) -> dict[str, float]:
    """Weighted features of a page (:func:`analyse_page`)."""
    return analyse_page(page, encoding=encoding).features


# ----------------------------------------------------------------------------
# Content features: what prose spots do not see (tables, code, lists).

#: A block is prose, and gives spot signatures only, when at least this share
#: of its tokens anchor a spot; other blocks (table cells, code lines, list
#: items, definitions) and preformatted blocks give content features.
PROSE_SPOT_SHARE = 0.15
#: Consecutive tokens in a content feature.
CONTENT_SHINGLE = 2
#: Content features count only when the blocks that give them hold at least
#: this share of the main text's tokens: on a prose page a byline, a caption or
#: a date line would only make the fingerprint fragile.
CONTENT_MIN_SHARE = 0.2

# splitmix64's finalizer constants (a bijective mix of 64 bits).
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_STEP = np.uint64(0x9E3779B97F4A7C15)


def _mix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(30))
    h = h * _MIX1
    h = h ^ (h >> np.uint64(27))
    h = h * _MIX2
    return h ^ (h >> np.uint64(31))


def token_hashes(tokens: Sequence[str], seed: int = 0) -> np.ndarray:
    """xxh3_64 of each token (``uint64``), each distinct token hashed once."""
    if not tokens:
        return np.zeros(0, dtype=np.uint64)
    if _tokens is not None and type(tokens) is list:
        return _tokens.token_hashes(tokens, seed, xxhash.xxh3_64_intdigest)
    digest = xxhash.xxh3_64_intdigest
    table = {t: digest(t.encode("utf-8", "surrogatepass"), seed) for t in set(tokens)}
    return np.fromiter(map(table.__getitem__, tokens), dtype=np.uint64, count=len(tokens))


def feature_hashes(features: Mapping[str, float], seed: int = 0) -> np.ndarray:
    """xxh3_64 of each feature's UTF-8 text (``uint64``), in the mapping's order."""
    digest = xxhash.xxh3_64_intdigest
    if _tokens is not None and type(features) is dict:
        return _tokens.feature_hashes(features, seed, digest)
    return np.fromiter(
        (digest(f.encode("utf-8", "surrogatepass"), seed) for f in features),
        dtype=np.uint64,
        count=len(features),
    )


def word_hashes(words: Sequence[bytes], seed: int = 0) -> np.ndarray:
    """:func:`token_hashes` of tokens given as their UTF-8 bytes."""
    if not words:
        return np.zeros(0, dtype=np.uint64)
    digest = xxhash.xxh3_64_intdigest
    table = {w: digest(w, seed) for w in set(words)}
    return np.fromiter(map(table.__getitem__, words), dtype=np.uint64, count=len(words))


def shingle_hashes(hashes: np.ndarray, n: int) -> np.ndarray:
    """One 64-bit hash per run of ``n`` consecutive token hashes (the whole
    sequence when it is shorter), order-sensitive, vectorised."""
    count = len(hashes) - n + 1
    if count <= 0:
        if not len(hashes):
            return hashes
        n, count = len(hashes), 1
    out = hashes[:count].copy()
    with np.errstate(over="ignore"):
        for i in range(1, n):
            out = _mix(out + _STEP) ^ hashes[i : i + count]
        return _mix(out)


def content_hashes(
    main: MainText, tokens: Mapping[str, list[str]] | None = None, seed: int = 0
) -> np.ndarray:
    """Hashes of the content features of a page's main text: word
    :data:`CONTENT_SHINGLE`-shingles within each block that is not prose
    (fewer than :data:`PROSE_SPOT_SHARE` of its tokens anchor a spot) and
    within each preformatted block. Tokens holding digits are left out, as in
    spots (dates and counters do not move the fingerprint)."""
    return _content(main, tokens, seed)[0]


def _all_tokens(main: MainText, tokens: Mapping[str, list[str]]) -> Mapping[str, list[str]]:
    """``tokens`` with the blocks and preformatted blocks of ``main`` it lacks
    tokenized (in one batch), so that the features and the content features
    need not tokenize them each."""
    missing = [text for text in (*main.blocks, *main.code) if text not in tokens]
    if not missing:
        return tokens
    return {**tokens, **dict(zip(missing, tokenize_many(missing)))}


def _content(
    main: MainText, tokens: Mapping[str, list[str]] | None, seed: int
) -> tuple[np.ndarray, int]:
    """:func:`content_hashes`, and the number of tokens of the main text's
    blocks and preformatted blocks."""
    known = tokens if tokens is not None else {}
    missing = [text for text in (*main.blocks, *main.code) if text not in known]
    if missing:
        known = {**known, **dict(zip(missing, tokenize_many(missing)))}
    budgeted = within_budget([known[block] for block in (*main.blocks, *main.code)])
    lists, code = budgeted[: len(main.blocks)], budgeted[len(main.blocks) :]
    share = PROSE_SPOT_SHARE
    chosen = [t for t, c in zip(lists, _spot_counts(lists)) if t and c < share * len(t)]
    code = [t for t in code if t]
    chosen += code
    size = sum(map(len, lists)) + sum(map(len, code))
    if sum(map(len, chosen)) < CONTENT_MIN_SHARE * size:
        # A prose page's bylines, captions and dates: the spots speak for it.
        return np.zeros(0, dtype=np.uint64), size
    return _shingles_within(chosen, CONTENT_SHINGLE, seed), size


def _shingles_within(token_lists: list[list[str]], n: int, seed: int) -> np.ndarray:
    """``shingle_hashes`` of each (non-empty) token list, concatenated: all
    lists hashed at once, the shingles that would cross from one list into
    the next left out."""
    if not token_lists:
        return np.zeros(0, dtype=np.uint64)
    if _tokens is not None and type(token_lists) is list:
        return _tokens.shingles_within(token_lists, n, seed, xxhash.xxh3_64_intdigest)
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    hashes = token_hashes([t for tokens in token_lists for t in tokens], seed)
    if n == 1:
        return _mix(hashes)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    out = [shingle_hashes(hashes, n)]  # shingle i starts at token i
    # Shingle i lies in one list when i + n <= the end of the list holding i.
    owner = np.repeat(np.arange(len(lengths)), lengths)[: len(out[0])]
    keep = np.arange(len(out[0])) + n <= ends[owner]
    out[0] = out[0][keep]
    short = lengths < n  # a list shorter than a shingle is one feature
    for first, length in zip(starts[short], lengths[short]):
        out.append(shingle_hashes(hashes[first : first + length], n))
    return np.concatenate(out)
