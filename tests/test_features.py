"""Tokens and spot signatures."""

from __future__ import annotations

import importlib
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_simhash.fingerprinting.extract import MainText

# The module; ``scrapy_simhash.fingerprinting.features`` is also the name of a re-exported function.
F = importlib.import_module("scrapy_simhash.fingerprinting.features")


def test_tokenize_unicode():
    assert F.tokenize("Hello, WORLD! Straße ＡＢＣ ﬁne foo_bar") == [
        "hello", "world", "straße", "abc", "fine", "foo", "bar",
    ]


def test_tokens_with_digits_dropped():
    assert F.tokenize("on 12 May 2024 at 10:30, item A4 costs 9€ v2beta") == [
        "on", "may", "at", "item", "costs",
    ]
    assert F.tokenize("٣ apples and ３ pears") == ["apples", "and", "pears"]  # any Unicode digit


def test_cjk_and_thai_split():
    assert F.tokenize("東京は晴れです") == ["東", "京", "は", "晴", "れ", "で", "す"]
    assert F.tokenize("中文abc的") == ["中", "文", "abc", "的"]
    assert F.tokenize("ｶﾀｶﾅ") == ["カ", "タ", "カ", "ナ"]  # NFKC: half-width katakana
    # Thai: one token per base character with its combining marks.
    assert F.tokenize("ที่นี้มี") == ["ที่", "นี้", "มี"]
    assert F.tokenize("한국어 문장") == ["한국어", "문장"]  # Korean has spaces


def test_antecedents():
    ante = F.antecedents()
    assert {"the", "is", "der", "ist", "le", "est", "el", "の", "は", "的", "了", "是", "ที่"} <= ante
    # No navigation vocabulary.
    assert not {"home", "next", "page", "more", "help", "new", "click", "in", "to", "of"} & ante
    assert all(F.tokenize(w) == [w] for w in ante)
    assert 100 < len(ante) < 600


def test_spots_golden():
    counts: dict[str, float] = {}
    F.spots(F.tokenize("The cat is on the mat and it was the best of the times"), counts)
    # CHAIN = 1: each antecedent and the next non-antecedent token.
    assert counts == {
        "the cat": 1, "is mat": 1, "on mat": 1, "the mat": 1,
        "it best": 1, "was best": 1, "the best": 1, "the times": 1,
    }


def test_spots_weight_is_count_and_menus_anchor_nothing():
    counts: dict[str, float] = {}
    F.spots(F.tokenize("Home News Sport Weather Contact Login Next Page"), counts)
    assert counts == {}
    F.spots(F.tokenize("the cat sat. The cat ran. THE CAT!"), counts)
    assert counts == {"the cat": 3}


def test_spots_cjk():
    counts: dict[str, float] = {}
    F.spots(F.tokenize("猫は魚を食べた"), counts)
    assert counts == {"は 魚": 1, "を 食": 1}  # た ends the text: no chain


def test_main_text_features():
    main = MainText("Night trains 2024", ["A new timetable"], ["The train is late.", "It is."], ["x is None"])
    feats = F.main_text_features(main)
    assert feats == {
        "the train": 1.0,
        "is late": 1.0,
        "title:night": F.TITLE_WEIGHT,
        "title:trains": F.TITLE_WEIGHT,
        "h:a": F.HEADING_WEIGHT,
        "h:new": F.HEADING_WEIGHT,
        "h:timetable": F.HEADING_WEIGHT,
    }


def _reference_spots(tokens: list[str]) -> Counter:
    """Brute force: for each antecedent, the next CHAIN non-antecedent tokens."""
    ante = F.antecedents()
    out: Counter = Counter()
    for i, t in enumerate(tokens):
        if t in ante:
            chain = [u for u in tokens[i + 1 :] if u not in ante][: F.CHAIN]
            if chain:
                out[" ".join([t, *chain])] += 1
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["the", "is", "a", "der", "cat", "dog", "mat", "の", "猫"]), max_size=30))
def test_spots_match_brute_force(tokens):
    counts: dict[str, float] = {}
    F.spots(tokens, counts)
    assert counts == dict(_reference_spots(tokens))


