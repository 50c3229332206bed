"""check_and_add_many on SQL: a batch of pages decided in one transaction.

In the caller's transaction, which holds the writer lock (engine.lock_writers): read every
stored page the batch could see in a few statements (its keys and texts here, its near pages
through the writer's lookup), decide each page in order with the rule (a page sees the ones
decided before it in the batch), write every row, and let the caller commit once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from ...fingerprinting.bits import to_signed
from ...fingerprinting.fingerprinter import Signature
from .. import rule
from ..base import Keyed
from ..chunk import Chunk
from ..records import Match, Policy, StoredPage, key_hash
from .dialects import dialect_of
from .layouts import Layout
from .lookup import NearPages
from .statements import (
    by_keys_or_texts,
    delete_where,
    document_row,
    execute_many,
    pages_with,
    row_page,
    upsert_documents,
    upsert_duplicates,
    with_ages,
)


def check_and_add_many(
    conn: Connection,
    layout: Layout,
    pages: Sequence[Keyed],
    policy: Policy,
    moment: datetime,
    *,
    evidence: tuple[str, ...],
    near: NearPages,
) -> list[Match | None]:
    """Decide and store the pages in the caller's transaction; the answers in order. `evidence`:
    the duplicates log's evidence columns (schema.EVIDENCE, or fewer in an older index);
    `near`: the writer's lookup of the stored pages near each page."""
    dialect = dialect_of(conn)
    hashes = {key: key_hash(key) for key, _ in pages}
    stored = Stored(conn, pages, policy, moment, hashes, near)
    answers: list[Match | None] = []
    documents: dict[str, tuple[Any, ...]] = {}  # key -> the row it is stored as (last wins)
    logged: dict[str, tuple[Signature, Match]] = {}  # key -> its duplicate's evidence
    when = dialect.db_time(moment)
    for position, (key, signature) in enumerate(pages):
        decision = rule.decide(
            signature,
            own=stored.own(key),
            same_text=stored.same_text(signature.text_hash),
            nearby=stored.nearby(position),
            policy=policy,
            moment=moment,
            key=key,
            complete=stored.complete,
        )
        if decision.match is not None and not decision.supersedes:
            logged[key] = (signature, decision.match)
        elif decision.store:
            documents[key] = document_row(layout, key, signature, when, stored.hashes[key], dialect=dialect)
            stored.add(key, signature, position)
            logged.pop(key, None)
            if decision.supersedes:
                _demote(decision, key, signature, documents, logged, stored)
        answers.append(decision.match)
    _write(conn, layout, documents, logged, stored, when, evidence, policy.max_distance)
    return answers


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
    match, matched = decision.displaced()
    old = stored.supersede_page(matched, key)
    documents.pop(old.key, None)
    for dropped, (evidence, target) in list(logged.items()):
        if target.key == old.key:
            logged[dropped] = (evidence, replace(target, key=key, fingerprint=signature.simhash))
    logged[old.key] = (old.signature, replace(match, key=key, fingerprint=signature.simhash))


class Stored(Chunk):
    """The stored pages the batch can see, read up front, and the pages it stores as it goes;
    `moved`: the row id of each stored page it superseded, and the key that superseded it."""

    def __init__(
        self,
        conn: Connection,
        pages: Sequence[Keyed],
        policy: Policy,
        moment: datetime,
        hashes: dict[str, int],
        near: NearPages,
    ) -> None:
        dialect = dialect_of(conn)
        self.hashes = hashes
        wanted = sorted(set(self.hashes.values()))
        texts = sorted({to_signed(s.text_hash) for _, s in pages if s.text_hash is not None})
        by_key: dict[str, StoredPage] = {}
        by_text: dict[int, list[StoredPage]] = {}
        for row in by_keys_or_texts(conn, wanted, texts):  # the pages with a key or a text of the batch, one read
            page = row_page(row, dialect)
            if page.key in self.hashes:
                by_key[page.key] = page
            if page.signature.text_hash is not None and to_signed(page.signature.text_hash) in texts:
                by_text.setdefault(page.signature.text_hash, []).append(page)
        super().__init__(pages, policy, moment, by_key=by_key, by_text=by_text)
        self.near = near(conn, self.signatures, policy, self.settles)
        self.moved: dict[int, str] = {}  # row id of a superseded page -> the key that superseded it
        self._conn = conn

    def stored_again(self, key: str) -> StoredPage | None:
        """A page superseded before in the batch and stored again: its row stays, with its duplicates."""
        known = self.by_key.get(key)
        if known is not None and known.row_id is not None:
            self.moved.pop(known.row_id, None)
        return known

    def supersede_page(self, page: StoredPage, new: str) -> StoredPage:
        """Take the stored page out of what the batch sees; its row, if it has one, is deleted
        when the batch is written, and the duplicates logged against it move to `new`."""
        old = page.key
        if page.row_id is not None:
            self.moved[page.row_id] = new
        for row, target in self.moved.items():
            if target == old:
                self.moved[row] = new
        self.supersede(old)
        return page

    def complete(self, page: StoredPage) -> StoredPage:
        """A page read from the database, with its words and dates (for a survivor policy)."""
        return with_ages(self._conn, [page])[0]

    def row_id(self, key: str) -> int | None:
        """The row id of a page read from the database (None: stored by this batch)."""
        page = self.own(key)
        return None if page is None else page.row_id


class Vanished(Exception):
    """A page the batch matched went before the batch was written (possible only when the batch
    was decided before the writer lock): decide it again."""


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
    mark = dialect_of(conn).mark
    execute_many(conn, upsert_documents(layout, mark), list(documents.values()))
    # a stored page is nobody's duplicate
    delete_where(conn, "simhash_duplicates", "key_hash", [stored.hashes[key] for key in documents])
    if not logged:
        return
    targets = {match.key for _, match in logged.values()} | set(stored.moved.values())
    ids = {key: stored.row_id(key) for key in targets}
    missing = sorted({key_hash(key) for key, row_id in ids.items() if row_id is None})
    if missing:  # pages this batch stored, and pages matched by their fingerprint or text
        for row in pages_with(conn, "key_hash", missing):
            if row[1] in ids and ids[row[1]] is None:
                ids[row[1]] = row[0]
        if None in ids.values():
            raise Vanished()
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
            "added": match.added,
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
