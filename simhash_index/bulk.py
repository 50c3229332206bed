"""Bulk loading: a buffered insertion session, after datasketch's `insertion_session`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.schema import DropIndex

from . import schema, sql
from .indexes import build_missing_indexes, key_indexes

if TYPE_CHECKING:
    from .index import Fingerprint, SimhashIndex


class InsertionSession:
    """Stores pages in batches of `batch_size` rows, one transaction each, without checks.

    Into an empty index, the documents' indexes (the unique key hash's too) are dropped for the
    load and built once at the end: one sort costs far less than millions of random B-tree
    inserts. A key added twice keeps its last fingerprint either way. `on_batch(stored_so_far)`
    is called after each batch (for a progress bar).
    """

    def __init__(
        self, index: SimhashIndex, *, batch_size: int = 100_000, on_batch: Callable[[int], None] | None = None
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive; got {batch_size!r}")
        self.index = index
        self.batch_size = batch_size
        self.on_batch = on_batch
        self.stored = 0
        self._batch: list[tuple] = []
        self._rebuild = False
        self._keys_unique = True  # while the key-hash index stands, rows are upserted

    def __enter__(self) -> InsertionSession:
        with self.index.transaction() as conn:
            empty = conn.execute(select(schema.documents.c.id).limit(1)).first() is None
            if empty:
                dropped = key_indexes(conn)
                for index in dropped:
                    conn.execute(DropIndex(index, if_exists=True))  # reflection skips expression indexes
                self._keys_unique = schema.KEY_HASH_INDEX not in dropped
        self._rebuild = empty
        return self

    def add(self, key: str, fingerprint: Fingerprint) -> None:
        """Store a page (an int fingerprint or a Signature); replaces a stored one with this key."""
        self._batch.append(sql.document_values(key, fingerprint))
        if len(self._batch) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self.stored += self.index._upsert(self._batch, replace=self._keys_unique)
            self._batch = []
            if self.on_batch is not None:
                self.on_batch(self.stored)

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        try:
            if exc_type is None:
                self.flush()
        finally:
            if self._rebuild:
                with self.index.transaction() as conn:
                    build_missing_indexes(conn)
