"""Bulk loading into SQL: an empty index's table indexes dropped for the load, built once at its end.

Into an empty index, the documents' indexes (the unique key hash's too) are dropped for the
load and built once at the end: one sort costs far less than millions of random B-tree
inserts, and leaves the indexes' pages full. A key added twice keeps its last fingerprint
either way. Such a load expects to run alone; one killed before its end leaves the indexes
out, and the next writer to open the index builds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy import Table
from sqlalchemy.engine import Connection
from sqlalchemy.schema import DropIndex

from .schema import KEY_HASH_INDEX
from .table_indexes import build_missing_indexes, key_indexes


@contextmanager
def indexes_dropped_if_empty(
    transaction: Callable[[], AbstractContextManager[Connection]], documents: Table
) -> Iterator[bool]:
    """A load into the documents table, given `transaction` to open a writing one: yields
    whether keys stay unique (False: the key hash's unique index is dropped until the end,
    and writes must not rely on it)."""
    with transaction() as conn:
        empty = conn.exec_driver_sql("SELECT id FROM simhash_documents LIMIT 1").first() is None
        dropped = key_indexes(conn, documents) if empty else []
        for index in dropped:
            conn.execute(DropIndex(index, if_exists=True))  # reflection skips expression indexes
    try:
        yield not any(index.name == KEY_HASH_INDEX for index in dropped)
    finally:
        if empty:
            with transaction() as conn:
                build_missing_indexes(conn, documents)
