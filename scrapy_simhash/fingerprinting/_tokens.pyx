# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The token loops of :mod:`scrapy_simhash.fingerprinting.features` and the
sketch of :mod:`scrapy_simhash.fingerprinting.signature`, compiled.

Each function returns exactly what its pure-Python reference returns (named in
its docstring; ``tests/test_tokens.py`` checks both on the corpus and on
generated text): the loops over a page's tokens, its spot signatures, its
token hashes and its shingles run in C instead of the interpreter. Tokens are
still hashed by ``xxhash.xxh3_64_intdigest`` (passed in as ``digest``), once
per distinct token, so the hash function has one definition.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp


cdef extern from "Python.h":
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_1BYTE_KIND
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) noexcept nogil
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch) noexcept nogil
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) noexcept nogil
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value) noexcept nogil

import numpy as np

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


cdef int _hash_tokens(
    list tokens, uint64_t* out, object seed, object digest, bint encoded
) except -1:
    """``out[i]`` = xxh3_64 of ``tokens[i]`` (UTF-8 bytes when ``encoded``, else
    ``str`` encoded with surrogatepass), each distinct token hashed once."""
    cdef dict table = {}
    cdef Py_ssize_t i
    cdef object token, value
    for i in range(len(tokens)):
        token = tokens[i]
        value = table.get(token)
        if value is None:
            if encoded:
                value = digest(token, seed)
            else:
                value = digest((<str?>token).encode("utf-8", "surrogatepass"), seed)
            table[token] = value
        out[i] = value
    return 0


def token_hashes(list tokens, object seed, object digest):
    """features.token_hashes: xxh3_64 of each ``str`` token (``uint64``)."""
    cdef Py_ssize_t count = len(tokens)
    result = np.empty(count, dtype=np.uint64)
    cdef uint64_t[::1] view = result
    if count:
        _hash_tokens(tokens, &view[0], seed, digest, False)
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
        _hash_tokens(flat, hashes, seed, digest, False)
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
    for feature in features:
        out[i] = digest((<str?>feature).encode("utf-8", "surrogatepass"), seed)
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
        kind = PyUnicode_KIND(text)
        data = PyUnicode_DATA(text)
        length = PyUnicode_GET_LENGTH(<str?>text)
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
# latin1_tokens and latin1_sketch read a ``str`` whose characters all fit in
# one byte (CPython's 1-byte kind: Latin-1) through a 256-byte table, the one
# the Python fast path gives ``bytes.translate``: 0x20 separates words, 0
# marks a character NFKC changes (the text needs the general path: None), 1 a
# digit (latin1_tokens); any other value is the character (latin1_sketch's
# lower-cases it).


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
# Its words found in one pass over the ``str``'s characters (any kind), each
# distinct one encoded and hashed once, shingled and minhashed in C.


cdef inline uint64_t _fnv(const unsigned char* data, Py_ssize_t length) noexcept nogil:
    cdef uint64_t h = 0xCBF29CE484222325ULL
    cdef Py_ssize_t i
    for i in range(length):
        h = (h ^ data[i]) * 0x100000001B3ULL
    return h


cdef bytes _utf8(const void* data, int kind, Py_ssize_t start, Py_ssize_t end):
    """The UTF-8 bytes (surrogates passed) of characters ``start:end`` of
    ``data``, characters of ``kind`` (1, 2 or 4 bytes each)."""
    cdef Py_ssize_t i, size = 0, k = 0
    cdef uint32_t c
    for i in range(start, end):
        c = PyUnicode_READ(kind, data, i)
        size += 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4
    if kind == PyUnicode_1BYTE_KIND and size == end - start:
        return PyBytes_FromStringAndSize(<const char*>data + start, size)
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef unsigned char* buf = <unsigned char*>PyBytes_AS_STRING(out)
    for i in range(start, end):
        c = PyUnicode_READ(kind, data, i)
        if c < 0x80:
            buf[k] = <unsigned char>c
            k += 1
        elif c < 0x800:
            buf[k] = 0xC0 | (c >> 6)
            buf[k + 1] = 0x80 | (c & 0x3F)
            k += 2
        elif c < 0x10000:
            buf[k] = 0xE0 | (c >> 12)
            buf[k + 1] = 0x80 | ((c >> 6) & 0x3F)
            buf[k + 2] = 0x80 | (c & 0x3F)
            k += 3
        else:
            buf[k] = 0xF0 | (c >> 18)
            buf[k + 1] = 0x80 | ((c >> 12) & 0x3F)
            buf[k + 2] = 0x80 | ((c >> 6) & 0x3F)
            buf[k + 3] = 0x80 | (c & 0x3F)
            k += 4
    return out


cdef inline bint _is_word(uint32_t c) noexcept nogil:
    """Whether ``re``'s ``\\w`` matches ``c`` in a ``str`` pattern: an
    alphanumeric character (``str.isalnum``) or "_"."""
    if c < 0x80:
        return (0x61 <= c <= 0x7A) or (0x30 <= c <= 0x39) or (0x41 <= c <= 0x5A) or c == 0x5F
    return Py_UNICODE_ISALNUM(c)


