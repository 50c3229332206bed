"""Bulk loading into SQL: the insertion session, with the indexes built once at the end.

Into an empty index, the documents' indexes (the unique key hash's too) are dropped for the
load and built once at the end: one sort costs far less than millions of random B-tree
inserts, and leaves the indexes' pages full. A key added twice keeps its last fingerprint
either way. Such a load expects to run alone; one killed before its end leaves the indexes
out, and the next writer to open the index builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy.schema import DropIndex

from ..base import InsertionSession
from .schema import KEY_HASH_INDEX
from .table_indexes import build_missing_indexes, key_indexes

if TYPE_CHECKING:
    from .backend import SqlIndex


class SqlInsertionSession(InsertionSession):
    """InsertionSession that drops an empty index's table indexes for the load."""

    def __init__(self, index: SqlIndex, *, batch_size: int, on_batch: Callable[[int], None] | None = None) -> None:
        super().__init__(index, batch_size=batch_size, on_batch=on_batch)
        self.sql = index
        self._rebuild = False

    def __enter__(self) -> SqlInsertionSession:
        with self.sql.transaction() as conn:
            empty = conn.exec_driver_sql("SELECT id FROM simhash_documents LIMIT 1").first() is None
            if empty:
                dropped = key_indexes(conn, self.sql.tables.documents)
                for index in dropped:
                    conn.execute(DropIndex(index, if_exists=True))  # reflection skips expression indexes
                self.sql.keys_unique = not any(index.name == KEY_HASH_INDEX for index in dropped)
        self._rebuild = empty
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        try:
            super().__exit__(exc_type, *exc_info)
        finally:
            self.sql.keys_unique = True
            if self._rebuild:
                with self.sql.transaction() as conn:
                    build_missing_indexes(conn, self.sql.tables.documents)
