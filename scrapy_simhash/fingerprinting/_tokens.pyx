# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The token loops of :mod:`scrapy_simhash.fingerprinting.features` and the
sketch of :mod:`scrapy_simhash.fingerprinting.signature`, compiled.

Each function returns exactly what its pure-Python reference returns (named in
its docstring; ``tests/test_tokens.py`` checks both on the corpus and on
generated text): the loops over a page's tokens, its spot signatures, its
token hashes and its shingles run in C instead of the interpreter. Tokens are
hashed by xxhash's own ``XXH3_64bits_withSeed``, called in C from the
``xxhash`` package's extension where it exports it (:func:`c_digest`), else by
``xxhash.xxh3_64_intdigest`` (passed in as ``digest``) once per distinct
token: one hash function, one definition.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcmp, memcpy


cdef extern from "Python.h":
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_1BYTE_KIND
    bint PyUnicode_IS_ASCII(object text)
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) noexcept nogil
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch) noexcept nogil
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) noexcept nogil
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value) noexcept nogil

import ctypes

import numpy as np
import xxhash

# ---------------------------------------------------------------- the hash
# xxh3-64 in C: the function ``xxhash.xxh3_64_intdigest`` itself calls, found
# by name in the extension that defines it; a byte string hashed so costs no
# Python call, no bytes object and no int. Used only once it has returned
# ``xxh3_64_intdigest``'s values on samples (it is the same code); else, or
# where the extension does not export it, each distinct token goes through
# ``digest``.

ctypedef uint64_t (*_XXH3)(const void* data, size_t length, uint64_t seed) noexcept nogil
cdef _XXH3 _located = NULL  # found and checked at import
cdef _XXH3 _xxh3 = NULL  # in use (NULL: every hash through ``digest``)


cdef _XXH3 _locate():
    try:
        from xxhash import _xxhash

        library = ctypes.CDLL(_xxhash.__file__)
        address = ctypes.cast(library.XXH3_64bits_withSeed, ctypes.c_void_p).value
    except (ImportError, AttributeError, OSError, TypeError):
        return NULL
    if not address:
        return NULL
    cdef _XXH3 found = <_XXH3><uintptr_t>address
    cdef bytes sample
    cdef uint64_t seed
    for sample, seed in (
        (b"", 0), (b"a", 1), (b"spot signatures", 0x5EED), (bytes(range(256)) * 5, 2**64 - 1),
        ("\u00e9t\u00e9 \u4e2d".encode("utf-8"), 0xB10C),
    ):
        if found(PyBytes_AS_STRING(sample), len(sample), seed) != xxhash.xxh3_64_intdigest(
            sample, seed
        ):
            return NULL
    return found


_located = _locate()
_xxh3 = _located


def c_digest(enabled=None):
    """Whether tokens are hashed in C; ``enabled`` False makes every hash go
    through ``digest`` (True: back to C, where it was found). Returns the
    state before the call."""
    global _xxh3
    before = _xxh3 != NULL
    if enabled is not None:
        _xxh3 = _located if enabled else NULL
    return before


cdef inline uint64_t _digest_str(str token, uint64_t seed, object digest) except? 0:
    """xxh3_64 of ``token``'s UTF-8 bytes (surrogates passed)."""
    cdef bytes data
    if _xxh3 != NULL and PyUnicode_IS_ASCII(token):
        return _xxh3(PyUnicode_DATA(token), PyUnicode_GET_LENGTH(token), seed)
    data = token.encode("utf-8", "surrogatepass")
    if _xxh3 != NULL:
        return _xxh3(PyBytes_AS_STRING(data), len(data), seed)
    return digest(data, seed)


# splitmix64's finalizer and step (features._MIX1, _MIX2, _STEP).
cdef uint64_t MIX1 = 0xBF58476D1CE4E5B9ULL
cdef uint64_t MIX2 = 0x94D049BB133111EBULL
cdef uint64_t STEP = 0x9E3779B97F4A7C15ULL


cdef inline uint64_t _mix(uint64_t h) noexcept nogil:
    h = h ^ (h >> 30)
    h = h * MIX1
    h = h ^ (h >> 27)
    h = h * MIX2
    return h ^ (h >> 31)


