"""Reading the duplicates log of an SQL index: streamed in the order logged, one key, those of one
stored page, or by cluster."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from ...fingerprinting.bits import to_unsigned
from ..base import Cluster
from ..records import Duplicate, as_utc, key_hash
from .schema import Tables

STREAM_ROWS = 1000  # rows fetched at a time by listings


def logged(conn: Connection, tables: Tables, evidence: tuple[str, ...], since: datetime | None) -> Iterator[Duplicate]:
    """The log in the order first logged; `since`: only drops at or after it."""
    t = tables.duplicates.c
    columns = [t.key, t.duplicate_of, t.distance, t.exact, t.seen_at, *(t[name] for name in evidence)]
    statement = select(*columns).order_by(t.id)
    if since is not None:
        statement = statement.where(t.seen_at >= since)
    result = conn.execution_options(yield_per=STREAM_ROWS).execute(statement)
    with result:
        for row in result:
            yield _duplicate(row, row.duplicate_of)


def one(conn: Connection, tables: Tables, evidence: tuple[str, ...], key: str) -> Duplicate | None:
    """The page logged under this key, or None."""
    t = tables.duplicates.c
    columns = [t.key, t.duplicate_of, t.distance, t.exact, t.seen_at, *(t[name] for name in evidence)]
    rows = conn.execute(select(*columns).where(t.key_hash == key_hash(key), t.key == key)).all()
    return _duplicate(rows[0], rows[0].duplicate_of) if rows else None


def against(conn: Connection, tables: Tables, evidence: tuple[str, ...], key: str) -> list[Duplicate]:
    """The pages logged against the stored page `key`, in the order first logged."""
    dup, doc = tables.duplicates, tables.documents
    columns = [dup.c.key, dup.c.distance, dup.c.exact, dup.c.seen_at, *(dup.c[name] for name in evidence)]
    statement = (
        select(*columns)
        .select_from(dup.join(doc, doc.c.id == dup.c.duplicate_of_id))
        .where(doc.c.key_hash == key_hash(key), doc.c.key == key)
        .order_by(dup.c.id)
    )
    return [_duplicate(row, key) for row in conn.execute(statement)]


def clusters(conn: Connection, tables: Tables, evidence: tuple[str, ...], limit: int | None) -> Iterator[Cluster]:
    """Each stored page that has duplicates, with them: the largest clusters first (one GROUP BY)."""
    dup, doc = tables.duplicates, tables.documents
    size = func.count().label("size")
    sizes = (
        select(dup.c.duplicate_of_id.label("doc_id"), size)
        .group_by(dup.c.duplicate_of_id)
        .order_by(size.desc(), func.min(dup.c.id))
        .limit(limit)
        .subquery()
    )
    columns = [sizes.c.doc_id, doc.c.key.label("stored"), dup.c.key, dup.c.distance, dup.c.exact, dup.c.seen_at]
    columns += [dup.c[name] for name in evidence]
    statement = (
        select(*columns)
        .select_from(sizes.join(doc, doc.c.id == sizes.c.doc_id).join(dup, dup.c.duplicate_of_id == sizes.c.doc_id))
        .order_by(sizes.c.size.desc(), sizes.c.doc_id, dup.c.distance, dup.c.id)
    )
    result = conn.execution_options(yield_per=STREAM_ROWS).execute(statement)
    with result:
        members: list[Any] = []
        for row in result:
            if members and row.doc_id != members[0].doc_id:
                yield Cluster(members[0].stored, tuple(_duplicate(m, m.stored) for m in members))
                members = []
            members.append(row)
        if members:
            yield Cluster(members[0].stored, tuple(_duplicate(m, m.stored) for m in members))


def _duplicate(row: Any, duplicate_of: str) -> Duplicate:
    mapping = row._mapping
    fingerprint = mapping.get("fingerprint")
    return Duplicate(
        key=row.key,
        duplicate_of=duplicate_of,
        distance=row.distance,
        exact=bool(row.exact),
        seen_at=as_utc(row.seen_at),
        fingerprint=None if fingerprint is None else to_unsigned(fingerprint),
        similarity=mapping.get("similarity"),
        radius=mapping.get("radius"),
        superseded=mapping.get("superseded"),
        added=mapping.get("added"),
    )
