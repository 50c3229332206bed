"""A pool of worker processes, so that a crash in native code costs one job, not the caller.

Extraction (trafilatura, lxml) and fingerprinting run native code; a segmentation fault
there would end the process it runs in. Here each job runs in a worker process: a job
whose worker dies raises `WorkerCrashed`, one that outlives the timeout raises
`WorkerTimeout` (its worker is killed), and the worker is replaced either way.

A worker is a fresh interpreter (`python -m simhash_index.workers`) talking over two
pipes of its own, never a fork of the caller: forking a threaded crawl could copy a held
lock, and multiprocessing's spawn would re-run the caller's main module (a crawl script).
Its stdout and stderr are the caller's; the Python stack a crash dumps (faulthandler) goes to
a file of its own instead, kept and named in `WorkerCrashed` when there is one.

A worker runs in a session of its own, so a Ctrl-C at the terminal reaches the caller alone,
which stops its workers (`close(kill=True)`); a worker whose caller is gone (killed) exits
quietly, at once when idle and within a second when busy, printing nothing.

`WorkerPool.run(job)` blocks until the job's result is back and is safe to call from
several threads at once: each call takes an idle worker, so at most `size` jobs run and
callers beyond that wait their turn (no queue of jobs builds up inside the pool).
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

_STOP = None  # sent to a worker to end it
_CLOSED = None  # put in the idle queue on close: wakes the callers waiting for a worker
ORPHAN_CHECK_S = 0.5  # how often a busy worker looks whether its caller is still there


class WorkerCrashed(RuntimeError):
    """The worker process running a job died (a crash in native code, or killed)."""


class WorkerTimeout(RuntimeError):
    """A job ran longer than the pool's timeout; its worker was killed."""


class WorkerStartError(RuntimeError):
    """A worker process could not load the function or its setup (a configuration error)."""


