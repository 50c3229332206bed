"""Bulk loading into SQL: an empty index's table indexes dropped for the load, built once at its end.

Into an empty index, the documents' indexes (the unique key hash's too) are dropped for the
load and built once at the end: one sort costs far less than millions of random B-tree
inserts, and leaves the indexes' pages full. A key added twice keeps its last fingerprint
either way. Such a load expects to run alone; one killed before its end leaves the indexes
out, and the next writer to open the index builds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Table
from sqlalchemy.engine import Connection
from sqlalchemy.schema import DropIndex

from .schema import DOCUMENTS, KEY_HASH_INDEX
from .table_indexes import build_missing_indexes, key_indexes


@dataclass(frozen=True)
class Load:
    """A bulk load under way: whether the indexes are to be built at its end, and whether
    the key-hash unique index is still there (False: writes must not rely on it)."""

    rebuild: bool = False
    keys_unique: bool = True


NO_LOAD = Load()


def start(conn: Connection, documents: Table) -> Load:
    """A load begins: an empty table's indexes are dropped."""
    if conn.exec_driver_sql(f"SELECT id FROM {DOCUMENTS} LIMIT 1").first() is not None:
        return NO_LOAD
    dropped = key_indexes(conn, documents)
    for index in dropped:
        conn.execute(DropIndex(index, if_exists=True))  # reflection skips expression indexes
    return Load(rebuild=True, keys_unique=not any(index.name == KEY_HASH_INDEX for index in dropped))


def finish(conn: Connection, documents: Table) -> None:
    """A load that dropped the indexes ends: they are built."""
    build_missing_indexes(conn, documents)
