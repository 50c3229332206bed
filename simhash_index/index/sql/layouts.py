"""How the documents table finds a fingerprint's near pages: its lookup columns and indexes.

"blocks" (the default): four 16-bit block columns, block0 to block3, each the leading
column of an index that also holds the fingerprint. A lookup probes each block at the values
probes.py gives for the search radius (its own value up to radius 3; and its 16 one-bit
variants for up to four blocks from radius 4 to 7), and the covering index lets the distance
be checked before any row is read. A lookup reads about (probes)*N/65,536 index entries: the
fastest layout while the index is at most a few million pages.

"halves": no columns; two expression indexes on the fingerprint's 32-bit halves, each
probed at the values within its tolerance (one bit off each: radius 3, 66 probes; two bits:
radius 5, 1,058 probes). A lookup reads about (probes)*N/2**32 entries, flat as the index
grows: the layout for indexes past a few million pages at small radii.
Schema version 2 indexes are "halves".

Block assignment (blocks layout): "contiguous" puts bits 16i to 16i+15 in block i;
"interleaved" puts bit j in block j mod 4 (so block i holds bits i, i+4, ..., i+60).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ...errors import InvalidArgumentError
from ...fingerprinting.bits import blocks, interleaved_blocks, to_signed
from ..probes import MAX_BLOCKS_RADIUS, MAX_HALVES_RADIUS, part_probes
from .dialects import SqlDialect, array_text

LayoutName = Literal["blocks", "halves"]
Assignment = Literal["contiguous", "interleaved"]
LAYOUTS: tuple[LayoutName, ...] = get_args(LayoutName)
ASSIGNMENTS: tuple[Assignment, ...] = get_args(Assignment)
BLOCK_COLUMNS = ("block0", "block1", "block2", "block3")
# The halves as signed 32-bit expressions (4 bytes in an SQLite index entry): bits 0-31 offset
# by -2**31 (SQLite has no XOR), bits 32-63 as the arithmetic shift of the signed column gives them.
HALF_KEYS = {
    "low_half": "((fingerprint & 4294967295) - 2147483648)",
    "high_half": "(fingerprint >> 32)",
}
_SIGN = 0x80000000


@dataclass(frozen=True)
class Layout:
    """A documents table's lookup layout, and the SQL that probes it."""

    name: LayoutName
    assignment: Assignment = "contiguous"

    def __post_init__(self) -> None:
        if self.name not in LAYOUTS:
            raise InvalidArgumentError(
                f"layout must be one of {LAYOUTS} ('blocks' up to a few million pages); got {self.name!r}"
            )
        if self.assignment not in ASSIGNMENTS:
            raise InvalidArgumentError(f"block assignment must be one of {ASSIGNMENTS}; got {self.assignment!r}")

    def describe(self) -> str:
        """ "blocks (contiguous)", "blocks (interleaved)" or "halves"."""
        return f"blocks ({self.assignment})" if self.name == "blocks" else "halves"

    @property
    def columns(self) -> tuple[str, ...]:
        """The lookup columns a row stores beside its fingerprint."""
        return BLOCK_COLUMNS if self.name == "blocks" else ()

    def blocks(self, fingerprint: int) -> tuple[int, int, int, int]:
        return interleaved_blocks(fingerprint) if self.assignment == "interleaved" else blocks(fingerprint)

    def values(self, fingerprint: int | None, near_matchable: bool) -> tuple[int | None, ...]:
        """The lookup columns' values of a row: its blocks, or NULLs for a page matched only
        by its text (so no lookup finds it)."""
        if self.name != "blocks":
            return ()
        if fingerprint is None or not near_matchable:
            return (None, None, None, None)
        return self.blocks(fingerprint)

    # -- the candidate lookups ------------------------------------------------------------

    @property
    def max_radius(self) -> int:
        """The largest search radius this layout's probes answer."""
        return MAX_BLOCKS_RADIUS if self.name == "blocks" else MAX_HALVES_RADIUS

    def check_radius(self, radius: int) -> None:
        """Refuse a radius the probes cannot answer, naming the layout and its largest."""
        if radius > self.max_radius:
            raise InvalidArgumentError(
                f"the {self.name} layout answers a search radius of at most {self.max_radius} bits; got {radius} "
                f"(lower max_distance, or use the blocks layout, which answers up to {MAX_BLOCKS_RADIUS})"
            )

    @property
    def _key_type(self) -> str:
        """PostgreSQL's type of the lookup columns' values: int blocks, bigint half expressions."""
        return "int" if self.name == "blocks" else "bigint"

    @property
    def lookup_columns(self) -> tuple[str, ...]:
        """The indexed columns (blocks) or expressions (halves) a lookup probes."""
        return BLOCK_COLUMNS if self.name == "blocks" else tuple(HALF_KEYS.values())

    def probes(self, fingerprint: int, radius: int) -> list[list[int]]:
        """Per lookup column, the values to probe so every fingerprint within `radius` is found
        (probes.py); an empty list: that column needs no probe at this radius."""
        if self.name == "blocks":
            return part_probes(self.blocks(fingerprint), 16, radius)
        low, high = part_probes((fingerprint & 0xFFFFFFFF, fingerprint >> 32), 32, radius)
        return [[value - _SIGN for value in low], [(value ^ _SIGN) - _SIGN for value in high]]

    def first_key(self, fingerprint: int) -> int:
        """The value of the first lookup column (block0, or the low half's key) for a fingerprint:
        what its radius-0 probe of that column is."""
        return self.blocks(fingerprint)[0] if self.name == "blocks" else (fingerprint & 0xFFFFFFFF) - _SIGN

    def _probed(self, fingerprints: Sequence[int], radius: int) -> list[tuple[str, list[int]]]:
        """(column, sorted values) of the columns probed for any of these fingerprints."""
        values: list[set[int]] = [set() for _ in self.lookup_columns]
        for fingerprint in fingerprints:
            for found, probes in zip(values, self.probes(fingerprint, radius)):
                found.update(probes)
        return [(column, sorted(found)) for column, found in zip(self.lookup_columns, values) if found]

    def batch_candidates(self, fingerprints: Sequence[int], radius: int) -> tuple[str, tuple[object, ...]]:
        """SQLite: one statement reading the fingerprints that may be within `radius` of any of
        these (a row found by several probes once per probe), and its parameters. Only the
        fingerprint is read: each row costs as much to hand to Python as to find. (Halves: rows
        matched only by their text are found too; the rule leaves them out.)"""
        return _union_of_probes("fingerprint", self._probed(fingerprints, radius))

    def rows_with_fingerprints(self, fingerprints: Sequence[int], dialect: SqlDialect) -> tuple[str, tuple[Any, ...]]:
        """A WHERE clause for the rows whose fingerprint is one of these, and its parameters: each
        (first block or low half, fingerprint) pair one seek in the first lookup index (two IN
        lists would search every pair of the two lists)."""
        pairs = sorted({(self.first_key(fp), to_signed(fp)) for fp in fingerprints})
        return dialect.pairs_in(f"({self.lookup_columns[0]}, fingerprint)", pairs, (self._key_type, "bigint"))

    def near(self, fingerprint: int, radius: int, selected: str) -> tuple[str, tuple[object, ...]]:
        """PostgreSQL, one statement: the `selected` columns of the near rows within `radius`
        (bit_count needs PostgreSQL 14); and its parameters."""
        probed = self._probed([fingerprint], radius)
        found = " OR ".join(f"{column} = ANY(%s::{self._key_type}[])" for column, _ in probed)
        if self.name == "halves":
            found = f"({found}) AND exact_only = 0"
        statement = (
            f"SELECT {selected} FROM simhash_documents "
            f"WHERE ({found}) AND bit_count((fingerprint # %s::bigint)::bit(64)) <= %s"
        )
        return statement, (*(array_text(values) for _, values in probed), to_signed(fingerprint), radius)

    def near_batch(self, fingerprints: Sequence[int], radius: int) -> tuple[str, tuple[object, ...]] | None:
        """PostgreSQL, blocks layout: one statement finding the near fingerprints of many, as
        (1-based position of the query, fingerprint), and its parameters: each probe a row of
        (query's fingerprint, block value, position) looked up in its block's covering index,
        where the distance is checked without reading a row. None for halves (a statement a
        fingerprint, pipelined)."""
        if self.name != "blocks":
            return None
        queries = [(n, to_signed(fp), self.probes(fp, radius)) for n, fp in enumerate(fingerprints, 1)]
        lookups, parameters = [], []
        for i, column in enumerate(BLOCK_COLUMNS):
            rows = [(signed, value, n) for n, signed, probes in queries for value in probes[i]]
            if not rows:
                continue
            lookups.append(
                "SELECT q.n, c.fingerprint FROM unnest(%s::bigint[], %s::int[], %s::int[]) AS q(fp, v, n) "
                f"CROSS JOIN LATERAL (SELECT fingerprint FROM simhash_documents WHERE {column} = q.v "
                "AND bit_count((fingerprint # q.fp)::bit(64)) <= %s OFFSET 0) AS c"
            )
            fps, values, positions = zip(*rows)
            parameters += [array_text(fps), array_text(values), array_text(positions), radius]
        return " UNION ".join(lookups), tuple(parameters)


def _union_of_probes(selected: str, probed: list[tuple[str, list[int]]]) -> tuple[str, tuple[object, ...]]:
    """SQLite: SELECT `selected` of the rows each probed column finds, UNION ALL; no parameters.
    The probe values are integers computed here, never input, written into the statement: a
    long IN list of literals runs faster than one bound as a JSON array, and nears no limit on
    parameters."""
    parts = [f"SELECT {selected} FROM simhash_documents WHERE {c} IN ({','.join(map(str, v))})" for c, v in probed]
    return " UNION ALL ".join(parts), ()
