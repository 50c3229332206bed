"""What differs between the databases an SQL index runs on, SQLite and PostgreSQL, in one object
per database: chosen once per connection (`dialect_of`) or URL (`DIALECTS`), passed around.

The SQL of each difference is here; the modules that run it ask the object, never its name.
SQLAlchemy's own setup (engine.py, schema.py's column types) still goes by the dialect's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from sqlalchemy.engine import Connection, Dialect

Pair = tuple[int, int]


@dataclass(frozen=True)
class SqlDialect(ABC):
    """A database's SQL where it differs from the other's."""

    name: str  # SQLAlchemy's: the Description's backend
    title: str  # as a message names it
    mark: str  # the positional parameter placeholder
    blob: str  # the SQL types of bytes, of schema.Timestamp, of a float
    timestamp: str
    double: str
    byte_length: str  # the function giving a blob's size in bytes
    least_server: tuple[int, ...]  # the oldest server version the lookups run on (bit_count: PostgreSQL 14)
    networked: bool  # a server reached over a socket: a frozen one can block a call (engine.call_deadline)
    concurrent_writers: bool  # writers write side by side under row locks (writing.py's optimistic batches)
    counts_bits: bool  # computes Hamming distances (bit_count): a lookup checks them before reading a row
    drops_columns: bool  # ALTER TABLE DROP COLUMN is instant (SQLite would rewrite the table, and needs 3.35)
    unique_key: str  # SELECT 1 when the documents' key_hash has a UNIQUE constraint (tables written before 4)
    index_listing: str  # SELECT the names of the documents' indexes (the inspector skips expression indexes)

    @abstractmethod
    def one_of(self, column: str, count: int) -> str:
        """A condition: `column` is one of `count` integers (bound as in_parameters gives them)."""

    @abstractmethod
    def in_parameters(self, values: Sequence[int]) -> tuple[Any, ...]:
        """The parameters of one_of."""

    @abstractmethod
    def key_or_text(self, key_hashes: Sequence[int], text_hashes: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
        """A condition: a row's key hash is one of `key_hashes` or its text hash one of `text_hashes`;
        and its parameters."""

    @abstractmethod
    def pairs_in(self, columns: str, pairs: Sequence[Pair], types: tuple[str, str]) -> tuple[str, tuple[Any, ...]]:
        """A condition: the two `columns` (`(a, b)`, of these PostgreSQL `types`) are one of these
        integer pairs, each pair one seek in an index on them; and its parameters."""

    @abstractmethod
    def db_time(self, moment: datetime) -> object:
        """A timestamp as the Timestamp column stores it."""

    @abstractmethod
    def read_time(self, value: Any) -> datetime | None:
        """The inverse of db_time, as an aware UTC datetime."""

    @abstractmethod
    def lock(self, conn: Connection, key: tuple[int, int]) -> None:
        """Take the lock `key` until the caller's transaction ends (engine.lock_writers)."""

    @abstractmethod
    def read_isolation(self, *, snapshot: bool, single_statement: bool) -> str | None:
        """The isolation level of a reading transaction (None: the engine's own)."""

    @abstractmethod
    def analyze(self, conn: Connection, table: str) -> None:
        """Gather the statistics the planner needs after indexes were built."""