cdef inline uint64_t _shingle(const uint64_t* hashes, Py_ssize_t n) noexcept nogil:
    """The hash of the ``n`` token hashes from ``hashes`` (features.shingle_hashes)."""
    cdef uint64_t out = hashes[0]
    cdef Py_ssize_t i
    for i in range(1, n):
        out = _mix(out + STEP) ^ hashes[i]
    return _mix(out)


cdef int _hash_tokens(list tokens, uint64_t* out, object seed, object digest) except -1:
    """``out[i]`` = xxh3_64 of ``tokens[i]``'s UTF-8 (surrogates passed): in C,
    or each distinct token hashed once by ``digest``."""
    cdef dict table = {}
    cdef Py_ssize_t i
    cdef object token, value
    cdef uint64_t s = seed
    if _xxh3 != NULL:
        for i in range(len(tokens)):
            out[i] = _digest_str(<str?>tokens[i], s, digest)
        return 0
    for i in range(len(tokens)):
        token = tokens[i]
        value = table.get(token)
        if value is None:
            value = table[token] = digest((<str?>token).encode("utf-8", "surrogatepass"), seed)
        out[i] = value
    return 0


def token_hashes(list tokens, object seed, object digest):
    """features.token_hashes: xxh3_64 of each ``str`` token (``uint64``)."""
    cdef Py_ssize_t count = len(tokens)
    result = np.empty(count, dtype=np.uint64)
    cdef uint64_t[::1] view = result
    if count:
        _hash_tokens(tokens, &view[0], seed, digest)
    return result


def shingles_within(list token_lists, Py_ssize_t n, object seed, object digest):
    """features._shingles_within: the ``n``-shingle hashes of each token list,
    none crossing from one list into the next; a list shorter than ``n`` is one
    shingle. The lists' shingles in order, then those of the short lists."""
    cdef list flat = []
    cdef list lengths = []
    cdef Py_ssize_t total = 0, shingles = 0, length, start, i, k
    for tokens in token_lists:
        length = len(tokens)
        flat.extend(tokens)
        lengths.append(length)
        total += length
        if length >= n:
            shingles += length - n + 1
        elif length:
            shingles += 1
    result = np.empty(shingles if n > 1 else total, dtype=np.uint64)
    if not total:
        return result
    cdef uint64_t[::1] out = result
    cdef uint64_t* hashes = <uint64_t*>PyMem_Malloc(total * sizeof(uint64_t))
    if hashes == NULL:
        raise MemoryError()
    try:
        _hash_tokens(flat, hashes, seed, digest)
        if n <= 1:
            for i in range(total):
                out[i] = _mix(hashes[i])
            return result
        k = 0
        start = 0
        for length in lengths:
            if length >= n:
                for i in range(start, start + length - n + 1):
                    out[k] = _shingle(hashes + i, n)
                    k += 1
            start += length
        start = 0
        for length in lengths:
            if 0 < length < n:
                out[k] = _shingle(hashes + start, length)
                k += 1
            start += length
        return result
    finally:
        PyMem_Free(hashes)


cdef bytes _minhash(const uint64_t* hashes, Py_ssize_t count, Py_ssize_t n):
    """signature.sketch_of_hashes(shingle_hashes(hashes, n)) of ``count`` token
    hashes: bin ``i`` holds a byte (1-255) of the least shingle hash whose 6
    leading bits are ``i``, or 0."""
    cdef uint64_t least[64]
    cdef uint8_t out[64]
    cdef uint64_t h
    cdef Py_ssize_t i
    cdef int b
    for b in range(64):
        least[b] = 0
        out[b] = 0
    if count:
        if count < n:
            n = count
        for i in range(count - n + 1):
            h = _shingle(hashes + i, n)
            b = <int>(h >> 58)
            if out[b] == 0 or h < least[b]:
                least[b] = h
                out[b] = 1  # filled; the byte is set below
        for b in range(64):
            if out[b]:
                out[b] = <uint8_t>(least[b] % 255 + 1)
    return PyBytes_FromStringAndSize(<char*>out, 64)


