"""Where the benchmarks put an index (a temporary SQLite file, a throwaway PostgreSQL schema or Redis key
prefix) and what it takes on disk or in memory."""

from __future__ import annotations

import random
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from simhash_index import open_index
from simhash_index.index.redis.backend import split_url
from simhash_index.index.sql.backend import SqlIndex

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
SETTLE_SHARE = 40  # settle() writes a fortieth as many pages as a loaded index holds


def settle(url: str, stored: int) -> None:
    """Write and forget stored / SETTLE_SHARE random pages after a load, so that the first writer
    measured meets the table as later ones do. A load into an empty index builds its B-tree indexes
    with full pages: until random inserts have split most of them, each insert splits one, and a
    batch writes several times the pages it writes after (six times at 10M pages)."""
    rng = random.Random(stored)
    keys = [f"https://settle.example/{i}" for i in range(stored // SETTLE_SHARE)]
    with open_index(url, lookup="sql") as index:
        index.add_many(((key, rng.getrandbits(64)) for key in keys), batch_size=2000)
        index.forget(keys)


@contextmanager
def postgres_schema(base_url: str) -> Iterator[str]:
    """A URL whose search_path is a fresh schema, dropped afterwards."""
    base = make_url(base_url).set(drivername="postgresql+psycopg")
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            yield base.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()


def vacuum(url: str) -> None:
    """VACUUM ANALYZE after a PostgreSQL load, as autovacuum would: index-only scans need the visibility map."""
    engine = create_engine(make_url(url).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("VACUUM (ANALYZE) simhash_documents")
    finally:
        engine.dispose()


def sqlite_bytes(path: Path) -> int:
    """The SQLite database file with its WAL folded in."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def postgres_bytes(index: SqlIndex) -> int:
    """The index's PostgreSQL tables with their indexes."""
    with index.transaction(write=False) as conn:
        size = conn.exec_driver_sql(
            "SELECT pg_total_relation_size('simhash_documents') + pg_total_relation_size('simhash_duplicates')"
        ).scalar_one()
    return int(size)


@contextmanager
def redis_prefix(base_url: str) -> Iterator[str]:
    """A Redis URL with a key prefix of its own, whose keys are deleted afterwards."""
    import redis

    prefix = f"bench-{uuid.uuid4().hex[:12]}:"
    try:
        yield f"{base_url}{'&' if '?' in base_url else '?'}prefix={prefix}"
    finally:
        with redis.Redis.from_url(split_url(base_url)[0]) as client:
            doomed = list(client.scan_iter(match=f"{prefix}*", count=10_000))
            for start in range(0, len(doomed), 10_000):
                client.unlink(*doomed[start : start + 10_000])


def redis_memory(url: str) -> int:
    """The Redis server's used_memory, in bytes."""
    import redis

    with redis.Redis.from_url(split_url(url)[0]) as client:
        return int(client.info("memory")["used_memory"])
