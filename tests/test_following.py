"""A writer's in-memory lookup follows every change another writer makes to the table (on Redis:
to the stored pages, through the change stream; tests/test_redis_following.py has the rest).

Writer `a` decides against its in-memory index (lookup.py); every other change comes through
another connection: a second index object (a second process would be the same to the
database), plain SQL, a bulk load. After each change, `a` must decide as if it had read the
table itself: a page near a committed one is its duplicate; a page near one that left is new.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from conftest import without_layout
from sqlalchemy import create_engine
from writer_pairs import BASE, FAR, duplicate_of, near_copy, two_writers

from simhash_index import Signature, SimhashIndex
from simhash_index.index.base import Index
from simhash_index.index.records import now
from simhash_index.index.sql import changes, writing
from simhash_index.index.sql.engine import lock_writers
from simhash_index.index.sql.statements import document_row, execute_many, upsert_documents


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def any_url(request: pytest.FixtureRequest) -> str:
    """The tests that hold for Redis's writers too, which follow a change stream of their own."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def writers(url: str) -> Iterator[tuple[Index, Index]]:
    with two_writers(url) as found:
        yield found


@pytest.fixture
def any_writers(any_url: str) -> Iterator[tuple[Index, Index]]:
    with two_writers(any_url) as found:
        yield found


def sql(url: str, *statements: str) -> None:
    engine = create_engine(without_layout(url))
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
    engine.dispose()


def test_a_page_another_writer_stored_is_seen(any_writers):
    a, b = any_writers
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://b.example/page"
    assert a.lookup.builds == 1  # followed through the change feed, not built again


def test_a_fingerprint_updated_in_place_is_seen_at_its_new_value_only(any_writers):
    a, b = any_writers
    b.check_and_add("https://b.example/page", FAR)
    assert duplicate_of(a, "https://a.example/far-copy", near_copy(FAR, 3)) == "https://b.example/page"
    b.check_and_add("https://b.example/page", BASE)  # its text changed: its row follows it
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://b.example/page"
    assert duplicate_of(a, "https://a.example/old-copy", near_copy(FAR, 4)) is None


def test_a_superseding_survivor_is_seen_and_the_superseded_page_is_not(any_url, any_writers):
    a, _ = any_writers
    with SimhashIndex(any_url, prefer="longest") as b:
        b.check_and_add("https://b.example/short", Signature(BASE, 1, words=10))
        match = b.check_and_add("https://b.example/long", Signature(BASE ^ 1 << 40, 2, words=50))
        assert match is not None and match.superseded == "longer"
    assert duplicate_of(a, "https://a.example/copy", BASE ^ 1 << 40 ^ 0b111) == "https://b.example/long"


@pytest.mark.parametrize("how", ["forget", "prune", "reset"])
def test_a_page_that_left_is_not_matched_and_a_new_one_in_its_place_is(any_writers, how):
    a, b = any_writers
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/first", near_copy(BASE)) == "https://b.example/page"
    if how == "forget":
        b.forget(["https://b.example/page"])
    elif how == "prune":
        b.prune(before=datetime.now(timezone.utc) + timedelta(days=1))
    else:
        b.reset()
    assert duplicate_of(a, "https://a.example/second", near_copy(BASE, 4)) is None  # stored: nothing near
    b.check_and_add("https://b.example/again", near_copy(FAR))
    assert duplicate_of(a, "https://a.example/third", FAR) == "https://b.example/again"
    assert a.lookup.builds == (2 if how == "reset" else 1)  # a reset starts a new epoch: built anew


def test_a_row_deleted_by_plain_sql_is_not_matched(url, writers):
    a, b = writers
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/first", near_copy(BASE)) == "https://b.example/page"
    sql(url, "DELETE FROM simhash_duplicates", "DELETE FROM simhash_documents WHERE key = 'https://b.example/page'")
    assert duplicate_of(a, "https://a.example/second", near_copy(BASE, 4)) is None  # stored: nothing near
    assert a.lookup.builds == 1


