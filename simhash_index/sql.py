"""The plain SQL of the index's hot paths, run on the driver's cursor.

A crawl runs these once per page: SQLAlchemy's statement and row machinery would
cost more than the database's own work, so they bypass it (values still bound as
parameters, never formatted into the SQL).
"""

from __future__ import annotations

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from .simhash import blocks

MASK64 = (1 << 64) - 1
MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}  # positional placeholder by DB-API paramstyle
UPSERT_COLUMNS = (
    "key", "key_hash", "fingerprint", "block0", "block1", "block2", "block3", "text_hash", "sketch", "stored_at"
)
UPSERT = (
    f"INSERT INTO simhash_documents ({', '.join(UPSERT_COLUMNS)}) VALUES ({{marks}}) ON CONFLICT (key_hash) "
    f"DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in UPSERT_COLUMNS if c != 'key_hash')}"
)
SELECT_BY_KEY = "SELECT id, text_hash, fingerprint, block0 FROM simhash_documents WHERE key_hash = {mark}"
SELECT_BY_TEXT = "SELECT key, fingerprint FROM simhash_documents WHERE text_hash = {mark} LIMIT 1"
DELETE_LOGGED = "DELETE FROM simhash_duplicates WHERE key_hash = {mark}"
# The four block lookups in one round trip. Lookup i takes block i exactly and block i+1
# within one bit. Complete for distance <= 3: if no exact block i had block i+1 within one
# bit, each exact block would be followed by one with >= 2 flipped bits and every other
# block would have >= 1, adding up to >= 4.
CANDIDATES = {
    style: " UNION ALL ".join(
        f"SELECT id, fingerprint FROM simhash_documents WHERE block{i} = {mark} "
        f"AND block{(i + 1) % 4} IN ({', '.join([mark] * 17)})"
        for i in range(4)
    )
    for style, mark in MARKS.items()
}


def probe_values(fingerprint: int) -> tuple[int, ...]:
    """Parameters of CANDIDATES: per lookup, block i, then block i+1 and its 16 one-bit neighbours."""
    values = blocks(fingerprint)
    params: list[int] = []
    for i in range(4):
        following = values[(i + 1) % 4]
        params.append(values[i])
        params.append(following)
        params.extend(following ^ (1 << bit) for bit in range(16))
    return tuple(params)


def fetch(conn: Connection, statement: str, parameters: tuple) -> list[tuple]:
    """Rows of plain SQL as plain tuples, from the DB-API cursor of the connection's transaction.

    A query's statements cost more in SQLAlchemy's execution and row machinery than in
    SQLite's index lookups. A driver error is still raised as SQLAlchemy's, as transaction()
    expects; a lost PostgreSQL connection is replaced at the pool's next pre-ping.
    """
    dbapi = conn.dialect.loaded_dbapi
    cursor = conn.connection.cursor()
    try:
        cursor.execute(statement, parameters)
        return cursor.fetchall()
    except dbapi.Error as exc:
        raise DBAPIError.instance(statement, parameters, exc, dbapi.Error, dialect=conn.dialect) from exc
    finally:
        cursor.close()
