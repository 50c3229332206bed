"""NearIndex: the 64-bit fingerprints within a radius of each query, exactly, in this process's memory.

Multi-index hashing (probes.py) over NumPy tables: the fingerprint is cut into parts (four of
16 bits while a table is small, three of 22, 21 and 21 bits from LARGE_FROM fingerprints on,
where they read fewer entries a lookup: the widest first, as the first parts take the larger
tolerances); per part, every fingerprint of the table sorted by that part's value, and a
direct-address array `starts` (2**width + 1 offsets) of where each value's run begins. A batch
of lookups probes every part at every value within its tolerance in one vectorised gather,
then keeps the fingerprints within the radius (XOR and popcount).

Adding stays cheap however large the index: new fingerprints wait in a short list that every
lookup compares in full; past PENDING of them they are merged into a small table, and the small
table into the main one once it holds a sixteenth as many (each merge is linear in what it
copies, so a fingerprint is copied a bounded number of times on average).

A fingerprint added twice is held twice (and found once). Nothing is removed: a caller that
forgets fingerprints builds a new index from what remains.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from ..probes import masks, tolerances

U64 = npt.NDArray[np.uint64]
Positions = npt.NDArray[np.intp]
SMALL = (16, 16, 16, 16)  # 1 MiB of offsets: the layout of a small table
LARGE = (22, 21, 21)  # 16 MiB of offsets, and a tenth of the entries a radius-6 lookup reads at a million
LARGE_FROM = 262_144  # fingerprints from which a table takes the large layout
PENDING = 2048  # fingerprints compared in full before they are merged into the small table
SMALL_SHARE = 16  # the small table is merged into the main one at a sixteenth of its size


def widths_for(count: int) -> tuple[int, ...]:
    """The part widths of a table of `count` fingerprints."""
    return LARGE if count >= LARGE_FROM else SMALL


@dataclass(frozen=True)
class Found:
    """What a batch lookup found: pairs of (query position, fingerprint), each pair once, ordered
    by query position then fingerprint; `read`: the entries the lookup compared with a query."""

    queries: Positions
    fingerprints: U64
    read: int

    def of(self, count: int) -> list[U64]:
        """The fingerprints found for each of `count` queries."""
        bounds = np.searchsorted(self.queries, np.arange(count + 1))
        return [self.fingerprints[bounds[i] : bounds[i + 1]] for i in range(count)]


class NearIndex:
    """Fingerprints in memory, answering "every fingerprint held within r bits of each query"."""

    def __init__(self, fingerprints: Iterable[int] | U64 = (), *, widths: Sequence[int] | None = None) -> None:
        """`widths`: the parts' widths of every table (they add up to 64); None: by size."""
        if widths is not None and (sum(widths) != 64 or min(widths) < 1 or max(widths) > 24):
            raise ValueError(f"widths must be parts of 1 to 24 bits adding up to 64; got {widths!r}")
        self._widths = None if widths is None else tuple(widths)
        stored = as_u64(fingerprints)
        self._main = _Table(stored, self._widths or widths_for(len(stored)))
        self._small = _Table(np.empty(0, np.uint64), self._widths or SMALL)
        self._pending: list[int] = []

    def __len__(self) -> int:
        return len(self._main) + len(self._small) + len(self._pending)

    @property
    def nbytes(self) -> int:
        """Bytes the index's arrays hold."""
        return self._main.nbytes + self._small.nbytes + 8 * len(self._pending)

    @property
    def widths(self) -> tuple[int, ...]:
        """The part widths of the main table."""
        return self._main.widths

    def add(self, fingerprints: Iterable[int] | U64) -> None:
        """Hold these fingerprints too (unsigned 64-bit integers)."""
        self._pending.extend(as_u64(fingerprints).tolist() if isinstance(fingerprints, np.ndarray) else fingerprints)
        if len(self._pending) < PENDING:
            return
        self._small = self._small.with_(np.array(self._pending, np.uint64))
        self._pending = []
        if len(self._small) * SMALL_SHARE >= len(self._main):
            self._main = self._main.with_(self._small.fingerprints, self._widths)
            self._small = _Table(np.empty(0, np.uint64), self._widths or SMALL)

    def search(self, queries: Iterable[int] | U64, radius: int) -> Found:
        """Every fingerprint held within `radius` bits of each query."""
        if isinstance(radius, bool) or not isinstance(radius, int) or not 0 <= radius <= 63:
            raise ValueError(f"radius must be an integer from 0 to 63; got {radius!r}")
        wanted = as_u64(queries)
        found = [self._main.search(wanted, radius), self._small.search(wanted, radius)]
        if self._pending and len(wanted):
            pending = np.array(self._pending, np.uint64)
            at, column = np.nonzero(np.bitwise_count(wanted[:, None] ^ pending[None, :]) <= radius)
            found.append((at, pending[column], len(wanted) * len(pending)))
        return _distinct(found)


