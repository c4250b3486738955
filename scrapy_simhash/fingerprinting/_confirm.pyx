# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The drop decision on a probe's candidates, compiled.

:func:`scrapy_simhash.fingerprinting.signature.confirms_many` compares one
page's sketch with each of its candidates' in about 25 numpy calls, each
costing a microsecond or two whatever the rows (a probe confirms one to a few
hundred candidates). This is the same rule, a row at a time in C, for that
case only: many sketches against one. The rule's constants are
``signature.py``'s, handed over once by :func:`configure`; ``confirms_many``
calls :func:`confirm_rows` only after that. ``tests/test_signature.py``
compares both on sketches made to sit on every threshold of the rule.
"""

from libc.stdint cimport uint8_t, uint16_t, uint64_t
from libc.string cimport memcpy

import numpy as np

cdef int _own_bins = -1, _tail = 0, _main = 0, _bins = 0
cdef uint16_t _confirm = 0, _guard = 0, _near = 0
cdef uint64_t _own_key0 = 0, _own_key1 = 0, _page_key0 = 0, _page_key1 = 0
cdef uint64_t _own_words = 0, _page_words = 0, _both = 0, _both_trusted = 0, _repeated = 0


def configure(*, int bins, int own_bins, int tail, int main, int confirm, int guard, int near,
              own_key, page_key, own_words, page_words, both, both_trusted, repeated):
    """The rule's constants (``signature.py`` is their home)."""
    global _own_bins, _tail, _main, _bins, _confirm, _guard, _near
    global _own_key0, _own_key1, _page_key0, _page_key1
    global _own_words, _page_words, _both, _both_trusted, _repeated
    if not (0 < own_bins < tail and tail + 16 == main < bins):
        raise ValueError("a sketch's regions must be own bins, rare bins, 16 bytes of keys, main bins")
    cdef uint64_t k0, k1, p0, p1
    k0, k1 = own_key
    p0, p1 = page_key
    _bins, _tail, _main = bins, tail, main
    _confirm, _guard, _near = confirm, guard, near
    _own_key0, _own_key1, _page_key0, _page_key1 = k0, k1, p0, p1
    _own_words, _page_words = own_words, page_words
    _both, _both_trusted, _repeated = both, both_trusted, repeated
    _own_bins = own_bins  # last: confirm_rows refuses to run until it is set


cdef inline uint64_t _word(const uint8_t* p) noexcept nogil:
    cdef uint64_t w
    memcpy(&w, p, 8)  # the little-endian words numpy's "<u8" view reads (x86, ARM)
    return w


cdef inline void _count(const uint8_t* a, const uint8_t* b, int start, int end,
                        uint16_t* matches, uint16_t* filled) noexcept nogil:
    """Agreeing bins (the same non-zero byte) and filled bins of a region."""
    cdef int i
    cdef uint16_t m = 0, f = 0
    for i in range(start, end):
        if a[i]:
            f += 1
            m += a[i] == b[i]
        elif b[i]:
            f += 1
    matches[0], filled[0] = m * 64, (f if f else 1)


def confirm_rows(const uint8_t[:, ::1] rows, const uint8_t[::1] probe):
    """``confirms_many(rows, probe)``: for each row of ``rows``, whether the
    rule joins it with ``probe`` (a ``bool`` array)."""
    cdef Py_ssize_t n = rows.shape[0], r
    cdef const uint8_t* a
    cdef const uint8_t* b = &probe[0]
    cdef uint64_t a7, b6, b7, d6, d7, both, flags
    cdef uint16_t m0, f0, m1, f1, m3, f3
    cdef bint exact, sketched, main
    if _own_bins < 0:
        raise RuntimeError("configure() was not called")
    if rows.shape[1] != _bins or probe.shape[0] != _bins:
        raise ValueError(f"sketches have {_bins} bytes")
    out = np.zeros(n, dtype=np.bool_)
    cdef uint8_t[::1] verdicts = out.view(np.uint8)
    b6, b7 = _word(b + _tail), _word(b + _tail + 8)
    with nogil:
        for r in range(n):
            a = &rows[r, 0]
            d6 = _word(a + _tail) ^ b6
            a7 = _word(a + _tail + 8)
            d7 = a7 ^ b7
            # 1. exactly: the same key of exact_keys, not the empty one
            exact = ((d6 & _own_key0) | (d7 & _own_key1)) == 0 and (b7 & _own_words) != 0
            if not exact:
                exact = (((d6 & _page_key0) | (d7 & _page_key1)) == 0
                         and (b7 & _page_words) != 0)
            if exact:
                verdicts[r] = 1
                continue
            both = a7 & b7
            flags = both & _both_trusted
            _count(a, b, 0, _own_bins, &m0, &f0)
            # 2. own texts agree; 3. main texts the same, trusted, own texts guarding
            sketched = flags >= _both and m0 >= <uint16_t>(f0 * _confirm)
            if not sketched and flags == _both_trusted and m0 >= <uint16_t>(f0 * _guard):
                _count(a, b, _main, _bins, &m3, &f3)
                sketched = m3 >= <uint16_t>(f3 * _near)
            if sketched and (both & _repeated) != 0:
                _count(a, b, _own_bins, _tail, &m1, &f1)
                sketched = m1 >= <uint16_t>(f1 * _guard)
            verdicts[r] = sketched
    return out
