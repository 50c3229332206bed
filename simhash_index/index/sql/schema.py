"""The SQL schema of an index: documents, duplicates and metadata tables.

Fingerprints and hashes are unsigned 64-bit values stored as signed BIGINT (two's
complement). The documents table's lookup columns and indexes depend on its layout
(layouts.py): block0..block3 with an index each ("blocks"), or two expression indexes
on the fingerprint's halves ("halves").

Schema versions: 5 keeps each page's words and dates (what a survivor policy compares) and
logs why a superseded page was superseded; the columns of LATER came later, without a new
version (a version 5 index may lack them until opened to write); 4 logs the search radius each
duplicate was found at; 3 records the layout (`layout`, `block_assignment` in simhash_meta)
and logs each duplicate's fingerprint and similarity; 2 is a "halves" index without those
columns; 1 is older. Older versions are read as they are and upgraded in place when opened to
write (migrate.py).
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import cache
from typing import Any, NamedTuple

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from .layouts import BLOCK_COLUMNS, HALF_KEYS, Layout

SCHEMA_VERSION = "5"
# The duplicates log's evidence columns (NULL where not known): the dropped page's fingerprint,
# its similarity to the stored page, the search radius it was checked at, and, for a page
# stored until a preferred copy came, why it was superseded ("longer", "newer", "preferred").
# And, since after version 5, about how many words it added to the page it was dropped for.
EVIDENCE = ("fingerprint", "similarity", "radius", "superseded", "added")
_EVIDENCE_TYPES: dict[str, Any] = {
    "fingerprint": BigInteger,
    "similarity": Float,
    "radius": SmallInteger,
    "superseded": Text,
    "added": Integer,
}
DOCUMENTS = "simhash_documents"
DUPLICATES = "simhash_duplicates"
KEY_HASH_INDEX = "ix_simhash_documents_key_hash"
# Nullable columns version 5 gained without a new version (NULL: not known), added when an index
# is opened to write (migrate.add_later_columns): older simhash-index versions name the columns
# they read and write, so they go on reading and writing such an index. A page's HTTP
# Last-Modified; its distinct shingles, their bitmap (what it adds to another page) and one bit
# of each slot of its sketch (how a writer turns candidates away in memory); the words a
# duplicate added.
LATER: dict[str, dict[str, str]] = {
    DOCUMENTS: {"modified": "timestamp", "shingles": "integer", "bloom": "blob", "sketch_bits": "blob"},
    DUPLICATES: {"added": "integer"},
}


def later(table: str, column: str) -> str:
    """A LATER column's qualified name, as Opened.missing holds it."""
    return f"{table}.{column}"


def evidence_of(version: str, missing: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The evidence columns of a duplicates log written at this schema version, but the `missing`."""
    found = {"2": (), "3": EVIDENCE[:2], "4": EVIDENCE[:3]}.get(version, EVIDENCE)
    return tuple(name for name in found if later(DUPLICATES, name) not in missing)


class Timestamp(TypeDecorator[datetime]):
    """An aware UTC datetime: TIMESTAMPTZ on PostgreSQL, whole seconds since 1970 on SQLite.

    SQLAlchemy's SQLite DateTime is 26 characters of ISO text; an integer is 4 bytes.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Integer())
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> object:
        if value is None or dialect.name != "sqlite":
            return value
        return int((value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp())  # naive = UTC

    def process_result_value(self, value: object, dialect: Dialect) -> datetime | None:
        if value is None or dialect.name != "sqlite":
            return value  # type: ignore[return-value]
        return datetime.fromtimestamp(value, timezone.utc)  # type: ignore[arg-type]


def _row_id() -> Integer:
    return Integer().with_variant(BigInteger, "postgresql")


class Tables(NamedTuple):
    metadata: MetaData
    meta: Table
    documents: Table
    duplicates: Table


@cache
def tables(layout: Layout, *, evidence: tuple[str, ...] = EVIDENCE) -> Tables:
    """The tables of an index of this layout; `evidence`: the evidence columns its duplicates
    log has (evidence_of gives them by schema version)."""
    metadata = MetaData()
    meta = Table(
        "simhash_meta", metadata, Column("name", Text, primary_key=True), Column("value", Text, nullable=False)
    )
    documents = Table(
        DOCUMENTS,
        metadata,
        Column("id", _row_id(), primary_key=True, autoincrement=True),
        Column("key", Text, nullable=False),
        Column("key_hash", BigInteger, nullable=False),  # unique: KEY_HASH_INDEX
        Column("fingerprint", BigInteger),
        *(Column(name, Integer) for name in layout.columns),  # NULL for pages matched by text only
        Column("exact_only", SmallInteger, nullable=False),  # 1: a short text (or no fingerprint), matched by text only
        Column("text_hash", BigInteger),
        Column("sketch", LargeBinary),
        Column("stored_at", Timestamp, nullable=False),
        Column("words", Integer),  # the text's length, its own date and its Last-Modified: for a survivor policy
        Column("dated", Timestamp),
        Column("modified", Timestamp),  # this and the next three: LATER
        Column("shingles", Integer),
        Column("bloom", LargeBinary),
        Column("sketch_bits", LargeBinary),
        # expression indexes name no column: they join the table here
        *(Index(f"ix_simhash_documents_{name}", text(e)) for name, e in HALF_KEYS.items() if layout.name == "halves"),
    )
    if layout.name == "blocks":  # each block with the fingerprint: the distance is checked in the index
        for name in BLOCK_COLUMNS:
            Index(f"ix_simhash_documents_{name}", documents.c[name], documents.c.fingerprint)
    # A unique index rather than a UNIQUE constraint, so that a bulk load can drop it and build
    # it once at the end (SQLite cannot drop a constraint); tables written before keep theirs.
    Index(KEY_HASH_INDEX, documents.c.key_hash, unique=True)
    Index(  # bulk-loaded fingerprints come without a text hash: a partial index leaves them out
        "ix_simhash_documents_text_hash",
        documents.c.text_hash,
        sqlite_where=documents.c.text_hash.isnot(None),
        postgresql_where=documents.c.text_hash.isnot(None),
    )
    duplicates = Table(
        DUPLICATES,
        metadata,
        Column("id", _row_id(), primary_key=True, autoincrement=True),
        Column("key", Text, nullable=False),
        Column("key_hash", BigInteger, nullable=False, unique=True),
        Column("duplicate_of", Text, nullable=False),
        Column("duplicate_of_id", documents.c.id.type, ForeignKey(f"{DOCUMENTS}.id"), nullable=False),
        Column("distance", Integer, nullable=False),
        Column("exact", Boolean, nullable=False),
        Column("seen_at", Timestamp, nullable=False),
        *(Column(name, _EVIDENCE_TYPES[name]) for name in evidence),
    )
    Index("ix_simhash_duplicates_duplicate_of_id", duplicates.c.duplicate_of_id)
    return Tables(metadata, meta, documents, duplicates)
