"""The change feed: what a writer's in-memory candidate index reads to follow the table.

Triggers on simhash_documents log every row that enters the table and every row that leaves
it (an update that changes a row's key, fingerprint, text or sketch logs both) in
simhash_changes: its fingerprint when it is near-matchable, its key hash and its text hash, and
for a row that enters, its id and sketch bits (what the writer keeps beside the fingerprint,
candidates.py). Triggers, not the writers' own code, so that every change is logged: this
library's writers of any version, bulk loads, `forget`, `prune`, and plain SQL. A writer reads
the log since its last look inside its write transaction, and so sees every committed page
before it decides (and, on PostgreSQL, what changed beside its own batch while it decided:
Touched).

Where a writer stands in the log (a `Mark`) is each database's own (changes_sqlite.py,
changes_postgres.py): a sequence number on SQLite, a snapshot on PostgreSQL. A Mark also names
the newest entry the writer read (`check`): when that entry is no longer in the log at its place
(the file restored from a backup, the log rewound), the writer builds its index anew.

The log keeps about KEEP entries: a writer that falls further behind (or finds the epoch
changed: `reset`, a TRUNCATE, the tables made anew) builds its index again from the table.

Older simhash-index versions read the log's first four columns and install a log of
FEED_VERSION whose triggers have the same names: this version's log (ENTRIES_VERSION) is such
a log with two more columns, so that old and new writers can share one index.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from sqlalchemy.engine import Connection

from ..memory.near import U64, Payload, u64_array
from . import candidates
from .dialects import dialect_of
from .layouts import Layout
from .statements import RawConnection, fetch, fetch_chunks

CHANGES = "simhash_changes"
EPOCH, FLOOR, FEED = "changes_epoch", "changes_floor", "changes_feed"  # simhash_meta names
ENTRIES = "changes_entries"  # simhash_meta: the version of this log's entries (row ids and sketch bits)
FEED_VERSION = "1"  # the log's format as every version reads it: a feed of another one is made anew
ENTRIES_VERSION = "1"
KEEP = 200_000  # log entries kept (at least); a writer further behind builds its index again
TRIM_EVERY = KEEP // 4  # rows a process writes between two trims of the log
BEHIND = 100_000  # more new entries than this at a catch-up: building anew is as cheap
READ_ROWS = 100_000  # rows read at a time when the index is built

COLUMNS = "fingerprint, key_hash, text_hash, added, row_id, sketch_bits"  # an entry, as catch-ups read it
# What an update must change to be logged (as the row leaving and the row entering).
CHANGED = ("key_hash", "fingerprint", "exact_only", "text_hash", "sketch_bits")


@dataclass(frozen=True)
class Mark:
    """Where a writer stands in the log: the epoch, and the last sequence number read (SQLite)
    or the snapshot the log was last read in and the writer's last transaction (PostgreSQL);
    `check`: the newest entry read, as the database names it (None: none read)."""

    epoch: str
    seen: str
    own: str | None = None
    check: str | None = None


@dataclass(frozen=True)
class Touched:
    """What the rows that came and went hold: their key hashes and text hashes (signed, as
    stored) and near-matchable fingerprints, for telling whether they touch a batch."""

    keys: frozenset[int] = frozenset()
    texts: frozenset[int] = frozenset()
    fingerprints: U64 = field(default_factory=lambda: np.empty(0, np.uint64))


@dataclass(frozen=True)
class Changes:
    """What the log held past a mark: the near-matchable fingerprints that came (and their
    payload rows, candidates.py), how many went, what all of them touch, and the mark after them."""

    added: U64
    payload: Payload
    removed: int
    mark: Mark
    touched: Touched = Touched()


@dataclass(frozen=True)
class StoredFingerprints:
    """The near-matchable fingerprints of the table, with their payload rows, and the mark of the
    snapshot they were read in."""

    mark: Mark
    fingerprints: U64
    payload: Payload


class Feed(Protocol):
    """The change feed of one database (changes_sqlite.py, changes_postgres.py)."""

    def installed(self, conn: Connection | RawConnection) -> bool:
        """Whether the index has this version's change feed, whole (its triggers too)."""

    def install(self, conn: Connection) -> None:
        """Add the change feed to an index that lacks it, or has one of another format; the
        caller holds the writer lock (or creates the index)."""

    def stored(self, conn: Connection | RawConnection, layout: Layout) -> StoredFingerprints:
        """What the table holds, in the caller's read transaction that sees one snapshot throughout."""

    def since(self, conn: Connection, mark: Mark) -> Changes | None:
        """The changes committed past `mark`, read in the writer's transaction after it took the
        writer lock; None when the log no longer reaches back to `mark` (a new epoch, trimmed
        past it, more than BEHIND entries, or rewound): build anew."""

    def written(self, conn: Connection, mark: Mark) -> Changes:
        """What this transaction logged past `mark` (its own writes, read back before it
        commits), and the mark to stand at once it has committed."""

    def trim(self, conn: Connection) -> None:
        """Delete the log's entries but the last KEEP or so (the caller holds the writer lock)."""


