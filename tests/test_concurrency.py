"""Several real processes on one database at once: check_and_add stays atomic, opening stays safe."""

from __future__ import annotations

import random
import threading
import traceback
from datetime import datetime, timedelta, timezone
from functools import partial

import pytest
import redis_keys
import xxhash
from conftest import ONE_LAYOUT, without_layout
from racing import GROUPS, PROCESSES, TIMEOUT_S, make_groups, run_workers
from sqlalchemy import create_engine

from simhash_index import Signature, SimhashIndex, hamming
from simhash_index.index.redis.codec import micros

pytestmark = pytest.mark.early

ROUNDS = 3


@pytest.fixture
def db_url(index_url: str) -> str:
    """This module's tests run on SQL in both layouts and on Redis (conftest's index_url)."""
    return index_url


def check_rounds(rounds: list[tuple[str, list[tuple[str, int, int]]]], barrier, results, batch: int = 1) -> None:
    """Worker: for each round, wait for the others, then check_and_add every item (in batches
    of `batch` with check_and_add_many when more than 1); report what each call returned."""
    for number, (url, items) in enumerate(rounds):
        try:
            index = SimhashIndex(url, create=False)
            try:
                barrier.wait(timeout=TIMEOUT_S)
                returned = {}
                for start in range(0, len(items), batch):
                    chunk = items[start : start + batch]
                    if batch == 1:
                        key, fingerprint, text_hash = chunk[0]
                        matches = [index.check_and_add(key, fingerprint, text_hash=text_hash)]
                    else:
                        matches = index.check_and_add_many((k, Signature(fp, th)) for k, fp, th in chunk)
                    for (key, _, _), match in zip(chunk, matches):
                        returned[key] = None if match is None else (match.key, match.distance, match.exact)
            finally:
                index.close()
        except BaseException:
            results.put((number, "error", traceback.format_exc()))
            barrier.abort()  # the others must not wait for this one
            return
        results.put((number, "ok", returned))


def open_fresh(urls: list[str], barrier, results) -> None:
    """Worker: for each fresh database, wait for the others, then open (create) it."""
    for number, url in enumerate(urls):
        try:
            barrier.wait(timeout=TIMEOUT_S)
            SimhashIndex(url).close()
        except BaseException:
            results.put((number, "error", traceback.format_exc()))
        else:
            results.put((number, "ok", None))


def race_work(
    groups: list[list[int]], rng: random.Random, salt: str
) -> tuple[dict[str, tuple[int, int, int]], list[list[tuple[str, int, int]]]]:
    """Every process gets every member of every group, under its own keys, in its own order; the
    same member has the same text (text hash, `salt` making it the round's) in every process.
    Returns {key: (group, fingerprint, text_hash)} and each process's (key, fingerprint, text_hash)."""
    pages: dict[str, tuple[int, int, int]] = {}
    work: list[list[tuple[str, int, int]]] = []
    for process in range(PROCESSES):
        items = []
        for g, members in enumerate(groups):
            for m, fingerprint in enumerate(members):
                key = f"https://p{process}.example/g{g}/m{m}"
                pages[key] = (g, fingerprint, xxhash.xxh64_intdigest(f"{salt}{g}/{m}".encode()))
                items.append((key, *pages[key][1:]))
        rng.shuffle(items)
        work.append(items)
    return pages, work


@pytest.mark.parametrize("fresh_db_urls", ONE_LAYOUT, indirect=True)
@pytest.mark.parametrize("batch", [1, 8])
def test_concurrent_check_and_add(fresh_db_urls, batch):
    rounds = []  # (url, pages: key -> (group, fingerprint, text_hash), work per process)
    for number in range(ROUNDS):
        rng = random.Random(number)
        pages, work = race_work(make_groups(rng), rng, salt=f"{number}/")
        url = fresh_db_urls()
        SimhashIndex(url).close()  # create the tables before the race
        rounds.append((url, pages, work))

    per_worker = [[(url, work[process]) for url, _, work in rounds] for process in range(PROCESSES)]
    reports = run_workers(partial(check_rounds, batch=batch), per_worker, PROCESSES * ROUNDS)

    for number, (url, pages, _) in enumerate(rounds):
        returned = {key: value for n, _, detail in reports if n == number for key, value in detail.items()}
        assert_one_stored_per_group(url, pages, returned, f"round {number}")
        with SimhashIndex(url, create=False) as index:
            assert len(index) == GROUPS


