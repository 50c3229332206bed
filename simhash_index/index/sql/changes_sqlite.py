"""The change feed on SQLite (changes.py): a writer's mark is the last sequence number it read.

Writers are serialised by the database's one writer lock, so the sequence (AUTOINCREMENT: never
reused) is in commit order. A mark's `check` is the key hash of the entry at that sequence: a
file restored from an older backup (SQLite's backup API, the shell's `.restore`) keeps its epoch
but not that entry, and the writer builds anew.
"""

from __future__ import annotations

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
    meta_value,
    read_stored,
    set_meta,
)
from .layouts import Layout
from .statements import RawConnection, fetch

TRIGGERS = ("simhash_documents_added", "simhash_documents_changed", "simhash_documents_removed")
DDL = (
    f"""CREATE TABLE {CHANGES} (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        fingerprint INTEGER, key_hash INTEGER NOT NULL, text_hash INTEGER, added INTEGER NOT NULL,
        row_id INTEGER, sketch_bits BLOB
    )""",
    *(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS),
    f"""CREATE TRIGGER simhash_documents_added AFTER INSERT ON simhash_documents BEGIN
        INSERT INTO {CHANGES} ({COLUMNS}) VALUES (
            CASE WHEN NEW.exact_only = 0 THEN NEW.fingerprint END, NEW.key_hash, NEW.text_hash, 1,
            NEW.id, NEW.sketch_bits);
    END""",
    f"""CREATE TRIGGER simhash_documents_changed AFTER UPDATE ON simhash_documents
    WHEN OLD.key_hash IS NOT NEW.key_hash OR OLD.fingerprint IS NOT NEW.fingerprint
        OR OLD.exact_only IS NOT NEW.exact_only OR OLD.text_hash IS NOT NEW.text_hash
        OR OLD.sketch_bits IS NOT NEW.sketch_bits
    BEGIN
        INSERT INTO {CHANGES} ({COLUMNS}) VALUES (
            CASE WHEN OLD.exact_only = 0 THEN OLD.fingerprint END, OLD.key_hash, OLD.text_hash, 0, OLD.id, NULL);
        INSERT INTO {CHANGES} ({COLUMNS}) VALUES (
            CASE WHEN NEW.exact_only = 0 THEN NEW.fingerprint END, NEW.key_hash, NEW.text_hash, 1,
            NEW.id, NEW.sketch_bits);
    END""",
    f"""CREATE TRIGGER simhash_documents_removed AFTER DELETE ON simhash_documents BEGIN
        INSERT INTO {CHANGES} ({COLUMNS}) VALUES (
            CASE WHEN OLD.exact_only = 0 THEN OLD.fingerprint END, OLD.key_hash, OLD.text_hash, 0, OLD.id, NULL);
    END""",
)


class SqliteFeed:
    """The change feed of an SQLite index."""

    def installed(self, conn: Connection | RawConnection) -> bool:
        if not format_installed(conn):
            return False
        listing = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'simhash_documents'"
        return bool(fetch(conn, listing, ())[0][0] == len(TRIGGERS))

    def install(self, conn: Connection) -> None:
        if not self.installed(conn):
            changes.install(conn, DDL)

    def stored(self, conn: Connection | RawConnection, layout: Layout) -> StoredFingerprints:
        last = _last_seq(conn)
        return read_stored(conn, layout, Mark(str(meta_value(conn, EPOCH)), str(last), check=_check(conn, last)))

    def since(self, conn: Connection, mark: Mark) -> Changes | None:
        seen = int(mark.seen)
        epoch, floor, last, check = fetch(
            conn,
            f"SELECT (SELECT value FROM simhash_meta WHERE name = '{EPOCH}'), "
            f"(SELECT value FROM simhash_meta WHERE name = '{FLOOR}'), "
            f"(SELECT seq FROM sqlite_sequence WHERE name = '{CHANGES}'), "
            f"(SELECT key_hash FROM {CHANGES} WHERE seq = ?)",
            (seen,),
        )[0]
        floor, last = int(floor or 0), int(last or 0)
        rewound = last < seen or (seen > floor and _as_check(check) != mark.check)
        if epoch != mark.epoch or seen < floor or rewound or last - seen > changes.BEHIND:
            return None
        return self._read(conn, mark)

    def written(self, conn: Connection, mark: Mark) -> Changes:
        return self._read(conn, mark)

    def trim(self, conn: Connection) -> None:
        cut = _last_seq(conn) - changes.KEEP
        if cut > int(meta_value(conn, FLOOR) or 0):
            conn.exec_driver_sql(f"DELETE FROM {CHANGES} WHERE seq <= ?", (cut,))
            set_meta(conn, FLOOR, str(cut))

    def _read(self, conn: Connection, mark: Mark) -> Changes:
        """The entries past the mark, and the mark at the last of them."""
        rows = fetch(conn, f"SELECT {COLUMNS}, seq FROM {CHANGES} WHERE seq > ? ORDER BY seq", (int(mark.seen),))
        if not rows:
            return changes_of(rows, mark)
        return changes_of(rows, Mark(mark.epoch, str(rows[-1][-1]), check=_as_check(rows[-1][1])))


def _last_seq(conn: Connection | RawConnection) -> int:
    rows = fetch(conn, f"SELECT seq FROM sqlite_sequence WHERE name = '{CHANGES}'", ())
    return int(rows[0][0]) if rows else 0


def _check(conn: Connection | RawConnection, seq: int) -> str | None:
    """The check of a mark at `seq`: the key hash of the entry there (None: no entry)."""
    rows = fetch(conn, f"SELECT key_hash FROM {CHANGES} WHERE seq = ?", (seq,))
    return _as_check(rows[0][0]) if rows else None


def _as_check(key_hash: object) -> str | None:
    return None if key_hash is None else str(key_hash)
