# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The single-fingerprint probe of :class:`~scrapy_simhash.index.SimhashIndex`, compiled.

:meth:`SimhashIndex._near` reads, for each level, the bucket of the query's
leading permuted bits in every table and keeps the stored fingerprints within
k bits. In numpy that is a handful of calls a level, each costing a few
microseconds whatever it reads (five levels at a million stored pages). Here
the same loop runs in C over the same arrays, reading each bucket's entries and
nothing else.

It returns the same set of fingerprints as the numpy probe (with repeats: an
entry once for each table whose bucket holds it; the numpy probe's windows
read neighbouring entries too), and ``tests/test_index.py`` checks both
against brute force. Nothing is copied: a :class:`LevelScan` holds pointers
into a level's own arrays (and references, and buffer exports for the
directories, that keep them alive and unresized); levels are immutable, so a
scan is made once a level. Both classes pickle (by their arguments), so an
index that holds them still copies and pickles as before.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy

import numpy as np


cdef extern from *:
    int __builtin_popcountll(unsigned long long x) nogil


# how a table's entries are stored (SimhashIndex: direct tables hold
# fingerprints, compressed ones row numbers into the level's fingerprints)
cdef enum:
    FPS = 0
    ROWS32 = 1
    ROWS64 = 2


cdef uintptr_t _address(arr) except? 0:
    """Where a numpy array's or an ``array.array``'s data starts."""
    if isinstance(arr, np.ndarray):
        if not arr.flags.c_contiguous:
            raise ValueError("a level's arrays must be contiguous")
        return arr.ctypes.data
    return arr.buffer_info()[0]


cdef class LevelScan:
    """One level's tables and directories as C pointers."""

    cdef object _keep  # the arrays pointed into (the directories as memoryviews)
    cdef object _args
    cdef int ntables
    cdef unsigned lead_shift
    cdef bint dir64
    cdef const uint64_t* fps
    cdef const void** dirs
    cdef const void** tables
    cdef int* kinds

    def __cinit__(self, fps, tables, dirs, direct, unsigned lead_shift):
        cdef int t, n = len(tables)
        if len(dirs) != n or len(direct) != n:
            raise ValueError("a level needs one directory and one flag a table")
        self.ntables = n
        self.lead_shift = lead_shift
        self._args = (fps, list(tables), list(dirs), list(direct), lead_shift)
        self.dirs = <const void**>PyMem_Malloc(n * sizeof(void*))
        self.tables = <const void**>PyMem_Malloc(n * sizeof(void*))
        self.kinds = <int*>PyMem_Malloc(n * sizeof(int))
        if not self.dirs or not self.tables or not self.kinds:
            raise MemoryError()
        # a memoryview of an array.array keeps it from being resized under the pointer
        self._keep = (fps, list(tables), [memoryview(d) for d in dirs])
        if fps.dtype != np.uint64:
            raise ValueError(f"fingerprints must be uint64, got {fps.dtype}")
        self.fps = <const uint64_t*>_address(fps)
        codes = {d.typecode for d in dirs}
        if not codes <= {"i", "q"} or len(codes) > 1:
            raise ValueError(f"directories must be all 'i' or all 'q' arrays, got {codes}")
        self.dir64 = codes == {"q"}
        entries = 2 if lead_shift >= 32 else (1 << (32 - lead_shift)) + 1
        for t in range(n):
            table = tables[t]
            offsets = dirs[t]  # (wraparound is off: no negative indexes here)
            if len(offsets) != entries or offsets[0] != 0 or offsets[entries - 1] != len(table) \
                    or len(table) != len(fps):
                raise ValueError(f"table {t}: its directory does not fit it "
                                 f"({len(dirs[t])} offsets for {entries}, {len(table)} entries)")
            self.dirs[t] = <const void*>_address(dirs[t])
            self.tables[t] = <const void*>_address(table)
            if direct[t]:
                if table.dtype != np.uint64:
                    raise ValueError(f"table {t} holds fingerprints, so uint64, got {table.dtype}")
                self.kinds[t] = FPS
            elif table.dtype == np.uint32:
                self.kinds[t] = ROWS32
            elif table.dtype == np.uint64:
                self.kinds[t] = ROWS64
            else:
                raise ValueError(f"table {t} holds rows, so uint32 or uint64, got {table.dtype}")

    def __dealloc__(self):
        PyMem_Free(self.dirs)
        PyMem_Free(self.tables)
        PyMem_Free(self.kinds)

    def __reduce__(self):
        return LevelScan, self._args


