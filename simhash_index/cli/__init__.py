"""The `simhash-index` command line: a thin click layer over the library.

group.py holds the group, the options commands share and the one way a command opens the
index; each other module a few commands of one concern, or what they read or write.
"""

from __future__ import annotations

import signal

from . import comparing, explaining, filtering, html_report, importing, inspecting, lifecycle
from .group import cli, stop_on_sigterm

__all__ = ["cli", "main"]

for _command in (
    inspecting.stats,
    inspecting.duplicates,
    inspecting.clusters,
    explaining.explain,
    comparing.query,
    comparing.fingerprint,
    comparing.compare,
    importing.import_,
    filtering.filter_,
    html_report.report,
    lifecycle.forget,
    lifecycle.prune,
    lifecycle.reset,
):
    cli.add_command(_command)


def main() -> None:
    """Entry point of the `simhash-index` console script."""
    # A reader that goes away (`| head`) ends the command quietly, as it ends `cat`: Python
    # would raise BrokenPipeError mid-listing instead, with the index's open reads behind it.
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    stop_on_sigterm()
    cli(prog_name="simhash-index")
