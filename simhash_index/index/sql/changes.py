"""The change feed: what a writer's in-memory candidate index reads to follow the table.

Triggers on simhash_documents log each near-matchable fingerprint that appears in the table
(an insert, or an update that gives a row a new fingerprint) and each that leaves it (a delete,
or the old value of an update) in simhash_changes. Triggers, not the writers' own code, so that
every change is logged: this library's writers of any version, bulk loads, `forget`, `prune`,
and plain SQL. A writer reads the log since its last look inside its write transaction (after
taking the writer lock), and so sees every committed page before it decides.

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
from dataclasses import dataclass

import numpy as np
from sqlalchemy.engine import Connection

from ..memory.near import U64, as_u64
from .layouts import Layout
from .statements import RawConnection, fetch

CHANGES = "simhash_changes"
EPOCH, FLOOR = "changes_epoch", "changes_floor"  # simhash_meta names
KEEP = 200_000  # log entries kept (at least); a writer further behind builds its index again
BEHIND = 100_000  # more new entries than this at a catch-up: building anew is as cheap

_SQLITE = (
    f"CREATE TABLE IF NOT EXISTS {CHANGES} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "fingerprint INTEGER NOT NULL, added INTEGER NOT NULL)",
    f"""CREATE TRIGGER IF NOT EXISTS simhash_documents_added AFTER INSERT ON simhash_documents
    WHEN NEW.exact_only = 0 AND NEW.fingerprint IS NOT NULL
    BEGIN INSERT INTO {CHANGES} (fingerprint, added) VALUES (NEW.fingerprint, 1); END""",
    f"""CREATE TRIGGER IF NOT EXISTS simhash_documents_changed AFTER UPDATE OF fingerprint, exact_only
    ON simhash_documents WHEN OLD.fingerprint IS NOT NEW.fingerprint OR OLD.exact_only IS NOT NEW.exact_only
    BEGIN
        INSERT INTO {CHANGES} (fingerprint, added) SELECT OLD.fingerprint, 0
            WHERE OLD.exact_only = 0 AND OLD.fingerprint IS NOT NULL;
        INSERT INTO {CHANGES} (fingerprint, added) SELECT NEW.fingerprint, 1
            WHERE NEW.exact_only = 0 AND NEW.fingerprint IS NOT NULL;
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS simhash_documents_removed AFTER DELETE ON simhash_documents
    WHEN OLD.exact_only = 0 AND OLD.fingerprint IS NOT NULL
    BEGIN INSERT INTO {CHANGES} (fingerprint, added) VALUES (OLD.fingerprint, 0); END""",
)
_POSTGRES = (
    f"CREATE TABLE IF NOT EXISTS {CHANGES} (xid xid8 NOT NULL DEFAULT pg_current_xact_id(), "
    "fingerprint BIGINT NOT NULL, added BOOLEAN NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS ix_{CHANGES}_xid ON {CHANGES} (xid)",
    f"""CREATE OR REPLACE FUNCTION simhash_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' AND OLD.exact_only = 0 AND OLD.fingerprint IS NOT NULL AND (TG_OP = 'DELETE'
                OR OLD.fingerprint IS DISTINCT FROM NEW.fingerprint OR NEW.exact_only <> 0) THEN
            INSERT INTO {CHANGES} (fingerprint, added) VALUES (OLD.fingerprint, false);
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.exact_only = 0 AND NEW.fingerprint IS NOT NULL AND (TG_OP = 'INSERT'
                OR OLD.fingerprint IS DISTINCT FROM NEW.fingerprint OR OLD.exact_only <> 0) THEN
            INSERT INTO {CHANGES} (fingerprint, added) VALUES (NEW.fingerprint, true);
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
class Changes:
    """What the log held past a mark: fingerprints that came and went, and the mark after them."""

    added: U64
    removed: int
    mark: Mark


def installed(conn: Connection | RawConnection) -> bool:
    """Whether the index has its change feed."""
    rows = fetch(conn, f"SELECT value FROM simhash_meta WHERE name = '{EPOCH}'", ())
    return bool(rows)