def spots(list tokens, dict counts, double weight, frozenset ante):
    """features.spots with CHAIN == 1: each antecedent with the next token that
    is not one, its weight added in ``counts``."""
    cdef object following = None
    cdef Py_ssize_t i
    cdef object token, key
    for i in range(len(tokens) - 1, -1, -1):
        token = tokens[i]
        if token in ante:
            if following is not None:
                key = (<str?>token) + " " + (<str?>following)
                counts[key] = counts.get(key, 0.0) + weight
        else:
            following = token


def spot_counts(list token_lists, frozenset ante):
    """features._spot_counts: the spot signatures of each token list."""
    cdef list result = []
    cdef Py_ssize_t i, count
    cdef bint following
    cdef list tokens
    for sequence in token_lists:
        tokens = sequence if type(sequence) is list else list(sequence)
        count = 0
        following = False
        for i in range(len(tokens) - 1, -1, -1):
            if tokens[i] in ante:
                count += following
            else:
                following = True
        result.append(count)
    return result


def feature_hashes(dict features, object seed, object digest):
    """The xxh3_64 of each feature's UTF-8 (surrogatepass) text, in the dict's
    order (hashing.fingerprint_of)."""
    result = np.empty(len(features), dtype=np.uint64)
    if not features:
        return result
    cdef uint64_t[::1] out = result
    cdef Py_ssize_t i = 0
    cdef uint64_t s = seed
    for feature in features:
        out[i] = _digest_str(<str?>feature, s, digest)
        i += 1
    return result


# ---------------------------------------------------------------- folded blocks


def folded(list texts):
    """``[" ".join(text.split()) for text in texts]`` (each run of white space,
    as ``str.split`` reads it, one space; none at either end), and the words
    of each folded text (0 when it is empty). A text already folded is
    returned as it is."""
    cdef list out = [], sizes = []
    cdef int kind
    cdef const void* data
    cdef void* buf
    cdef Py_ssize_t length, i, k, words
    cdef uint32_t c
    cdef bint space, changed
    for text in texts:
        length = PyUnicode_GET_LENGTH(<str?>text)
        kind = PyUnicode_KIND(text)
        data = PyUnicode_DATA(text)
        words = 0
        space = True  # before the first character
        changed = False
        for i in range(length):
            c = PyUnicode_READ(kind, data, i)
            if Py_UNICODE_ISSPACE(c):
                changed |= space or c != 0x20
                space = True
            else:
                words += space
                space = False
        if length and space:  # white space at the end
            changed = True
        sizes.append(words)
        if not changed:
            out.append(text)
            continue
        buf = PyMem_Malloc(length * kind + 1)
        if buf == NULL:
            raise MemoryError()
        try:
            k = 0
            space = False
            for i in range(length):
                c = PyUnicode_READ(kind, data, i)
                if Py_UNICODE_ISSPACE(c):
                    space = k > 0
                else:
                    if space:
                        PyUnicode_WRITE(kind, buf, k, 0x20)
                        k += 1
                        space = False
                    PyUnicode_WRITE(kind, buf, k, c)
                    k += 1
            out.append(PyUnicode_FromKindAndData(kind, buf, k))
        finally:
            PyMem_Free(buf)
    return out, sizes


# ---------------------------------------------------------------- Latin-1 text
# latin1_tokens (and text_sketch, a line at a time) read a ``str`` whose
# characters all fit in one byte (CPython's 1-byte kind: Latin-1) through a
# 256-byte table, the one the Python fast path gives ``bytes.translate``: 0x20
# separates words, 0 marks a character NFKC changes (the text needs the
# general path), 1 a digit (latin1_tokens' table); any other value is the
# character (lower-cased by the sketch's table).


cdef inline object _latin1(const unsigned char* data, Py_ssize_t length):
    return PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, data, length)