def assert_one_stored_per_group(url: str, pages: dict[str, tuple[int, int, int]], returned: dict, where: str) -> None:
    """Exactly one page of each group is stored, every other one is logged once as its duplicate,
    and each writer was told what the index recorded."""
    assert returned.keys() == pages.keys()
    with SimhashIndex(url, create=False) as index:
        stored = {key for key in pages if index.get(key) is not None}
        duplicates = [d for d in index.duplicates() if d.key in pages]
    groups = {group for group, _, _ in pages.values()}

    original: dict[int, str] = {}
    for key in stored:
        group = pages[key][0]
        assert group not in original, f"{where}: group {group} stored twice: {original[group]}, {key}"
        original[group] = key
    assert len(original) == len(groups)

    # nothing lost, nothing twice: every other page is logged once, as a duplicate of its group's original
    logged = [d.key for d in duplicates]
    assert len(logged) == len(set(logged))
    assert stored.isdisjoint(logged)
    assert stored | set(logged) == pages.keys()
    for duplicate in duplicates:
        group, fingerprint, text_hash = pages[duplicate.key]
        target = original[group]
        _, target_fingerprint, target_text_hash = pages[target]
        assert duplicate.duplicate_of == target
        assert duplicate.distance == hamming(fingerprint, target_fingerprint) <= 2
        assert duplicate.exact == (text_hash == target_text_hash)
        # and the process that checked it was told the same
        assert returned[duplicate.key] == (target, duplicate.distance, duplicate.exact)
    assert {key for key, value in returned.items() if value is None} == stored


CHURN = 60  # pages another process forgets, prunes, updates, supersedes and deletes by hand meanwhile
CHURN_OPS = 150


def churn(url: str, fingerprints: list[int], barrier, results) -> None:
    """Worker: beside the writers, change the churn pages in every way a process can (on SQL,
    deleting rows by hand too; on Redis, a bulk load replacing them)."""
    rng = random.Random(5)
    keys = [f"https://churn.example/{n}" for n in range(CHURN)]
    engine = None if url.startswith("redis") else create_engine(without_layout(url))
    try:
        with SimhashIndex(url, create=False, prefer="longest") as index:
            barrier.wait(timeout=TIMEOUT_S)
            for op in range(CHURN_OPS):
                key = rng.choice(keys)
                if op % 5 == 0:
                    index.forget([key])
                elif op % 5 == 1:  # stored again, or its text changed: its row follows
                    index.check_and_add(key, Signature(fingerprints.pop(), rng.getrandbits(64), words=10))
                elif op % 5 == 2:  # a longer copy supersedes it
                    page = index.get(key)
                    if page is not None:
                        longer = Signature(page.fingerprint ^ 1, rng.getrandbits(64), words=100 + op)
                        index.check_and_add(f"{key}/longer/{op}", longer)
                elif op % 5 == 3:
                    index.prune(before=datetime.now(timezone.utc) - timedelta(days=1))
                elif engine is None:
                    index.add_many([(key, Signature(fingerprints.pop(), rng.getrandbits(64), words=10))])
                else:
                    with engine.begin() as conn:
                        conn.exec_driver_sql(f"DELETE FROM simhash_duplicates WHERE duplicate_of = '{key}'")
                        conn.exec_driver_sql(f"DELETE FROM simhash_documents WHERE key = '{key}'")
    except BaseException:
        results.put((0, "error", traceback.format_exc()))
        barrier.abort()
        return
    finally:
        if engine is not None:
            engine.dispose()
    results.put((0, "ok", {}))


