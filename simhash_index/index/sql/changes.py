"""The change feed: what a writer's in-memory candidate index reads to follow the table.

Triggers on simhash_documents log every row that enters the table and every row that leaves
it (an update that changes a row's key, fingerprint or text logs both) in simhash_changes: its
fingerprint when it is near-matchable, its key hash and its text hash. Triggers, not the
writers' own code, so that every change is logged: this library's writers of any version,
bulk loads, `forget`, `prune`, and plain SQL. A writer reads the log since its last look
inside its write transaction, and so sees every committed page before it decides (and, on
PostgreSQL, what changed beside its own batch while it decided: Touched).

Where a writer stands in the log (a `Mark`):
- SQLite: the last sequence number read. Writers are serialised by the database's one writer
  lock, so the sequence (AUTOINCREMENT: never reused) is in commit order.
- PostgreSQL: the snapshot of the statement that last read the log, and this writer's own last
  transaction. Sequences are not in commit order there, so a row is new to a writer when its
  transaction was not visible in that snapshot; the writer's own rows it read back before
  committing. This holds for writers that bypass the writer lock too (an older process's bulk load).

The log keeps about KEEP entries: a writer that falls further behind (or finds the epoch
changed: `reset`, a TRUNCATE, the tables made anew) builds its index again from the table.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from ..memory.near import U64, as_u64
from .layouts import Layout
from .statements import RawConnection, fetch

CHANGES = "simhash_changes"
EPOCH, FLOOR, FEED = "changes_epoch", "changes_floor", "changes_feed"  # simhash_meta names
TRIMMED_IN = "changes_trimmed_in"  # PostgreSQL: the snapshot the last trim deleted in
FEED_VERSION = "1"  # the log's format: a feed of another one is made anew
KEEP = 200_000  # log entries kept (at least); a writer further behind builds its index again
TRIM_EVERY = KEEP // 4  # rows a process writes between two trims of the log
BEHIND = 100_000  # more new entries than this at a catch-up: building anew is as cheap

_COLUMNS = "fingerprint, key_hash, text_hash, added"  # a log entry, as the catch-ups read it
_CHANGED = (
    "OLD.key_hash IS NOT NEW.key_hash OR OLD.fingerprint IS NOT NEW.fingerprint "
    "OR OLD.exact_only IS NOT NEW.exact_only OR OLD.text_hash IS NOT NEW.text_hash"
)


def _entry(row: str, added: str) -> str:
    """The log entry of row NEW or OLD: its fingerprint only when it is near-matchable."""
    near = f"CASE WHEN {row}.exact_only = 0 THEN {row}.fingerprint END"
    return f"INSERT INTO {CHANGES} ({_COLUMNS}) VALUES ({near}, {row}.key_hash, {row}.text_hash, {added})"


_SQLITE_TRIGGERS = ("simhash_documents_added", "simhash_documents_changed", "simhash_documents_removed")
_POSTGRES_TRIGGERS = "('simhash_documents_changes', 'simhash_documents_truncated')"
_SQLITE = (
    f"CREATE TABLE {CHANGES} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "fingerprint INTEGER, key_hash INTEGER NOT NULL, text_hash INTEGER, added INTEGER NOT NULL)",
    *(f"DROP TRIGGER IF EXISTS {name}" for name in _SQLITE_TRIGGERS),
    f"CREATE TRIGGER simhash_documents_added AFTER INSERT ON simhash_documents BEGIN {_entry('NEW', '1')}; END",
    f"CREATE TRIGGER simhash_documents_changed AFTER UPDATE ON simhash_documents WHEN {_CHANGED} "
    f"BEGIN {_entry('OLD', '0')}; {_entry('NEW', '1')}; END",
    f"CREATE TRIGGER simhash_documents_removed AFTER DELETE ON simhash_documents BEGIN {_entry('OLD', '0')}; END",
)
_POSTGRES = (
    f"CREATE TABLE {CHANGES} (xid xid8 NOT NULL DEFAULT pg_current_xact_id(), "
    "fingerprint BIGINT, key_hash BIGINT NOT NULL, text_hash BIGINT, added BOOLEAN NOT NULL)",
    f"CREATE INDEX ix_{CHANGES}_xid ON {CHANGES} (xid)",
    f"""CREATE OR REPLACE FUNCTION simhash_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' AND NOT ({_CHANGED.replace(" IS NOT ", " IS DISTINCT FROM ")}) THEN
            RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN
            {_entry("OLD", "false")};
        END IF;
        IF TG_OP <> 'DELETE' THEN
            {_entry("NEW", "true")};
        END IF;
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION simhash_new_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE simhash_meta SET value = gen_random_uuid()::text WHERE name = '{EPOCH}';
        RETURN NULL;
    END $$""",
    "CREATE OR REPLACE TRIGGER simhash_documents_changes AFTER INSERT OR UPDATE OR DELETE ON simhash_documents "
    "FOR EACH ROW EXECUTE FUNCTION simhash_log_change()",
    "CREATE OR REPLACE TRIGGER simhash_documents_truncated AFTER TRUNCATE ON simhash_documents "
    "FOR EACH STATEMENT EXECUTE FUNCTION simhash_new_epoch()",
)


@dataclass(frozen=True)
class Mark:
    """Where a writer stands in the log: the epoch, and the last sequence number read (SQLite)
    or the snapshot the log was last read in and the writer's last transaction (PostgreSQL)."""

    epoch: str
    seen: str
    own: str | None = None


