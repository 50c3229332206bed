"""The worker pool: a crash in a job costs that job, never the caller, and the worker is replaced."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import worker_jobs

from simhash_index.workers import WorkerCrashed, WorkerPool, WorkerTimeout


@pytest.fixture
def pool():
    with WorkerPool(worker_jobs.misbehave, size=2, timeout=5) as p:
        yield p


@pytest.mark.parametrize("job", ["abort", "segfault", "exit"])
def test_a_crashing_job_raises_and_its_worker_is_replaced(pool: WorkerPool, job: str) -> None:
    before = set(pool.pids())
    with pytest.raises(WorkerCrashed, match="died"):
        pool.run(job)
    after = set(pool.pids())
    assert len(after) == 2 and len(after - before) == 1  # one new worker, the other untouched
    assert os.getpid() not in after
    assert [pool.run(f"page {i}")[1] for i in range(6)] == [f"page {i}" for i in range(6)]


def test_a_job_over_the_timeout_is_stopped(pool: WorkerPool) -> None:
    started = time.monotonic()
    with pytest.raises(WorkerTimeout, match="5 s"):
        pool.run("hang")
    assert time.monotonic() - started < 30
    assert pool.run("after")[1] == "after" and len(pool.pids()) == 2


def test_a_job_of_several_units_gets_as_many_timeouts() -> None:
    with (
        WorkerPool(worker_jobs.misbehave, size=1, timeout=0.4) as pool,
        pytest.raises(WorkerTimeout, match=r"ran over 1\.2 s"),
    ):
        pool.run("hang", weight=3)


def test_exceptions_of_the_job_come_back_as_they_are(pool: WorkerPool) -> None:
    pids = set(pool.pids())
    with pytest.raises(ValueError, match="a bad job"):
        pool.run("raise")
    assert set(pool.pids()) == pids  # an exception is an answer, not a crash


def test_setup_reaches_every_worker() -> None:
    with WorkerPool(worker_jobs.echo, {"min_length": 5}, size=2) as p:
        assert p.run("x") == ({"min_length": 5}, "x")


def test_many_threads_crashes_among_them(pool: WorkerPool) -> None:
    jobs = [f"page {i}" if i % 15 else "abort" for i in range(120)]
    with ThreadPoolExecutor(8) as threads:
        outcomes = list(threads.map(lambda job: _outcome(pool, job), jobs))
    for job, outcome in zip(jobs, outcomes):
        assert outcome == ("crashed" if job == "abort" else job)
    assert len(pool.pids()) == 2 and len(set(pool.pids())) == 2


def _outcome(pool: WorkerPool, job: str) -> str:
    try:
        return pool.run(job)[1]
    except WorkerCrashed:
        return "crashed"


def test_a_worker_killed_from_outside_between_jobs_costs_at_most_the_next_job(pool: WorkerPool) -> None:
    victim = pool.pids()[0]
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.2)
    results = []
    for i in range(4):
        try:
            results.append(pool.run(f"page {i}")[1])
        except WorkerCrashed:
            results.append("crashed")
    assert results.count("crashed") <= 1 and victim not in pool.pids()


def test_close_stops_every_worker() -> None:
    p = WorkerPool(worker_jobs.misbehave, size=2)
    pids = p.pids()
    p.close()
    for pid in pids:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
    with pytest.raises(RuntimeError, match="closed"):
        p.run("x")


def test_close_with_kill_ends_busy_jobs_and_wakes_the_callers_waiting() -> None:
    """What an interrupted or failed import needs (issue 40, items 11-12): of two callers of a
    one-worker pool, the one whose job runs gets WorkerCrashed, the one waiting for a worker
    RuntimeError; neither waits on."""
    p = WorkerPool(worker_jobs.misbehave, size=1, timeout=None)
    outcomes: list[BaseException] = []

    def run() -> None:
        try:
            p.run("hang")  # a minute's sleep
        except BaseException as exc:
            outcomes.append(exc)

    callers = [threading.Thread(target=run, daemon=True) for _ in range(2)]
    for caller in callers:
        caller.start()
    time.sleep(0.5)  # for both to call run(): one runs its job, the other waits for a worker
    p.close(kill=True)
    for caller in callers:
        caller.join(timeout=30)
        assert not caller.is_alive()
    assert sorted(type(exc).__name__ for exc in outcomes) == ["RuntimeError", "WorkerCrashed"]
    assert p.pids() == []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="size"):
        WorkerPool(worker_jobs.echo, size=0)
    with pytest.raises(ValueError, match="timeout"):
        WorkerPool(worker_jobs.echo, size=1, timeout=0)


def test_run_is_thread_safe_under_contention(pool: WorkerPool) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        pid, job = pool.run(f"job {i}")
        assert job == f"job {i}"
        with lock:
            seen.append(pid)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 40 and set(seen) <= set(pool.pids())


def test_analyse_many_keeps_the_order_and_survives_a_crash() -> None:
    from simhash_index.dedup import Deduplicator
    from simhash_index.fingerprinting.fingerprinter import Fingerprinter
    from simhash_index.fingerprinting.pages import PageJob, PageSetup, analyse

    setup = PageSetup(Fingerprinter(tokenizer=worker_jobs.words_or_crash, min_length=10))
    texts = [f"page number {i} " * 20 if i != 3 else "crashnow " * 20 for i in range(10)]
    core = Deduplicator(None, setup, workers=2)
    core.open().result()
    try:
        results = list(core.analyse_many((i, PageJob(t, is_html=False)) for i, t in enumerate(texts)))
    finally:
        core.close().result()
    assert [i for i, _ in results] == list(range(10))
    assert results[3][1].signature is None and "died" in results[3][1].failure
    for i, page in results:
        if i != 3:
            assert page == analyse(setup, PageJob(texts[i], is_html=False))


def test_a_setup_workers_cannot_load_fails_at_once() -> None:
    from simhash_index.workers import WorkerStartError

    with pytest.raises(WorkerStartError, match=r"cannot start: .*boom"):
        WorkerPool(worker_jobs.echo, worker_jobs.Unloadable(), size=2)


def test_a_crash_dumps_its_stack_to_a_file_named_in_the_error(capfd: pytest.CaptureFixture[str]) -> None:
    """Not to the caller's stderr (a crawl's output): to a file the WorkerCrashed message names."""
    with WorkerPool(worker_jobs.misbehave, size=1, timeout=5) as pool:
        with pytest.raises(WorkerCrashed) as crashed:
            pool.run("segfault")
        assert pool.run("page")[1] == "page"
    assert "Fatal Python error" not in capfd.readouterr().err
    dump = str(crashed.value).rpartition("its Python stack is in ")[2]
    with open(dump, encoding="utf-8") as file:
        assert "Segmentation fault" in file.read()
    os.remove(dump)
    os.rmdir(os.path.dirname(dump))
