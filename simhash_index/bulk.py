"""Bulk loading: a buffered insertion session, after datasketch's `insertion_session`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.schema import CreateIndex, DropIndex

from . import schema, sql
from .migrate import analyze

if TYPE_CHECKING:
    from .index import Fingerprint, SimhashIndex


class InsertionSession:
    """Stores pages in batches of `batch_size` rows, one transaction each, without checks.

    Into an empty index, the fingerprint-half and text-hash indexes are dropped for the load
    and built once at the end: one sort costs far less than millions of random
    B-tree inserts. `on_batch(stored_so_far)` is called after each batch (for a
    progress bar).
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

    def __enter__(self) -> InsertionSession:
        with self.index.transaction() as conn:
            empty = conn.execute(select(schema.documents.c.id).limit(1)).first() is None
            if empty:
                for index in schema.documents.indexes:
                    conn.execute(DropIndex(index, if_exists=True))  # reflection skips expression indexes
        self._rebuild = empty
        return self

    def add(self, key: str, fingerprint: Fingerprint) -> None:
        """Store a page (an int fingerprint or a Signature); replaces a stored one with this key."""
        self._batch.append(sql.document_values(key, fingerprint))
        if len(self._batch) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self.stored += self.index._upsert(self._batch)
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
                    for index in schema.documents.indexes:
                        conn.execute(CreateIndex(index, if_not_exists=True))
                    analyze(conn)
