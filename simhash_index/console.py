"""The `simhash-index` console script: Ctrl-C while the command line is still loading stops it
as quietly as Ctrl-C while a command runs (one line, exit status 130), not with the traceback of
whichever import it interrupted. Loading the commands and their libraries takes about a second;
this module imports nothing heavy itself."""

from __future__ import annotations

import signal
import sys
from types import FrameType


def _interrupted_while_loading(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("Interrupted (SIGINT): stopped\n")
    raise SystemExit(128 + signal.SIGINT)


def main() -> None:
    """Entry point of the `simhash-index` console script."""
    # Python's own handler, unless the caller ignores Ctrl-C (a job started with `&` or nohup)
    handling = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if handling:
        signal.signal(signal.SIGINT, _interrupted_while_loading)
    from .cli import main as run

    if handling:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a running command handles Ctrl-C itself
    run()
