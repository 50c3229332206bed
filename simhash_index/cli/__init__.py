"""The `simhash-index` command line: a thin click layer over the library."""

from __future__ import annotations


def main() -> None:
    """Entry point of the `simhash-index` console script."""
    from .commands import cli

    cli(prog_name="simhash-index")