@dataclass(frozen=True)
class Touched:
    """What the rows that came and went hold: their key hashes and text hashes (signed, as
    stored) and near-matchable fingerprints, for telling whether they touch a batch."""

    keys: frozenset[int] = frozenset()
    texts: frozenset[int] = frozenset()
    fingerprints: U64 = field(default_factory=lambda: np.empty(0, np.uint64))


@dataclass(frozen=True)
class Changes:
    """What the log held past a mark: the near-matchable fingerprints that came, how many went,
    what all of them touch, and the mark after them."""

    added: U64
    removed: int
    mark: Mark
    touched: Touched = Touched()


def installed(conn: Connection | RawConnection) -> bool:
    """Whether the index has its change feed, in this version's format, whole: its triggers too
    (a dump of the tables alone leaves out the functions they call), and on PostgreSQL no entry
    from another server's transactions (a dump restored elsewhere)."""
    if _meta_value(conn, FEED) != FEED_VERSION:
        return False
    if conn.dialect.name == "sqlite":
        listing = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'simhash_documents'"
        return bool(fetch(conn, listing, ())[0][0] == len(_SQLITE_TRIGGERS))
    return bool(
        fetch(
            conn,
            "SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'simhash_documents'::regclass "
            f"AND tgname IN {_POSTGRES_TRIGGERS} AND tgenabled <> 'D') = 2 "
            f"AND COALESCE((SELECT max(xid) FROM {CHANGES} WHERE xid IS DISTINCT FROM "
            "pg_current_xact_id_if_assigned()) < pg_snapshot_xmax(pg_current_snapshot()), true)",
            (),
        )[0][0]
    )


def install(conn: Connection) -> None:
    """Add the change feed (its table, triggers and epoch) to an index that lacks it, or has one
    of another format; the caller holds the writer lock (or creates the index)."""
    if installed(conn):
        return
    sqlite = conn.dialect.name == "sqlite"
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {CHANGES}")
    for statement in _SQLITE if sqlite else _POSTGRES:
        conn.exec_driver_sql(statement)
    _meta(conn, FLOOR, "0")
    _meta(conn, EPOCH, uuid.uuid4().hex)  # writers following the old format build anew
    _meta(conn, FEED, FEED_VERSION)


def restart(conn: Connection) -> None:
    """The log emptied and a new epoch: every writer builds its index again (after a reset)."""
    conn.exec_driver_sql(f"DELETE FROM {CHANGES}")
    _meta(conn, EPOCH, uuid.uuid4().hex)


