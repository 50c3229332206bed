"""How an SQL index's batches are decided: atomically, each seeing every committed page.

Locked (SQLite, and PostgreSQL whenever the optimistic way fails): take the writer lock, let
the lookup follow the table, decide and write the batch (batch.py), commit.

Optimistic (PostgreSQL with the in-memory lookup): follow the table and decide and write the
batch without the writer lock, so that writers insert their rows side by side; then take the
lock (waiting at most WAIT_FOR_LOCK_MS) and read what other writers committed meanwhile. If
none of it touches the batch (a key or a text of the batch, a fingerprint within the radius of
one of its pages, coming or going), the batch decided what it would have decided after them:
commit, still holding the lock, so the next writer's look sees it. Else roll back and decide
again, locked. The wait is bounded because a writer that holds the lock may be waiting for a
row this transaction holds (the same key, a page it matched): rolling back lets it go on.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Connection

from ...errors import IndexUnavailableError, SimhashIndexError
from ...fingerprinting.bits import to_signed
from .. import chunk
from ..base import Keyed
from ..records import Match, Policy, key_hash, now
from . import batch, changes
from .dialects import SqlDialect
from .engine import Transaction, lock_writers
from .feeds import FEEDS
from .layouts import Layout
from .lookup import Lookup, MemoryLookup

CATCH_UP_TRIES = 3  # builds of the in-memory lookup a batch may need before it gives up
WAIT_FOR_LOCK_MS = 200
# PostgreSQL's answers when an optimistic batch met another writer: the lock not had in time,
# a deadlock among writers, a matched page deleted meanwhile
CONTENDED = {"55P03", "40P01", "23503"}


class Writer:
    """Decides an SQL index's batches and counts the rows it writes (to trim the change log)."""

    def __init__(
        self,
        transaction: Transaction,
        layout: Layout,
        lookup: Lookup,
        evidence: tuple[str, ...],
        where: str,
        dialect: SqlDialect,
    ) -> None:
        self.layout = layout
        self.dialect = dialect
        self.lookup = lookup
        self.evidence = evidence
        self.optimistic = 0  # batches committed without waiting for the lock first
        self._transaction = transaction
        self._where = where
        self._written = 0  # rows written since the change log was last trimmed

    def check_and_add_many(self, pages: Sequence[Keyed], policy: Policy) -> list[Match | None]:
        if self.dialect.concurrent_writers and isinstance(self.lookup, MemoryLookup):
            answers = self._optimistic(self.lookup, pages, policy)
            if answers is not None:
                self.optimistic += 1
                return answers
        return self._locked(pages, policy)

    def wrote(self, conn: Connection, rows: int, *, locked: bool = True) -> None:
        """Every changes.TRIM_EVERY rows this process wrote, trim the change log (under the writer lock)."""
        self._written += rows
        feed = FEEDS[self.dialect]
        if self._written >= changes.TRIM_EVERY and feed.installed(conn):
            if not locked:
                lock_writers(conn)
            feed.trim(conn)
            self._written = 0

    def _locked(self, pages: Sequence[Keyed], policy: Policy) -> list[Match | None]:
        lookup = self.lookup
        for _ in range(CATCH_UP_TRIES):
            lookup.prepare()
            with self._transaction() as conn:
                lock_writers(conn)
                if not lookup.catch_up(conn):
                    continue  # the table moved past what the lookup can follow: build it anew
                answers = self._decide(conn, pages, policy)
                lookup.wrote(conn)
                self.wrote(conn, len(pages))
            lookup.committed()
            return answers
        raise IndexUnavailableError(
            f"{self._where} changed faster than this writer could follow it {CATCH_UP_TRIES} times in a row"
        )

    def _optimistic(self, lookup: MemoryLookup, pages: Sequence[Keyed], policy: Policy) -> list[Match | None] | None:
        """The batch decided and written before the lock; None when it met another writer's."""
        lookup.prepare()
        try:
            with self._transaction() as conn:
                conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{WAIT_FOR_LOCK_MS}ms'")  # a row's too
                if not lookup.catch_up(conn):
                    return None
                answers = self._decide(conn, pages, policy)
                lock_writers(conn)
                meanwhile = lookup.follow(conn)
                if meanwhile is None or touches(meanwhile, pages, policy.max_distance):
                    raise _Met()
                lookup.wrote(conn)
                self.wrote(conn, len(pages))
        except (_Met, batch.Vanished):
            return None
        except SimhashIndexError as exc:
            if _sqlstate(exc) in CONTENDED:
                return None
            raise
        lookup.committed()
        return answers

    def _decide(self, conn: Connection, pages: Sequence[Keyed], policy: Policy) -> list[Match | None]:
        return batch.check_and_add_many(
            conn, self.layout, pages, policy, now(), evidence=self.evidence, near=self.lookup.near
        )


class _Met(Exception):
    """What other writers committed meanwhile touches the batch: roll it back."""


def touches(found: changes.Changes, pages: Sequence[Keyed], radius: int) -> bool:
    """Whether rows that came or went touch the batch's pages (chunk.touches)."""
    touched = found.touched
    return chunk.touches(
        pages, touched.keys, touched.texts, touched.fingerprints, radius, key_of=key_hash, text_of=to_signed
    )


def _sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE of the driver's error under a library error, if any."""
    cause: BaseException | None = error
    while cause is not None:
        state = getattr(getattr(cause, "orig", None), "sqlstate", None) or getattr(cause, "sqlstate", None)
        if state:
            return str(state)
        cause = cause.__cause__
    return None
