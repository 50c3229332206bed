"""What a worker computes for one page: its main text and its Signature.

`analyse` is the function `WorkerPool` runs in its worker processes for the pipeline
and the command line; it takes the page's HTML (or text already extracted) and never
raises for a bad page: a page trafilatura cannot read comes back with `failure` set.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar

from ..text.dates import page_date
from ..text.extract import ExtractionError, ExtractOptions, extract_text
from ..workers import WorkerCrashed, WorkerPool, WorkerTimeout
from .fingerprinter import Fingerprinter, Signature

M = TypeVar("M")


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
class Page:
    """A page analysed: its main text and Signature (None when it has no text or no
    features), or why extraction failed."""

    text: str | None
    signature: Signature | None
    failure: str | None = None


def analyse(setup: PageSetup, job: PageJob) -> Page:
    """The main text and Signature of one page."""
    if job.is_html:
        try:
            text = extract_text(job.content, setup.extract)
        except ExtractionError as exc:
            return Page(None, None, str(exc))
    else:
        text = job.content if isinstance(job.content, str) else job.content.decode("utf-8", "replace")
    if text is None:
        return Page(None, None)
    signature = setup.fingerprinter.signature(text)
    if signature is not None and setup.dates and job.is_html:
        signature = replace(signature, dated=page_date(job.content))
    return Page(text, signature)


def analyse_many(
    setup: PageSetup, pages: Iterable[tuple[M, PageJob]], *, workers: int | None = None, timeout: float | None = 120.0
) -> Iterator[tuple[M, Page]]:
    """(meta, Page) for each (meta, job), in the order given, analysed in worker processes
    (`workers`: how many, default one per CPU; 0 analyses them here, without crash isolation).

    A page whose worker crashed or ran over `timeout` comes back with `failure` set.
    At most twice as many pages as workers are in flight: the input is read as it goes.
    """
    if workers == 0:
        for meta, job in pages:
            yield meta, analyse(setup, job)
        return
    with WorkerPool(analyse, setup, size=workers, timeout=timeout) as pool, ThreadPoolExecutor(pool.size) as threads:
        pending: deque[tuple[M, Future[Page]]] = deque()
        for meta, job in pages:
            pending.append((meta, threads.submit(_isolated, pool, job)))
            if len(pending) >= 2 * pool.size:
                first, future = pending.popleft()
                yield first, future.result()
        while pending:
            first, future = pending.popleft()
            yield first, future.result()


def _isolated(pool: WorkerPool, job: PageJob) -> Page:
    try:
        page: Page = pool.run(job)
    except (WorkerCrashed, WorkerTimeout) as exc:
        return Page(None, None, f"{exc}")
    return page
