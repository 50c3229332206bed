"""The `simhash-index` command line: a thin click layer over the library."""

from __future__ import annotations

import signal


def main() -> None:
    """Entry point of the `simhash-index` console script."""
    from .commands import cli

    # A reader that goes away (`| head`) ends the command quietly, as it ends `cat`: Python
    # would raise BrokenPipeError mid-listing instead, with the index's open reads behind it.
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    cli(prog_name="simhash-index")
