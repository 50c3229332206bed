"""Held: the stored pages' fingerprints and page ids in a writer's memory, and the ids near a batch.

The one place the Redis backend uses NearIndex (index/memory/near.py): the fingerprints within
the radius of each query come from it, and the page ids behind them from a map of its own (the
fingerprints sorted, their ids beside them; the newest in a dict until they are merged in).
What it holds is a superset of what is stored: a page that went, or whose fingerprint changed,
leaves its old fingerprint and id behind (the writer reads the page, and the rule measures
its distance itself), until the writer builds a new Held.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..memory.near import NearIndex

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
MERGE_SHARE = 8  # the newest ids are merged into the sorted map once they are an eighth of it
MERGE_FROM = 4096


class Held:
    """Fingerprints and the ids of the pages that have them, answering "the ids within r bits"."""

    def __init__(self, fingerprints: U64, ids: I64) -> None:
        self._near = NearIndex(fingerprints)
        order = np.argsort(fingerprints, kind="stable")
        self._fingerprints, self._ids = fingerprints[order], ids[order]
        self._newest: dict[int, list[int]] = {}
        self._newest_count = 0

    def __len__(self) -> int:
        return len(self._fingerprints) + self._newest_count

    @property
    def nbytes(self) -> int:
        """Bytes its arrays hold (the dict of the newest aside: at most MERGE_SHARE of the rest)."""
        return self._near.nbytes + self._fingerprints.nbytes + self._ids.nbytes

    def add(self, fingerprints: U64, ids: I64) -> None:
        """Hold these fingerprints with their page ids too."""
        if not len(fingerprints):
            return
        self._near.add(fingerprints)
        for fingerprint, page_id in zip(fingerprints.tolist(), ids.tolist()):
            self._newest.setdefault(fingerprint, []).append(page_id)
        self._newest_count += len(fingerprints)
        if self._newest_count * MERGE_SHARE >= max(MERGE_FROM, len(self._fingerprints)):
            self._merge()

    def near(self, queries: U64, radius: int) -> list[list[int]]:
        """For each query, the ids of the pages held within `radius` bits of it, each once."""
        found = self._near.search(queries, radius)
        ids: list[list[int]] = [[] for _ in range(len(queries))]
        if not len(found.fingerprints):
            return ids
        left = np.searchsorted(self._fingerprints, found.fingerprints, "left")
        right = np.searchsorted(self._fingerprints, found.fingerprints, "right")
        for query, fingerprint, start, end in zip(
            found.queries.tolist(), found.fingerprints.tolist(), left.tolist(), right.tolist()
        ):
            ids[query] += self._ids[start:end].tolist()
            ids[query] += self._newest.get(fingerprint, ())
        return [list(dict.fromkeys(found_ids)) for found_ids in ids]

    def _merge(self) -> None:
        newest = np.fromiter((fp for fp, ids in self._newest.items() for _ in ids), np.uint64, self._newest_count)
        ids = np.fromiter((i for found in self._newest.values() for i in found), np.int64, self._newest_count)
        fingerprints = np.concatenate([self._fingerprints, newest])
        order = np.argsort(fingerprints, kind="stable")
        self._fingerprints, self._ids = fingerprints[order], np.concatenate([self._ids, ids])[order]
        self._newest, self._newest_count = {}, 0