@pytest.mark.parametrize(
    "title, words",
    [
        ("Night trains | Rail News", ["night", "trains"]),
        ("Night trains are back - Valley Morning Post (print)", ["night", "trains", "are", "back"]),
        ("Valley Morning Post » Night trains are back", ["night", "trains", "are", "back"]),
        ("json — JSON encoder and decoder — Python 3.11 documentation", ["json", "encoder", "and", "decoder"]),
        ("e-mail and x-ray (2024 edition)", ["e", "mail", "and", "x", "ray", "edition"]),
        ("東京の天気 | ニュース", ["東", "京", "の", "天", "気"]),
        ("", []),
    ],
)
def test_title_words_keep_the_longest_part(title, words):
    assert F.title_words(title) == words


def test_spot_count_matches_spots():
    tokens = F.tokenize("The train is late and the night is long, it is.")
    counts: dict[str, float] = {}
    F.spots(tokens, counts)
    assert F.spot_count(tokens) == sum(counts.values())



def _reference_tokenize(text: str) -> list[str]:
    """The plain tokenizer (unchanged since FINGERPRINT_VERSION 2) the faster one must match."""
    import unicodedata

    word = F._WORD
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        if F._HAS_MARKS.search(text):
            word = re.compile(
                r"(?:[^\W_]|[\u0300-\u036f\u0900-\u0963\u0966-\u0dff\u0e00-\u0eff])+"
            )
    tokens = []
    for w in word.findall(text.lower()):
        if w.isascii():
            if w.isalpha():
                tokens.append(w)
        elif F._SPECIAL.search(w) is None:
            tokens.append(w)
        else:
            tokens += [p for p in F._PART.findall(w) if F._DIGIT.search(p) is None]
    return tokens


# Letters, digits of several scripts, marks, CJK/Kana/Thai edge characters
# (non-word ones too: ・ ฿ ๛), compatibility forms, "_", "İ" (lower-cases to a
# letter and a combining mark).
_ALPHABET = (
    "aZk09_ -'’\n\u00a0éßİΣσ²½Ⅻﬁ\u0301\u0307٣३क\u093f\u0964ษ\u0e31\u0e48\u0e50฿๛ກ"
    "東は・\u3099ｶ中한\u30fbＡ"
)


# Latin-1 (the fast path: letters, digits, spaces, the characters NFKC changes
# such as ª ² ½ ´ ¨ µ) and the common separators outside it (’ – „ € … and spaces).
_LATIN1_ALPHABET = (
    "aZk09_ -'\n\t\x85\xa0\xadéÀßÿ×÷ª²½´¨µº¿"
    + F._SEPARATORS
)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=40) | st.text(alphabet=_LATIN1_ALPHABET, max_size=40))
def test_tokenize_matches_reference(text):
    assert F.tokenize(text) == _reference_tokenize(text)


# Texts of a page's blocks: mixed scripts, or all Latin-1 (the batched fast
# path); "\x02" joins them in tokenize_many, the Kelvin sign lower-cases to "k".
_TEXTS = st.text(alphabet=_ALPHABET, max_size=40) | st.text(
    alphabet=_LATIN1_ALPHABET + "\x02\u212a", max_size=40
)
_LATIN1_TEXTS = st.text(alphabet=_LATIN1_ALPHABET, max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXTS, max_size=6) | st.lists(_LATIN1_TEXTS, max_size=6))
def test_tokenize_many_matches_tokenize(texts):
    assert F.tokenize_many(texts) == [F.tokenize(text) for text in texts]


@pytest.mark.parametrize(
    "text", ["İstanbul", "İ\u0301", "a_b c__d _x_", "x\u0301_y", "İ_ı", "ab_12 cd"]
)
def test_tokenize_edge_cases_match_reference(text):
    assert F.tokenize(text) == _reference_tokenize(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["the", "is", "a", "cat", "dog", "の", "猫"]), max_size=12),
        max_size=5,
    )
)
def test_spot_counts_match_spot_count(token_lists):
    assert F._spot_counts(token_lists) == [F.spot_count(t) for t in token_lists]
