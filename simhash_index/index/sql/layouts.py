"""How the documents table finds a fingerprint's near pages: its lookup columns and indexes.

"blocks" (the default): four 16-bit block columns, block0 to block3, each the leading
column of an index that also holds the fingerprint. Two fingerprints within 3 bits agree
on at least one block (pigeonhole: four blocks each 1 or more bits off would be 4 or more
bits apart), so four exact index lookups find every candidate, and the covering index lets
the distance be checked before any row is read. A lookup reads about 4N/65,536 index
entries: the fastest layout while the index is at most a few million pages.

"halves": no columns; two expression indexes on the fingerprint's 32-bit halves, each
probed equal or one bit off (33 values a half, 66 probes): within 3 bits one half is at most
one bit off. A lookup reads about 66N/2**32 entries, flat as the index grows: the layout for
indexes past a few million pages (docs/scale.md). Schema version 2 indexes are "halves".

Block assignment (blocks layout): "contiguous" puts bits 16i to 16i+15 in block i;
"interleaved" puts bit j in block j mod 4 (so block i holds bits i, i+4, ..., i+60).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..records import to_signed

LAYOUTS = ("blocks", "halves")
ASSIGNMENTS = ("contiguous", "interleaved")
BLOCK_COLUMNS = ("block0", "block1", "block2", "block3")
# The halves as signed 32-bit expressions (4 bytes in an SQLite index entry): bits 0-31 offset
# by -2**31 (SQLite has no XOR), bits 32-63 as the arithmetic shift of the signed column gives them.
HALF_KEYS = {
    "low_half": "((fingerprint & 4294967295) - 2147483648)",
    "high_half": "(fingerprint >> 32)",
}
_FLIPS = (0, *(1 << bit for bit in range(32)))
_SIGN = 0x80000000


def contiguous_blocks(fingerprint: int) -> tuple[int, int, int, int]:
    """Bits 0-15, 16-31, 32-47, 48-63 of an unsigned 64-bit fingerprint."""
    return (fingerprint & 0xFFFF, (fingerprint >> 16) & 0xFFFF, (fingerprint >> 32) & 0xFFFF, fingerprint >> 48)


def interleaved_blocks(fingerprint: int) -> tuple[int, int, int, int]:
    """Block i holds bits i, i+4, ..., i+60 of the fingerprint, bit i+4j as its bit j."""
    out = []
    for i in range(4):
        x = (fingerprint >> i) & 0x1111111111111111  # every fourth bit, gathered below
        x = (x | (x >> 3)) & 0x0303030303030303
        x = (x | (x >> 6)) & 0x000F000F000F000F
        x = (x | (x >> 12)) & 0x000000FF000000FF
        out.append((x | (x >> 24)) & 0xFFFF)
    return out[0], out[1], out[2], out[3]


def half_probes(fingerprint: int) -> tuple[list[int], list[int]]:
    """Per half, the HALF_KEYS values of that half equal to the fingerprint's or one bit off."""
    low, high = fingerprint & 0xFFFFFFFF, (fingerprint >> 32) ^ _SIGN
    return [(low ^ flip) - _SIGN for flip in _FLIPS], [(high ^ flip) - _SIGN for flip in _FLIPS]


def _array(values: list[int]) -> str:
    """An array parameter as text ('{1,2}', cast by the statement): cheaper than the driver's lists."""
    return "{" + ",".join(map(str, values)) + "}"


