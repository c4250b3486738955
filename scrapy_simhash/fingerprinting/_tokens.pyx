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
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcmp


cdef extern from "Python.h":
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_1BYTE_KIND

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


def sketch(list words, Py_ssize_t n, object seed, object digest, bint encoded=True):
    """signature.sketch_of_hashes(shingle_hashes(word_hashes(words, seed), n)):
    the 64-byte b-bit one-permutation minhash of the ``n``-shingles of
    ``words`` (UTF-8 bytes; ``str`` when not ``encoded``, each distinct word
    then encoded once, surrogates passed)."""
    cdef Py_ssize_t count = len(words)
    if not count:
        return _minhash(NULL, 0, n)
    cdef uint64_t* hashes = <uint64_t*>PyMem_Malloc(count * sizeof(uint64_t))
    if hashes == NULL:
        raise MemoryError()
    try:
        _hash_tokens(words, hashes, seed, digest, encoded)
        return _minhash(hashes, count, n)
    finally:
        PyMem_Free(hashes)


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


# ---------------------------------------------------------------- Latin-1 text
# Both functions read a lower-cased ``str`` whose characters all fit in one
# byte (CPython's 1-byte kind: Latin-1) through a 256-byte table, the one the
# Python fast path gives ``bytes.translate``: 0x20 separates words, 0 marks a
# character NFKC changes (the text needs the general path: None), 1 a digit;
# any other value keeps the character.


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


cdef inline uint64_t _fnv(const unsigned char* data, Py_ssize_t length) noexcept nogil:
    cdef uint64_t h = 0xCBF29CE484222325ULL
    cdef Py_ssize_t i
    for i in range(length):
        h = (h ^ data[i]) * 0x100000001B3ULL
    return h


cdef bytes _utf8(const unsigned char* data, Py_ssize_t length):
    """The UTF-8 bytes of ``length`` Latin-1 characters."""
    cdef Py_ssize_t i, wide = 0, k = 0
    for i in range(length):
        wide += data[i] >= 0x80
    if not wide:
        return PyBytes_FromStringAndSize(<const char*>data, length)
    out = PyBytes_FromStringAndSize(NULL, length + wide)
    cdef unsigned char* buf = <unsigned char*>PyBytes_AS_STRING(out)
    for i in range(length):
        if data[i] < 0x80:
            buf[k] = data[i]
            k += 1
        else:
            buf[k] = 0xC0 | (data[i] >> 6)
            buf[k + 1] = 0x80 | (data[i] & 0x3F)
            k += 2
    return out


def latin1_sketch(str text, bytes table, Py_ssize_t n, object seed, object digest):
    """sketch(words, n, seed, digest) of the words of a lower-cased text (the
    sketch's table: digits kept), or None when it needs the general path. Each
    distinct word is made a ``bytes`` and hashed once; repeated ones are found
    in a table of their own."""
    if PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND:
        return None
    cdef const unsigned char* tab = <const unsigned char*>PyBytes_AS_STRING(table)
    cdef const unsigned char* data = <const unsigned char*>PyUnicode_DATA(text)
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t i, j, start, count = 0, size, slot, mask
    cdef unsigned char t
    cdef bint inside = False
    for i in range(length):  # count the words; give up on a character NFKC changes
        t = tab[data[i]]
        if t == 0:
            return None
        if t == 0x20:
            inside = False
        elif not inside:
            inside = True
            count += 1
    if not count:
        return _minhash(NULL, 0, n)
    size = 16
    while size < 2 * count:
        size *= 2
    mask = size - 1
    cdef Py_ssize_t* starts = <Py_ssize_t*>PyMem_Malloc(count * sizeof(Py_ssize_t))
    cdef Py_ssize_t* lengths = <Py_ssize_t*>PyMem_Malloc(count * sizeof(Py_ssize_t))
    cdef uint64_t* hashes = <uint64_t*>PyMem_Malloc(count * sizeof(uint64_t))
    cdef Py_ssize_t* slots = <Py_ssize_t*>PyMem_Malloc(size * sizeof(Py_ssize_t))
    cdef uint64_t* keys = <uint64_t*>PyMem_Malloc(size * sizeof(uint64_t))
    cdef uint64_t key
    try:
        if not (starts and lengths and hashes and slots and keys):
            raise MemoryError()
        for slot in range(size):
            slots[slot] = -1
        j = 0
        start = -1
        for i in range(length + 1):
            if i < length and tab[data[i]] != 0x20:
                if start < 0:
                    start = i
                continue
            if start < 0:
                continue
            starts[j] = start
            lengths[j] = i - start
            key = _fnv(data + start, i - start)
            slot = <Py_ssize_t>(key & <uint64_t>mask)
            while True:
                if slots[slot] < 0:  # a new word
                    slots[slot] = j
                    keys[slot] = key
                    hashes[j] = digest(_utf8(data + start, i - start), seed)
                    break
                if (keys[slot] == key and lengths[slots[slot]] == i - start
                        and memcmp(data + starts[slots[slot]], data + start, i - start) == 0):
                    hashes[j] = hashes[slots[slot]]
                    break
                slot = (slot + 1) & mask
            j += 1
            start = -1
        return _minhash(hashes, count, n)
    finally:
        PyMem_Free(starts)
        PyMem_Free(lengths)
        PyMem_Free(hashes)
        PyMem_Free(slots)
        PyMem_Free(keys)
