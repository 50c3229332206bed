"""The SQL schema of an index: documents, duplicates and metadata tables.

Fingerprints and hashes are unsigned 64-bit values stored as signed BIGINT
(two's complement). The fingerprint's two 32-bit halves are not columns: two
expression indexes hold them (sql.HALF_KEYS), for the lookups described in sql.py.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
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

from .sql import HALF_KEYS

SCHEMA_VERSION = "2"


class Timestamp(TypeDecorator):
    """An aware UTC datetime: TIMESTAMPTZ on PostgreSQL, whole seconds since 1970 on SQLite.

    SQLAlchemy's SQLite DateTime is 26 characters of ISO text; an integer is 4 bytes.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine:
        return dialect.type_descriptor(Integer() if dialect.name == "sqlite" else DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> object:
        if value is None or dialect.name != "sqlite":
            return value
        return int((value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp())  # naive = UTC

    def process_result_value(self, value: object, dialect: Dialect) -> datetime | None:
        if value is None or dialect.name != "sqlite":
            return value  # type: ignore[return-value]
        return datetime.fromtimestamp(value, timezone.utc)  # type: ignore[arg-type]


metadata = MetaData()

meta = Table(
    "simhash_meta",
    metadata,
    Column("name", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

documents = Table(
    "simhash_documents",
    metadata,
    Column("id", Integer().with_variant(BigInteger, "postgresql"), primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False),
    Column("key_hash", BigInteger, nullable=False),  # unique: KEY_HASH_INDEX
    Column("fingerprint", BigInteger),
    Column("exact_only", SmallInteger, nullable=False),  # 1: a short text (or no fingerprint), matched by text only
    Column("text_hash", BigInteger),
    Column("sketch", LargeBinary),
    Column("stored_at", Timestamp, nullable=False),
    # Each half of the fingerprint, indexed as an expression: a lookup takes a half exactly
    # or one bit off (33 values each; see sql.py). Expressions, not columns, so a row stores
    # its fingerprint once.
    *(Index(f"ix_simhash_documents_{name}", text(expression)) for name, expression in HALF_KEYS.items()),
)
# A unique index rather than a UNIQUE constraint, so that a bulk load can drop it and build it
# once at the end, as it does the others (SQLite cannot drop a constraint). Tables written
# before it keep their constraint (indexes.key_indexes).
KEY_HASH_INDEX = Index("ix_simhash_documents_key_hash", documents.c.key_hash, unique=True)
# Bulk-loaded fingerprints come without a text hash: a partial index leaves those out.
Index(
    "ix_simhash_documents_text_hash",
    documents.c.text_hash,
    sqlite_where=documents.c.text_hash.isnot(None),
    postgresql_where=documents.c.text_hash.isnot(None),
)

duplicates = Table(
    "simhash_duplicates",
    metadata,
    Column("id", Integer().with_variant(BigInteger, "postgresql"), primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False),
    Column("key_hash", BigInteger, nullable=False, unique=True),
    Column("duplicate_of", Text, nullable=False),
    Column("duplicate_of_id", documents.c.id.type, ForeignKey("simhash_documents.id"), nullable=False),
    Column("distance", Integer, nullable=False),
    Column("exact", Boolean, nullable=False),
    Column("seen_at", Timestamp, nullable=False),
)
Index("ix_simhash_duplicates_duplicate_of_id", duplicates.c.duplicate_of_id)
