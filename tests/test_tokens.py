"""The compiled token loops (``scrapy_simhash.fingerprinting._tokens``) and the
sketch's word fast path against the Python code they replace.

Each compiled function must return exactly what its Python reference returns:
on generated tokens and text (hypothesis, any Unicode) and on the signatures
(fingerprint, feature count, sketch) of every corpus web page and of pages of
each documentation site.
"""

from __future__ import annotations

import importlib
import random
import re
import unicodedata
from contextlib import contextmanager

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.corpus import ABSENT_REASON, corpus_dir, site_pages, web_pages
from scrapy_simhash.fingerprinting.extract import parse_html

F = importlib.import_module("scrapy_simhash.fingerprinting.features")
SG = importlib.import_module("scrapy_simhash.fingerprinting.signature")

COMPILED = F._tokens
needs_compiled = pytest.mark.skipif(
    COMPILED is None,
    reason="scrapy_simhash.fingerprinting._tokens is not built (pure-Python install)",
)
needs_corpus = pytest.mark.skipif(corpus_dir() is None, reason=ABSENT_REASON)
DIGEST = xxhash.xxh3_64_intdigest


@contextmanager
def python_loops():
    """The Python code instead of the compiled loops."""
    F._tokens = None
    try:
        yield
    finally:
        F._tokens = COMPILED


# Tokens as the tokenizer makes them, antecedents among them, and any Unicode
# (lone surrogates included: they are hashed with surrogatepass).
_WORDS = st.sampled_from(["the", "is", "a", "of", "cat", "dog", "の", "猫", "straße", "x"])
_TOKENS = st.lists(_WORDS | st.text(min_size=1, max_size=6), max_size=40)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(_TOKENS, st.sampled_from([1.0, 2.0, 3.0]))
def test_spots_match(tokens, weight):
    compiled: dict[str, float] = {"the cat": 1.0}
    F.spots(tokens, compiled, weight)
    with python_loops():
        reference: dict[str, float] = {"the cat": 1.0}
        F.spots(tokens, reference, weight)
    assert list(compiled.items()) == list(reference.items())


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(st.lists(_TOKENS, max_size=6))
def test_spot_counts_match(token_lists):
    compiled = F._spot_counts(token_lists)
    with python_loops():
        assert compiled == F._spot_counts(token_lists)


@needs_compiled
def test_token_lists_of_any_sequence():
    """Token lists given as tuples: the same as lists, compiled or not."""
    lists = [("the", "cat", "is", "a", "cat"), ("a",), ()]
    assert F._spot_counts(lists) == [F.spot_count(list(t)) for t in lists]
    compiled = F._shingles_within(lists, 2, 7)
    with python_loops():
        assert compiled.tolist() == F._shingles_within(lists, 2, 7).tolist()


def assert_same_array(function, *args):
    """``function(*args)`` gives the same array with the compiled loops as without."""
    compiled = function(*args)
    with python_loops():
        reference = function(*args)
    assert compiled.dtype == reference.dtype and compiled.tolist() == reference.tolist()


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(_TOKENS, st.integers(0, 2**64 - 1))
def test_token_hashes_match(tokens, seed):
    assert_same_array(F.token_hashes, tokens, seed)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=6), st.integers(1, 6), st.integers(0, 2**64 - 1))
def test_shingles_within_match(token_lists, n, seed):
    assert_same_array(F._shingles_within, token_lists, n, seed)


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=12), st.floats(0, 9)), st.integers(0, 2**64 - 1))
def test_feature_hashes_match(features, seed):
    assert_same_array(F.feature_hashes, features, seed)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(st.lists(st.text() | st.text(alphabet=" \t\n\x0b\x1c\x85\xa0\u2028\u3000\u200bx\u00e9\u6771",
                                    max_size=12)))
def test_folded_matches(texts):
    folded, words = COMPILED.folded(texts)
    with python_loops():
        assert (folded, words) == SG._folded(texts)


# ---------------------------------------------------------------- the sketch's words

def _reference_words(texts: list[str]) -> list[bytes]:
    """The sketch's words: ``\\w+`` of the NFKC, lower-cased text (the reference)."""
    text = unicodedata.normalize("NFKC", "\n".join(texts)).lower()
    return [w.encode("utf-8", "surrogatepass") for w in re.findall(r"\w+", text)]


# Latin-1 (the fast path, with the characters NFKC changes), the separators it
# replaces, and other scripts, marks and compatibility forms (the general path).
_LATIN1 = "aZk09_ -'\n\t\x85\xa0\xadéÀßÿ×÷ª²½´¨µº¿" + F._SEPARATORS
_ANY = "aZ9_ éßİΣσ²½Ⅻﬁ\u0301\u0307٣३क\u093fษ\u0e31東は・ｶ한Ａ\u212a\u2033\u2011"
_TEXTS = st.lists(st.text(alphabet=_LATIN1, max_size=30), max_size=6) | st.lists(
    st.text(alphabet=_LATIN1 + _ANY, max_size=30) | st.text(max_size=10), max_size=6
)


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
def test_sketch_words_match_reference(texts):
    assert F.sketch_words(texts) == _reference_words(texts)


@needs_compiled
@settings(max_examples=600, deadline=None)
@given(_TEXTS)
def test_tokenize_many_matches(texts):
    compiled = F.tokenize_many(texts)
    with python_loops():
        assert compiled == F.tokenize_many(texts)


@needs_compiled
@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_shingle_sketch_matches(texts):
    compiled = SG.shingle_sketch(texts)
    with python_loops():
        assert compiled == SG.shingle_sketch(texts)