def default_size() -> int:
    """One worker per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class _Worker:
    """One worker process and the two pipes to it."""

    def __init__(self, function: Callable[[Any, Any], Any], setup: Any, dumps: str) -> None:
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        descriptor, self.dump = tempfile.mkstemp(prefix="crash-", suffix=".txt", dir=dumps)
        os.close(descriptor)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(to_child), str(from_child), self.dump],
                pass_fds=(to_child, from_child),
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # the terminal's Ctrl-C is for the caller, which stops us
            )
        finally:
            os.close(to_child)
            os.close(from_child)
        self.send = Connection(from_parent, readable=False)
        self.receive = Connection(to_parent, writable=False)
        self.ready = False
        self.send.send(sys.path)  # first, so that unpickling the setup finds the caller's modules
        self.send.send((function.__module__, function.__qualname__, setup))

    def wait_ready(self) -> bool:
        """Wait until the worker has loaded its function: True, or False when it died first.
        WorkerStartError when it could not load the function or its setup."""
        if self.ready:
            return True
        try:
            loaded, problem = self.receive.recv()
        except (EOFError, OSError):  # killed from outside while starting, say
            return False
        if not loaded:
            raise WorkerStartError(f"worker processes cannot start: {problem}")
        self.ready = True
        return True

    def stop(self, *, kill: bool = False) -> int | None:
        """End the process (at once when `kill`, else after its job); its exit code."""
        if not kill and self.process.poll() is None:  # a dead worker's pipe would raise SIGPIPE
            try:
                self.send.send(_STOP)
            except OSError:
                kill = True
        if kill and self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=None if kill else 5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.send.close()
        self.receive.close()
        return self.process.returncode

    def dumped(self) -> str | None:
        """The file holding the Python stack the worker dumped as it crashed, if it did; else
        its empty file is deleted."""
        try:
            if os.path.getsize(self.dump) > 0:
                return self.dump
            os.remove(self.dump)
        except OSError:
            pass
        return None


class WorkerPool:
    """`size` worker processes, each running `function(setup, job)` for one job at a time.

    `function` must be a module-level function importable by its module's name, and
    `setup`, the jobs and the results picklable.
    """

    def __init__(
        self,
        function: Callable[[Any, Any], Any],
        setup: Any = None,
        *,
        size: int | None = None,
        timeout: float | None = None,
    ) -> None:
        size = default_size() if size is None else size
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be a positive number of worker processes; got {size!r}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive seconds, or None; got {timeout!r}")
        pickle.dumps(setup)  # fail here, in the caller, not in every worker
        self.size = size
        self.timeout = timeout
        self._function = function
        self._setup = setup
        self._dumps = tempfile.mkdtemp(prefix="simhash-workers-")  # the crash dumps' folder
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        self._all: set[_Worker] = set()
        self._guard = threading.Lock()
        self._closed = False
        self._killed = False  # closed with kill: a worker released after is killed too
        starting = [self._start() for _ in range(size)]  # side by side; a setup that cannot load fails here
        try:
            for worker in starting:
                self._idle.put(self._ready(worker))
        except WorkerStartError:
            self._closed = True
            with self._guard:
                everyone = list(self._all)
            for worker in everyone:
                self._retire(worker, kill=True)
            self._remove_dumps()
            raise

    def _start(self) -> _Worker:
        worker = _Worker(self._function, self._setup, self._dumps)
        with self._guard:
            self._all.add(worker)
        return worker

    def _ready(self, worker: _Worker) -> _Worker:
        """The worker once it has loaded, or a new one if it died starting (three tries)."""
        for _ in range(3):
            if worker.wait_ready():
                return worker
            self._retire(worker, kill=True)
            worker = self._start()
        if worker.wait_ready():
            return worker
        self._retire(worker, kill=True)
        raise WorkerStartError("worker processes cannot start: each one exited while starting")

    def _retire(self, worker: _Worker, *, kill: bool) -> int | None:
        """Stop a worker and forget it; its exit code (negative: the signal that ended it)."""
        with self._guard:
            self._all.discard(worker)
        exit_code = worker.stop(kill=kill)
        worker.dumped()  # an empty dump file goes
        return exit_code

    def _release(self, worker: _Worker) -> None:
        if self._closed:  # after close(kill=True) its worker may be dead: telling it to stop would raise SIGPIPE
            self._retire(worker, kill=self._killed)
            self._remove_dumps()
        else:
            self._idle.put(worker)

    def _replace(self, worker: _Worker) -> int | None:
        exit_code = self._retire(worker, kill=True)
        if self._closed:
            self._remove_dumps()  # the last of the workers close(kill=True) killed
        else:
            self._idle.put(self._start())
        return exit_code

    def run(self, job: Any, *, weight: int = 1) -> Any:
        """The job's result, computed in a worker; re-raises what the function raised.

        Raises WorkerCrashed when the worker died on this job, WorkerTimeout when it ran
        longer than the timeout (`weight` times it: a job of several units of work); the
        worker is replaced in both cases.
        """
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        timeout = None if self.timeout is None else self.timeout * weight
        waited = self._idle.get()
        if waited is _CLOSED:
            self._idle.put(_CLOSED)  # for the next caller waiting
            raise RuntimeError("the worker pool is closed")
        try:
            worker = self._ready(waited)
        except WorkerStartError:
            if not self._closed:
                self._idle.put(self._start())
            raise
        try:
            outcome, value = self._ask(worker, job, timeout)
        except BaseException:
            self._replace(worker)  # interrupted mid-job: its answer would reach the next caller
            raise
        if outcome == "timeout":
            self._replace(worker)
            raise WorkerTimeout(f"the job ran over {timeout:g} s; its worker was stopped")
        if outcome == "died":
            exit_code = self._replace(worker)
            dump = worker.dumped()
            where = f"; its Python stack is in {dump}" if dump else ""
            raise WorkerCrashed(f"the worker process died (exit code {exit_code}) on this job{where}")
        self._release(worker)
        if outcome == "done":
            return value
        raise value

    def _ask(self, worker: _Worker, job: Any, timeout: float | None) -> tuple[str, Any]:
        """("done", result), ("raised", exception), ("died", None) or ("timeout", None)."""
        try:
            worker.send.send(job)
            if not worker.receive.poll(timeout):
                return "timeout", None
            succeeded, value = worker.receive.recv()
        except (EOFError, OSError):  # it died before, while or instead of answering
            return "died", None
        return ("done" if succeeded else "raised"), value

    def pids(self) -> list[int]:
        """The worker processes' ids (for monitoring)."""
        with self._guard:
            return [worker.process.pid for worker in self._all]

    def close(self, *, kill: bool = False) -> None:
        """Stop the workers: idle ones now, busy ones when their job ends, or at once with
        `kill` (an interrupt: their jobs raise WorkerCrashed). Callers waiting for a worker,
        and those after, get RuntimeError."""
        self._killed = self._killed or kill
        self._closed = True
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                break
            if worker is not _CLOSED:
                self._retire(worker, kill=kill)
        self._idle.put(_CLOSED)
        if kill:
            with self._guard:
                busy = list(self._all)
            for worker in busy:
                with contextlib.suppress(OSError):
                    worker.process.kill()  # its caller sees it die and retires it
        self._remove_dumps()

    def _remove_dumps(self) -> None:
        """Remove the crash dumps' folder once empty: a crash's dump stays, for its log line."""
        with contextlib.suppress(OSError):
            os.rmdir(self._dumps)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _serve(receive: Connection, send: Connection, dump: str) -> None:
    """A worker's loop: load the function and setup, then answer each job until told to stop,
    or until the caller is gone (its pipes closed). A crash writes the worker's Python stack
    to `dump`, not to the caller's stderr."""
    crashes = open(dump, "w", encoding="utf-8")  # noqa: SIM115 - open as long as the worker lives
    faulthandler.enable(crashes)
    threading.Thread(target=_exit_with, args=(os.getppid(), dump), name="orphan-check", daemon=True).start()
    try:
        _answer(receive, send)
    except (EOFError, OSError):  # the caller went away: nothing to say, no one to say it to
        _orphaned(dump)


def _exit_with(parent: int, dump: str) -> None:
    """End this worker as soon as its caller is gone, even in the middle of a job."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK_S)
    _orphaned(dump)


def _orphaned(dump: str) -> None:
    """Exit quietly, removing what the caller would have removed: the empty dump, its folder if empty."""
    with contextlib.suppress(OSError):
        if os.path.getsize(dump) == 0:
            os.remove(dump)
        os.rmdir(os.path.dirname(dump))
    os._exit(0)


def _answer(receive: Connection, send: Connection) -> None:
    sys.path[:] = receive.recv()
    try:
        module, name, setup = receive.recv()
        function: Any = importlib.import_module(module)
        for part in name.split("."):
            function = getattr(function, part)
    except Exception as exc:
        send.send((False, f"{type(exc).__name__}: {exc}"))
        return
    send.send((True, None))
    while True:
        job = receive.recv()
        if job is _STOP:
            return
        try:
            answer = (True, function(setup, job))
        except Exception as exc:  # the caller decides what a failed job means
            answer = (False, exc)
        send.send(answer)


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False), sys.argv[3])
