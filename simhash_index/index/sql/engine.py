"""SQLAlchemy engines set up for atomic check-and-add on SQLite and PostgreSQL.

SQLite: WAL, a busy timeout, and `BEGIN IMMEDIATE` for writing transactions, so
check-and-add holds the single writer lock from its first read.
PostgreSQL: READ COMMITTED, with one transaction-level advisory lock that writers take
alone (`lock_writers`), so that they too run one at a time.
"""

from __future__ import annotations

import math
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from ... import defaults, urls
from ...errors import IndexUnavailableError, InvalidArgumentError, MissingDependencyError, install_extra
from .dialects import dialect_of

Transaction = Callable[..., AbstractContextManager[Connection]]  # SqlIndex.transaction(write=..., snapshot=...)
WRITE = "simhash_write"  # execution option: this transaction will write
SNAPSHOT = "simhash_snapshot"  # execution option: this transaction's reads all see one snapshot
_DRIVERS = {"sqlite": "pysqlite", "postgresql": "psycopg"}  # the DB-API drivers this library is written for
_LOCK_SPACE = 0x53480000  # "SH": advisory lock class ids of this library
SCHEMA_LOCK = (_LOCK_SPACE + 9, 0)  # held while a new database's tables are created
WRITERS_LOCK = (_LOCK_SPACE + 8, 0)  # the writer lock (lock_writers); earlier versions' writers share it


def parse_url(url: str | URL) -> URL:
    """A database URL, with a plain `postgresql://` mapped to psycopg 3; a URL that cannot
    be used is refused with IndexUnavailableError saying why (credentials hidden)."""
    text = url if isinstance(url, str) else url.render_as_string(hide_password=False)
    problem = urls.unescaped_userinfo(text)
    if problem:
        raise IndexUnavailableError(f"url {urls.masked(text)!r}: {problem}")
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise IndexUnavailableError(
            f"url {urls.masked(text)!r} is not a database URL: "
            "use e.g. sqlite:///simhash.db, postgresql://user:password@host/db or redis://host:6379/0"
        ) from None
    except ValueError as exc:  # SQLAlchemy reads the port with int()
        port = str(exc).rpartition(": ")[2]
        raise IndexUnavailableError(f"url {urls.masked(text)!r}: the port {port} is not a number") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    backend = parsed.get_backend_name()
    if backend not in _DRIVERS:
        raise IndexUnavailableError(
            f"url {urls.masked(text)!r}: only sqlite:// and postgresql:// databases are supported "
            "(and redis:// servers)"
        )
    options = set(parsed.query) - {"uri", "layout", "block_assignment"}
    if backend == "sqlite" and options and not parsed.query.get("uri"):
        raise IndexUnavailableError(
            f"url {urls.masked(text)!r}: SQLite takes URI options ({', '.join(sorted(options))}) only with uri=true, "
            "e.g. sqlite:///x.db?mode=ro&uri=true (the report commands open read-only by themselves)"
        )
    if parsed.get_driver_name() != _DRIVERS[backend]:
        raise IndexUnavailableError(
            f"url {urls.masked(text)!r}: the driver {parsed.get_driver_name()!r} is not supported; "
            f"use {backend}:// (simhash-index talks to {backend} through {_DRIVERS[backend]})"
        )
    return parsed


def is_memory(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


@dataclass(frozen=True)
class Access:
    """How an index is opened: read-only or not, and how long a connection and a statement
    may take (a frozen server must fail a call, not hang it)."""

    read_only: bool = False
    connect_timeout: float = defaults.CONNECT_TIMEOUT_S
    statement_timeout: float = defaults.STATEMENT_TIMEOUT_S

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "statement_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise InvalidArgumentError(f"{name} must be a positive number of seconds; got {value!r}")


DEFAULT_ACCESS = Access()


def open_engine(url: URL, access: Access) -> Engine:
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url, access)
    try:
        import psycopg  # noqa: F401 - SQLAlchemy's dialect imports it only at the first connection
    except ImportError as missing:
        raise MissingDependencyError(
            f"PostgreSQL indexes need the psycopg package: {install_extra('postgres')}"
        ) from missing
    # No pre-ping (a round trip per checkout): a connection lost with the server raises a
    # disconnect error, which invalidates the pool, and the next checkout reconnects.
    return create_engine(url, isolation_level="READ COMMITTED", connect_args=_postgres_arguments(url, access))


def open_read_engine(url: URL, engine: Engine, access: Access) -> Engine:
    """Where single read statements (lookups) run, in a pool of their own.

    PostgreSQL: connections that stay in autocommit mode, so a lookup costs one round trip and
    no mode switches. SQLite (in autocommit mode already): connections that read the file through
    a memory map, up to SQLite's default 2 GB cap, rather than read() calls into each connection's
    cache: past a few million pages a lookup's index pages no longer fit the cache. Mapped pages
    count in the process's RSS, though they are the kernel's file cache, shared and reclaimable:
    only the lookups map, not writes and bulk loads. An in-memory SQLite database has one connection.
    """
    if is_memory(url):
        return engine
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url, access, memory_map=True)
    arguments = _postgres_arguments(url, access)
    return create_engine(url, isolation_level="AUTOCOMMIT", pool_reset_on_return=None, connect_args=arguments)


def _postgres_arguments(url: URL, access: Access) -> dict[str, Any]:
    """libpq's connect timeout, and the server's statement timeout (and read-only transactions),
    added to the URL's own `options`."""
    options = [str(url.query.get("options", "")), f"-c statement_timeout={int(access.statement_timeout * 1000)}"]
    if access.read_only:
        options.append("-c default_transaction_read_only=on")
    return {"connect_timeout": max(1, math.ceil(access.connect_timeout)), "options": " ".join(o for o in options if o)}


