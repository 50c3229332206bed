"""The plain SQL of the index's hot paths, run on the driver's cursor, and rows as values.

A crawl runs these for every page: SQLAlchemy's statement and row machinery would cost more
than the database's own work, so they bypass it (values still bound as parameters, never
formatted into the SQL).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection

from ...fingerprinting.bits import to_signed, to_unsigned
from ...fingerprinting.fingerprinter import Signature
from ...fingerprinting.sketch import slot_bits
from ..records import StoredPage, key_hash
from .dialects import SqlDialect, dialect_of
from .layouts import Layout
from .schema import DOCUMENTS, later

# What the rule reads of a stored page, in this order (row_page reads it back).
PAGE_COLUMNS = "id, key, fingerprint, exact_only, text_hash, sketch, stored_at, shingles, bloom"
BOUND = 10_000  # values one statement binds, at most: many SQLite builds allow 32,766 parameters
DUPLICATE_COLUMNS = ("key", "key_hash", "duplicate_of", "duplicate_of_id", "distance", "exact", "seen_at")


def present(table: str, column: str, missing: frozenset[str]) -> str:
    """A column as a SELECT names it: NULL when the table lacks it (schema.LATER, Opened.missing)."""
    return "NULL" if later(table, column) in missing else column


def page_columns(missing: frozenset[str]) -> str:
    """PAGE_COLUMNS as a table that lacks the `missing` columns gives them."""
    return ", ".join(present(DOCUMENTS, column, missing) for column in PAGE_COLUMNS.split(", "))


def document_columns(layout: Layout) -> tuple[str, ...]:
    return (
        "key",
        "key_hash",
        "fingerprint",
        *layout.columns,
        "exact_only",
        "text_hash",
        "sketch",
        "stored_at",
        "words",
        "dated",
        "modified",
        "shingles",
        "bloom",
        "sketch_bits",
    )


def upsert_documents(layout: Layout, mark: str, *, replace: bool = True) -> str:
    """Insert documents rows; `replace`: a row whose key is stored replaces it (ON CONFLICT)."""
    columns = document_columns(layout)
    insert = f"INSERT INTO simhash_documents ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
    if not replace:
        return insert
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "key_hash")
    return f"{insert} ON CONFLICT (key_hash) DO UPDATE SET {updates}"


def upsert_duplicates(mark: str, evidence: tuple[str, ...]) -> str:
    """Insert duplicates rows of DUPLICATE_COLUMNS then the `evidence` columns; a key logged before is replaced."""
    columns = DUPLICATE_COLUMNS + evidence
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "key_hash")
    return (
        f"INSERT INTO simhash_duplicates ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))}) "
        f"ON CONFLICT (key_hash) DO UPDATE SET {updates}"
    )


def pages_where(dialect: SqlDialect, column: str, count: int, selected: str = PAGE_COLUMNS) -> str:
    """SELECT the rule's columns (`selected`: as page_columns gives them) of the pages whose
    `column` is one of `count` values (bound as dialect.in_parameters gives them)."""
    return f"SELECT {selected} FROM simhash_documents WHERE {dialect.one_of(column, count)}"


def by_keys_or_texts(conn: Connection, key_hashes: Sequence[int], text_hashes: Sequence[int]) -> list[tuple[Any, ...]]:
    """The rule's columns of the pages with one of these key hashes or text hashes (each row once)."""
    if len(key_hashes) + len(text_hashes) <= BOUND:
        where, parameters = dialect_of(conn).key_or_text(key_hashes, text_hashes)
        return fetch(conn, f"SELECT {PAGE_COLUMNS} FROM simhash_documents WHERE {where}", parameters)
    rows = pages_with(conn, "key_hash", key_hashes) + pages_with(conn, "text_hash", text_hashes)
    return list({row[0]: row for row in rows}.values())


def delete_where(conn: Connection, table: str, column: str, values: Sequence[int]) -> int:
    """Delete the rows of `table` whose `column` is one of `values`; how many there were."""
    dialect, deleted = dialect_of(conn), 0
    for part in chunks(values):
        statement = f"DELETE FROM {table} WHERE {dialect.one_of(column, len(part))}"
        deleted += int(conn.exec_driver_sql(statement, dialect.in_parameters(part)).rowcount)
    return deleted


def pages_with(
    conn: Connection | RawConnection, column: str, values: Sequence[int], selected: str = PAGE_COLUMNS
) -> list[tuple[Any, ...]]:
    """The rows (`selected` columns) of the pages whose `column` is one of `values`."""
    dialect = dialect_of(conn)
    return [
        row
        for part in chunks(values)
        for row in fetch(conn, pages_where(dialect, column, len(part), selected), dialect.in_parameters(part))
    ]