class _Table:
    """Fingerprints sorted by each part, with each part's run offsets; never changed once built."""

    def __init__(self, fingerprints: U64, widths: tuple[int, ...]) -> None:
        self.widths = widths
        self._shifts = tuple(int(s) for s in np.cumsum((0, *widths[:-1])))
        self._sorted: list[U64] = []
        self._starts: list[npt.NDArray[np.int32]] = []
        for part, width in enumerate(widths):
            self._sorted.append(_sorted_by_part(fingerprints, self._shifts[part], width))
            self._starts.append(_offsets(self._keys(self._sorted[part], part), width))

    def __len__(self) -> int:
        return len(self._sorted[0])

    @property
    def fingerprints(self) -> U64:
        return self._sorted[0]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._sorted) + sum(a.nbytes for a in self._starts)

    def with_(self, more: U64, widths: tuple[int, ...] | None = None) -> _Table:
        """A table of these fingerprints and `more`, in `widths` (None: the layout for its size)."""
        layout = widths or widths_for(len(self) + len(more))
        if layout != self.widths:
            return _Table(np.concatenate([self.fingerprints, more]), layout)
        merged = object.__new__(_Table)
        merged.widths, merged._shifts = self.widths, self._shifts
        merged._sorted, merged._starts = [], []
        for part, width in enumerate(self.widths):
            keys = self._keys(more, part)
            order = np.argsort(keys)
            merged._sorted.append(np.insert(self._sorted[part], self._starts[part][keys[order] + 1], more[order]))
            merged._starts.append(self._starts[part] + _offsets(keys, width))
        return merged

    def search(self, queries: U64, radius: int) -> tuple[Positions, U64, int]:
        """(query position, fingerprint) of the fingerprints within `radius` of each query; entries read."""
        found: list[tuple[Positions, U64, int]] = []
        if len(self) and len(queries):
            for part, tolerance in enumerate(tolerances(radius, len(self.widths))):
                if tolerance >= 0:
                    found.append(self._probe(part, tolerance, queries, radius))
        if not found:
            return np.empty(0, np.intp), np.empty(0, np.uint64), 0
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]), sum(f[2] for f in found)

    def _keys(self, fingerprints: U64, part: int) -> npt.NDArray[np.int64]:
        mask = np.uint64((1 << self.widths[part]) - 1)
        keys: npt.NDArray[np.int64] = ((fingerprints >> np.uint64(self._shifts[part])) & mask).astype(np.int64)
        return keys

    def _probe(self, part: int, tolerance: int, queries: U64, radius: int) -> tuple[Positions, U64, int]:
        """The runs of this part's values within `tolerance` bits of each query's, gathered at once."""
        flips = _flips(self.widths[part], tolerance)
        probes = (self._keys(queries, part)[:, None] ^ flips[None, :]).ravel()
        starts = self._starts[part]
        first = starts[probes]
        lengths = starts[probes + 1] - first
        total = int(lengths.sum())
        if not total:
            return np.empty(0, np.intp), np.empty(0, np.uint64), 0
        ends = np.cumsum(lengths)
        entries = np.arange(total) + np.repeat(first - (ends - lengths), lengths)
        owner = np.repeat(np.arange(len(probes)) // len(flips), lengths)
        stored = self._sorted[part][entries]
        near = np.bitwise_count(stored ^ queries[owner]) <= radius
        return owner[near], stored[near], total


def _sorted_by_part(fingerprints: U64, shift: int, width: int) -> U64:
    """The fingerprints ordered by the part of `width` bits at `shift`: sorted as rotated so that
    the part leads, which orders them by it (a sort of values, faster than an argsort by keys)."""
    up = 64 - shift - width
    return _rotated(np.sort(_rotated(fingerprints, up)), (64 - up) % 64)


def _rotated(values: U64, left: int) -> U64:
    if not left:
        return values
    rotated: U64 = (values << np.uint64(left)) | (values >> np.uint64(64 - left))
    return rotated


def _offsets(keys: npt.NDArray[np.int64], width: int) -> npt.NDArray[np.int32]:
    """Where each value's run begins among `keys` sorted: 2**width + 1 offsets."""
    starts = np.zeros((1 << width) + 1, np.int32)
    # summed in int32: no int64 pass to cast
    np.cumsum(np.bincount(keys, minlength=1 << width), out=starts[1:], dtype=np.int32)
    return starts


@cache
def _flips(width: int, tolerance: int) -> npt.NDArray[np.int64]:
    return np.array(masks(width, tolerance), np.int64)


def as_u64(values: Iterable[int] | U64) -> U64:
    """Fingerprints as an array of unsigned 64-bit integers (signed int64 ones reinterpreted)."""
    if isinstance(values, np.ndarray):
        return values.view(np.uint64) if values.dtype == np.int64 else values.astype(np.uint64, copy=False)
    return np.fromiter(values, np.uint64)


def _distinct(found: list[tuple[Positions, U64, int]]) -> Found:
    at = np.concatenate([f[0] for f in found])
    fingerprints = np.concatenate([f[1] for f in found])
    order = np.lexsort((fingerprints, at))
    at, fingerprints = at[order], fingerprints[order]
    keep = np.ones(len(at), bool)
    keep[1:] = (at[1:] != at[:-1]) | (fingerprints[1:] != fingerprints[:-1])
    return Found(at[keep], fingerprints[keep], sum(f[2] for f in found))