def stored(conn: Connection | RawConnection, layout: Layout) -> tuple[Mark, U64]:
    """The mark of the caller's snapshot and the near-matchable fingerprints stored in it: call
    it in a read transaction that sees one snapshot throughout."""
    if conn.dialect.name == "sqlite":
        mark = Mark(_epoch(conn), str(_last_seq(conn)))
    else:
        mark = Mark(_epoch(conn), fetch(conn, "SELECT pg_current_snapshot()::text", ())[0][0])
    # blocks: read from block0's covering index, a fraction of the table's pages
    near = "block0 IS NOT NULL" if layout.name == "blocks" else "exact_only = 0 AND fingerprint IS NOT NULL"
    rows = fetch(conn, f"SELECT fingerprint FROM simhash_documents WHERE {near}", ())
    return mark, np.fromiter(chain.from_iterable(rows), np.int64, len(rows)).view(np.uint64)


def since(conn: Connection, mark: Mark) -> Changes | None:
    """The changes committed past `mark`, read in the writer's transaction after it took the
    writer lock; None when the log no longer reaches back to `mark` (a new epoch, or trimmed
    past it, or more than BEHIND entries): build anew."""
    if conn.dialect.name == "sqlite":
        return _since_sqlite(conn, mark)
    return _since_postgres(conn, mark)


def written(conn: Connection, mark: Mark) -> Changes:
    """What this transaction logged past `mark` (its own writes, read back before it commits),
    and the mark to stand at once it has committed."""
    if conn.dialect.name == "sqlite":
        statement = f"SELECT {_COLUMNS}, seq FROM {CHANGES} WHERE seq > ? ORDER BY seq"
        rows = fetch(conn, statement, (int(mark.seen),))
        seen = str(rows[-1][-1]) if rows else mark.seen
        return _changes(rows, Mark(mark.epoch, seen))
    statement = f"SELECT {_COLUMNS}, xid::text FROM {CHANGES} WHERE xid = pg_current_xact_id_if_assigned()"
    rows = fetch(conn, statement, ())
    own = rows[0][-1] if rows else None  # without rows of its own, there is nothing to tell apart
    return _changes(rows, Mark(mark.epoch, mark.seen, own))


def trim(conn: Connection) -> None:
    """Delete the log's entries but the last KEEP or so, moving the floor (the caller holds the
    writer lock). PostgreSQL: the entries older than the KEEP-th newest that the trim's snapshot
    sees (a transaction still running keeps its own), and that snapshot, to tell whom it concerns."""
    if conn.dialect.name == "sqlite":
        cut = _last_seq(conn) - KEEP
        if cut > int(_meta_value(conn, FLOOR) or 0):
            conn.exec_driver_sql(f"DELETE FROM {CHANGES} WHERE seq <= ?", (cut,))
            _meta(conn, FLOOR, str(cut))
        return
    rows = fetch(conn, f"SELECT xid::text FROM {CHANGES} ORDER BY xid DESC OFFSET %s LIMIT 1", (KEEP,))
    if rows:
        cut = rows[0][0]
        statement = f"WITH gone AS (DELETE FROM {CHANGES} WHERE xid < %s::xid8) SELECT pg_current_snapshot()::text"
        _meta(conn, TRIMMED_IN, fetch(conn, statement, (cut,))[0][0])
        _meta(conn, FLOOR, cut)


def _since_sqlite(conn: Connection, mark: Mark) -> Changes | None:
    epoch, floor, last = fetch(
        conn,
        f"SELECT (SELECT value FROM simhash_meta WHERE name = '{EPOCH}'), "
        f"(SELECT value FROM simhash_meta WHERE name = '{FLOOR}'), "
        f"(SELECT seq FROM sqlite_sequence WHERE name = '{CHANGES}')",
        (),
    )[0]
    seen = int(mark.seen)
    if epoch != mark.epoch or seen < int(floor or 0) or (last or 0) - seen > BEHIND:
        return None
    rows = fetch(conn, f"SELECT {_COLUMNS} FROM {CHANGES} WHERE seq > ?", (seen,))
    return _changes(rows, Mark(mark.epoch, str(last or seen)))


