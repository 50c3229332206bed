"""Resident memory: this process's peak, a process's RSS by kind, a process tree's RSS over time (Linux)."""

from __future__ import annotations

import contextlib
import resource
import subprocess
import threading
import time
from pathlib import Path


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def status_kb(pid: int | str = "self", fields: tuple[str, ...] = ("VmRSS",)) -> dict[str, int]:
    """Fields of /proc/PID/status in kB (VmRSS, RssAnon, RssFile, ...); empty when the process is gone."""
    found = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in fields:
                found[name] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    return found


def _rss_kb(pid: int) -> int:
    return status_kb(pid).get("VmRSS", 0)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def tree_rss_mb(pid: int) -> tuple[float, float]:
    """(the process's RSS, the RSS of it and all its descendants), in MB."""
    own = _rss_kb(pid)
    total, stack = own, _children(pid)
    while stack:
        child = stack.pop()
        total += _rss_kb(child)
        stack += _children(child)
    return own / 1024, total / 1024


class Sampler:
    """Samples a process tree's RSS every `interval` seconds in a thread: (seconds, own MB, tree MB)."""

    def __init__(self, process: subprocess.Popen, interval: float = 0.25) -> None:
        self.samples: list[tuple[float, float, float]] = []
        self._process, self._interval = process, interval
        self._began = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self._process.poll() is None:
            own, tree = tree_rss_mb(self._process.pid)
            if own:
                self.samples.append((time.perf_counter() - self._began, own, tree))
            time.sleep(self._interval)

    def join(self) -> None:
        self._thread.join()

    @property
    def peak(self) -> tuple[float, float]:
        """Peak (own, tree) RSS in MB over the samples."""
        if not self.samples:
            return 0.0, 0.0
        return max(s[1] for s in self.samples), max(s[2] for s in self.samples)
