"""Schema upgrades: an index written by an older simhash-index is upgraded in place when
opened to write (reports open it read-only and leave it alone).

1 -> 2: version 1 kept four 16-bit block columns (NULL for exact-only pages), indexed in
pairs, and, on SQLite, timestamps as ISO text. It becomes a "halves" index (SQLite keeps
the old block columns, no longer written).
2 -> 3: the duplicates log gains the fingerprint and similarity of each drop (NULL for
drops logged before), and the layout ("halves") is recorded.
3 -> 4: the duplicates log gains the search radius of each drop (NULL before): one nullable
column, instant on both databases.
4 -> 5: the documents gain each page's words and date, and the duplicates log why a page was
superseded: three nullable columns, instant on both databases (NULL: not known).
Version 5 then gained nullable columns (schema.LATER: each page's HTTP Last-Modified, its
shingle count, bitmap and sketch bits; the words a duplicate added), added when an index is
opened to write (add_later_columns) without changing its version: older simhash-index versions
name the columns they read and write, so they go on reading and writing such an index (their
rows hold NULL there: not known).
"""

from __future__ import annotations

from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from .dialects import dialect_of
from .layouts import Layout
from .schema import LATER, SCHEMA_VERSION, later, tables
from .table_indexes import build_missing_indexes

UPGRADABLE = ("1", "2", "3", "4")  # schema versions this version upgrades to SCHEMA_VERSION
HALVES = Layout("halves")


def upgrade(conn: Connection, version: str) -> None:
    """Bring the tables from `version` to SCHEMA_VERSION, in the caller's transaction."""
    if version == "1":
        _from_version_1(conn)
    if version in ("1", "2"):
        _from_version_2(conn)
    if version in ("1", "2", "3"):
        conn.exec_driver_sql("ALTER TABLE simhash_duplicates ADD COLUMN radius SMALLINT")
    conn.exec_driver_sql("ALTER TABLE simhash_documents ADD COLUMN words INTEGER")
    conn.exec_driver_sql(f"ALTER TABLE simhash_documents ADD COLUMN dated {dialect_of(conn).timestamp}")
    conn.exec_driver_sql("ALTER TABLE simhash_duplicates ADD COLUMN superseded TEXT")
    conn.exec_driver_sql(f"UPDATE simhash_meta SET value = '{SCHEMA_VERSION}' WHERE name = 'schema_version'")


def missing_later_columns(conn: Connection) -> frozenset[str]:
    """The schema.LATER columns the tables lack, qualified (schema.later)."""
    inspector = inspect(conn)
    missing: set[str] = set()
    for table, columns in LATER.items():
        present = {column["name"] for column in inspector.get_columns(table)}
        missing.update(later(table, name) for name in columns if name not in present)
    return frozenset(missing)


def add_later_columns(conn: Connection) -> None:
    """Give the tables the schema.LATER columns they lack (nullable columns: instant on both
    databases), in the caller's transaction."""
    dialect = dialect_of(conn)
    types = {"timestamp": dialect.timestamp, "integer": "INTEGER", "blob": dialect.blob}
    for name in sorted(missing_later_columns(conn)):
        table, column = name.split(".")
        conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} {types[LATER[table][column]]}")


def _from_version_1(conn: Connection) -> None:
    run = conn.exec_driver_sql
    run("ALTER TABLE simhash_documents ADD COLUMN exact_only SMALLINT NOT NULL DEFAULT 0")
    run("UPDATE simhash_documents SET exact_only = 1 WHERE block0 IS NULL")
    for name in ("block0", "block1", "block2", "block3", "text_hash"):  # a killed bulk load left them dropped
        run(f"DROP INDEX IF EXISTS ix_simhash_documents_{name}")
    dialect = dialect_of(conn)
    if dialect.drops_columns:
        for i in range(4):
            run(f"ALTER TABLE simhash_documents DROP COLUMN block{i}")
    if dialect.timestamp == "INTEGER":  # version 1's ISO text (UTC) to whole seconds since 1970; strftime would round
        for table, column in (("simhash_documents", "stored_at"), ("simhash_duplicates", "seen_at")):
            run(f"UPDATE {table} SET {column} = CAST(strftime('%s', substr({column}, 1, 19)) AS INTEGER)")
    build_missing_indexes(conn, tables(HALVES).documents)


def _from_version_2(conn: Connection) -> None:
    """Two nullable columns: instant on both databases, whatever the table's size."""
    conn.exec_driver_sql("ALTER TABLE simhash_duplicates ADD COLUMN fingerprint BIGINT")
    conn.exec_driver_sql(f"ALTER TABLE simhash_duplicates ADD COLUMN similarity {dialect_of(conn).double}")
    for name, value in (("layout", HALVES.name), ("block_assignment", HALVES.assignment)):
        conn.exec_driver_sql(f"INSERT INTO simhash_meta (name, value) VALUES ('{name}', '{value}')")
