"""SQLAlchemy engines set up for atomic check-and-add on SQLite and PostgreSQL.

SQLite: WAL, a busy timeout, and `BEGIN IMMEDIATE` for writing transactions, so
check-and-add holds the single writer lock from its first read.
PostgreSQL: READ COMMITTED, with transaction-level advisory locks on the values
a check reads (`advisory_lock_keys`), taken in sorted order.
"""

from __future__ import annotations

import sqlite3
import time

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from ... import urls
from ...errors import IndexUnavailableError
from ...fingerprinting.fingerprinter import Signature
from .layouts import contiguous_blocks

WRITE = "simhash_write"  # execution option: this transaction will write
SQLITE_BUSY_TIMEOUT_S = 60
_DRIVERS = {"sqlite": "pysqlite", "postgresql": "psycopg"}  # the DB-API drivers this library is written for
_LOCK_SPACE = 0x53480000  # "SH": advisory lock class ids of this library
SCHEMA_LOCK = _LOCK_SPACE + 9  # held while a new database's tables are created


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
    if parsed.get_driver_name() != _DRIVERS[backend]:
        raise IndexUnavailableError(
            f"url {urls.masked(text)!r}: the driver {parsed.get_driver_name()!r} is not supported; "
            f"use {backend}:// (simhash-index talks to {backend} through {_DRIVERS[backend]})"
        )
    return parsed


def is_memory(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def open_engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    # No pre-ping (a round trip per checkout): a connection lost with the server raises a
    # disconnect error, which invalidates the pool, and the next checkout reconnects.
    return create_engine(url, isolation_level="READ COMMITTED")


def open_read_engine(url: URL, engine: Engine) -> Engine:
    """Where single read statements (lookups) run, in a pool of their own.

    PostgreSQL: connections that stay in autocommit mode, so a lookup costs one round trip and
    no mode switches. SQLite (in autocommit mode already): connections that read the file through
    a memory map, up to SQLite's default 2 GB cap, rather than read() calls into each connection's
    cache. A lookup probes ~66 random index pages, which past a few million pages no longer fit the
    cache (10M pages: 5,900 -> 7,400 queries/s). Mapped pages count in the process's RSS (about
    1 GB at 10M pages), though they are the kernel's file cache, shared and reclaimable: only the
    lookups map, not writes and bulk loads. An in-memory SQLite database has one connection.
    """
    if is_memory(url):
        return engine
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url, memory_map=True)
    return create_engine(url, isolation_level="AUTOCOMMIT", pool_reset_on_return=None)


def _sqlite_engine(url: URL, *, memory_map: bool = False) -> Engine:
    connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False}
    if is_memory(url):
        engine = create_engine(url, connect_args=connect_args, poolclass=StaticPool)
    else:
        engine = create_engine(url, connect_args=connect_args)

    @event.listens_for(engine, "connect")
    def _setup(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        _switch_to_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")
        # 64 MiB page cache (the default is 2 MiB): index inserts land on random pages,
        # and with a million fingerprints stored a small cache rereads them for every row.
        cursor.execute("PRAGMA cache_size=-65536")
        if memory_map:  # see open_read_engine
            cursor.execute("PRAGMA mmap_size=2147418112")
        # Checkpoint every 10,000 WAL pages (40 MB) rather than 1,000: a checkpoint syncs the
        # files, and with a commit per check_and_add those syncs took a fifth of its time.
        # After a checkpoint the WAL file is cut back to 64 MiB.
        cursor.execute("PRAGMA wal_autocheckpoint=10000")
        cursor.execute("PRAGMA journal_size_limit=67108864")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        if connection.get_execution_options().get(WRITE, False):
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        # reads stay in autocommit: each statement sees the committed state

    return engine


def _switch_to_wal(cursor) -> None:
    """PRAGMA journal_mode=WAL, retried: switching a new file needs an exclusive lock, and
    SQLite answers "database is locked" at once (ignoring the busy timeout) when another
    connection is doing the same, as crawlers started together on a new file do."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def advisory_lock_keys(signature: Signature, key_hash: int) -> list[tuple[int, int]]:
    """(class id, object id) pairs that serialise checks which could see each other.

    Two near-duplicates share a 16-bit block value at the same position (whatever the
    table's layout), two exact duplicates share a text hash, and two checks of one URL
    share its key hash.
    """
    keys = [(_LOCK_SPACE + 5, _int32(key_hash))]
    if signature.text_hash is not None:
        keys.append((_LOCK_SPACE + 4, _int32(signature.text_hash)))
    if signature.near_matchable:
        assert signature.simhash is not None
        keys += [(_LOCK_SPACE + i, value) for i, value in enumerate(contiguous_blocks(signature.simhash))]
    return keys


def _int32(value: int) -> int:
    low = value & 0xFFFFFFFF
    return low - (1 << 32) if low >= 1 << 31 else low
