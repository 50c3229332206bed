"""check_and_add_many on SQL: a batch of pages decided in one transaction.

Lock (PostgreSQL: advisory locks on every value a check of the batch could see, or the
whole index for a batch too large for the server's lock table; SQLite: the writer lock,
taken by the caller's BEGIN IMMEDIATE), read every stored page the batch
could see in a few statements, decide each page in order with the rule (a page sees the
ones decided before it in the batch), write every row, and let the caller commit once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from ...errors import IndexUnavailableError
from ...fingerprinting.bits import to_signed, to_unsigned
from ...fingerprinting.fingerprinter import Signature
from .. import rule
from ..base import Page
from ..records import Match, Policy, StoredPage, key_hash
from .engine import WRITERS_LOCK, advisory_lock_keys
from .layouts import Layout
from .statements import (
    MARKS,
    PAGE_COLUMNS,
    by_key_or_text,
    db_time,
    delete_where,
    document_row,
    execute_many,
    fetch,
    in_parameters,
    pages_where,
    read_time,
    row_page,
    upsert_documents,
    upsert_duplicates,
)

_BATCH_ORDER = 1 << 62  # pages stored by the batch are younger than every stored row


def check_and_add_many(
    conn: Connection,
    layout: Layout,
    pages: Sequence[Page],
    policy: Policy,
    moment: datetime,
    *,
    evidence: tuple[str, ...],
    exclusive: bool = False,
) -> list[Match | None]:
    """Decide and store the pages in the caller's transaction; the answers in order. `evidence`:
    the duplicates log's evidence columns (schema.EVIDENCE, or fewer in an older index);
    `exclusive`: PostgreSQL, lock the whole index (lock_index) rather than the batch's
    neighbourhoods. Raises Contended, before writing, when a stored page the batch would
    supersede is in use by another writer: the caller rolls back and tries again exclusive."""
    dialect = conn.dialect.name
    hashes = {key: key_hash(key) for key, _ in pages}
    if dialect == "postgresql":
        if exclusive:
            lock_index(conn)
        else:
            lock_neighbourhoods(conn, pages, hashes, policy.max_distance)
    stored = Stored(conn, layout, pages, policy.max_distance, hashes)
    answers: list[Match | None] = []
    documents: dict[str, tuple[Any, ...]] = {}  # key -> the row it is stored as (last wins)
    logged: dict[str, tuple[Signature, Match]] = {}  # key -> its duplicate's evidence
    when = db_time(dialect, moment)
    for position, (key, signature) in enumerate(pages):
        decision = rule.decide(
            signature,
            own=stored.own(key),
            same_text=stored.same_text(signature.text_hash),
            nearby=stored.nearby(position, signature),
            policy=policy,
            moment=moment,
            key=key,
            complete=stored.complete,
        )
        if decision.match is not None and not decision.supersedes:
            logged[key] = (signature, decision.match)
        elif decision.store:
            documents[key] = document_row(layout, key, signature, when, stored.hashes[key], dialect=dialect)
            stored.add(key, signature)
            logged.pop(key, None)
            if decision.supersedes:
                _demote(decision, key, signature, documents, logged, stored)
        answers.append(decision.match)
    if dialect == "postgresql" and stored.moved and not exclusive:
        lock_superseded(conn, stored, policy.max_distance)
    _write(conn, layout, documents, logged, stored, when, evidence, policy.max_distance)
    return answers


class Contended(Exception):
    """A page to supersede is locked by another writer, or went meanwhile: retry exclusive."""


def lock_superseded(conn: Connection, stored: Stored, radius: int) -> None:
    """PostgreSQL: the batch's locks cover its own pages' neighbourhoods, not those of the
    stored pages it supersedes, which another writer may be logging duplicates against. Take
    their locks without waiting (waiting could deadlock: they come after the batch's own), and
    check that each page is still there; else Contended."""
    keys: set[tuple[int, int]] = set()
    for page in stored.superseded:
        keys.update(advisory_lock_keys(page.signature, key_hash(page.key), radius))
    classes, objects = zip(*sorted(keys))
    taken = fetch(
        conn,
        "SELECT bool_and(pg_try_advisory_xact_lock(c, o)) FROM unnest(%s::int[], %s::int[]) AS t(c, o)",
        (list(classes), list(objects)),
    )[0][0]
    ids = sorted(stored.moved)
    there = fetch(conn, "SELECT count(*) FROM simhash_documents WHERE id = ANY(%s::bigint[])", (ids,))[0][0]
    if not taken or there != len(ids):
        raise Contended()


def _demote(
    decision: rule.Decision,
    key: str,
    signature: Signature,
    documents: dict[str, tuple[Any, ...]],
    logged: dict[str, tuple[Signature, Match]],
    stored: Stored,
) -> None:
    """The page `key` superseded its match: the match leaves the stored pages and is logged as
    its duplicate, and the duplicates logged against the match in this batch follow it (those
    logged before are moved when the batch is written: Stored.moved)."""
    match, matched = decision.match, decision.matched
    assert match is not None and matched is not None  # a page that supersedes one matched it
    old = stored.supersede(matched, key)
    documents.pop(old.key, None)
    for dropped, (evidence, target) in list(logged.items()):
        if target.key == old.key:
            logged[dropped] = (evidence, replace(target, key=key, fingerprint=signature.simhash))
    logged[old.key] = (old.signature, replace(match, key=key, fingerprint=signature.simhash))


# Past this many advisory locks a batch locks the whole index instead: a default server's lock
# table holds about 6,400 locks (max_locks_per_transaction x max_connections) for all connections.
MOST_LOCKS = 1000
_LOCK_ALL = (  # one statement whatever the batch: the locks taken row by row, the shared one first
    "SELECT count(CASE WHEN s THEN pg_advisory_xact_lock_shared(c, o) ELSE pg_advisory_xact_lock(c, o) END) "
    "FROM (SELECT c, o, s FROM unnest(%s::int[], %s::int[], %s::bool[]) AS t(c, o, s) ORDER BY s DESC, c, o) AS ordered"
)


def lock_neighbourhoods(conn: Connection, pages: Sequence[Page], hashes: dict[str, int], radius: int) -> None:
    """Transaction-level advisory locks on every block (and block byte), text hash and key of the batch
    (advisory_lock_keys), in sorted order (so no two writers deadlock): two near-duplicates
    share one, so a second writer waits for the first to commit, then sees its pages.

    All under WRITERS_LOCK, shared among writers, which forgetting takes alone (lock_index):
    a page a writer read cannot go before the writer commits. A batch that would need more
    than MOST_LOCKS locks takes WRITERS_LOCK alone too.
    """
    keys: set[tuple[int, int]] = set()
    for key, signature in pages:
        keys.update(advisory_lock_keys(signature, hashes[key], radius))
    if len(keys) > MOST_LOCKS:
        lock_index(conn)
        return
    classes, objects = zip(WRITERS_LOCK, *sorted(keys))
    fetch(conn, _LOCK_ALL, (list(classes), list(objects), [True] + [False] * len(keys)))


def lock_index(conn: Connection) -> None:
    """PostgreSQL: wait for every writer's transaction to end, and keep new ones waiting until
    this one ends (SQLite's BEGIN IMMEDIATE does as much already)."""
    if conn.dialect.name == "postgresql":
        fetch(conn, "SELECT pg_advisory_xact_lock(%s, %s)", WRITERS_LOCK)


class Stored:
    """The stored pages the batch can see, read up front, and the pages it stores as it goes."""

    def __init__(
        self, conn: Connection, layout: Layout, pages: Sequence[Page], max_distance: int, hashes: dict[str, int]
    ) -> None:
        dialect = conn.dialect.name
        self.hashes = hashes
        wanted = sorted(set(self.hashes.values()))
        texts = sorted({to_signed(s.text_hash) for _, s in pages if s.text_hash is not None})
        statement, parameters = by_key_or_text(dialect, wanted, texts)
        self._by_key: dict[str, StoredPage] = {}
        self._by_text: dict[int, list[StoredPage]] = {}
        for row in fetch(conn, statement, parameters):  # the pages with a key or a text of the batch, one read
            page = row_page(row, dialect)
            if page.key in self.hashes:
                self._by_key[page.key] = page
            if page.signature.text_hash is not None and to_signed(page.signature.text_hash) in texts:
                self._by_text.setdefault(page.signature.text_hash, []).append(page)
        self._near = near_pages(conn, layout, [s for _, s in pages], max_distance)
        self._max_distance = max_distance
        self._batch: dict[str, StoredPage] = {}  # stored (or updated) by this batch, by key
        self._gone: set[str] = set()  # superseded by a page of this batch
        self.moved: dict[int, str] = {}  # row id of a superseded page -> the key that superseded it
        self.superseded: list[StoredPage] = []  # the pages read from the database that were superseded
        self._conn = conn

    def own(self, key: str) -> StoredPage | None:
        if key in self._gone:
            return None
        return self._batch.get(key) or self._by_key.get(key)

    def same_text(self, text_hash: int | None) -> list[StoredPage]:
        if text_hash is None:
            return []
        hidden = self._batch.keys() | self._gone
        found = [page for page in self._by_text.get(text_hash, ()) if page.key not in hidden]
        return found + [page for page in self._batch.values() if page.signature.text_hash == text_hash]

    def nearby(self, position: int, signature: Signature) -> list[StoredPage]:
        """The stored pages near this page, and the pages this batch stored within the radius."""
        hidden = self._batch.keys() | self._gone
        found = [page for page in self._near[position] if page.key not in hidden]
        fingerprint = signature.near_simhash
        if fingerprint is not None:
            found += (
                page
                for page in self._batch.values()
                if (other := page.signature.near_simhash) is not None
                and (other ^ fingerprint).bit_count() <= self._max_distance
            )
        return found

    def add(self, key: str, signature: Signature) -> None:
        known = self.own(key)
        order = known.order if known is not None else _BATCH_ORDER + len(self._batch) + len(self._gone)
        if key in self._gone:  # superseded, then stored again: its row stays, with its duplicates
            self._gone.discard(key)
            if key in self._by_key:
                self.moved.pop(self._by_key[key].order, None)
        self._batch[key] = StoredPage(key, signature, order)

    def supersede(self, page: StoredPage, new: str) -> StoredPage:
        """Take the stored page out of what the batch sees; its row, if it has one, is deleted
        when the batch is written, and the duplicates logged against it move to `new`."""
        old = page.key
        row_id = page.order if page.order < _BATCH_ORDER else None
        if row_id is not None:
            self.moved[row_id] = new
            self.superseded.append(page)
        for row, target in self.moved.items():
            if target == old:
                self.moved[row] = new
        self._batch.pop(old, None)
        self._gone.add(old)
        return page

    def complete(self, page: StoredPage) -> StoredPage:
        """A page read from the database, with its words and dates (for a survivor policy)."""
        if page.order >= _BATCH_ORDER:  # stored by this batch: its Signature has them
            return page
        dialect = self._conn.dialect.name
        mark = MARKS[self._conn.dialect.paramstyle]
        statement = f"SELECT words, dated, modified FROM simhash_documents WHERE id = {mark}"
        rows = fetch(self._conn, statement, (page.order,))
        if not rows:
            return page
        words, dated, modified = rows[0]
        signature = replace(
            page.signature, words=words, dated=read_time(dialect, dated), modified=read_time(dialect, modified)
        )
        return replace(page, signature=signature)

    def row_id(self, key: str) -> int | None:
        """The row id of a page read from the database (None: stored by this batch)."""
        page = self.own(key)
        return page.order if page is not None and page.order < _BATCH_ORDER else None


def near_pages(
    conn: Connection, layout: Layout, signatures: Sequence[Signature], max_distance: int
) -> list[list[StoredPage]]:
    """For each signature, the stored pages within max_distance of it, oldest first (in the
    halves layout, pages matched only by their text may be among them: the rule leaves them out)."""
    dialect = conn.dialect.name
    wanted = [(i, fp) for i, s in enumerate(signatures) if (fp := s.near_simhash) is not None]
    found: list[list[StoredPage]] = [[] for _ in signatures]
    if not wanted:
        return found
    if dialect == "postgresql":
        return _near_postgres(conn, layout, wanted, found, max_distance)
    queries = np.array([fp for _, fp in wanted], dtype=np.uint64)
    rows = fetch(conn, *layout.batch_candidates(queries.tolist(), max_distance))
    stored = np.unique(np.array([row[0] for row in rows], dtype=np.int64)).view(np.uint64)
    near = np.bitwise_count(stored[None, :] ^ queries[:, None]) <= max_distance
    hits = stored[near.any(axis=0)]
    if not len(hits):
        return found
    by_fingerprint = pages_by_fingerprint(conn, layout, hits.tolist())
    for query in np.flatnonzero(near.any(axis=1)):
        pages = [page for fp in stored[near[query]].tolist() for page in by_fingerprint.get(fp, ())]
        found[wanted[query][0]] = sorted(pages, key=lambda page: page.order)
    return found


def pages_by_fingerprint(conn: Connection, layout: Layout, fingerprints: list[int]) -> dict[int, list[StoredPage]]:
    """The stored pages with these fingerprints, by fingerprint (one statement)."""
    found: dict[int, list[StoredPage]] = {}
    if not fingerprints:
        return found
    dialect = conn.dialect.name
    where, parameters = layout.rows_with_fingerprints(fingerprints, dialect)
    for row in fetch(conn, f"SELECT {PAGE_COLUMNS} FROM simhash_documents WHERE {where}", parameters):
        page = row_page(row, dialect)
        if page.signature.simhash is not None:
            found.setdefault(page.signature.simhash, []).append(page)
    return found


def _near_postgres(
    conn: Connection,
    layout: Layout,
    wanted: list[tuple[int, int]],
    found: list[list[StoredPage]],
    max_distance: int,
) -> list[list[StoredPage]]:
    """`found` filled in at the positions `wanted` (position, fingerprint). Blocks: one statement
    for the whole batch. Halves: one statement a page, all sent in one pipeline (one round trip)."""
    batch = layout.near_batch([fp for _, fp in wanted], max_distance)
    if batch is not None:
        hits = [(n, to_unsigned(fingerprint)) for n, fingerprint in fetch(conn, *batch)]
        by_fingerprint = pages_by_fingerprint(conn, layout, sorted({fp for _, fp in hits}))
        for n, fingerprint in hits:
            found[wanted[n - 1][0]] += by_fingerprint.get(fingerprint, [])
        for pages in found:
            pages.sort(key=lambda page: page.order)
        return found
    raw = conn.connection.dbapi_connection
    if raw is None:
        raise IndexUnavailableError("the database connection was closed in the middle of a batch")
    cursors = []
    with raw.pipeline():
        for _, fingerprint in wanted:
            cursor = raw.cursor()
            cursor.execute(*layout.near(fingerprint, max_distance))
            cursors.append(cursor)
    for (position, _), cursor in zip(wanted, cursors):
        fetched = cursor.fetchall()
        cursor.close()
        found[position] = [row_page((r[0], r[1], r[2], 0, r[3], r[4], r[5]), "postgresql") for r in fetched]
    return found


def _write(
    conn: Connection,
    layout: Layout,
    documents: dict[str, tuple[Any, ...]],
    logged: dict[str, tuple[Signature, Match]],
    stored: Stored,
    when: object,
    evidence: tuple[str, ...],
    radius: int,
) -> None:
    mark = MARKS[conn.dialect.paramstyle]
    execute_many(conn, upsert_documents(layout, mark), list(documents.values()))
    # a stored page is nobody's duplicate
    delete_where(conn, "simhash_duplicates", "key_hash", [stored.hashes[key] for key in documents])
    if not logged:
        return
    targets = {match.key for _, match in logged.values()} | set(stored.moved.values())
    ids = {key: stored.row_id(key) for key in targets}
    missing = sorted({key_hash(key) for key, row_id in ids.items() if row_id is None})
    if missing:  # pages this batch stored: their ids exist now
        dialect = conn.dialect.name
        for row in fetch(conn, pages_where(dialect, "key_hash", len(missing)), in_parameters(dialect, missing)):
            if row[1] in ids and ids[row[1]] is None:
                ids[row[1]] = row[0]
    entries = []
    for key, (signature, match) in logged.items():
        hashed = stored.hashes[key] if key in stored.hashes else key_hash(key)  # a superseded page's may not be
        entry: tuple[Any, ...] = (key, hashed, match.key, ids[match.key], match.distance, match.exact, when)
        fingerprint = signature.simhash
        known = {
            "fingerprint": None if fingerprint is None else to_signed(fingerprint),
            "similarity": match.similarity,
            "radius": radius,
            "superseded": match.superseded,
        }
        entries.append(entry + tuple(known[name] for name in evidence))
    moves = [(new, ids[new], row_id) for row_id, new in stored.moved.items()]
    execute_many(
        conn,
        f"UPDATE simhash_duplicates SET duplicate_of = {mark}, duplicate_of_id = {mark} WHERE duplicate_of_id = {mark}",
        moves,
    )
    execute_many(conn, upsert_duplicates(mark, evidence), entries)
    delete_where(conn, "simhash_documents", "id", sorted(stored.moved))