def install(conn: Connection) -> None:
    """Add the change feed (its table, triggers and epoch) to an index that lacks it; the caller
    holds the writer lock (or creates the index)."""
    if installed(conn):
        return
    for statement in _SQLITE if conn.dialect.name == "sqlite" else _POSTGRES:
        conn.exec_driver_sql(statement)
    conn.exec_driver_sql(f"DELETE FROM {CHANGES}")
    _meta(conn, FLOOR, "0")
    _meta(conn, EPOCH, uuid.uuid4().hex)


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
    return mark, np.fromiter((row[0] for row in rows), np.int64, len(rows)).view(np.uint64)


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
        statement = f"SELECT seq, fingerprint, added FROM {CHANGES} WHERE seq > ? ORDER BY seq"
        rows = fetch(conn, statement, (int(mark.seen),))
        seen = str(rows[-1][0]) if rows else mark.seen
        return _changes([(fp, added) for _, fp, added in rows], Mark(mark.epoch, seen))
    rows = fetch(
        conn, f"SELECT fingerprint, added, xid::text FROM {CHANGES} WHERE xid = pg_current_xact_id_if_assigned()", ()
    )
    own = rows[0][2] if rows else None  # without rows of its own, there is nothing to tell apart
    return _changes([(fp, added) for fp, added, _ in rows], Mark(mark.epoch, mark.seen, own))


def trim(conn: Connection) -> None:
    """Delete the log's entries but the last KEEP or so, moving the floor (the caller holds the
    writer lock). PostgreSQL keeps every entry of a transaction still running anywhere."""
    if conn.dialect.name == "sqlite":
        cut = _last_seq(conn) - KEEP
        if cut > int(_meta_value(conn, FLOOR) or 0):
            conn.exec_driver_sql(f"DELETE FROM {CHANGES} WHERE seq <= ?", (cut,))
            _meta(conn, FLOOR, str(cut))
        return
    rows = fetch(conn, f"SELECT xid::text FROM {CHANGES} ORDER BY xid DESC OFFSET %s LIMIT 1", (KEEP,))
    if rows:
        cut = fetch(conn, "SELECT LEAST(%s::xid8, pg_snapshot_xmin(pg_current_snapshot()))::text", (rows[0][0],))[0][0]
        conn.exec_driver_sql(f"DELETE FROM {CHANGES} WHERE xid < %s::xid8", (cut,))
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
    rows = fetch(conn, f"SELECT fingerprint, added FROM {CHANGES} WHERE seq > ?", (seen,))
    return _changes(rows, Mark(mark.epoch, str(last or seen)))


def _since_postgres(conn: Connection, mark: Mark) -> Changes | None:
    # Not visible in the last snapshot read: begun after it, or in progress then (whatever the
    # oldest transaction still running, so that a long one elsewhere does not widen the scan).
    # Two index scans: one condition with OR would scan the whole log.
    own = "" if mark.own is None else " AND xid <> %(own)s::xid8"
    seen = "%(seen)s::pg_snapshot"
    statement = (
        f"WITH new AS (SELECT fingerprint, added FROM {CHANGES} WHERE xid >= pg_snapshot_xmax({seen}){own} "
        f"UNION ALL SELECT fingerprint, added FROM {CHANGES} WHERE xid = ANY(ARRAY(SELECT pg_snapshot_xip({seen}))) "
        f"AND xid < pg_snapshot_xmax({seen}){own} LIMIT {BEHIND + 1}) "
        "SELECT pg_current_snapshot()::text, "
        f"(SELECT value FROM simhash_meta WHERE name = '{EPOCH}'), "
        f"(SELECT value FROM simhash_meta WHERE name = '{FLOOR}')::xid8 > pg_snapshot_xmin({seen}), "
        "ARRAY(SELECT fingerprint FROM new WHERE added), (SELECT count(*) FROM new WHERE NOT added)"
    )
    snapshot, epoch, behind, added, removed = fetch(conn, statement, {"seen": mark.seen, "own": mark.own})[0]
    if epoch != mark.epoch or behind or len(added) + removed > BEHIND:
        return None
    return Changes(as_u64(np.array(added, np.int64)), int(removed), Mark(mark.epoch, snapshot))


def _changes(rows: Sequence[tuple[int, object]], mark: Mark) -> Changes:
    added = np.array([fp for fp, came in rows if came], np.int64)
    return Changes(as_u64(added), sum(1 for _, came in rows if not came), mark)


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
    conn.exec_driver_sql(f"DELETE FROM simhash_meta WHERE name = {mark}", (name,))
    conn.exec_driver_sql(f"INSERT INTO simhash_meta (name, value) VALUES ({mark}, {mark})", (name, value))