def latin1_tokens(list parts, bytes table):
    """features.tokenize_many's fast path: for each lower-cased part, its words
    without those holding a digit, or None when it needs the general path (a
    character beyond Latin-1 or one NFKC changes)."""
    cdef const unsigned char* tab = <const unsigned char*>PyBytes_AS_STRING(table)
    cdef const unsigned char* data
    cdef Py_ssize_t length, i, start
    cdef unsigned char t
    cdef bint digit, bad
    cdef list result = []
    cdef list tokens
    for part in parts:
        if PyUnicode_KIND(part) != PyUnicode_1BYTE_KIND:
            result.append(None)
            continue
        data = <const unsigned char*>PyUnicode_DATA(part)
        length = PyUnicode_GET_LENGTH(part)
        tokens = []
        start = -1
        digit = bad = False
        for i in range(length):
            t = tab[data[i]]
            if t == 0x20:
                if start >= 0:
                    if not digit:
                        tokens.append(_latin1(data + start, i - start))
                    start = -1
                    digit = False
            elif t == 0:
                bad = True
                break
            else:
                if start < 0:
                    start = i
                if t == 1:
                    digit = True
        if bad:
            result.append(None)
            continue
        if start >= 0 and not digit:
            tokens.append(_latin1(data + start, length - start))
        result.append(tokens)
    return result


# ---------------------------------------------------------------- the sketch of a text
# sketch_words' words found line by line (no word spans a line break): a line
# of Latin-1 characters NFKC keeps read through the sketch's Latin-1 table
# (the separators of features._SEPARATORS spaces), any other line as its
# general path reads it. Each word's UTF-8 bytes go to one buffer, each
# distinct word is hashed once, each text's hashes are kept for the next
# sketch of the page, and the shingles are minhashed in C.


cdef inline uint64_t _fnv(const unsigned char* data, Py_ssize_t length) noexcept nogil:
    cdef uint64_t h = 0xCBF29CE484222325ULL
    cdef Py_ssize_t i
    for i in range(length):
        h = (h ^ data[i]) * 0x100000001B3ULL
    return h


cdef inline bint _is_word(uint32_t c) noexcept nogil:
    """Whether ``re``'s ``\\w`` matches ``c`` in a ``str`` pattern: an
    alphanumeric character (``str.isalnum``) or "_"."""
    if c < 0x80:
        return (0x61 <= c <= 0x7A) or (0x30 <= c <= 0x39) or (0x41 <= c <= 0x5A) or c == 0x5F
    return Py_UNICODE_ISALNUM(c)


cdef struct _Words:
    # the words' UTF-8 bytes, one after the other
    unsigned char* bytes
    Py_ssize_t size, room
    # word i is bytes[ends[i - 1]:ends[i]] (ends[-1]: 0)
    Py_ssize_t* ends
    Py_ssize_t count, room_words
    bint inside  # a word is being written


cdef int _grow(_Words* w, Py_ssize_t more) except -1:
    """Room for ``more`` bytes and one more word."""
    cdef void* p
    if w.size + more > w.room:
        w.room = 2 * (w.size + more)
        p = PyMem_Realloc(w.bytes, w.room)
        if p == NULL:
            raise MemoryError()
        w.bytes = <unsigned char*>p
    if w.count + 1 > w.room_words:
        w.room_words = 2 * (w.count + 1)
        p = PyMem_Realloc(w.ends, w.room_words * sizeof(Py_ssize_t))
        if p == NULL:
            raise MemoryError()
        w.ends = <Py_ssize_t*>p
    return 0


cdef inline Py_ssize_t _utf8(unsigned char* out, uint32_t c) noexcept nogil:
    """Write character ``c`` as UTF-8 (surrogates passed) and return its bytes."""
    if c < 0x80:
        out[0] = <unsigned char>c
        return 1
    if c < 0x800:
        out[0] = 0xC0 | (c >> 6)
        out[1] = 0x80 | (c & 0x3F)
        return 2
    if c < 0x10000:
        out[0] = 0xE0 | (c >> 12)
        out[1] = 0x80 | ((c >> 6) & 0x3F)
        out[2] = 0x80 | (c & 0x3F)
        return 3
    out[0] = 0xF0 | (c >> 18)
    out[1] = 0x80 | ((c >> 12) & 0x3F)
    out[2] = 0x80 | ((c >> 6) & 0x3F)
    out[3] = 0x80 | (c & 0x3F)
    return 4


cdef inline int _put(_Words* w, uint32_t c) except -1:
    """Character ``c`` of a word."""
    if w.size + 4 > w.room or w.count + 1 > w.room_words:
        _grow(w, 4)
    w.size += _utf8(w.bytes + w.size, c)
    w.inside = True
    return 0