def test_rows_written_by_plain_sql_and_bulk_loads_are_seen(url, writers):
    a, b = writers
    b.add_many([(f"https://b.example/bulk/{n}", BASE ^ (n << 50)) for n in range(1, 50)])
    assert duplicate_of(a, "https://a.example/bulk-copy", near_copy(BASE ^ 7 << 50)) == "https://b.example/bulk/7"
    with SimhashIndex(url) as c:  # a row as the library writes it, then its fingerprint changed by hand
        c.check_and_add("https://c.example/page", FAR)
    signed = BASE - (1 << 64) if BASE >= 1 << 63 else BASE
    blocks = ", ".join(f"block{i} = {(BASE >> 16 * i) & 0xFFFF}" for i in range(4))
    sql(url, f"UPDATE simhash_documents SET fingerprint = {signed}, {blocks} WHERE key = 'https://c.example/page'")
    assert duplicate_of(a, "https://a.example/sql-copy", BASE ^ 0b1011 << 30) in {
        "https://c.example/page",
        "https://b.example/bulk/0",
    }
    assert duplicate_of(a, "https://a.example/far-copy", near_copy(FAR, 2)) is None


def test_a_writer_behind_the_trimmed_log_builds_its_index_again(writers, monkeypatch):
    a, b = writers
    monkeypatch.setattr(changes, "KEEP", 20)
    monkeypatch.setattr(changes, "TRIM_EVERY", 5)
    for n in range(60):  # each trim keeps the last 20 entries: a falls behind the floor
        b.check_and_add(f"https://b.example/{n}", (n * 0x9E37_79B9_7F4A_7C15) % 2**64)
    b.check_and_add("https://b.example/page", BASE)
    assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://b.example/page"
    assert a.lookup.builds == 2


def test_an_index_without_the_change_feed_gets_it_when_written(url):
    """An index an earlier version wrote has no change feed: a writer adds it, and follows from there."""
    with SimhashIndex(url) as first:
        first.check_and_add("https://a.example/page", BASE)
        postgres = url.startswith("postgresql")
    feed = "('changes_epoch', 'changes_floor', 'changes_feed')"
    drops = ["DROP TABLE simhash_changes", f"DELETE FROM simhash_meta WHERE name IN {feed}"]
    drops += (
        ["DROP TRIGGER simhash_documents_changes ON simhash_documents"]
        if postgres
        else [f"DROP TRIGGER simhash_documents_{name}" for name in ("added", "changed", "removed")]
    )
    sql(url, *drops)
    with SimhashIndex(url, create=False) as a, SimhashIndex(url, create=False) as b:
        assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://a.example/page"
        b.check_and_add("https://b.example/page", FAR)
        assert duplicate_of(a, "https://a.example/far-copy", near_copy(FAR)) == "https://b.example/page"


def test_a_truncated_table_starts_a_new_epoch(postgres_url):
    with SimhashIndex(postgres_url) as a:
        a.check_and_add("https://a.example/page", BASE)
        sql(postgres_url, "TRUNCATE simhash_documents CASCADE")
        assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) is None
        assert a.lookup.builds == 2


def test_a_writer_waits_for_the_writer_lock_then_sees_what_its_holder_committed(url):
    """Another writer holds the writer lock and stores a page (here by hand, as plain SQL would):
    a check of a near copy that starts meanwhile waits, then finds it."""
    with SimhashIndex(url) as a, SimhashIndex(url) as b:
        a.check_and_add("https://a.example/seed", FAR)
        answers: list[str | None] = []
        with b.transaction() as conn:
            lock_writers(conn)
            when = b.dialect.db_time(now())
            row = document_row(b.layout, "https://b.example/page", Signature(BASE, 5), when, dialect=b.dialect)
            execute_many(conn, upsert_documents(b.layout, b.dialect.mark), [row])

            def check() -> None:
                answers.append(duplicate_of(a, "https://a.example/copy", near_copy(BASE)))

            checking = threading.Thread(target=check)
            checking.start()
            checking.join(timeout=0.5)
            assert checking.is_alive()  # waiting for the lock
        checking.join(timeout=60)
    assert answers == ["https://b.example/page"]


