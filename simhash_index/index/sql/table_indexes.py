"""The documents table's indexes: which a table has, and building those missing.

A bulk load into an empty index drops them and builds them at the end (bulk.py); one killed
before the end leaves them out, and the next writer to open the index builds them.
"""

from __future__ import annotations

from sqlalchemy import Index, Table
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.schema import CreateIndex

from .dialects import dialect_of
from .schema import DOCUMENTS, KEY_HASH_INDEX

# Keys loaded more than once, with the key-hash index dropped: the last row of each stays, as add() would leave it.
_KEEP_LAST = f"DELETE FROM {DOCUMENTS} WHERE id NOT IN (SELECT MAX(id) FROM {DOCUMENTS} GROUP BY key_hash)"


def key_indexes(conn: Connection, documents: Table) -> list[Index]:
    """The documents' indexes, less the key-hash index where the table's key_hash has the UNIQUE
    constraint that tables written before it have instead (it would be a second one)."""
    constrained = conn.exec_driver_sql(dialect_of(conn).unique_key).first() is not None
    return [index for index in documents.indexes if not (constrained and index.name == KEY_HASH_INDEX)]


def index_names(conn: Connection) -> set[str]:
    """The names of the indexes the documents table has (SQLAlchemy's inspector skips expression indexes)."""
    return set(conn.exec_driver_sql(dialect_of(conn).index_listing).scalars())


def build_missing_indexes(conn: Connection, documents: Table) -> None:
    """Build the documents' indexes that are missing: a bulk load into an empty index builds them
    last, and one killed before that left them out."""
    present = index_names(conn)
    missing = [index for index in key_indexes(conn, documents) if index.name not in present]
    for index in missing:
        if index.unique:
            _build_unique(conn, index)
        else:
            conn.execute(CreateIndex(index))
    if missing:
        dialect_of(conn).analyze(conn, DOCUMENTS)


def _build_unique(conn: Connection, index: Index) -> None:
    try:
        with conn.begin_nested():  # PostgreSQL: a failed statement would abort the transaction
            conn.execute(CreateIndex(index))
    except IntegrityError:
        conn.exec_driver_sql(_KEEP_LAST)
        conn.execute(CreateIndex(index))
