"""Jobs for the worker pool tests: importable, so worker processes can run them."""

from __future__ import annotations

import os
import signal
import time


def echo(setup: object, job: object) -> object:
    return (setup, job)


def misbehave(setup: object, job: str) -> object:
    """What a page can do to the process analysing it."""
    if job == "abort":  # what a crash in native code looks like from outside
        os.abort()
    if job == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if job == "exit":
        os._exit(3)
    if job == "hang":
        time.sleep(60)
    if job == "raise":
        raise ValueError("a bad job")
    return (os.getpid(), job)


def words_or_crash(text: str) -> list[str]:
    """A tokenizer that crashes its process on a marker word, as a native fault would."""
    if "crashnow" in text:
        os.abort()
    return text.split()


class Unloadable:
    """A setup that pickles but fails to load in a worker."""

    def __reduce__(self) -> tuple:
        return (_refuse, ("boom",))


def _refuse(message: str) -> None:
    raise RuntimeError(message)