cdef class Prober:
    """The probe of one index's layout: which leading permuted bits each byte
    of a query gives each table (``lead``, ``uint32`` of shape (8, 256,
    tables), as :meth:`SimhashIndex._lead_tables` computes them), and a buffer
    for what a probe finds."""

    cdef uint32_t* lut
    cdef uint32_t* lead  # a probe's leading bits, one a table
    cdef int ntables
    cdef object _lead
    cdef uint64_t* found
    cdef Py_ssize_t capacity

    def __cinit__(self, lead):
        lead = np.ascontiguousarray(lead, dtype=np.uint32)
        self._lead = lead
        if lead.ndim != 3 or lead.shape[0] != 8 or lead.shape[1] != 256:
            raise ValueError(f"lead must have shape (8, 256, tables), got {lead.shape}")
        self.ntables = lead.shape[2]
        self.lut = <uint32_t*>PyMem_Malloc(lead.nbytes)
        self.lead = <uint32_t*>PyMem_Malloc(max(self.ntables, 1) * sizeof(uint32_t))
        self.capacity = 1024
        self.found = <uint64_t*>PyMem_Malloc(self.capacity * sizeof(uint64_t))
        if not self.lut or not self.lead or not self.found:
            raise MemoryError()
        memcpy(self.lut, <const void*><uintptr_t>lead.ctypes.data, lead.nbytes)

    def __dealloc__(self):
        PyMem_Free(self.lut)
        PyMem_Free(self.lead)
        PyMem_Free(self.found)

    def __reduce__(self):
        return Prober, (self._lead,)

    cdef int _keep(self, Py_ssize_t n, uint64_t value) except -1:
        cdef uint64_t* bigger
        if n == self.capacity:
            bigger = <uint64_t*>PyMem_Malloc(2 * self.capacity * sizeof(uint64_t))
            if not bigger:
                raise MemoryError()
            memcpy(bigger, self.found, n * sizeof(uint64_t))
            PyMem_Free(self.found)
            self.found, self.capacity = bigger, 2 * self.capacity
        self.found[n] = value
        return 0

    def near(self, uint64_t q, int k, list scans, const uint64_t[::1] buffered):
        """The stored fingerprints within ``k`` bits of ``q`` (``uint64``,
        with repeats) in the levels ``scans`` and the fingerprints
        ``buffered``; None when there are none."""
        cdef uint32_t* lead = self.lead
        cdef int t, b
        cdef uint64_t v
        cdef Py_ssize_t i, s, e, bucket, n = 0
        cdef LevelScan scan
        cdef const uint32_t* entry
        cdef uint64_t[::1] view
        for t in range(self.ntables):
            lead[t] = 0
        for b in range(8):
            entry = self.lut + (<Py_ssize_t>b * 256 + ((q >> (8 * b)) & 0xFF)) * self.ntables
            for t in range(self.ntables):
                lead[t] |= entry[t]
        for scan in scans:
            if scan is None:
                raise TypeError("scans must be LevelScan objects, not None")
            if scan.ntables != self.ntables:
                raise ValueError("a level of another layout")
            for t in range(self.ntables):
                bucket = 0 if scan.lead_shift >= 32 else <Py_ssize_t>(lead[t] >> scan.lead_shift)
                if scan.dir64:
                    s = (<const int64_t*>scan.dirs[t])[bucket]
                    e = (<const int64_t*>scan.dirs[t])[bucket + 1]
                else:
                    s = (<const int32_t*>scan.dirs[t])[bucket]
                    e = (<const int32_t*>scan.dirs[t])[bucket + 1]
                for i in range(s, e):
                    if scan.kinds[t] == FPS:
                        v = (<const uint64_t*>scan.tables[t])[i]
                    elif scan.kinds[t] == ROWS32:
                        v = scan.fps[(<const uint32_t*>scan.tables[t])[i]]
                    else:
                        v = scan.fps[(<const uint64_t*>scan.tables[t])[i]]
                    if __builtin_popcountll(v ^ q) <= k:
                        self._keep(n, v)
                        n += 1
        for i in range(buffered.shape[0]):
            v = buffered[i]
            if __builtin_popcountll(v ^ q) <= k:
                self._keep(n, v)
                n += 1
        if not n:
            return None
        out = np.empty(n, dtype=np.uint64)
        view = out
        memcpy(&view[0], self.found, n * sizeof(uint64_t))
        if self.capacity > 1 << 17:  # a rare wide probe: give its memory back
            PyMem_Free(self.found)
            self.capacity = 1024
            self.found = <uint64_t*>PyMem_Malloc(self.capacity * sizeof(uint64_t))
            if not self.found:
                raise MemoryError()
        return out
