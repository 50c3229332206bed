"""What a worker computes for one page: its main text and its Signature.

`analyse` takes the page's HTML (or text already extracted) and never raises for a bad page: a
page trafilatura cannot read comes back with `failure` set. `analyse_all` is what the dedup core
(simhash_index.dedup) runs in its worker processes, for the pipeline and the command line: a
chunk of pages per round trip, a page given as text coming back without it (the caller has it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..text.dates import page_date
from ..text.extract import ExtractionError, ExtractOptions, extract_text
from .fingerprinter import Fingerprinter, Signature


@dataclass(frozen=True)
class PageSetup:
    """How every page is analysed: the fingerprint settings and trafilatura's options;
    `dates`: read each page's own date (Signature.dated), for the "newest" survivor policy."""

    fingerprinter: Fingerprinter
    extract: ExtractOptions = ExtractOptions()
    dates: bool = False


@dataclass(frozen=True)
class PageJob:
    """One page: its HTML (str or bytes), or its text when already extracted."""

    content: str | bytes
    is_html: bool = True


@dataclass(frozen=True)
class Analysed:
    """A page analysed: its main text and Signature (None when it has no text or no
    features), or why extraction failed."""

    text: str | None
    signature: Signature | None
    failure: str | None = None


def analyse(setup: PageSetup, job: PageJob) -> Analysed:
    """The main text and Signature of one page."""
    if job.is_html:
        try:
            text = extract_text(job.content, setup.extract)
        except ExtractionError as exc:
            return Analysed(None, None, str(exc))
    else:
        text = given_text(job)
    if text is None:
        return Analysed(None, None)
    signature = setup.fingerprinter.signature(text)
    if signature is not None and setup.dates and job.is_html:
        signature = replace(signature, dated=page_date(job.content))
    return Analysed(text, signature)


def given_text(job: PageJob) -> str:
    """The text of a page given as text (not HTML)."""
    return job.content if isinstance(job.content, str) else job.content.decode("utf-8", "replace")


def analyse_all(setup: PageSetup, jobs: Sequence[PageJob]) -> list[Analysed]:
    """`analyse` of each job, in order; a page given as text comes back with `text` None, as
    sending it back would only copy what the caller holds (`with_given_text` restores it)."""
    pages = [analyse(setup, job) for job in jobs]
    return [page if job.is_html else replace(page, text=None) for job, page in zip(jobs, pages)]


def with_given_text(job: PageJob, page: Analysed) -> Analysed:
    """A page from `analyse_all` with the text of a job given as text put back."""
    return page if job.is_html else replace(page, text=given_text(job))
