"""NearIndex: the 64-bit fingerprints within a radius of each query, exactly, in this process's memory.

Multi-index hashing (probes.py) over NumPy tables: the fingerprint is cut into parts (four of
16 bits while a table is small, three of 22, 21 and 21 bits from LARGE_FROM fingerprints on,
where they read fewer entries a lookup: the widest first, as the first parts take the larger
tolerances); per part, the table's entries ordered by that part's value (4-byte positions) and
a direct-address array `starts` (2**width + 1 offsets) of where each value's run begins. A batch
of lookups probes every part at every value within its tolerance in one vectorised gather,
then keeps the fingerprints within the radius (XOR and popcount).

Each entry may carry a payload: a row of unsigned 64-bit words the caller gives with its
fingerprint (a row id, sketch bits) and gets back with it, so that what it needs to judge a
candidate is at hand without a read.

Adding stays cheap however large the index: new entries wait in a short list that every
lookup compares in full; past PENDING of them they are merged into a small table, and the small
table into the main one once it holds a sixteenth as many (each merge is linear in what it
copies, so an entry is copied a bounded number of times on average).

A fingerprint added twice is held twice, and found twice (with each payload). Nothing is
removed: a caller that forgets fingerprints builds a new index from what remains.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from ..probes import masks, tolerances

U64 = npt.NDArray[np.uint64]
Payload = npt.NDArray[np.uint64]  # one row of words an entry, shape (entries, width)
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
class Hits:
    """What a batch lookup found: (query position, fingerprint, payload row) for each entry
    within the radius of a query, each once, ordered by query position then fingerprint;
    `read`: the entries the lookup compared with a query."""

    queries: Positions
    fingerprints: U64
    payload: Payload
    read: int

    def of(self, count: int) -> list[U64]:
        """The fingerprints found for each of `count` queries."""
        bounds = np.searchsorted(self.queries, np.arange(count + 1))
        return [self.fingerprints[bounds[i] : bounds[i + 1]] for i in range(count)]


class NearIndex:
    """Fingerprints in memory, answering "every fingerprint held within r bits of each query"."""

    def __init__(
        self,
        fingerprints: Iterable[int] | U64 = (),
        payload: Payload | None = None,
        *,
        width: int = 0,
        widths: Sequence[int] | None = None,
    ) -> None:
        """`payload`: a row for each fingerprint, of `width` words (its width when given);
        `widths`: the parts' widths of every table (they add up to 64); None: by size."""
        if widths is not None and (sum(widths) != 64 or min(widths) < 1 or max(widths) > 24):
            raise ValueError(f"widths must be parts of 1 to 24 bits adding up to 64; got {widths!r}")
        self._widths = None if widths is None else tuple(widths)
        stored = u64_array(fingerprints)
        self.width = payload.shape[1] if payload is not None else width
        rows = self._rows(len(stored), payload)
        self._main = _Table(stored, rows, self._widths or widths_for(len(stored)))
        self._small = self._empty()
        self._pending: list[tuple[U64, Payload]] = []
        self._pending_count = 0

    def __len__(self) -> int:
        return len(self._main) + len(self._small) + self._pending_count

    @property
    def nbytes(self) -> int:
        """Bytes the index's arrays hold."""
        pending = sum(f.nbytes + p.nbytes for f, p in self._pending)
        return self._main.nbytes + self._small.nbytes + pending

    @property
    def widths(self) -> tuple[int, ...]:
        """The part widths of the main table."""
        return self._main.widths

    def add(self, fingerprints: Iterable[int] | U64, payload: Payload | None = None) -> None:
        """Hold these fingerprints too (unsigned 64-bit integers), with their payload rows."""
        more = u64_array(fingerprints)
        if not len(more):
            return
        self._pending.append((more, self._rows(len(more), payload)))
        self._pending_count += len(more)
        if self._pending_count < PENDING:
            return
        fingerprints_, rows = self._pending_arrays()
        self._small = self._small.with_(fingerprints_, rows)
        self._pending, self._pending_count = [], 0
        if len(self._small) * SMALL_SHARE >= len(self._main):
            self._main = self._main.with_(self._small.fingerprints, self._small.payload, self._widths)
            self._small = self._empty()

    def search(self, queries: Iterable[int] | U64, radius: int) -> Hits:
        """Every entry held within `radius` bits of each query."""
        if isinstance(radius, bool) or not isinstance(radius, int) or not 0 <= radius <= 63:
            raise ValueError(f"radius must be an integer from 0 to 63; got {radius!r}")
        wanted = u64_array(queries)
        tables: list[_Table | _Pending] = [self._main, self._small]
        if self._pending:
            tables.append(_Pending(*self._pending_arrays()))
        found, offset = [], 0
        for table in tables:
            at, positions, read = table.search(wanted, radius)
            found.append((at, positions + offset, table.fingerprints[positions], table.payload[positions], read))
            offset += len(table.fingerprints)
        return _distinct(found)

    def _rows(self, count: int, payload: Payload | None) -> Payload:
        if payload is None:
            if self.width:
                raise ValueError(f"this index holds a payload of {self.width} words an entry: give one")
            return np.empty((count, 0), np.uint64)
        rows = np.asarray(payload, np.uint64)
        if rows.shape != (count, self.width):
            raise ValueError(f"payload must have one row of {self.width} words a fingerprint; got {rows.shape}")
        return rows

    def _empty(self) -> _Table:
        return _Table(np.empty(0, np.uint64), np.empty((0, self.width), np.uint64), self._widths or SMALL)

    def _pending_arrays(self) -> tuple[U64, Payload]:
        if len(self._pending) > 1:
            self._pending = [
                (np.concatenate([f for f, _ in self._pending]), np.concatenate([p for _, p in self._pending]))
            ]
        return self._pending[0]