def chunks(values: Sequence[int]) -> list[Sequence[int]]:
    """`values` in parts of at most BOUND: what one statement binds (a batch may be of any size)."""
    return [values[start : start + BOUND] for start in range(0, len(values), BOUND)]


def document_row(
    layout: Layout, key: str, signature: Signature, stored_at: object, hashed: int | None = None, *, dialect: SqlDialect
) -> tuple[Any, ...]:
    """A documents row in document_columns order; `hashed`: key_hash(key), when known."""
    fingerprint, text = signature.simhash, signature.text_hash
    return (
        key,
        key_hash(key) if hashed is None else hashed,
        None if fingerprint is None else to_signed(fingerprint),
        *layout.values(fingerprint, signature.near_matchable),
        int(not signature.near_matchable),
        None if text is None else to_signed(text),
        signature.sketch,
        stored_at,
        signature.words,
        *(None if moment is None else dialect.db_time(moment) for moment in (signature.dated, signature.modified)),
        signature.shingles,
        signature.bloom,
        slot_bits(signature.sketch),
    )


def row_page(row: Sequence[Any], dialect: SqlDialect) -> StoredPage:
    """A StoredPage from a row of PAGE_COLUMNS."""
    row_id, key, fingerprint, exact_only, text, sketch, stored_at, shingles, bloom = row
    signature = Signature(
        None if fingerprint is None else to_unsigned(fingerprint),
        None if text is None else to_unsigned(text),
        None if sketch is None else bytes(sketch),
        exact_only=bool(exact_only),
        shingles=shingles,
        bloom=None if bloom is None else bytes(bloom),
    )
    return StoredPage(key, signature, row_id, dialect.read_time(stored_at), row_id)


AGES = "words, dated, modified"  # what a survivor policy compares of a stored page


def with_ages(conn: Connection | RawConnection, pages: list[StoredPage], ages: str = AGES) -> list[StoredPage]:
    """The pages read from the table with their words and dates (`ages`: as the table gives
    them); a page not read from it (no row id) is as it was."""
    ids = sorted({page.row_id for page in pages if page.row_id is not None})
    if not ids:
        return pages
    dialect = dialect_of(conn)
    found = {row[0]: row[1:] for row in pages_with(conn, "id", ids, f"id, {ages}")}
    completed = []
    for page in pages:
        words, dated, modified = found.get(page.row_id, (page.signature.words, None, None))
        known = replace(
            page.signature, words=words, dated=dialect.read_time(dated), modified=dialect.read_time(modified)
        )
        completed.append(replace(page, signature=known) if page.row_id is not None else page)
    return completed


@dataclass(frozen=True)
class RawConnection:
    """What fetch needs of a connection (its dialect, its pooled DB-API connection), without SQLAlchemy's."""

    dialect: Dialect
    connection: PoolProxiedConnection


def fetch(
    conn: Connection | RawConnection, statement: str, parameters: Sequence[Any] | Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    """Rows of plain SQL as plain tuples, from the DB-API cursor of the connection's transaction.

    A driver error is still raised as SQLAlchemy's, as the callers' error handling expects.
    """
    dbapi = conn.dialect.loaded_dbapi
    cursor = conn.connection.cursor()
    try:
        cursor.execute(statement, parameters)
        return cast("list[tuple[Any, ...]]", cursor.fetchall())
    except dbapi.Error as exc:
        raise DBAPIError.instance(statement, parameters, exc, dbapi.Error, dialect=conn.dialect) from exc
    finally:
        cursor.close()


def fetch_chunks(conn: Connection | RawConnection, statement: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
    """Rows of plain SQL, `size` at a time (fetch's errors)."""
    dbapi = conn.dialect.loaded_dbapi
    cursor = conn.connection.cursor()
    try:
        cursor.execute(statement, ())
        while chunk := cursor.fetchmany(size):
            yield cast("list[tuple[Any, ...]]", chunk)
    except dbapi.Error as exc:
        raise DBAPIError.instance(statement, (), exc, dbapi.Error, dialect=conn.dialect) from exc
    finally:
        cursor.close()


def execute_many(conn: Connection, statement: str, rows: Sequence[Sequence[Any]]) -> None:
    """The driver's executemany (psycopg pipelines it: one round trip)."""
    if rows:
        conn.exec_driver_sql(statement, list(rows))
