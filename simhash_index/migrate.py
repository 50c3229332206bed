"""Schema upgrades: an index written by an older simhash-index is upgraded in place when opened."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.engine import Connection

from . import schema
from .indexes import build_missing_indexes

UPGRADABLE = {"1"}  # schema versions this version upgrades to schema.SCHEMA_VERSION


def upgrade(conn: Connection, version: str) -> None:
    """Bring the tables from `version` to schema.SCHEMA_VERSION, in the caller's transaction."""
    if version == "1":
        _from_version_1(conn)
    conn.execute(
        update(schema.meta).where(schema.meta.c.name == "schema_version").values(value=schema.SCHEMA_VERSION)
    )


def _from_version_1(conn: Connection) -> None:
    """Version 1 kept four 16-bit block columns (NULL for exact-only pages), indexed in pairs,
    and, on SQLite, timestamps as ISO text. SQLite keeps the block columns, no longer written."""
    run = conn.exec_driver_sql
    run("ALTER TABLE simhash_documents ADD COLUMN exact_only SMALLINT NOT NULL DEFAULT 0")
    run("UPDATE simhash_documents SET exact_only = 1 WHERE block0 IS NULL")
    for name in ("block0", "block1", "block2", "block3", "text_hash"):  # a killed bulk load left them dropped
        run(f"DROP INDEX IF EXISTS ix_simhash_documents_{name}")
    if conn.dialect.name == "postgresql":  # instant there; SQLite would rewrite the table (and needs 3.35)
        for i in range(4):
            run(f"ALTER TABLE simhash_documents DROP COLUMN block{i}")
    if conn.dialect.name == "sqlite":  # ISO text (UTC) to whole seconds since 1970; strftime would round
        for table, column in (("simhash_documents", "stored_at"), ("simhash_duplicates", "seen_at")):
            run(f"UPDATE {table} SET {column} = CAST(strftime('%s', substr({column}, 1, 19)) AS INTEGER)")
    build_missing_indexes(conn)