cdef inline void _end(_Words* w) noexcept nogil:
    """The end of a word, if one is being written (room for it was made)."""
    if w.inside:
        w.ends[w.count] = w.size
        w.count += 1
        w.inside = False


cdef int _read_words(_Words* w, str text) except -1:
    """The ``\\w+`` words of ``text`` (``re``'s: runs of :func:`_is_word`)."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t i
    cdef uint32_t c
    for i in range(PyUnicode_GET_LENGTH(text)):
        c = PyUnicode_READ(kind, data, i)
        if _is_word(c):
            _put(w, c)
        else:
            _end(w)
    _end(w)
    return 0


cdef int _hash_words(_Words* w, uint64_t* hashes, object seed, object digest) except -1:
    """``hashes[i]``: the hash of word ``i``: in C, or each distinct word
    hashed once by ``digest`` (found again by a table of their FNV-1a hashes)."""
    cdef Py_ssize_t count = w.count
    cdef Py_ssize_t size = 16, mask, slot, j, other, start, length
    cdef uint64_t s
    if not count:
        return 0
    if _xxh3 != NULL:
        s = seed
        for j in range(count):
            start = w.ends[j - 1] if j else 0
            hashes[j] = _xxh3(w.bytes + start, w.ends[j] - start, s)
        return 0
    while size < 2 * count:
        size *= 2
    mask = size - 1
    cdef Py_ssize_t* slots = <Py_ssize_t*>PyMem_Malloc(size * sizeof(Py_ssize_t))
    cdef uint64_t* keys = <uint64_t*>PyMem_Malloc(size * sizeof(uint64_t))
    cdef uint64_t key
    cdef const unsigned char* data = w.bytes
    try:
        if not (slots and keys):
            raise MemoryError()
        for slot in range(size):
            slots[slot] = -1
        for j in range(count):
            start = w.ends[j - 1] if j else 0
            length = w.ends[j] - start
            key = _fnv(data + start, length)
            slot = <Py_ssize_t>(key & <uint64_t>mask)
            while True:
                other = slots[slot]
                if other < 0:  # a new word
                    slots[slot] = j
                    keys[slot] = key
                    hashes[j] = digest(
                        PyBytes_FromStringAndSize(<const char*>data + start, length), seed)
                    break
                if keys[slot] == key:
                    if (w.ends[other] - (w.ends[other - 1] if other else 0) == length
                            and memcmp(data + w.ends[other] - length, data + start, length) == 0):
                        hashes[j] = hashes[other]
                        break
                slot = (slot + 1) & mask
        return 0
    finally:
        PyMem_Free(slots)
        PyMem_Free(keys)


cdef int _read_text(_Words* w, str text, const unsigned char* table, str separators,
                    object general) except -1:
    """The sketch's words of ``text``, line by line: a line of Latin-1
    characters ``table`` does not map to 0 (and of ``separators``, spaces)
    through ``table``; any other line as ``re``'s ``\\w+`` words of
    ``general(line)`` (features.sketch_text: its NFKC, lower-cased form)."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text), start = 0, end, i
    cdef uint32_t c
    cdef unsigned char t
    cdef bint latin1
    _grow(w, length + 16)
    while start <= length:
        end = start
        latin1 = True
        while end < length:
            c = PyUnicode_READ(kind, data, end)
            if c == 0x0A:
                break
            if latin1 and (table[c] == 0 if c <= 0xFF else <Py_UCS4>c not in separators):
                latin1 = False
            end += 1
        if latin1:
            for i in range(start, end):
                c = PyUnicode_READ(kind, data, i)
                t = 0x20 if c > 0xFF else table[c]
                if t != 0x20:
                    _put(w, t)
                else:
                    _end(w)
            _end(w)
        else:
            _read_words(w, general(text[start:end]))
        start = end + 1
    return 0


