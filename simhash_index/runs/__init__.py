"""Runs of deduplication over inputs (JSON lines corpora, web archives), as `simhash-index import`
and `filter` run them: `deduplicate_inputs` makes a `Run`, whose outcomes say what became of each
page as it was decided (outcomes.py), and `Fates` what became of it at the end of the run."""

from .fates import Copy, Fates
from .outcomes import BadInput, Counts, Dropped, Kept, Outcome, Page, PageOutcome, Refused, Skipped, Truncated
from .run import Run, deduplicate_inputs

__all__ = [
    "BadInput",
    "Copy",
    "Counts",
    "Dropped",
    "Fates",
    "Kept",
    "Outcome",
    "Page",
    "PageOutcome",
    "Refused",
    "Run",
    "Skipped",
    "Truncated",
    "deduplicate_inputs",
]