cdef Py_ssize_t _words(const void* data, int kind, Py_ssize_t length,
                       const unsigned char* table, unsigned char* chars,
                       Py_ssize_t* spans) noexcept nogil:
    """Write the ``(start, end)`` of each word of a text into ``spans`` (room
    for ``length + 1`` values) and return their number: runs of ``\\w``
    (:func:`_is_word`); with a ``table`` (a 1-byte text), of characters it
    does not map to 0x20, each one written to ``chars`` as the table maps it,
    and -1 when it maps one to 0."""
    cdef const unsigned char* text = <const unsigned char*>data
    cdef Py_ssize_t i, count = 0, start = -1
    cdef unsigned char t
    cdef bint word
    for i in range(length):
        if table != NULL:
            t = table[text[i]]
            if t == 0:
                return -1
            chars[i] = t
            word = t != 0x20
        else:
            word = _is_word(PyUnicode_READ(kind, data, i))
        if word:
            if start < 0:
                start = i
        elif start >= 0:
            spans[2 * count] = start
            spans[2 * count + 1] = i
            count += 1
            start = -1
    if start >= 0:
        spans[2 * count] = start
        spans[2 * count + 1] = length
        count += 1
    return count


cdef bytes _sketch(const unsigned char* data, int kind, const Py_ssize_t* spans,
                   Py_ssize_t count, Py_ssize_t n, object seed, object digest):
    """signature.sketch_of_hashes(shingle_hashes(word_hashes(words, seed), n)):
    the 64-byte b-bit one-permutation minhash of the ``n``-shingles of the
    ``count`` words at ``spans`` (:func:`_words`) of characters ``data`` of
    ``kind``, hashed as UTF-8. Each distinct word is encoded and hashed once;
    repeated ones are found in a table of their own."""
    if not count:
        return _minhash(NULL, 0, n)
    cdef Py_ssize_t size = 16, mask, slot, j, other, start, end
    while size < 2 * count:
        size *= 2
    mask = size - 1
    cdef uint64_t* hashes = <uint64_t*>PyMem_Malloc(count * sizeof(uint64_t))
    cdef Py_ssize_t* slots = <Py_ssize_t*>PyMem_Malloc(size * sizeof(Py_ssize_t))
    cdef uint64_t* keys = <uint64_t*>PyMem_Malloc(size * sizeof(uint64_t))
    cdef uint64_t key
    try:
        if not (hashes and slots and keys):
            raise MemoryError()
        for slot in range(size):
            slots[slot] = -1
        for j in range(count):
            start = spans[2 * j]
            end = spans[2 * j + 1]
            key = _fnv(data + start * kind, (end - start) * kind)
            slot = <Py_ssize_t>(key & <uint64_t>mask)
            while True:
                other = slots[slot]
                if other < 0:  # a new word
                    slots[slot] = j
                    keys[slot] = key
                    hashes[j] = digest(_utf8(data, kind, start, end), seed)
                    break
                if (keys[slot] == key
                        and spans[2 * other + 1] - spans[2 * other] == end - start
                        and memcmp(data + spans[2 * other] * kind, data + start * kind,
                                   (end - start) * kind) == 0):
                    hashes[j] = hashes[other]
                    break
                slot = (slot + 1) & mask
        return _minhash(hashes, count, n)
    finally:
        PyMem_Free(hashes)
        PyMem_Free(slots)
        PyMem_Free(keys)


cdef bytes _text_sketch(str text, const unsigned char* table, Py_ssize_t n, object seed,
                        object digest):
    """:func:`_sketch` of the words :func:`_words` finds (read from the
    characters ``table`` maps them to, with one), or None when it finds none
    for want of the general path."""
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text), count
    cdef int kind = PyUnicode_KIND(text)
    cdef const unsigned char* data = <const unsigned char*>PyUnicode_DATA(text)
    cdef Py_ssize_t* spans = <Py_ssize_t*>PyMem_Malloc((length + 1) * sizeof(Py_ssize_t))
    cdef unsigned char* chars = NULL
    try:
        if spans == NULL:
            raise MemoryError()
        if table != NULL:
            chars = <unsigned char*>PyMem_Malloc(length + 1)
            if chars == NULL:
                raise MemoryError()
        count = _words(data, kind, length, table, chars, spans)
        if count < 0:
            return None
        if table != NULL:
            return _sketch(chars, 1, spans, count, n, seed, digest)
        return _sketch(data, kind, spans, count, n, seed, digest)
    finally:
        PyMem_Free(spans)
        PyMem_Free(chars)


def latin1_sketch(str text, bytes table, Py_ssize_t n, object seed, object digest):
    """words_sketch of ``text`` lower-cased, read through the sketch's Latin-1
    table (word characters lower-cased, digits kept), or None when it needs
    the general path: a character beyond Latin-1 or one NFKC changes."""
    if PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND:
        return None
    return _text_sketch(text, <const unsigned char*>PyBytes_AS_STRING(table), n, seed, digest)


def words_sketch(str text, Py_ssize_t n, object seed, object digest):
    """signature.sketch_of_hashes(shingle_hashes(word_hashes(words, seed), n)) of
    the words ``re.findall(r"\\w+", text)`` (UTF-8, surrogates passed): the
    sketch's general path, on text already NFKC-normalised and lower-cased."""
    return _text_sketch(text, NULL, n, seed, digest)