@needs_compiled
@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b9", "é", "Ab", "x_y", "ÿ", "2", "the"]),
                         max_size=300).map(" ".join), max_size=4))
def test_shingle_sketch_of_many_repeated_words_matches(blocks):
    """Long texts of a few words: the compiled sketch's table of words seen."""
    compiled = SG.shingle_sketch(blocks)
    with python_loops():
        assert compiled == SG.shingle_sketch(blocks)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(st.text() | st.lists(st.text(alphabet=_LATIN1 + _ANY, max_size=20)).map("\n".join),
       st.integers(1, 6), st.integers(0, 2**64 - 1))
def test_text_sketch_matches(text, n, seed):
    """The compiled sketch of any Unicode text (lone surrogates included), line
    by line, Latin-1 lines through the table and others by the general path,
    against its words as sketch_words reads them, hashed and shingled."""
    words = _reference_words([text])
    reference = SG.sketch_of_hashes(F.shingle_hashes(F.word_hashes(words, seed), n))
    found = COMPILED.text_sketch([text], F._LATIN1_SKETCH_WORDS, F._SEPARATORS, F.sketch_text, n,
                                 seed, DIGEST, {})
    assert found == reference


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=_LATIN1 + _ANY, max_size=20), max_size=6),
       st.lists(st.text(alphabet=_LATIN1 + _ANY, max_size=20), max_size=6))
def test_shingle_sketch_of_words_known_matches(first, second):
    """A second sketch taking the words of texts the first one read (the own
    text's blocks in the main text's): the same as reading them again."""
    words: dict[str, bytes] = {}
    SG.shingle_sketch(first, words)
    texts = second + first[: len(first) // 2]
    compiled = SG.shingle_sketch(texts, words)
    with python_loops():
        assert compiled == SG.shingle_sketch(texts)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(st.lists(st.text() | st.text(alphabet=_LATIN1 + _ANY, max_size=20)))
def test_exact_hash_matches(texts):
    """The exact key's hash of any Unicode texts (lone surrogates included),
    Latin-1 texts lower-cased through the table, others by str.lower."""
    compiled = SG._exact(texts)
    with python_loops():
        assert compiled == SG._exact(texts)


@contextmanager
def digest_in_python():
    """The compiled loops hashing through ``xxhash.xxh3_64_intdigest``, as
    where the ``xxhash`` extension exports no ``XXH3_64bits_withSeed``."""
    before = COMPILED.c_digest(False)
    try:
        yield
    finally:
        COMPILED.c_digest(before)


@needs_compiled
def test_tokens_hashed_in_c():
    """The xxhash extension this suite runs with exports its xxh3 and the
    compiled loops call it (else they would be about a tenth slower, ``make
    bench-fingerprint``)."""
    assert COMPILED.c_digest(), "xxhash's XXH3_64bits_withSeed was not found or not the same"


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(_TOKENS, st.lists(st.text(alphabet=_LATIN1 + _ANY, max_size=20), max_size=6),
       st.integers(0, 2**64 - 1))
def test_c_digest_matches_python_digest(tokens, texts, seed):
    """Every compiled loop that hashes gives the same with the hash called in
    C and through ``digest``: token hashes, shingles, feature hashes, the
    sketch and the exact key (lone surrogates and any script included)."""
    features = dict.fromkeys(tokens, 1.0)

    def hashed():
        return (
            F.token_hashes(tokens, seed).tolist(),
            F._shingles_within([tokens, tokens[:3]], 3, seed).tolist(),
            F.feature_hashes(features, seed).tolist(),
            COMPILED.text_sketch(texts + tokens, F._LATIN1_SKETCH_WORDS, F._SEPARATORS,
                                 F.sketch_text, 5, seed, DIGEST, {}),
            SG._exact(texts + tokens),
        )

    in_c = hashed()
    with digest_in_python():
        assert hashed() == in_c


def test_separators_are_separators_everywhere():
    """Each separator the fast paths turn into a space is, and stays after NFKC,
    a separator for the fingerprint's tokenizer and for the sketch's ``\\w+``,
    and no combining mark (nothing joins it to its neighbours)."""
    for char in F._SEPARATORS:
        assert ord(char) > 0xFF
        for c in {char, *unicodedata.normalize("NFKC", char)}:
            assert unicodedata.category(c)[0] not in "LMN" and not unicodedata.combining(c), char
            assert not re.match(r"\w", c) and not F._WORD_OR_MARK.match(c), char


# ---------------------------------------------------------------- whole pages


def _pages() -> list:
    pages = [path for _url, path, _ann in web_pages()]
    rng = random.Random(12)
    for site in ("python-3.11", "django-3.2", "cmake-3.25", "libstdc++-12", "postgresql-15",
                 "git-2.39"):
        found = site_pages(site)
        pages += rng.sample(found, min(25, len(found)))
    return pages


@needs_compiled
@needs_corpus
def test_corpus_signatures_match():
    """Fingerprint, feature count, reason and sketch of every corpus web page and
    of pages of each documentation site: compiled loops and Python alike, and
    the sketch's words of every block equal to the reference's."""
    pages = _pages()
    assert len(pages) > 400
    for path in pages:
        root = parse_html(path.read_bytes())
        compiled = SG.analyse(root)
        with python_loops():
            found = SG.analyse(root)
        assert found.signature == compiled.signature, path
        assert found.details == compiled.details, path
        assert found.evidence.sketch == compiled.evidence.sketch, path
        page, _ = F.read_page(root)
        texts = [text for text, _ in page.blocks]
        assert F.sketch_words(texts) == _reference_words(texts), path