def write_or_churn(job: tuple, barrier, results) -> None:
    if job[0] == "churn":
        churn(*job[1:], barrier, results)
    else:
        check_rounds(job[1], barrier, results, batch=4)


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_writers_stay_atomic_while_another_process_changes_other_pages(request, backend):
    """Four writers race on groups of near-duplicates while a fifth process forgets, prunes,
    updates in place, supersedes and deletes by hand pages far from them: each writer follows
    all of it in its in-memory lookup, and still stores exactly one page of each group."""
    url = request.getfixturevalue(f"{backend}_url")
    rng = random.Random(11)
    groups = make_groups(rng)
    far: list[int] = []
    while len(far) < 3 * CHURN:
        candidate = rng.getrandbits(64)
        if all(hamming(candidate, members[0]) >= 14 for members in groups):
            far.append(candidate)
    with SimhashIndex(url) as index:
        index.add_many((f"https://churn.example/{n}", Signature(far.pop(), n, words=10)) for n in range(CHURN))
    store_long_ago(url, backend, CHURN // 2)  # half of them: prune's to forget
    pages, work = race_work(groups, rng, salt="")
    jobs = [("write", [(url, items)]) for items in work] + [("churn", url, far)]
    reports = run_workers(write_or_churn, jobs, PROCESSES + 1)
    returned = {key: value for _, _, detail in reports for key, value in detail.items()}
    assert_one_stored_per_group(url, pages, returned, backend)
    with SimhashIndex(url, create=False) as index:  # the churn happened
        churned = {d.key for d in index.duplicates() if d.key.startswith("https://churn.example/")}
        assert churned and sum(index.get(f"https://churn.example/{n}") is not None for n in range(CHURN)) < CHURN
    if backend == "redis":
        client, prefix = redis_keys.client_of(url)
        assert redis_keys.problems(client, prefix, stream_whole=False) == []
        client.close()


def store_long_ago(url: str, backend: str, count: int) -> None:
    """The first `count` pages stored two days ago."""
    old = datetime.now(timezone.utc) - timedelta(days=2)
    if backend == "redis":
        client, prefix = redis_keys.client_of(url)
        for page_id in range(1, count + 1):
            client.hset(f"{prefix}doc:{page_id}", "stored_at", micros(old))
        client.close()
        return
    when = int(old.timestamp()) if backend == "sqlite" else f"'{old.isoformat()}'"
    engine = create_engine(without_layout(url))
    with engine.begin() as conn:
        first = f"SELECT id FROM simhash_documents ORDER BY id LIMIT {count}"
        conn.exec_driver_sql(f"UPDATE simhash_documents SET stored_at = {when} WHERE id IN ({first})")
    engine.dispose()


def test_concurrent_first_open(fresh_db_urls):
    # crawlers started together on a new database all create its tables at once
    urls = [fresh_db_urls() for _ in range(12)]
    reports = run_workers(open_fresh, [urls] * PROCESSES, PROCESSES * len(urls))
    assert sorted(number for number, _, _ in reports) == sorted(list(range(len(urls))) * PROCESSES)
    for url in urls:
        with SimhashIndex(url, create=False) as index:
            assert len(index) == 0
            assert index.check_and_add("page", 1) is None


def test_concurrent_first_open_many_times(fresh_db_urls):
    # the same race, many more times: threads start closer together than processes, and
    # SQLite locks its file between connections of one process as between processes
    first = fresh_db_urls()
    attempts = 200 if first.startswith("sqlite") and "halves" not in first else 20  # halves: its DDL only
    failures: list[str] = []

    def open_it(url: str, barrier: threading.Barrier) -> None:
        barrier.wait(timeout=TIMEOUT_S)
        try:
            SimhashIndex(url).close()
        except Exception as exc:  # collected: an exception in a thread would be lost
            failures.append(f"{type(exc).__name__}: {exc}")

    for _ in range(attempts):
        args = (fresh_db_urls(), threading.Barrier(PROCESSES))
        threads = [threading.Thread(target=open_it, args=args) for _ in range(PROCESSES)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=TIMEOUT_S)
        assert not any(thread.is_alive() for thread in threads)
    assert not failures, f"{len(failures)} of {attempts * PROCESSES} opens failed; first: {failures[0]}"
