"""Bulk loads into an empty SQL index: every index dropped during the load and built at the end."""

from __future__ import annotations

import random

import pytest
from conftest import with_layout, without_layout
from sqlalchemy import create_engine
from sqlalchemy.exc import IntegrityError

from simhash_index import Match, SimhashIndex
from simhash_index.index.records import key_hash
from simhash_index.index.sql import table_indexes as indexes

KEY_INDEX = "ix_simhash_documents_key_hash"
LOOKUP_INDEXES = {
    "blocks": {f"ix_simhash_documents_block{i}" for i in range(4)},
    "halves": {"ix_simhash_documents_low_half", "ix_simhash_documents_high_half"},
}
ALL_INDEXES: set[str] = set()  # of the layout under test: set by sql_url


@pytest.fixture(params=["sqlite-blocks", "sqlite-halves", "postgres-blocks", "postgres-halves"])
def sql_url(request: pytest.FixtureRequest) -> str:
    backend, layout = request.param.split("-")
    ALL_INDEXES.clear()
    ALL_INDEXES.update({KEY_INDEX, "ix_simhash_documents_text_hash"} | LOOKUP_INDEXES[layout])
    return with_layout(request.getfixturevalue(f"{backend}_url"), layout)


def index_names(index: SimhashIndex) -> set[str]:
    with index.transaction(write=False) as conn:
        return indexes.index_names(conn)


def repeated_keys(count: int, seed: int) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """Items whose keys come up to three times, and each key's last fingerprint."""
    rng = random.Random(seed)
    items = [(f"https://example.com/{rng.randrange(count // 2)}", rng.getrandbits(64)) for _ in range(count)]
    return items, dict(items)


def test_a_load_into_an_empty_index_builds_every_index_at_the_end(sql_url):
    items, last = repeated_keys(3_000, seed=1)
    seen_during_load = []
    with SimhashIndex(sql_url) as index:
        with index.insertion_session(
            batch_size=500, on_batch=lambda _: seen_during_load.append(index_names(index))
        ) as s:
            for key, fingerprint in items:
                s.add(key, fingerprint)
        assert seen_during_load and all(not (names & ALL_INDEXES) for names in seen_during_load)
        assert index_names(index) >= ALL_INDEXES
        assert len(index) == len(last)  # a key loaded twice keeps its last fingerprint, in a batch or across
        for key, fingerprint in random.Random(2).sample(sorted(last.items()), 50):
            assert index.get(key).fingerprint == fingerprint
            assert key in {m.key for m in index.query(fingerprint)}
        key, fingerprint = next(iter(last.items()))
        assert index.check_and_add(key, fingerprint ^ 0xFFFF) is None  # the key's own row, replaced
        assert index.get(key).fingerprint == fingerprint ^ 0xFFFF and len(index) == len(last)
        with pytest.raises(IntegrityError), index._engine.begin() as conn:
            now = "0" if conn.dialect.name == "sqlite" else "now()"
            conn.exec_driver_sql(
                "INSERT INTO simhash_documents (key, key_hash, exact_only, stored_at) "
                f"VALUES ('x', {key_hash(key)}, 0, {now})"
            )


def test_a_load_into_a_stored_index_keeps_its_indexes(sql_url):
    with SimhashIndex(sql_url) as index:
        index.add("https://example.com/a", 5)
        seen_during_load = []
        with index.insertion_session(batch_size=2, on_batch=lambda _: seen_during_load.append(index_names(index))) as s:
            for i in range(6):
                s.add(f"https://example.com/{i % 3}", i)
        assert all(names >= ALL_INDEXES for names in seen_during_load)
        assert len(index) == 4 and index.get("https://example.com/2").fingerprint == 5


def test_a_killed_load_is_finished_by_the_next_writer(sql_url):
    """A load stopped before its end leaves the table without indexes and with repeated keys."""
    items, last = repeated_keys(2_000, seed=3)
    with SimhashIndex(sql_url) as index:
        session = index.insertion_session(batch_size=300).__enter__()
        for key, fingerprint in items:
            session.add(key, fingerprint)
        session.flush()  # and no __exit__: as if the process died here
        assert not index_names(index) & ALL_INDEXES
    with SimhashIndex(sql_url, create=False) as reader:  # a reader leaves it alone: it may not write
        assert not index_names(reader) & ALL_INDEXES
        assert len(reader) == len(items)
    with SimhashIndex(sql_url) as index:
        assert index_names(index) >= ALL_INDEXES
        assert len(index) == len(last)
        for key, fingerprint in list(last.items())[:50]:
            assert index.get(key).fingerprint == fingerprint
        planted = next(iter(last.values()))
        assert index.check_and_add("https://example.com/new", planted ^ 1) == Match(next(iter(last)), planted, 1)


def test_tables_with_the_old_unique_constraint_get_no_second_key_index(sql_url):
    """Tables written before the key-hash index kept key_hash UNIQUE as a constraint: loads upsert there."""
    with SimhashIndex(sql_url) as index:
        pass
    engine = create_engine(without_layout(sql_url))
    with engine.begin() as conn:
        conn.exec_driver_sql(f"DROP INDEX {KEY_INDEX}")
        if conn.dialect.name == "sqlite":  # SQLite cannot add a constraint: the table as it was created then
            created = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'simhash_documents'").scalar()
            conn.exec_driver_sql("DROP TABLE simhash_documents")  # its other indexes go too; opening builds them
            conn.exec_driver_sql(created.replace("PRIMARY KEY (id)", "PRIMARY KEY (id), UNIQUE (key_hash)"))
        else:
            conn.exec_driver_sql(
                "ALTER TABLE simhash_documents ADD CONSTRAINT simhash_documents_key_hash_key UNIQUE (key_hash)"
            )
    engine.dispose()
    items, last = repeated_keys(1_000, seed=4)
    with SimhashIndex(sql_url) as index:
        index.add_many(items, batch_size=300)
        assert len(index) == len(last)
        assert KEY_INDEX not in index_names(index)
        key, fingerprint = next(iter(last.items()))
        assert index.get(key).fingerprint == fingerprint
