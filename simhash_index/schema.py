"""The SQL schema of an index: documents, duplicates and metadata tables.

Fingerprints and hashes are unsigned 64-bit values stored as signed BIGINT
(two's complement); the four 16-bit blocks are plain integers, indexed in
pairs (block i, block i+1) for the lookups described in sql.py.
"""

from __future__ import annotations

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
    Table,
    Text,
)

SCHEMA_VERSION = "1"

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
    Column("key_hash", BigInteger, nullable=False, unique=True),
    Column("fingerprint", BigInteger),
    Column("block0", Integer),
    Column("block1", Integer),
    Column("block2", Integer),
    Column("block3", Integer),
    Column("text_hash", BigInteger),
    Column("sketch", LargeBinary),
    Column("stored_at", DateTime(timezone=True), nullable=False),
)
# Block i paired with block i+1: a lookup takes block i exactly and block i+1 within one
# bit (17 values). Every fingerprint within distance 3 has some block i that is exact with
# block i+1 at most one bit off (see index.py), so these four indexes find every match,
# and a lookup reads ~68N/2**32 rows even when many pages share one 16-bit block value.
for _i in range(4):
    Index(f"ix_simhash_documents_block{_i}", documents.c[f"block{_i}"], documents.c[f"block{(_i + 1) % 4}"])
Index("ix_simhash_documents_text_hash", documents.c.text_hash)

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
    Column("seen_at", DateTime(timezone=True), nullable=False),
)
Index("ix_simhash_duplicates_duplicate_of_id", duplicates.c.duplicate_of_id)