SQLITE_PAGE_SIZE = 2048  # bytes, for files this package creates


def _sqlite_engine(url: URL, access: Access, *, memory_map: bool = False) -> Engine:
    busy_ms = int(access.statement_timeout * 1000)
    connect_args: dict[str, Any] = {"timeout": access.statement_timeout, "check_same_thread": False}
    if is_memory(url):
        engine = create_engine(url, connect_args=connect_args, poolclass=StaticPool)
    elif access.read_only:  # nothing is created or changed, not even the journal mode (read_only_uri)
        path = sqlite_path(url)
        engine = create_engine(
            "sqlite://", creator=lambda: sqlite3.connect(read_only_uri(path), uri=True, **connect_args)
        )
    else:
        engine = create_engine(url, connect_args=connect_args)

    @event.listens_for(engine, "connect")
    def _setup(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        if access.read_only:
            cursor.execute("PRAGMA query_only=1")
        else:
            # A new file only (a no-op on one with tables). A commit writes each changed page to
            # the WAL with two system calls, and a batch changes about one leaf page per row in
            # each of the table's seven B-trees: 2 KiB pages halve the bytes copied and summed.
            # Set before WAL mode, whose switch writes the header that fixes the page size.
            cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
            _switch_to_wal(cursor, access.statement_timeout)
            cursor.execute("PRAGMA synchronous=NORMAL")
            # Checkpoint every 40 MB of WAL rather than every 1,000 pages: a checkpoint syncs the
            # files and copies each changed page back once however often it changed, and frequent
            # commits would pay for both again and again. After a checkpoint the WAL file is cut
            # back to 64 MiB.
            page_size = cursor.execute("PRAGMA page_size").fetchone()[0]  # older files: 4 KiB
            cursor.execute(f"PRAGMA wal_autocheckpoint={40_000_000 // page_size}")
            cursor.execute("PRAGMA journal_size_limit=67108864")
        # 64 MiB page cache (the default is 2 MiB): index inserts land on random pages,
        # and with a million fingerprints stored a small cache rereads them for every row.
        cursor.execute("PRAGMA cache_size=-65536")
        if memory_map:  # see open_read_engine
            cursor.execute("PRAGMA mmap_size=2147418112")
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        options = connection.get_execution_options()
        if options.get(WRITE, False):
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif options.get(SNAPSHOT, False):
            connection.exec_driver_sql("BEGIN")  # WAL: the first read fixes the snapshot
        # other reads stay in autocommit: each statement sees the committed state

    return engine


def sqlite_file(url: URL) -> Path | None:
    """The file of an SQLite URL, absolute; None for a database in memory or on a server."""
    return None if url.get_backend_name() != "sqlite" or is_memory(url) else sqlite_path(url).absolute()


def sqlite_path(url: URL) -> Path:
    """The file of an SQLite URL: its database, or the path of a `file:` URI (`?uri=true`)."""
    database = url.database or ""
    if url.query.get("uri") and database.startswith("file:"):
        database = database.removeprefix("file:").split("?", 1)[0]
    return Path(database)


def read_only_uri(path: Path) -> str:
    """An SQLite URI that opens a file read-only and creates or changes no file, for a new connection.

    A WAL-mode file with no `-wal` beside it has no writer connected: opened plainly it would get
    a new `-wal` and `-shm`, so it is read as `immutable` (a connection opened then does not see
    a crawl that starts later: open the index again). Beside a writer's `-wal` and `-shm`, the
    `-shm` is opened read-only (`readonly_shm`): the read builds the WAL's index in its own memory.
    A file in rollback mode (another application's) needs neither. On a read-only file system
    `immutable` too: nobody can write there.
    """
    absolute = path.absolute()
    uri = f"{absolute.as_uri()}?mode=ro"
    try:
        if os.statvfs(absolute.parent).f_flag & os.ST_RDONLY:
            return uri + "&immutable=1"
        with absolute.open("rb") as file:
            wal_mode = file.read(20)[18:19] == b"\x02"  # the header's file format version: 2 is WAL
    except OSError:
        return uri
    if not wal_mode:
        return uri
    if not Path(f"{absolute}-wal").exists():
        return uri + "&immutable=1"
    return uri + "&readonly_shm=1" if Path(f"{absolute}-shm").exists() else uri


def _switch_to_wal(cursor: Any, timeout: float) -> None:
    """PRAGMA journal_mode=WAL, retried: switching a new file needs an exclusive lock, and
    SQLite answers "database is locked" at once (ignoring the busy timeout) when another
    connection is doing the same, as crawlers started together on a new file do."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@contextmanager
def call_deadline(connection: Any, seconds: float) -> Iterator[list[bool]]:
    """Abort a PostgreSQL call still blocked after `seconds`, by shutting its socket down.

    The server's statement_timeout cannot help when the server itself is stopped or cut off
    (its kernel still acknowledges the packets): the blocked read then fails at once, and the
    connection is discarded. Yields a flag list, [True] when the deadline struck.
    """
    fired = [False]
    descriptor = connection.pgconn.socket if hasattr(connection, "pgconn") else None

    def strike(descriptor: int) -> None:
        fired[0] = True
        try:
            with socket.socket(fileno=os.dup(descriptor)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    timer = threading.Timer(seconds, strike, (descriptor,)) if descriptor is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        yield fired
    finally:
        if timer is not None:
            timer.cancel()


def lock_writers(conn: Connection) -> None:
    """Take the writer lock for the rest of the caller's transaction: every other writer (a
    batch, a bulk load, forgetting) waits for it to end, and it for them. PostgreSQL: a
    transaction-level advisory lock; SQLite: BEGIN IMMEDIATE took the file's writer lock already."""
    dialect_of(conn).lock(conn, WRITERS_LOCK)