@dataclass(frozen=True)
class Layout:
    """A documents table's lookup layout, and the SQL that probes it."""

    name: Literal["blocks", "halves"]
    assignment: Literal["contiguous", "interleaved"] = "contiguous"

    def __post_init__(self) -> None:
        if self.name not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS} ('blocks' up to a few million pages); got {self.name!r}")
        if self.assignment not in ASSIGNMENTS:
            raise ValueError(f"block assignment must be one of {ASSIGNMENTS}; got {self.assignment!r}")

    def describe(self) -> str:
        """ "blocks (contiguous)", "blocks (interleaved)" or "halves"."""
        return f"blocks ({self.assignment})" if self.name == "blocks" else "halves"

    @property
    def columns(self) -> tuple[str, ...]:
        """The lookup columns a row stores beside its fingerprint."""
        return BLOCK_COLUMNS if self.name == "blocks" else ()

    def blocks(self, fingerprint: int) -> tuple[int, int, int, int]:
        return interleaved_blocks(fingerprint) if self.assignment == "interleaved" else contiguous_blocks(fingerprint)

    def values(self, fingerprint: int | None, near_matchable: bool) -> tuple[int | None, ...]:
        """The lookup columns' values of a row: its blocks, or NULLs for a page matched only
        by its text (so no lookup finds it)."""
        if self.name != "blocks":
            return ()
        if fingerprint is None or not near_matchable:
            return (None, None, None, None)
        return self.blocks(fingerprint)

    # -- the candidate lookups ------------------------------------------------------------

    def candidates_sql(self, dialect: str) -> str:
        """SQLite: (id, fingerprint, exact_only) of the rows that may be near, a row found by
        several probes once per probe; the caller checks the distance and exact_only (in the
        WHERE clause it would keep SQLite from the halves' expression indexes)."""
        if self.name == "blocks":  # exact-only rows have no blocks: no probe finds them
            parts = [f"SELECT id, fingerprint, 0 FROM simhash_documents WHERE {c} = ?" for c in BLOCK_COLUMNS]
        else:
            marks = ", ".join(["?"] * 33)
            parts = [
                f"SELECT id, fingerprint, exact_only FROM simhash_documents WHERE {e} IN ({marks})"
                for e in HALF_KEYS.values()
            ]
        return " UNION ALL ".join(parts)

    def batch_candidates(self, fingerprints: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """SQLite: one statement reading the fingerprints that may be near any of these (a
        row found by several probes once per probe), and its parameters. Only the fingerprint
        is read: each row costs as much to hand to Python as to find. (Halves: rows matched
        only by their text are found too; the rule leaves them out.)"""
        if self.name == "blocks":
            columns: Sequence[str] = BLOCK_COLUMNS
            values = self._block_values(fingerprints)
        else:
            columns = tuple(HALF_KEYS.values())
            values = self._half_values(fingerprints)
        parts = [
            f"SELECT fingerprint FROM simhash_documents WHERE {column} IN ({', '.join(['?'] * len(probes))})"
            for column, probes in zip(columns, values)
        ]
        return " UNION ALL ".join(parts), tuple(v for probes in values for v in probes)

    def rows_with_fingerprints(self, fingerprints: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """SQLite: a WHERE clause for the rows whose fingerprint is one of these (found through
        the first block's index, or the low half's), and its parameters."""
        if self.name == "blocks":
            column, probes = BLOCK_COLUMNS[0], self._block_values(fingerprints)[0]
        else:  # a fingerprint's own low half is its first probe
            column, probes = HALF_KEYS["low_half"], sorted({half_probes(fp)[0][0] for fp in fingerprints})
        signed = sorted({to_signed(fp) for fp in fingerprints})
        where = f"{column} IN ({', '.join(['?'] * len(probes))}) AND fingerprint IN ({', '.join(['?'] * len(signed))})"
        return where, (*probes, *signed)

    def _block_values(self, fingerprints: Sequence[int]) -> list[list[int]]:
        """Per block column, the sorted values the fingerprints have in it."""
        blocks = [self.blocks(fp) for fp in fingerprints]
        return [sorted({b[i] for b in blocks}) for i in range(4)]

    @staticmethod
    def _half_values(fingerprints: Sequence[int]) -> list[list[int]]:
        """Per HALF_KEYS expression, the sorted values probed: each fingerprint's half and every
        value one bit off it."""
        low: set[int] = set()
        high: set[int] = set()
        for fp in fingerprints:
            lows, highs = half_probes(fp)
            low.update(lows)
            high.update(highs)
        return [sorted(low), sorted(high)]

    def candidates_parameters(self, fingerprint: int) -> tuple[int, ...]:
        if self.name == "blocks":
            return self.blocks(fingerprint)
        low, high = half_probes(fingerprint)
        return (*low, *high)

    def near_sql(self) -> str:
        """PostgreSQL, one statement: the near rows within the distance (bit_count needs
        PostgreSQL 14), with what the rule needs of them."""
        if self.name == "blocks":
            found = " OR ".join(f"{c} = %s" for c in BLOCK_COLUMNS)
        else:
            found = " OR ".join(f"{e} = ANY(%s::bigint[])" for e in HALF_KEYS.values()) + ") AND (exact_only = 0"
        return (
            "SELECT id, key, fingerprint, text_hash, sketch, stored_at FROM simhash_documents "
            f"WHERE ({found}) AND bit_count((fingerprint # %s::bigint)::bit(64)) <= %s"
        )

    def near_batch_sql(self) -> str | None:
        """PostgreSQL, blocks layout: the near rows of many fingerprints in one statement, each
        row with the (1-based) position of its query; the distance is checked in the covering
        indexes before a row is read. None for halves (a statement a fingerprint, pipelined)."""
        if self.name != "blocks":
            return None
        lookups = " UNION ".join(
            f"SELECT id FROM simhash_documents WHERE {c} = q.b{i} AND bit_count((fingerprint # q.fp)::bit(64)) <= %s"
            for i, c in enumerate(BLOCK_COLUMNS)
        )
        return (
            "SELECT q.n, d.id, d.key, d.fingerprint, d.text_hash, d.sketch, d.stored_at "
            "FROM unnest(%s::bigint[], %s::int[], %s::int[], %s::int[], %s::int[]) "
            "WITH ORDINALITY AS q(fp, b0, b1, b2, b3, n) "
            f"CROSS JOIN LATERAL ({lookups}) AS c JOIN simhash_documents d ON d.id = c.id"
        )

    def near_batch_parameters(self, fingerprints: Sequence[int], max_distance: int) -> tuple[object, ...]:
        blocks = [self.blocks(fp) for fp in fingerprints]
        columns = [[to_signed(fp) for fp in fingerprints], *([b[i] for b in blocks] for i in range(4))]
        return (*columns, *[max_distance] * 4)

    def near_parameters(self, fingerprint: int, max_distance: int) -> tuple[object, ...]:
        if self.name == "blocks":
            probes: tuple[object, ...] = self.blocks(fingerprint)
        else:
            low, high = half_probes(fingerprint)
            probes = (_array(low), _array(high))
        return (*probes, to_signed(fingerprint), max_distance)
