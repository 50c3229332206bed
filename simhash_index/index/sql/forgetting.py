"""Forgetting on SQL: pages by key, pages stored before a moment (in short transactions of
CHUNK rows, found through the primary key so that no step scans what an earlier one
deleted), and everything. The duplicates logged against a page go with it.

Each transaction first takes the writer lock (engine.lock_writers): a writer that
read a page logs its duplicate against it before the page goes, or finds it gone.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Connection

from ..base import Forgotten
from ..records import key_hash
from . import changes
from .dialects import dialect_of
from .engine import Transaction, lock_writers
from .feeds import feed_for
from .statements import delete_where, fetch

CHUNK = 5000  # rows deleted per transaction: a crawl's writers wait at most one chunk


def remove_pages(conn: Connection, ids: Sequence[int]) -> Forgotten:
    """Delete these documents rows and the duplicates logged against them."""
    duplicates = delete_where(conn, "simhash_duplicates", "duplicate_of_id", ids)
    return Forgotten(delete_where(conn, "simhash_documents", "id", ids), duplicates)


def forget(transaction: Transaction, keys: Sequence[str]) -> Forgotten:
    """Forget the pages and logged duplicates with these keys, CHUNK keys a transaction."""
    total = Forgotten()
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        wanted = set(chunk)
        hashes = [key_hash(key) for key in chunk]
        with transaction() as conn:
            lock_writers(conn)
            dialect = dialect_of(conn)
            where, values = dialect.one_of("key_hash", len(hashes)), dialect.in_parameters(hashes)
            rows = fetch(conn, f"SELECT id, key FROM simhash_documents WHERE {where}", values)
            total += remove_pages(conn, [row_id for row_id, key in rows if key in wanted])
            logged = fetch(conn, f"SELECT id, key FROM simhash_duplicates WHERE {where}", values)
            forgotten = delete_where(conn, "simhash_duplicates", "id", [i for i, key in logged if key in wanted])
            total += Forgotten(0, forgotten)
    return total


def prune(transaction: Transaction, before: object) -> Forgotten:
    """Forget the pages stored before `before` (as the column stores it), then the
    duplicates logged before it; oldest rows first, CHUNK rows a transaction."""
    total = Forgotten()
    for table, column in (("simhash_documents", "stored_at"), ("simhash_duplicates", "seen_at")):
        last = 0
        while True:
            with transaction() as conn:
                lock_writers(conn)
                mark = dialect_of(conn).mark
                statement = f"SELECT id FROM {table} WHERE id > {mark} AND {column} < {mark} ORDER BY id LIMIT {CHUNK}"
                ids = [row[0] for row in fetch(conn, statement, (last, before))]
                if not ids:
                    break
                if table == "simhash_documents":
                    total += remove_pages(conn, ids)
                else:
                    total += Forgotten(0, delete_where(conn, table, "id", ids))
            last = ids[-1]
    return total


def reset(conn: Connection) -> Forgotten:
    """Delete every row of the index (its metadata stays); the writers' in-memory indexes start anew."""
    lock_writers(conn)
    duplicates = conn.exec_driver_sql("DELETE FROM simhash_duplicates").rowcount
    forgotten = Forgotten(int(conn.exec_driver_sql("DELETE FROM simhash_documents").rowcount), int(duplicates))
    if feed_for(conn).installed(conn):
        changes.restart(conn)
    return forgotten
