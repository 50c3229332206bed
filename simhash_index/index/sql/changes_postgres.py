"""The change feed on PostgreSQL (changes.py): a writer's mark is the snapshot of the statement
that last read the log, and this writer's own last transaction.

Sequences are not in commit order there, so an entry is new to a writer when its transaction
was not visible in that snapshot; the writer's own entries it read back before committing. This
holds for writers that bypass the writer lock too (an older process's bulk load). A mark's
`check` is the newest entry the writer read (transaction id and key hash): a log restored from
an older dump lacks it, and the writer builds anew.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from . import changes
from .changes import (
    CHANGES,
    COLUMNS,
    EPOCH,
    FLOOR,
    Changes,
    Mark,
    StoredFingerprints,
    changes_of,
    format_installed,
    read_stored,
    set_meta,
)
from .layouts import Layout
from .statements import RawConnection, fetch

TRIMMED_IN = "changes_trimmed_in"  # simhash_meta: the snapshot the last trim deleted in
TRIGGERS = "('simhash_documents_changes', 'simhash_documents_truncated')"
_CHANGED = (
    "OLD.key_hash IS DISTINCT FROM NEW.key_hash OR OLD.fingerprint IS DISTINCT FROM NEW.fingerprint "
    "OR OLD.exact_only IS DISTINCT FROM NEW.exact_only OR OLD.text_hash IS DISTINCT FROM NEW.text_hash "
    "OR OLD.sketch_bits IS DISTINCT FROM NEW.sketch_bits"
)
DDL = (
    f"""CREATE TABLE {CHANGES} (
        xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
        fingerprint BIGINT, key_hash BIGINT NOT NULL, text_hash BIGINT, added BOOLEAN NOT NULL,
        row_id BIGINT, sketch_bits BYTEA
    )""",
    f"CREATE INDEX ix_{CHANGES}_xid ON {CHANGES} (xid)",
    f"""CREATE OR REPLACE FUNCTION simhash_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' AND NOT ({_CHANGED}) THEN
            RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN
            INSERT INTO {CHANGES} ({COLUMNS}) VALUES (
                CASE WHEN OLD.exact_only = 0 THEN OLD.fingerprint END, OLD.key_hash, OLD.text_hash, false,
                OLD.id, NULL);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO {CHANGES} ({COLUMNS}) VALUES (
                CASE WHEN NEW.exact_only = 0 THEN NEW.fingerprint END, NEW.key_hash, NEW.text_hash, true,
                NEW.id, NEW.sketch_bits);
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

# A writer is behind the last trim when the trim deleted an entry the writer had not read: one of
# a transaction that began after the writer's snapshot, or ran then, and that the trim saw committed.
_BEHIND_THE_TRIM = (
    "COALESCE((WITH floor AS (SELECT "
    f"(SELECT value FROM simhash_meta WHERE name = '{FLOOR}')::xid8 AS cut, "
    f"(SELECT value FROM simhash_meta WHERE name = '{TRIMMED_IN}')::pg_snapshot AS trimmed) "
    "SELECT cut > pg_snapshot_xmax({seen}) OR EXISTS (SELECT 1 FROM pg_snapshot_xip({seen}) AS running(x) "
    "WHERE x < cut AND pg_visible_in_snapshot(x, trimmed)) FROM floor WHERE trimmed IS NOT NULL), false)"
)
# Whether the mark's check entry (transaction id, key hash) is still in the log (true without one).
_CHECKED = (
    f"COALESCE((SELECT EXISTS (SELECT 1 FROM {CHANGES} WHERE xid = %(check_xid)s::xid8 "
    "AND key_hash = %(check_key)s::bigint) WHERE %(check_xid)s::text IS NOT NULL), true)"
)