def restart(conn: Connection) -> None:
    """The log emptied and a new epoch: every writer builds its index again (after a reset)."""
    conn.exec_driver_sql(f"DELETE FROM {CHANGES}")
    set_meta(conn, EPOCH, uuid.uuid4().hex)


def format_installed(conn: Connection | RawConnection) -> bool:
    """Whether the log's format and entries are this version's (the triggers are checked apart)."""
    return meta_value(conn, FEED) == FEED_VERSION and meta_value(conn, ENTRIES) == ENTRIES_VERSION


def install(conn: Connection, ddl: Sequence[str]) -> None:
    """The log made anew by a feed's statements: an empty floor, a new epoch (writers following
    the old log build anew)."""
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {CHANGES}")
    for statement in ddl:
        conn.exec_driver_sql(statement)
    set_meta(conn, FLOOR, "0")
    set_meta(conn, EPOCH, uuid.uuid4().hex)
    set_meta(conn, FEED, FEED_VERSION)
    set_meta(conn, ENTRIES, ENTRIES_VERSION)


def changes_of(rows: Sequence[Sequence[Any]], mark: Mark) -> Changes:
    """Changes from log entries (fingerprint, key hash, text hash, added, row id, sketch bits, ...)."""
    came = [row for row in rows if row[0] is not None and row[3]]
    went = sum(1 for row in rows if row[0] is not None and not row[3])
    near = [row[0] for row in rows if row[0] is not None]
    touched = Touched(
        frozenset(int(row[1]) for row in rows),
        frozenset(int(row[2]) for row in rows if row[2] is not None),
        u64_array(np.array(near, np.int64)),
    )
    added = u64_array(np.array([row[0] for row in came], np.int64))
    rows_ = candidates.payload([row[4] for row in came], [_bytes(row[5]) for row in came])
    return Changes(added, rows_, went, mark, touched)


def read_stored(conn: Connection | RawConnection, layout: Layout, mark: Mark) -> StoredFingerprints:
    """The table's near-matchable fingerprints with their payload rows, read a chunk at a time."""
    near = "block0 IS NOT NULL" if layout.name == "blocks" else "exact_only = 0 AND fingerprint IS NOT NULL"
    statement = f"SELECT fingerprint, id, sketch_bits FROM simhash_documents WHERE {near}"
    fingerprints, rows = [], []
    for chunk in fetch_chunks(conn, statement, READ_ROWS):
        fingerprints.append(np.array([row[0] for row in chunk], np.int64))
        rows.append(candidates.payload([row[1] for row in chunk], [_bytes(row[2]) for row in chunk]))
    if not fingerprints:
        return StoredFingerprints(mark, np.empty(0, np.uint64), candidates.payload([], []))
    return StoredFingerprints(mark, u64_array(np.concatenate(fingerprints)), np.concatenate(rows))


def _bytes(value: object) -> bytes | None:
    return None if value is None else bytes(value)  # type: ignore[call-overload]


def meta_value(conn: Connection | RawConnection, name: str) -> str | None:
    rows = fetch(conn, "SELECT value FROM simhash_meta WHERE name = '" + name + "'", ())
    return str(rows[0][0]) if rows else None


def set_meta(conn: Connection, name: str, value: str) -> None:
    mark = dialect_of(conn).mark
    conn.exec_driver_sql(
        f"INSERT INTO simhash_meta (name, value) VALUES ({mark}, {mark}) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        (name, value),
    )