class _Table:
    """Entries (fingerprints and payload rows) ordered by each part, with each part's run
    offsets; never changed once built."""

    def __init__(self, fingerprints: U64, payload: Payload, widths: tuple[int, ...]) -> None:
        self.widths = widths
        self.fingerprints = fingerprints
        self.payload = payload
        self._shifts = tuple(int(s) for s in np.cumsum((0, *widths[:-1])))
        self._order: list[npt.NDArray[np.uint32]] = []
        self._starts: list[npt.NDArray[np.int32]] = []
        for part, width in enumerate(widths):
            keys = self._keys(fingerprints, part)
            self._order.append(_ordered(keys))
            self._starts.append(_offsets(keys, width))

    def __len__(self) -> int:
        return len(self.fingerprints)

    @property
    def nbytes(self) -> int:
        arrays: list[npt.NDArray[np.generic]] = [self.fingerprints, self.payload, *self._order, *self._starts]
        return sum(a.nbytes for a in arrays)

    def with_(self, more: U64, payload: Payload, widths: tuple[int, ...] | None = None) -> _Table:
        """A table of these entries and `more`, in `widths` (None: the layout for its size)."""
        layout = widths or widths_for(len(self) + len(more))
        fingerprints = np.concatenate([self.fingerprints, more])
        rows = np.concatenate([self.payload, payload])
        if layout != self.widths:
            return _Table(fingerprints, rows, layout)
        merged = object.__new__(_Table)
        merged.widths, merged._shifts = self.widths, self._shifts
        merged.fingerprints, merged.payload = fingerprints, rows
        merged._order, merged._starts = [], []
        for part, width in enumerate(self.widths):
            keys = self._keys(more, part)
            order = _ordered(keys)
            where = self._starts[part][keys[order] + 1]
            merged._order.append(np.insert(self._order[part], where, (order + len(self)).astype(np.uint32)))
            merged._starts.append(self._starts[part] + _offsets(keys, width))
        return merged

    def search(self, queries: U64, radius: int) -> tuple[Positions, Positions, int]:
        """(query position, entry position) of the entries within `radius` of each query; entries read."""
        found: list[tuple[Positions, Positions, int]] = []
        if len(self) and len(queries):
            for part, tolerance in enumerate(tolerances(radius, len(self.widths))):
                if tolerance >= 0:
                    found.append(self._probe(part, tolerance, queries, radius))
        if not found:
            return np.empty(0, np.intp), np.empty(0, np.intp), 0
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]), sum(f[2] for f in found)

    def _keys(self, fingerprints: U64, part: int) -> npt.NDArray[np.int64]:
        mask = np.uint64((1 << self.widths[part]) - 1)
        keys: npt.NDArray[np.int64] = ((fingerprints >> np.uint64(self._shifts[part])) & mask).astype(np.int64)
        return keys

    def _probe(self, part: int, tolerance: int, queries: U64, radius: int) -> tuple[Positions, Positions, int]:
        """The runs of this part's values within `tolerance` bits of each query's, gathered at once."""
        flips = _flips(self.widths[part], tolerance)
        probes = (self._keys(queries, part)[:, None] ^ flips[None, :]).ravel()
        starts = self._starts[part]
        first = starts[probes]
        lengths = starts[probes + 1] - first
        total = int(lengths.sum())
        if not total:
            return np.empty(0, np.intp), np.empty(0, np.intp), 0
        ends = np.cumsum(lengths)
        entries = np.arange(total) + np.repeat(first - (ends - lengths), lengths)
        owner = np.repeat(np.arange(len(probes)) // len(flips), lengths)
        positions = self._order[part][entries].astype(np.intp)
        near = np.bitwise_count(self.fingerprints[positions] ^ queries[owner]) <= radius
        return owner[near], positions[near], total


@dataclass(frozen=True)
class _Pending:
    """The entries not yet in a table, compared with every query in full."""

    fingerprints: U64
    payload: Payload

    def search(self, queries: U64, radius: int) -> tuple[Positions, Positions, int]:
        at, positions = np.nonzero(np.bitwise_count(queries[:, None] ^ self.fingerprints[None, :]) <= radius)
        return at, positions, len(queries) * len(self.fingerprints)


DENSE = 1 << 20  # pairs compared in full, at most; with more, the values are looked up in a NearIndex


def pairs_between(queries: U64, values: U64, radius: int) -> tuple[Positions, Positions]:
    """The pairs (i, j) of a query and a value within `radius` bits, ordered by i then j: in
    memory linear in the numbers of queries, values and pairs."""
    if len(queries) * len(values) <= DENSE:
        at, other = np.nonzero(np.bitwise_count(queries[:, None] ^ values[None, :]) <= radius)
        return at, other
    found = NearIndex(values, np.arange(len(values), dtype=np.uint64)[:, None]).search(queries, radius)
    other = found.payload[:, 0].astype(np.intp)
    order = np.lexsort((other, found.queries))
    return found.queries[order], other[order]


def _ordered(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
    """The positions of `keys` in the order of their values (ties in position order): one sort of
    (key, position) packed in 64 bits, faster than an argsort."""
    packed = (keys.astype(np.uint64) << np.uint64(32)) | np.arange(len(keys), dtype=np.uint64)
    packed.sort()
    positions: npt.NDArray[np.uint32] = packed.astype(np.uint32)  # the low 32 bits
    return positions


def _offsets(keys: npt.NDArray[np.int64], width: int) -> npt.NDArray[np.int32]:
    """Where each value's run begins among `keys` sorted: 2**width + 1 offsets."""
    starts = np.zeros((1 << width) + 1, np.int32)
    # summed in int32: no int64 pass to cast
    np.cumsum(np.bincount(keys, minlength=1 << width), out=starts[1:], dtype=np.int32)
    return starts


@cache
def _flips(width: int, tolerance: int) -> npt.NDArray[np.int64]:
    return np.array(masks(width, tolerance), np.int64)


def u64_array(values: Iterable[int] | U64) -> U64:
    """Fingerprints as an array of unsigned 64-bit integers (signed int64 ones reinterpreted)."""
    if isinstance(values, np.ndarray):
        return values.view(np.uint64) if values.dtype == np.int64 else values.astype(np.uint64, copy=False)
    return np.fromiter(values, np.uint64)


def _distinct(found: list[tuple[Positions, Positions, U64, Payload, int]]) -> Hits:
    """The tables' finds (query, entry number among all tables, fingerprint, payload, read) as
    one, each (query, entry) once: a part finds an entry once, but several parts may find it."""
    at = np.concatenate([f[0] for f in found])
    entry = np.concatenate([f[1] for f in found])
    fingerprints = np.concatenate([f[2] for f in found])
    payload = np.concatenate([f[3] for f in found])
    order = np.lexsort((entry, at))
    keep = np.ones(len(order), bool)
    keep[1:] = (at[order][1:] != at[order][:-1]) | (entry[order][1:] != entry[order][:-1])
    kept = order[keep]
    kept = kept[np.lexsort((fingerprints[kept], at[kept]))]
    return Hits(at[kept], fingerprints[kept], payload[kept], sum(f[4] for f in found))
