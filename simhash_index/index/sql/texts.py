"""Kept texts on SQL: the simhash_texts table (key hash, key, zlib-compressed text), created
when an index opened with keep_texts first stores one. An index without the table keeps none.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Connection

from ..records import key_hash
from ..texts import TextSizes
from .dialects import dialect_of
from .statements import execute_many, fetch

TABLE = "simhash_texts"


def create(conn: Connection) -> None:
    blob = dialect_of(conn).blob
    conn.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {TABLE} (key_hash BIGINT PRIMARY KEY, key TEXT NOT NULL, body {blob} NOT NULL)"
    )


def exists(conn: Connection) -> bool:
    return bool(conn.dialect.has_table(conn, TABLE))


def store(conn: Connection, pages: Sequence[tuple[str, bytes]]) -> None:
    create(conn)
    mark = dialect_of(conn).mark
    latest = dict(pages)  # a key given twice: its last text
    execute_many(
        conn,
        f"INSERT INTO {TABLE} (key_hash, key, body) VALUES ({mark}, {mark}, {mark}) "
        "ON CONFLICT (key_hash) DO UPDATE SET key = excluded.key, body = excluded.body",
        [(key_hash(key), key, body) for key, body in latest.items()],
    )


def read(conn: Connection, keys: Sequence[str]) -> dict[str, bytes]:
    if not keys or not exists(conn):
        return {}
    mark = dialect_of(conn).mark
    found = {}
    for key in keys:
        for stored, body in fetch(conn, f"SELECT key, body FROM {TABLE} WHERE key_hash = {mark}", (key_hash(key),)):
            if stored == key:
                found[key] = bytes(body)
    return found


def sizes(conn: Connection) -> TextSizes:
    if not exists(conn):
        return TextSizes(0, 0)
    size = f"{dialect_of(conn).byte_length}(body)"
    count, total = fetch(conn, f"SELECT count(*), coalesce(sum({size}), 0) FROM {TABLE}", ())[0]
    return TextSizes(int(count), int(total))


def drop_orphans(conn: Connection) -> None:
    """Delete the texts of keys neither stored nor logged as duplicates (after forgetting)."""
    if exists(conn):
        conn.exec_driver_sql(
            f"DELETE FROM {TABLE} WHERE NOT EXISTS (SELECT 1 FROM simhash_documents d WHERE d.key_hash = "
            f"{TABLE}.key_hash) AND NOT EXISTS (SELECT 1 FROM simhash_duplicates u WHERE u.key_hash = "
            f"{TABLE}.key_hash)"
        )
