"""The plain SQL of the index's hot paths, run on the driver's cursor, and rows as values.

A crawl runs these for every page: SQLAlchemy's statement and row machinery would cost more
than the database's own work, so they bypass it (values still bound as parameters, never
formatted into the SQL).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, cast

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection

from ...fingerprinting.bits import to_signed, to_unsigned
from ...fingerprinting.fingerprinter import Signature
from ...fingerprinting.sketch import slot_bits
from ..records import StoredPage, key_hash
from .layouts import Layout
from .schema import DOCUMENTS, later

MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s", "numeric": "?"}  # positional placeholders by paramstyle
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


def one_of(dialect: str, column: str, count: int) -> str:
    """A condition: `column` is one of `count` integers (bound as in_parameters gives them)."""
    return f"{column} = ANY(%s::bigint[])" if dialect == "postgresql" else f"{column} IN ({', '.join(['?'] * count)})"


def pages_where(dialect: str, column: str, count: int, selected: str = PAGE_COLUMNS) -> str:
    """SELECT the rule's columns (`selected`: as page_columns gives them) of the pages whose
    `column` is one of `count` values."""
    return f"SELECT {selected} FROM simhash_documents WHERE {one_of(dialect, column, count)}"


def by_keys_or_texts(conn: Connection, key_hashes: Sequence[int], text_hashes: Sequence[int]) -> list[tuple[Any, ...]]:
    """The rule's columns of the pages with one of these key hashes or text hashes (each row once)."""
    if len(key_hashes) + len(text_hashes) <= BOUND:
        return fetch(conn, *by_key_or_text(conn.dialect.name, key_hashes, text_hashes))
    rows = pages_with(conn, "key_hash", key_hashes) + pages_with(conn, "text_hash", text_hashes)
    return list({row[0]: row for row in rows}.values())


def by_key_or_text(dialect: str, key_hashes: Sequence[int], text_hashes: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
    """SELECT the rule's columns of the pages with one of these key hashes or text hashes."""
    if dialect == "postgresql":
        where = "key_hash = ANY(%s::bigint[]) OR text_hash = ANY(%s::bigint[])"
        return f"SELECT {PAGE_COLUMNS} FROM simhash_documents WHERE {where}", (list(key_hashes), list(text_hashes))
    keys, texts = ", ".join(["?"] * len(key_hashes)), ", ".join(["?"] * len(text_hashes))
    where = f"key_hash IN ({keys})" + (f" OR text_hash IN ({texts})" if text_hashes else "")
    return f"SELECT {PAGE_COLUMNS} FROM simhash_documents WHERE {where}", (*key_hashes, *text_hashes)


def delete_where(conn: Connection, table: str, column: str, values: Sequence[int]) -> int:
    """Delete the rows of `table` whose `column` is one of `values`; how many there were."""
    dialect, deleted = conn.dialect.name, 0
    for part in chunks(values):
        statement = f"DELETE FROM {table} WHERE {one_of(dialect, column, len(part))}"
        deleted += int(conn.exec_driver_sql(statement, in_parameters(dialect, part)).rowcount)
    return deleted


def pages_with(
    conn: Connection | RawConnection, column: str, values: Sequence[int], selected: str = PAGE_COLUMNS
) -> list[tuple[Any, ...]]:
    """The rows (`selected` columns) of the pages whose `column` is one of `values`."""
    dialect = conn.dialect.name
    return [
        row
        for part in chunks(values)
        for row in fetch(conn, pages_where(dialect, column, len(part), selected), in_parameters(dialect, part))
    ]


def chunks(values: Sequence[int]) -> list[Sequence[int]]:
    """`values` in parts of at most BOUND: what one statement binds (a batch may be of any size)."""
    return [values[start : start + BOUND] for start in range(0, len(values), BOUND)]


def in_parameters(dialect: str, values: Sequence[int]) -> tuple[Any, ...]:
    """The parameters of one_of and pages_where: one array on PostgreSQL, each value on SQLite."""
    return (list(values),) if dialect == "postgresql" else tuple(values)


def document_row(
    layout: Layout, key: str, signature: Signature, stored_at: object, hashed: int | None = None, *, dialect: str
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
        *(None if moment is None else db_time(dialect, moment) for moment in (signature.dated, signature.modified)),
        signature.shingles,
        signature.bloom,
        slot_bits(signature.sketch),
    )


def row_page(row: Sequence[Any], dialect: str) -> StoredPage:
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
    return StoredPage(key, signature, row_id, read_time(dialect, stored_at), row_id)


AGES = "words, dated, modified"  # what a survivor policy compares of a stored page


def with_ages(conn: Connection | RawConnection, pages: list[StoredPage], ages: str = AGES) -> list[StoredPage]:
    """The pages read from the table with their words and dates (`ages`: as the table gives
    them); a page not read from it (no row id) is as it was."""
    ids = sorted({page.row_id for page in pages if page.row_id is not None})
    if not ids:
        return pages
    dialect = conn.dialect.name
    found = {row[0]: row[1:] for row in pages_with(conn, "id", ids, f"id, {ages}")}
    completed = []
    for page in pages:
        words, dated, modified = found.get(page.row_id, (page.signature.words, None, None))
        known = replace(
            page.signature, words=words, dated=read_time(dialect, dated), modified=read_time(dialect, modified)
        )
        completed.append(replace(page, signature=known) if page.row_id is not None else page)
    return completed


def db_time(dialect: str, moment: datetime) -> object:
    """A timestamp as the Timestamp column stores it: whole seconds on SQLite, a datetime on PostgreSQL."""
    return int(moment.timestamp()) if dialect == "sqlite" else moment.replace(microsecond=0)


def read_time(dialect: str, value: Any) -> datetime | None:
    """The inverse of db_time, as an aware UTC datetime."""
    if value is None:
        return None
    if dialect == "sqlite":
        return datetime.fromtimestamp(value, timezone.utc)
    moment: datetime = value
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


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