def text_sketch(list texts, bytes table, str separators, object general, Py_ssize_t n,
                object seed, object digest, dict known):
    """signature.sketch_of_hashes(shingle_hashes(word_hashes(sketch_words(texts),
    seed), n)): the 64-byte b-bit one-permutation minhash of the ``n``-shingles
    of the sketch's words of ``texts`` (:func:`_read_text`). ``known`` maps a
    text to its words' hashes (``uint64`` bytes) when it was read before: they
    are taken, and those of the texts read are added."""
    cdef const unsigned char* tab = <const unsigned char*>PyBytes_AS_STRING(table)
    cdef Py_ssize_t count = len(texts), total = 0, k, first, end, at = 0
    cdef list found = [known.get(text) for text in texts]
    cdef _Words w
    w.bytes = NULL
    w.ends = NULL
    w.size = w.room = w.count = w.room_words = 0
    w.inside = False
    cdef Py_ssize_t* ranges = <Py_ssize_t*>PyMem_Malloc((count + 1) * sizeof(Py_ssize_t))
    cdef uint64_t* hashes = NULL
    cdef uint64_t* words = NULL
    try:
        if ranges == NULL:
            raise MemoryError()
        ranges[0] = 0
        for k in range(count):  # the words of the texts not known, one after the other
            if found[k] is None:
                _read_text(&w, <str?>texts[k], tab, separators, general)
            else:
                total += len(<bytes?>found[k]) // 8
            ranges[k + 1] = w.count
        total += w.count
        words = <uint64_t*>PyMem_Malloc((w.count + 1) * sizeof(uint64_t))
        hashes = <uint64_t*>PyMem_Malloc((total + 1) * sizeof(uint64_t))
        if words == NULL or hashes == NULL:
            raise MemoryError()
        _hash_words(&w, words, seed, digest)
        for k in range(count):
            if found[k] is None:
                first, end = ranges[k], ranges[k + 1]
                memcpy(hashes + at, words + first, (end - first) * sizeof(uint64_t))
                known[texts[k]] = PyBytes_FromStringAndSize(
                    <const char*>(words + first), (end - first) * sizeof(uint64_t))
                at += end - first
            else:
                memcpy(hashes + at, PyBytes_AS_STRING(found[k]), len(found[k]))
                at += len(found[k]) // 8
        return _minhash(hashes, total, n)
    finally:
        PyMem_Free(w.bytes)
        PyMem_Free(w.ends)
        PyMem_Free(ranges)
        PyMem_Free(words)
        PyMem_Free(hashes)


# ---------------------------------------------------------------- exact keys


def exact_hash(list texts, bytes lower, object seed, object digest):
    """``digest(" ".join(texts).lower().encode("utf-8", "surrogatepass"), seed)``
    (signature._exact) without the joined text: a Latin-1 text lower-cased
    through ``lower`` (each character's lower-case form, one Latin-1
    character), any other by ``str.lower`` (lower-casing reads nothing across
    a space)."""
    cdef const unsigned char* tab = <const unsigned char*>PyBytes_AS_STRING(lower)
    cdef Py_ssize_t size = 0, room = 0, need, i, j, length
    cdef int kind
    cdef const void* data
    cdef unsigned char* buf = NULL
    cdef void* p
    cdef bint latin1
    try:
        for i in range(len(texts)):
            text = <str?>texts[i]
            latin1 = PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND
            if not latin1:
                text = text.lower()
            kind = PyUnicode_KIND(text)
            data = PyUnicode_DATA(text)
            length = PyUnicode_GET_LENGTH(text)
            need = size + 1 + (2 if latin1 else 4) * length
            if need > room:
                room = 2 * need
                p = PyMem_Realloc(buf, room)
                if p == NULL:
                    raise MemoryError()
                buf = <unsigned char*>p
            if i:
                buf[size] = 0x20
                size += 1
            if PyUnicode_IS_ASCII(text):  # one byte each, lower-cased in place
                for j in range(length):
                    buf[size + j] = tab[(<const unsigned char*>data)[j]]
                size += length
            elif latin1:
                for j in range(length):
                    size += _utf8(buf + size, tab[(<const unsigned char*>data)[j]])
            else:
                for j in range(length):
                    size += _utf8(buf + size, PyUnicode_READ(kind, data, j))
        if _xxh3 != NULL:
            return _xxh3(buf, size, <uint64_t>seed)
        return digest(PyBytes_FromStringAndSize(<const char*>buf, size), seed)
    finally:
        PyMem_Free(buf)