@dataclass(frozen=True)
class Sqlite(SqlDialect):
    def one_of(self, column: str, count: int) -> str:
        return f"{column} IN ({', '.join(['?'] * count)})"

    def in_parameters(self, values: Sequence[int]) -> tuple[Any, ...]:
        return tuple(values)

    def key_or_text(self, key_hashes: Sequence[int], text_hashes: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
        where = self.one_of("key_hash", len(key_hashes))
        if text_hashes:
            where += " OR " + self.one_of("text_hash", len(text_hashes))
        return where, (*key_hashes, *text_hashes)

    def pairs_in(self, columns: str, pairs: Sequence[Pair], types: tuple[str, str]) -> tuple[str, tuple[Any, ...]]:
        values = ",".join(f"({a},{b})" for a, b in pairs)  # integers computed by the caller, never input
        # (a bare `IN (VALUES ...)` would scan the index, not seek each pair)
        return f"{columns} IN (SELECT column1, column2 FROM (VALUES {values}))", ()

    def db_time(self, moment: datetime) -> object:
        return int(moment.timestamp())  # whole seconds since 1970

    def read_time(self, value: Any) -> datetime | None:
        return None if value is None else datetime.fromtimestamp(value, timezone.utc)

    def lock(self, conn: Connection, key: tuple[int, int]) -> None:
        pass  # a writing transaction's BEGIN IMMEDIATE took the file's one writer lock already

    def read_isolation(self, *, snapshot: bool, single_statement: bool) -> str | None:
        return None  # reads run in autocommit mode; a snapshot is a BEGIN (engine.SNAPSHOT)

    def analyze(self, conn: Connection, table: str) -> None:
        pass  # SQLite's planner does well without statistics


@dataclass(frozen=True)
class Postgres(SqlDialect):
    def one_of(self, column: str, count: int) -> str:
        return f"{column} = ANY(%s::bigint[])"

    def in_parameters(self, values: Sequence[int]) -> tuple[Any, ...]:
        return (list(values),)

    def key_or_text(self, key_hashes: Sequence[int], text_hashes: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
        return "key_hash = ANY(%s::bigint[]) OR text_hash = ANY(%s::bigint[])", (list(key_hashes), list(text_hashes))

    def pairs_in(self, columns: str, pairs: Sequence[Pair], types: tuple[str, str]) -> tuple[str, tuple[Any, ...]]:
        firsts, seconds = zip(*pairs)
        where = f"{columns} IN (SELECT * FROM unnest(%s::{types[0]}[], %s::{types[1]}[]))"
        return where, (array_text(firsts), array_text(seconds))

    def db_time(self, moment: datetime) -> object:
        return moment.replace(microsecond=0)

    def read_time(self, value: Any) -> datetime | None:
        if value is None:
            return None
        moment: datetime = value
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)

    def lock(self, conn: Connection, key: tuple[int, int]) -> None:
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s, %s)", key)  # one held until the transaction ends

    def read_isolation(self, *, snapshot: bool, single_statement: bool) -> str | None:
        if snapshot:
            return "REPEATABLE READ"
        return "AUTOCOMMIT" if single_statement else None

    def analyze(self, conn: Connection, table: str) -> None:
        # statistics on index expressions come only from ANALYZE: without them the planner
        # guesses that a lookup matches a large share of the table and may scan it
        conn.exec_driver_sql(f"ANALYZE {table}")


def array_text(values: Sequence[int]) -> str:
    """An array parameter as text ('{1,2}', cast by the statement): cheaper than the driver's lists."""
    return "{" + ",".join(map(str, values)) + "}"


SQLITE = Sqlite(
    name="sqlite",
    title="SQLite",
    mark="?",
    blob="BLOB",
    timestamp="INTEGER",
    double="REAL",
    byte_length="length",
    least_server=(),
    networked=False,
    concurrent_writers=False,
    counts_bits=False,
    drops_columns=False,
    # the constraint's index (the primary key is the rowid)
    unique_key="SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = 'simhash_documents' "
    "AND name LIKE 'sqlite\\_autoindex\\_%' ESCAPE '\\'",
    index_listing="SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'simhash_documents'",
)
POSTGRES = Postgres(
    name="postgresql",
    title="PostgreSQL",
    mark="%s",
    blob="BYTEA",
    timestamp="TIMESTAMP WITH TIME ZONE",
    double="DOUBLE PRECISION",
    byte_length="octet_length",
    least_server=(14,),
    networked=True,
    concurrent_writers=True,
    counts_bits=True,
    drops_columns=True,
    unique_key="SELECT 1 FROM pg_constraint WHERE conrelid = 'simhash_documents'::regclass AND contype = 'u'",
    index_listing="SELECT indexname FROM pg_indexes WHERE tablename = 'simhash_documents' "
    "AND schemaname = current_schema()",
)
DIALECTS: dict[str, SqlDialect] = {dialect.name: dialect for dialect in (SQLITE, POSTGRES)}  # by SQLAlchemy's name


class Connected(Protocol):
    """A connection as dialect_of reads it: SQLAlchemy's, or statements.RawConnection."""

    @property
    def dialect(self) -> Dialect: ...


def dialect_of(conn: Connected) -> SqlDialect:
    """The SQL of the connection's database."""
    return DIALECTS[conn.dialect.name]
