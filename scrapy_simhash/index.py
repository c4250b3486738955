"""PLACEHOLDER (the index helper replaces this file): brute force with the final API."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Match(NamedTuple):
    key: int
    fingerprint: int
    distance: int


class SimhashIndex:
    def __init__(self, k: int = 3, layout="auto", expected_size: int = 1 << 20):
        self.k = k
        self._fps = np.empty(0, np.uint64)
        self._keys = np.empty(0, np.uint64)

    def __len__(self) -> int:
        return len(self._fps)

    def add(self, fp: int, key: int) -> None:
        self.add_many(np.array([fp], np.uint64), np.array([key], np.uint64))

    def add_many(self, fps, keys) -> None:
        self._fps = np.concatenate([self._fps, np.asarray(fps, np.uint64)])
        self._keys = np.concatenate([self._keys, np.asarray(keys, np.uint64)])

    def query(self, fp: int) -> list[Match]:
        d = np.bitwise_count(self._fps ^ np.uint64(fp))
        hit = np.flatnonzero(d <= self.k)
        out = [Match(int(self._keys[i]), int(self._fps[i]), int(d[i])) for i in hit]
        return sorted(out, key=lambda m: (m.distance, m.key))

    def query_and_add(self, fp: int, key: int, add: str = "if_new") -> list[Match]:
        matches = self.query(fp)
        if add == "always" or (add == "if_new" and not matches):
            self.add(fp, key)
        return matches

    def remove(self, key: int) -> bool:
        keep = self._keys != np.uint64(key)
        removed = not keep.all()
        self._fps, self._keys = self._fps[keep], self._keys[keep]
        return removed