# A writer is behind the last trim when the trim deleted an entry the writer had not read: one of
# a transaction that began after the writer's snapshot, or ran then, and that the trim saw committed.
_BEHIND_THE_TRIM = (
    "COALESCE((WITH floor AS (SELECT "
    f"(SELECT value FROM simhash_meta WHERE name = '{FLOOR}')::xid8 AS cut, "
    f"(SELECT value FROM simhash_meta WHERE name = '{TRIMMED_IN}')::pg_snapshot AS trimmed) "
    "SELECT cut > pg_snapshot_xmax({seen}) OR EXISTS (SELECT 1 FROM pg_snapshot_xip({seen}) AS running(x) "
    "WHERE x < cut AND pg_visible_in_snapshot(x, trimmed)) FROM floor WHERE trimmed IS NOT NULL), false)"
)


def _since_postgres(conn: Connection, mark: Mark) -> Changes | None:
    # Not visible in the last snapshot read: begun after it, or in progress then (whatever the
    # oldest transaction still running, so that a long one elsewhere does not widen the scan);
    # not this transaction's own, nor the last one's (read back before it committed).
    # Two index scans: one condition with OR would scan the whole log.
    seen = "%(seen)s::pg_snapshot"
    others = " AND xid IS DISTINCT FROM pg_current_xact_id_if_assigned()"
    if mark.own is not None:
        others += " AND xid <> %(own)s::xid8"
    statement = (
        f"WITH new AS (SELECT {_COLUMNS} FROM {CHANGES} WHERE xid >= pg_snapshot_xmax({seen}){others} "
        f"UNION ALL SELECT {_COLUMNS} FROM {CHANGES} WHERE xid = ANY(ARRAY(SELECT pg_snapshot_xip({seen}))) "
        f"AND xid < pg_snapshot_xmax({seen}){others} LIMIT {BEHIND + 1}), "
        "columns AS (SELECT array_agg(fingerprint) AS f, array_agg(key_hash) AS k, array_agg(text_hash) AS t, "
        "array_agg(added) AS a FROM new) "
        "SELECT pg_current_snapshot()::text, "
        f"(SELECT value FROM simhash_meta WHERE name = '{EPOCH}'), "
        f"{_BEHIND_THE_TRIM.format(seen=seen)}, "
        "f, k, t, a FROM columns"
    )
    snapshot, epoch, behind, *columns = fetch(conn, statement, {"seen": mark.seen, "own": mark.own})[0]
    rows = list(zip(*(column or () for column in columns)))
    if epoch != mark.epoch or behind or len(rows) > BEHIND:
        return None
    return _changes(rows, Mark(mark.epoch, snapshot))


def _changes(rows: Sequence[Sequence[Any]], mark: Mark) -> Changes:
    """Changes from log entries (fingerprint, key hash, text hash, added, ...)."""
    near = [(int(fingerprint), bool(came)) for fingerprint, _, _, came, *_ in rows if fingerprint is not None]
    touched = Touched(
        frozenset(int(row[1]) for row in rows),
        frozenset(int(row[2]) for row in rows if row[2] is not None),
        as_u64(np.array([fingerprint for fingerprint, _ in near], np.int64)),
    )
    added = np.array([fingerprint for fingerprint, came in near if came], np.int64)
    return Changes(as_u64(added), sum(1 for _, came in near if not came), mark, touched)


def _epoch(conn: Connection | RawConnection) -> str:
    return str(_meta_value(conn, EPOCH))


def _last_seq(conn: Connection | RawConnection) -> int:
    rows = fetch(conn, f"SELECT seq FROM sqlite_sequence WHERE name = '{CHANGES}'", ())
    return int(rows[0][0]) if rows else 0


def _meta_value(conn: Connection | RawConnection, name: str) -> str | None:
    rows = fetch(conn, "SELECT value FROM simhash_meta WHERE name = '" + name + "'", ())
    return str(rows[0][0]) if rows else None


def _meta(conn: Connection, name: str, value: str) -> None:
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    conn.exec_driver_sql(
        f"INSERT INTO simhash_meta (name, value) VALUES ({mark}, {mark}) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        (name, value),
    )
