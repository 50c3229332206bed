"""Read-only reports over an index's tables, and a dry-run stand-in for `check_and_add`.

Every query is SQLAlchemy Core, portable to SQLite and PostgreSQL, with every
value bound as a parameter. A RedisIndex is read through its own methods (its
duplicates log, streamed) and summed up here. Hosts are parsed from URLs in
Python, so every backend agrees on them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import urlsplit

from sqlalchemy import Select, func, insert, literal_column, or_, select
from sqlalchemy.engine import Connection, Result, Row

from . import schema, sql
from .fingerprint import Signature
from .index import DEFAULT_MIN_SIMILARITY, Duplicate, Match, SimhashIndex, as_utc, key_hash
from .redis_index import RedisIndex
from .simhash import to_signed

STREAM_ROWS = 1000  # rows fetched at a time by listings


def _reading(index: SimhashIndex) -> AbstractContextManager[Connection]:
    """A read-only transaction; connection failures become IndexUnavailableError."""
    return index.transaction(write=False)


def host_of(url: str) -> str | None:
    """The lower-cased host name of a URL, without port or user; None when it has none.

    >>> host_of("https://User@WWW.Example.com:8080/a?b"), host_of("not a url")
    ('www.example.com', None)
    """
    try:
        return urlsplit(url).hostname or None
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None


def normalize_host(host: str) -> str:
    """A host as given on the command line, as `host_of` spells it."""
    return host.strip().rstrip(".").lower()


def on_host(url: str, host: str) -> bool:
    """Whether a URL is on `host` (already normalised) or one of its subdomains.

    >>> on_host("https://news.example.com/a", "example.com"), on_host("https://badexample.com/", "example.com")
    (True, False)
    """
    found = host_of(url)
    return found is not None and (found == host or found.endswith("." + host))


# -- stats ------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """What an index holds."""

    documents: int
    duplicates: int
    exact_duplicates: int
    distances: dict[int, int]  # distance -> duplicates, every distance from 0 to the largest seen
    top_hosts: list[tuple[str | None, int]]  # (host, duplicates), most first
    scheme: str

    @property
    def near_duplicates(self) -> int:
        return self.duplicates - self.exact_duplicates


def stats(index: SimhashIndex | RedisIndex, *, top: int = 10) -> Stats:
    """Pages stored, duplicates logged by distance, and the `top` hosts with the most duplicates."""
    if isinstance(index, RedisIndex):
        return _redis_stats(index, top)
    t = schema.duplicates.c
    with _reading(index) as conn:
        documents = conn.execute(select(func.count()).select_from(schema.documents)).scalar_one()
        groups = conn.execute(select(t.distance, t.exact, func.count()).group_by(t.distance, t.exact)).all()
        with _stream(conn, select(t.key)) as keys:
            hosts = Counter(host_of(key) for key in keys.scalars())
    by_distance: Counter[int] = Counter()
    exact = 0
    for distance, is_exact, count in groups:
        by_distance[distance] += count
        exact += count if is_exact else 0
    histogram = {d: by_distance[d] for d in range(max(by_distance, default=-1) + 1)}
    ranked = sorted(hosts.items(), key=lambda item: (-item[1], item[0] is None, item[0] or ""))
    return Stats(documents, sum(by_distance.values()), exact, histogram, ranked[:top], index.scheme)


def _redis_stats(index: RedisIndex, top: int) -> Stats:
    by_distance: Counter[int] = Counter()
    hosts: Counter[str | None] = Counter()
    exact = 0
    for _, duplicate in index.logged():
        by_distance[duplicate.distance] += 1
        exact += duplicate.exact
        hosts[host_of(duplicate.key)] += 1
    histogram = {d: by_distance[d] for d in range(max(by_distance, default=-1) + 1)}
    ranked = sorted(hosts.items(), key=lambda item: (-item[1], item[0] is None, item[0] or ""))
    return Stats(len(index), sum(by_distance.values()), exact, histogram, ranked[:top], index.scheme)


def _stream(conn: Connection, statement: Select) -> Result:
    """Rows fetched in batches (a server-side cursor on PostgreSQL); close it with `with`."""
    return conn.execution_options(yield_per=STREAM_ROWS).execute(statement)


# -- the duplicates log -----------------------------------------------------------


def duplicates(
    index: SimhashIndex | RedisIndex,
    *,
    host: str | None = None,
    since: datetime | None = None,
    max_distance: int | None = None,
    limit: int | None = None,
) -> Iterator[Duplicate]:
    """Pages dropped as duplicates, in the order they were first logged, streamed.

    host: only pages on this host or its subdomains. since: only pages dropped
    at or after this moment (naive means UTC).
    """
    if isinstance(index, RedisIndex):
        yield from _redis_duplicates(index, host, since, max_distance, limit)
        return
    t = schema.duplicates.c
    statement = select(t.key, t.duplicate_of, t.distance, t.exact, t.seen_at).order_by(t.id)
    if since is not None:
        statement = statement.where(t.seen_at >= as_utc(since))
    if max_distance is not None:
        statement = statement.where(t.distance <= max_distance)
    if host is not None:
        host = normalize_host(host)
        if host.isascii():  # narrows the rows read; on_host below decides
            statement = statement.where(func.lower(t.key).like(f"%{_like_escape(host)}%", escape="/"))
    elif limit is not None:
        statement = statement.limit(limit)
    with _reading(index) as conn, _stream(conn, statement) as result:
        rows: Iterator = iter(result)
        if host is not None:
            rows = (row for row in rows if on_host(row.key, host))
        for row in itertools.islice(rows, limit):
            yield _duplicate(row, row.duplicate_of)


def _redis_duplicates(
    index: RedisIndex, host: str | None, since: datetime | None, max_distance: int | None, limit: int | None
) -> Iterator[Duplicate]:
    rows: Iterator[Duplicate] = (duplicate for _, duplicate in index.logged())
    if since is not None:
        since = as_utc(since)
        rows = (row for row in rows if row.seen_at >= since)
    if max_distance is not None:
        rows = (row for row in rows if row.distance <= max_distance)
    if host is not None:
        host = normalize_host(host)
        rows = (row for row in rows if on_host(row.key, host))
    yield from itertools.islice(rows, limit)


def _duplicate(row: Row, duplicate_of: str) -> Duplicate:
    return Duplicate(
        key=row.key, duplicate_of=duplicate_of, distance=row.distance, exact=bool(row.exact), seen_at=as_utc(row.seen_at)
    )


def _like_escape(value: str) -> str:
    return value.replace("/", "//").replace("%", "/%").replace("_", "/_")


# -- clusters ---------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """A stored page and the pages dropped as its duplicates, nearest first."""

    key: str
    duplicates: tuple[Duplicate, ...]


def clusters(index: SimhashIndex | RedisIndex, *, limit: int | None = None) -> Iterator[Cluster]:
    """Each stored page that has duplicates, with them; the largest clusters first, streamed."""
    if isinstance(index, RedisIndex):
        yield from _redis_clusters(index, limit)
        return
    dup = schema.duplicates
    doc = schema.documents
    size = func.count().label("size")
    sizes = (
        select(dup.c.duplicate_of_id.label("doc_id"), size)
        .group_by(dup.c.duplicate_of_id)
        .order_by(size.desc(), dup.c.duplicate_of_id)
        .limit(limit)
        .subquery()
    )
    statement = (
        select(sizes.c.doc_id, doc.c.key.label("stored"), dup.c.key, dup.c.distance, dup.c.exact, dup.c.seen_at)
        .select_from(sizes.join(doc, doc.c.id == sizes.c.doc_id).join(dup, dup.c.duplicate_of_id == sizes.c.doc_id))
        .order_by(sizes.c.size.desc(), sizes.c.doc_id, dup.c.distance, dup.c.id)
    )
    with _reading(index) as conn, _stream(conn, statement) as result:
        for _, members in itertools.groupby(result, key=lambda row: row.doc_id):
            members = list(members)
            stored = members[0].stored
            yield Cluster(
                stored,
                tuple(_duplicate(m, stored) for m in members),
            )


def _redis_clusters(index: RedisIndex, limit: int | None) -> Iterator[Cluster]:
    """Groups the whole log by stored page (as the SQL GROUP BY reads the whole table)."""
    groups: dict[int, list[tuple[int, Duplicate]]] = {}
    for order, (stored_id, duplicate) in enumerate(index.logged()):
        groups.setdefault(stored_id, []).append((order, duplicate))
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    for _, members in ranked[:limit]:
        members.sort(key=lambda member: (member[1].distance, member[0]))
        yield Cluster(members[0][1].duplicate_of, tuple(duplicate for _, duplicate in members))


# -- dry runs ---------------------------------------------------------------------

_COPIED = [c for c in schema.documents.c if c.name != "id"]


class DryRunIndex:
    """`check_and_add` that never writes to the database, with the same answers.

    Runs the index's own check on a private in-memory index. Before each check
    it copies in, read-only, every stored page the checked one could match
    (same key, same text hash, or a fingerprint half equal or one bit off), so the in-memory
    index holds all a real check would see, plus the pages kept so far.
    """

    def __init__(
        self,
        source: SimhashIndex | RedisIndex | None,
        *,
        scheme: str,
        max_distance: int = 3,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
    ) -> None:
        self._source = source
        self._memory = SimhashIndex(
            "sqlite://", scheme=scheme, max_distance=max_distance, min_similarity=min_similarity
        )
        self._present: set[int] = set()  # key hashes already in memory: never copied twice

    def check_and_add(self, key: str, signature: Signature) -> Match | None:
        if self._source is not None:
            self._copy_neighbourhood(key, signature)
        self._present.add(key_hash(key))
        return self._memory.check_and_add(key, signature)

    def _copy_neighbourhood(self, key: str, signature: Signature) -> None:
        if isinstance(self._source, RedisIndex):
            near_pages = self._source.neighbourhood(key, signature)
            now = datetime.now(timezone.utc)
            rows = [dict(zip(sql.UPSERT_COLUMNS, (*sql.document_values(page, stored), now))) for page, stored in near_pages]
        else:
            d = schema.documents.c
            near = [d.key_hash == key_hash(key)]
            if signature.text_hash is not None:
                near.append(d.text_hash == to_signed(signature.text_hash))
            if signature.near_matchable:
                keys = sql.probe_keys(signature.simhash)
                near += [literal_column(e).in_(values) for e, values in zip(sql.HALF_KEYS.values(), keys)]
            with _reading(self._source) as conn:
                rows = conn.execute(select(*_COPIED).where(or_(*near))).mappings().all()
        fresh = [dict(row) for row in rows if row["key_hash"] not in self._present]
        if fresh:
            with self._memory.transaction() as conn:
                conn.execute(insert(schema.documents), fresh)
            self._present.update(row["key_hash"] for row in fresh)

    def close(self) -> None:
        self._memory.close()

    def __enter__(self) -> DryRunIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
