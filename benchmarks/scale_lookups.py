"""What a query reads: the index's two half lookups in SQL, and the same counted in numpy from the fingerprints.

The numpy side needs no database: it counts, from the stored fingerprints themselves, the rows
the half lookups must return (a cross-check of the SQL) and the rows a Manku-style table of
16-bit blocks (one lookup per block, as the blocks layout probes at radius 3) would read.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from benchmarks._stores import candidate_statement, lookup_statement
from simhash_index import SimhashIndex
from simhash_index.index.records import MASK64
from simhash_index.index.sql.statements import fetch

BLOCK_VALUES = 1 << 16
HALF_NAMES = ("low", "high")  # bits 0-31 (block0 + block1), bits 32-63 (block2 + block3)
_FLIPS = np.array([0, *(1 << bit for bit in range(32))], dtype=np.uint32)


def half_theory(n: float) -> float:
    """Rows the two half lookups read per random query among N uniform fingerprints: 66N/2**32."""
    return 66 * n / 2**32


def block_theory(n: float) -> float:
    """Rows a 16-bit block table reads per random query among N uniform fingerprints: 4N/65536."""
    return 4 * n / BLOCK_VALUES


def distance(stored: int, q: int) -> int:
    """Hamming distance of two fingerprints (signed or unsigned)."""
    return ((stored ^ q) & MASK64).bit_count()


def lookup_rows(index: SimhashIndex, queries: Iterable[int]) -> list[list[int]]:
    """Per query, the stored fingerprints (unsigned) that sql.CANDIDATES returns: a page once per half that finds it."""
    with index.transaction(write=False) as conn:
        name = conn.dialect.name
        statement = candidate_statement(index, name)
        parameters = index.layout.candidates_parameters
        return [[fp & MASK64 for _, fp, _ in fetch(conn, statement, parameters(q))] for q in queries]


def examined(index: SimhashIndex, q: int) -> int | None:
    """Table rows the database fetched for query()'s lookup, rows its filters dropped included (None: not known).

    SQLite: when its plan searches each half's expression index on the whole key, it fetches just
    the rows it returns. PostgreSQL (whose statement also filters on the distance): from EXPLAIN
    ANALYZE's scan nodes.
    """
    with index.transaction(write=False) as conn:
        name = conn.dialect.name
        statement, params = lookup_statement(index, name, q)
        if name == "sqlite":
            plan = [row[-1] for row in fetch(conn, "EXPLAIN QUERY PLAN " + statement, params)]
            searches = [line for line in plan if line.startswith("SEARCH")]
            exact = sorted(searches) == [
                f"SEARCH simhash_documents USING INDEX ix_simhash_documents_{half}_half (<expr>=?)"
                for half in ("high", "low")
            ]
            return len(fetch(conn, statement, params)) if exact else None
        plan = fetch(conn, "EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params)[0][0]
    nodes, total = [plan[0]["Plan"]], 0
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("Plans", []))
        if node["Node Type"] in ("Seq Scan", "Index Scan", "Bitmap Heap Scan"):
            total += node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0)
            total += node.get("Rows Removed by Index Recheck", 0)
    return total


def _blocks(fingerprints: np.ndarray) -> list[np.ndarray]:
    return [((fingerprints >> np.uint64(16 * i)) & np.uint64(0xFFFF)).astype(np.intp) for i in range(4)]


class BlockCounts:
    """Stored pages per 16-bit block value, built chunk by chunk (a 10M load is never held whole)."""

    def __init__(self, chunks: Iterable[np.ndarray] = ()) -> None:
        self.counts = np.zeros((4, BLOCK_VALUES), dtype=np.int64)
        for chunk in chunks:
            for i, values in enumerate(_blocks(chunk)):
                self.counts[i] += np.bincount(values, minlength=BLOCK_VALUES)

    def reads(self, queries: list[int]) -> np.ndarray:
        """Per query, the rows a block table reads: the pages sharing each of its four blocks, summed."""
        return sum(self.counts[i][values] for i, values in enumerate(_blocks(np.array(queries, dtype=np.uint64))))

    def largest(self) -> tuple[int, int, int]:
        """(pages, block position, value) of the fullest block bucket."""
        position, value = np.unravel_index(int(np.argmax(self.counts)), self.counts.shape)
        return int(self.counts[position, value]), int(position), int(value)


class Fingerprints:
    """Stored fingerprints held in memory (the skew tests, the eval corpus), for brute-force answers and counts."""

    def __init__(self, fingerprints: np.ndarray) -> None:
        self.all = fingerprints.astype(np.uint64)
        self.blocks = _blocks(self.all)
        self.block_counts = BlockCounts([self.all])
        self.halves = [np.sort((self.all >> np.uint64(32 * i)).astype(np.uint32)) for i in range(2)]

    def within(self, q: int, limit: int = 3) -> np.ndarray:
        """Positions of the fingerprints within `limit` bits of q (brute force)."""
        return np.flatnonzero(np.bitwise_count(self.all ^ np.uint64(q)) <= limit)

    def block_reads(self, q: int) -> tuple[int, int]:
        """(rows, of them more than 3 bits away) a block table reads for q: a page once per block it shares."""
        far = np.bitwise_count(self.all ^ np.uint64(q)) > 3
        rows = wasted = 0
        for i, values in enumerate(self.blocks):
            same = values == (q >> (16 * i)) & 0xFFFF
            rows += int(np.count_nonzero(same))
            wasted += int(np.count_nonzero(same & far))
        return rows, wasted

    def half_reads(self, q: int) -> int:
        """Rows the two half lookups must return for q: pages whose half equals q's or is one bit off, per half."""
        total = 0
        for i, halves in enumerate(self.halves):
            keys = np.uint32((q >> (32 * i)) & 0xFFFFFFFF) ^ _FLIPS
            total += int(np.sum(np.searchsorted(halves, keys, "right") - np.searchsorted(halves, keys, "left")))
        return total

    def largest_half(self) -> tuple[int, str, int]:
        """(pages, half name, value) of the fullest 32-bit half bucket."""
        best = (0, HALF_NAMES[0], 0)
        for name, halves in zip(HALF_NAMES, self.halves):
            values, counts = np.unique(halves, return_counts=True)
            top = int(np.argmax(counts))
            best = max(best, (int(counts[top]), name, int(values[top])))
        return best