class PostgresFeed:
    """The change feed of a PostgreSQL index."""

    def installed(self, conn: Connection | RawConnection) -> bool:
        """Also: its trigger functions (a dump of the tables alone leaves them out), and no entry
        from another server's transactions (a dump restored elsewhere)."""
        if not format_installed(conn):
            return False
        return bool(
            fetch(
                conn,
                "SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'simhash_documents'::regclass "
                f"AND tgname IN {TRIGGERS} AND tgenabled <> 'D') = 2 "
                f"AND COALESCE((SELECT max(xid) FROM {CHANGES} WHERE xid IS DISTINCT FROM "
                "pg_current_xact_id_if_assigned()) < pg_snapshot_xmax(pg_current_snapshot()), true)",
                (),
            )[0][0]
        )

    def install(self, conn: Connection) -> None:
        if not self.installed(conn):
            changes.install(conn, DDL)

    def stored(self, conn: Connection | RawConnection, layout: Layout) -> StoredFingerprints:
        snapshot, epoch, newest, key = fetch(
            conn,
            f"SELECT pg_current_snapshot()::text, (SELECT value FROM simhash_meta WHERE name = '{EPOCH}'), "
            f"newest.xid::text, newest.key_hash FROM (SELECT 1) AS one LEFT JOIN "
            f"(SELECT xid, key_hash FROM {CHANGES} ORDER BY xid DESC LIMIT 1) AS newest ON true",
            (),
        )[0]
        return read_stored(conn, layout, Mark(str(epoch), snapshot, check=_check(newest, key)))

    def since(self, conn: Connection, mark: Mark) -> Changes | None:
        # Not visible in the last snapshot read: begun after it, or in progress then (whatever the
        # oldest transaction still running, so that a long one elsewhere does not widen the scan);
        # not this transaction's own, nor the last one's (read back before it committed).
        # Two index scans: one condition with OR would scan the whole log.
        seen = "%(seen)s::pg_snapshot"
        others = " AND xid IS DISTINCT FROM pg_current_xact_id_if_assigned()"
        if mark.own is not None:
            others += " AND xid <> %(own)s::xid8"
        statement = (
            f"WITH new AS (SELECT {COLUMNS}, xid FROM {CHANGES} WHERE xid >= pg_snapshot_xmax({seen}){others} "
            f"UNION ALL SELECT {COLUMNS}, xid FROM {CHANGES} WHERE xid = ANY(ARRAY(SELECT pg_snapshot_xip({seen}))) "
            f"AND xid < pg_snapshot_xmax({seen}){others} LIMIT {changes.BEHIND + 1}), "
            "columns AS (SELECT array_agg(fingerprint) AS f, array_agg(key_hash) AS k, array_agg(text_hash) AS t, "
            "array_agg(added) AS a, array_agg(row_id) AS i, array_agg(sketch_bits) AS b, "
            "array_agg(xid::text) AS x FROM new) "
            "SELECT pg_current_snapshot()::text, "
            f"(SELECT value FROM simhash_meta WHERE name = '{EPOCH}'), "
            f"{_BEHIND_THE_TRIM.format(seen=seen)}, {_CHECKED}, "
            "f, k, t, a, i, b, x FROM columns"
        )
        xid, key = _parts(mark.check)
        parameters = {"seen": mark.seen, "own": mark.own, "check_xid": xid, "check_key": key}
        snapshot, epoch, behind, checked, *columns = fetch(conn, statement, parameters)[0]
        rows = list(zip(*(column or () for column in columns)))
        if epoch != mark.epoch or behind or not checked or len(rows) > changes.BEHIND:
            return None
        return changes_of(rows, Mark(mark.epoch, snapshot, check=_newest(rows) or mark.check))

    def written(self, conn: Connection, mark: Mark) -> Changes:
        statement = f"SELECT {COLUMNS}, xid::text FROM {CHANGES} WHERE xid = pg_current_xact_id_if_assigned()"
        rows = fetch(conn, statement, ())
        own = rows[0][-1] if rows else None  # without rows of its own, there is nothing to tell apart
        return changes_of(rows, Mark(mark.epoch, mark.seen, own, _newest(rows) or mark.check))

    def trim(self, conn: Connection) -> None:
        """The entries older than the KEEP-th newest that the trim's snapshot sees (a transaction
        still running keeps its own), and that snapshot, to tell whom it concerns."""
        rows = fetch(conn, f"SELECT xid::text FROM {CHANGES} ORDER BY xid DESC OFFSET %s LIMIT 1", (changes.KEEP,))
        if rows:
            cut = rows[0][0]
            statement = f"WITH gone AS (DELETE FROM {CHANGES} WHERE xid < %s::xid8) SELECT pg_current_snapshot()::text"
            set_meta(conn, TRIMMED_IN, fetch(conn, statement, (cut,))[0][0])
            set_meta(conn, FLOOR, cut)


def _newest(rows: list[tuple[Any, ...]]) -> str | None:
    """The check of the newest of these entries (their last column: the transaction id, as text)."""
    if not rows:
        return None
    newest = max(rows, key=lambda row: int(row[-1]))
    return _check(newest[-1], newest[1])


def _check(xid: object, key_hash: object) -> str | None:
    return None if xid is None else f"{xid}:{key_hash}"


def _parts(check: str | None) -> tuple[str | None, int | None]:
    if check is None:
        return None, None
    xid, _, key = check.partition(":")
    return xid, int(key)