def test_the_change_log_stays_short_whoever_writes(url, monkeypatch):
    """Writers trim the log now and then, whatever their lookup, and bulk loads too."""
    monkeypatch.setattr(changes, "KEEP", 20)
    monkeypatch.setattr(changes, "TRIM_EVERY", 10)
    with SimhashIndex(url, lookup="sql") as index:
        index.add_many(
            ((f"https://bulk.example/{n}", n * 0x9E37_79B9_7F4A_7C15 % 2**64) for n in range(200)), batch_size=10
        )
        for start in range(0, 100, 10):
            index.check_and_add_many(
                (f"https://check.example/{n}", n * 0xC2B2_AE3D_27D4_EB4F % 2**64) for n in range(start, start + 10)
            )
        with index.transaction(write=False) as conn:
            logged = conn.exec_driver_sql("SELECT count(*) FROM simhash_changes").scalar_one()
    assert 0 < logged <= 20 + 10


def test_threads_sharing_one_writer_decide_one_batch_at_a_time(any_url):
    """Several threads on one index object, each with a copy of every group's page: its in-memory
    lookup follows one batch at a time, and one page of each group is stored."""
    bases = [g * 0x9E37_79B9_7F4A_7C15 % 2**64 for g in range(1, 41)]  # some 32 bits apart
    copies = [
        [(f"https://t{t}.example/{g}", Signature(fp ^ 1 << t, g)) for g, fp in enumerate(bases)] for t in range(4)
    ]
    with SimhashIndex(any_url) as index:
        threads = [threading.Thread(target=index.check_and_add_many, args=(pages,)) for pages in copies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        stored = [key for pages in copies for key, _ in pages if index.get(key) is not None]
    assert len(stored) == 40 and len({key.rsplit("/", 1)[1] for key in stored}) == 40


def test_postgres_a_batch_decided_before_the_lock_that_another_writer_touched_is_decided_again(
    postgres_url, monkeypatch
):
    """A PostgreSQL writer decides and writes its batch before it takes the writer lock; a writer
    that held the lock meanwhile stored a near copy of its page: the batch is rolled back and
    decided again, and its page is that copy's duplicate."""
    monkeypatch.setattr(writing, "WAIT_FOR_LOCK_MS", 60_000)
    with SimhashIndex(postgres_url) as a, SimhashIndex(postgres_url) as b:
        a.check_and_add("https://a.example/seed", FAR)
        optimistic = a.writer.optimistic
        answers: list[str | None] = []
        with b.transaction() as conn:
            lock_writers(conn)
            checking = threading.Thread(
                target=lambda: answers.append(duplicate_of(a, "https://a.example/page", near_copy(BASE)))
            )
            checking.start()
            checking.join(timeout=1)  # decided and written, now waiting for the lock
            assert checking.is_alive()
            when = b.dialect.db_time(now())
            row = document_row(b.layout, "https://b.example/page", Signature(BASE, 5), when, dialect=b.dialect)
            execute_many(conn, upsert_documents(b.layout, "%s"), [row])
        checking.join(timeout=60)
        assert answers == ["https://b.example/page"]
        assert a.writer.optimistic == optimistic  # not committed as first decided
        assert duplicate_of(a, "https://a.example/later", FAR ^ 0b111 << 9) == "https://a.example/seed"
        assert a.writer.optimistic == optimistic + 1


def test_postgres_a_writer_holding_the_lock_never_waits_long_for_a_row_of_an_undecided_batch(postgres_url):
    """The lock holder needs a row that a batch decided before the lock wrote (the same key): the
    batch gives up waiting for the lock, rolls back, and waits its turn; both finish."""
    with SimhashIndex(postgres_url) as a, SimhashIndex(postgres_url) as b:
        a.check_and_add("https://a.example/seed", FAR)
        answers: list[str | None] = []
        with b.transaction() as conn:
            lock_writers(conn)
            checking = threading.Thread(
                target=lambda: answers.append(duplicate_of(a, "https://shared.example/page", BASE))
            )
            checking.start()
            checking.join(timeout=0.1)
            when = b.dialect.db_time(now())
            row = document_row(
                b.layout, "https://shared.example/page", Signature(FAR ^ 1 << 60, 5), when, dialect=b.dialect
            )
            execute_many(conn, upsert_documents(b.layout, "%s"), [row])  # waits for the batch's row, if it wrote it
        checking.join(timeout=60)
        assert answers == [None]  # its own key, stored before: the row follows its text
        assert a.get("https://shared.example/page").fingerprint == BASE


@pytest.mark.parametrize("damage", ["trigger functions left out", "entries of another server"])
def test_postgres_a_feed_restored_incomplete_or_elsewhere_is_made_anew(postgres_url, damage):
    """A dump of the tables alone restores the triggers without the functions they call (so no
    trigger); one restored into another server holds entries of transactions that server has not
    had yet: either way a writer installs the feed anew, and follows the table from there."""
    with SimhashIndex(postgres_url) as first:
        first.check_and_add("https://a.example/page", BASE)
    if damage == "trigger functions left out":
        sql(postgres_url, "DROP FUNCTION simhash_log_change() CASCADE")
    else:
        future = "(pg_current_xact_id()::text::bigint + 1000000)::text::xid8"
        sql(
            postgres_url,
            f"INSERT INTO simhash_changes (xid, fingerprint, key_hash, added) VALUES ({future}, 1, 1, true)",
        )
    with SimhashIndex(postgres_url, create=False) as a, SimhashIndex(postgres_url, create=False) as b:
        assert duplicate_of(a, "https://a.example/copy", near_copy(BASE)) == "https://a.example/page"
        b.check_and_add("https://b.example/page", FAR)
        assert duplicate_of(a, "https://a.example/far-copy", near_copy(FAR)) == "https://b.example/page"
        with a.transaction(write=False) as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM simhash_changes WHERE fingerprint = 1").scalar_one() == 0


def test_a_writer_open_across_a_restore_from_an_older_backup_sees_the_writers_after_it(tmp_path):
    """SQLite's backup API (the shell's `.restore`) writes an older copy into the file writer `a`
    holds open: the same epoch, a shorter change log. Other writers then log past where `a`
    stood: `a` must build its index again, not skip what they wrote between the two."""
    import sqlite3

    live, backup = tmp_path / "live.db", tmp_path / "backup.db"
    url = f"sqlite:///{live}"
    with SimhashIndex(url) as a, SimhashIndex(url) as b:
        a.add_many([(f"https://old.example/{i}", FAR ^ (i << 40)) for i in range(50)])
        with sqlite3.connect(live) as source, sqlite3.connect(backup) as copy:
            source.backup(copy)  # the backup: 50 pages, a log of 50 entries
        a.add_many([(f"https://later.example/{i}", FAR ^ (i << 30)) for i in range(120)])
        assert a.check_and_add("https://a.example/now", BASE ^ 0xFFFF_0000) is None  # a stands past the backup
        with sqlite3.connect(backup) as copy, sqlite3.connect(live) as target:
            copy.backup(target)  # restored under the open writers
        news = [(f"https://b.example/{i}", BASE ^ (i << 8)) for i in range(8)]
        b.add_many(news)  # b logs past where a stood: 170 entries after the 50 restored
        b.add_many([(f"https://filler.example/{i}", FAR ^ (i << 20) ^ 1) for i in range(200)])
        copies = [(key.replace("b.example", "copy.example"), fingerprint ^ 1) for key, fingerprint in news]
        assert [m and m.key for m in a.check_and_add_many(copies)] == [key for key, _ in news]
