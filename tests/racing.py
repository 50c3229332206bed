"""Real processes racing on one index: groups of near fingerprints, and workers started together."""

from __future__ import annotations

import multiprocessing
import queue
import random

from simhash_index import hamming

PROCESSES = 4
GROUPS = 30
MEMBERS = 4
TIMEOUT_S = 120  # a guard against a hang, not a measurement


def make_groups(rng: random.Random) -> list[list[int]]:
    """GROUPS groups of MEMBERS fingerprints: within a group at most 2 bits apart, between groups at least 10."""
    bases: list[int] = []
    while len(bases) < GROUPS:
        candidate = rng.getrandbits(64)
        if all(hamming(candidate, other) >= 14 for other in bases):
            bases.append(candidate)
    return [[base] + [base ^ (1 << bit) for bit in rng.sample(range(64), MEMBERS - 1)] for base in bases]


def run_workers(target, per_worker: list, expected_reports: int) -> list[tuple[int, str, object]]:
    """Start one process per argument list, together; every report they put, once all are in."""
    context = multiprocessing.get_context("forkserver")
    # Each worker is forked from a fresh interpreter that imported the target's module once (per
    # pytest process), not spawned to import it again: the same clean process, connections its
    # own, seconds sooner.
    context.set_forkserver_preload([getattr(target, "func", target).__module__])
    barrier = context.Barrier(len(per_worker))
    results = context.Queue()
    workers = [context.Process(target=target, args=(args, barrier, results)) for args in per_worker]
    for worker in workers:
        worker.start()
    reports: list = []
    try:
        for _ in range(TIMEOUT_S):
            if len(reports) == expected_reports:
                break
            try:
                reports.append(results.get(timeout=1))
            except queue.Empty:
                # a report is flushed before its worker exits: a dead worker has nothing more to say
                if any(worker.exitcode not in (None, 0) for worker in workers):
                    break
        for worker in workers:
            worker.join(timeout=TIMEOUT_S)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
                worker.join()
    errors = [detail for _, status, detail in reports if status != "ok"]
    assert not errors, "\n".join(errors)
    assert len(reports) == expected_reports, f"workers exited without reporting: {[w.exitcode for w in workers]}"
    assert [worker.exitcode for worker in workers] == [0] * len(workers)
    return reports
