"""One run of deduplication over inputs, as `simhash-index import` and `filter` run it: the pages of
JSON lines corpora and web archives, in input order, analysed in worker processes and decided
against an index in batches (the dedup core, dedup.py).

    with SimhashIndex("sqlite:///simhash.db") as index:
        run = deduplicate_inputs(index, ["week1.warc.gz", "week2.warc.gz"], prefer="newest")
        for outcome in run:  # Kept, Dropped, Skipped, Refused, BadInput, Truncated: as decided
            ...
        print(run.counts)  # a page kept, then superseded by one read after it: superseded

A page can be a duplicate of any page before it; a URL met again in the run is another copy of
the same page, which the policy keeps in place of the copy stored or drops (survivors.SameUrl).
A dry run is the same run on a DryRunIndex, which writes nothing.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future

from .. import defaults
from ..archives.records import Record, is_archive
from ..fingerprinting.fingerprinter import DEFAULT, Fingerprinter
from ..fingerprinting.pages import PageJob, PageSetup
from ..index.base import Index
from ..index.prefer import Prefer, check_prefer
from ..index.records import Match, check_key
from ..workers import default_size
from .inputs import Line, Progress, no_progress, read_archive, read_corpus
from .outcomes import BadInput, Counts, Dropped, Kept, Outcome, Page, Refused, Skipped, Truncated, decided
from .survivors import RunDeduplicator, page_setup, with_evidence

# Pages come back from the workers a chunk at a time: waiting this long for a full batch
# makes fewer transactions, which a database server would otherwise spend the cores on.
FILL_BATCHES_S = 0.2

Pending = Outcome | tuple[Page, "Future[Match | None]"]  # an outcome, or a page and its decision to come


def deduplicate_inputs(
    index: Index,
    inputs: Sequence[str],
    *,
    fingerprinter: Fingerprinter = DEFAULT,
    prefer: Prefer = "first",
    workers: int | None = None,
    batch_size: int = defaults.BATCH_SIZE,
    strict: bool = False,
    allow_truncated: bool = False,
    keep_records: bool = False,
    progress: Progress = no_progress,
) -> Run:
    """A run deciding the pages of `inputs` (JSON lines files, '-' for stdin, and WARC or ARC
    archives, plain or gzipped) against `index`, in order; iterate it to run it.

    `fingerprinter`: the one `index`'s fingerprints were made with. `prefer`: which copy of a
    page survives, as the index's policy (open the index with the same). `workers`: processes
    extracting and fingerprinting pages (None: one per CPU; 0: in this process, no crash
    isolation). `strict`: the run ends at the first bad line. `allow_truncated`: an archive cut
    short is read up to its cut (else the run ends there). `keep_records`: `Run.records` keeps
    every record of each archive (for writing a copy of it). `progress` shows how far each
    input is read. `index` is left open."""
    check_prefer(prefer)
    return Run(
        index,
        list(inputs),
        setup=page_setup(PageSetup(fingerprinter), prefer),
        prefer=prefer,
        workers=default_size() if workers is None else workers,
        batch_size=batch_size,
        strict=strict,
        allow_truncated=allow_truncated,
        keep_records=keep_records,
        progress=progress,
    )


class Run:
    """The run deduplicate_inputs makes: iterating it reads the inputs and yields what became of
    each page, as it is decided, in input order, and of each line that is no page; stopping
    early (an error, Ctrl-C) commits or rolls back the batch being decided and decides no more.
    Then `counts` holds the totals, and `records` each input's records (keep_records)."""

    def __init__(
        self,
        index: Index,
        inputs: list[str],
        *,
        setup: PageSetup,
        prefer: Prefer,
        workers: int,
        batch_size: int,
        strict: bool,
        allow_truncated: bool,
        keep_records: bool,
        progress: Progress,
    ) -> None:
        self.index = index
        self.inputs = inputs
        self.setup = setup
        self.prefer = prefer
        self.workers = workers
        self.batch_size = batch_size
        self.strict = strict
        self.allow_truncated = allow_truncated
        self.keep_records = keep_records
        self.progress = progress
        self.counts = Counts()
        self.records: list[list[Record]] = []  # each input's, in order (keep_records)
        self._kept: set[str] = set()  # the keys this run stored and still stores
        self._started = False

    def __iter__(self) -> Iterator[Outcome]:
        if self._started:
            raise RuntimeError("a Run is run once: make another with deduplicate_inputs")
        self._started = True
        return self._run()

    def _run(self) -> Iterator[Outcome]:
        core = RunDeduplicator(
            lambda: self.index,
            self.setup,
            workers=self.workers,
            batch_size=self.batch_size,
            linger=FILL_BATCHES_S,
            prefer=self.prefer,
            close_index=False,
        )
        core.open().result()
        try:
            yield from self._decided(core)
        except BaseException:  # an error, Ctrl-C, or the consumer gone: stop the workers, decide no more
            with contextlib.suppress(Exception):  # closing a full disk's index can fail too: the first error is told
                core.close(now=True).result()
            raise
        core.close().result()

    def _lines(self) -> Iterator[tuple[int, Line]]:
        for number, file in enumerate(self.inputs):
            records: list[Record] | None = None
            if self.keep_records:
                records = []
                self.records.append(records)
            if is_archive(file):
                lines = read_archive(
                    file,
                    self.counts.not_pages,
                    records,
                    max_bytes=self.setup.extract.max_bytes,
                    allow_truncated=self.allow_truncated,
                    progress=self.progress,
                )
            else:
                lines = read_corpus(file, progress=self.progress)
            for line in lines:
                yield number, line

    def _decided(self, core: RunDeduplicator) -> Iterator[Outcome]:
        lines = ((numbered, numbered[1].job or PageJob("", is_html=False)) for numbered in self._lines())
        pending: deque[Pending] = deque()
        for (number, line), analysed in core.analyse_many(lines):
            if line.error is not None:
                if line.cut:
                    pending.append(Truncated(line.where, line.error))
                elif self.strict or line.fatal:
                    yield from self._settled(pending, 0)
                    yield BadInput(line.where, line.error, fatal=True)
                    return
                else:
                    pending.append(BadInput(line.where, line.error))
                continue
            page = Page(line.where, line.url, number, line.record, line.unusable_date)
            try:
                check_key(line.url)
            except ValueError as exc:
                pending.append(Refused(page, str(exc)))
                continue
            failure = line.warning or analysed.failure
            if analysed.signature is None or line.warning is not None:
                pending.append(Skipped(page, failure))
            else:
                signature = with_evidence(analysed.signature, line)
                pending.append((page, core.decide(line.url, signature, analysed.text)))
            yield from self._settled(pending, 4 * core.batch_size)
        yield from self._settled(pending, 0)

    def _settled(self, pending: deque[Pending], keep: int) -> Iterator[Outcome]:
        """The outcomes at the head of `pending` that are decided, in order; waits for decisions
        until at most `keep` pages are pending (the writer's next batches)."""
        while pending and (len(pending) > keep or not isinstance(pending[0], tuple) or pending[0][1].done()):
            head = pending.popleft()
            outcome = decided(head[0], head[1].result()) if isinstance(head, tuple) else head
            self._count(outcome)
            yield outcome

    def _count(self, outcome: Outcome) -> None:
        counts = self.counts
        if isinstance(outcome, Kept):
            gone = outcome.supersedes
            if gone is not None:
                counts.supersedings += 1
                if gone in self._kept:  # a page of this run, kept until now
                    self._kept.discard(gone)
                    counts.kept -= 1
                    counts.superseded += 1
            self._kept.add(outcome.page.url)
            counts.kept += 1
        elif isinstance(outcome, Dropped):
            counts.dropped += 1
        elif isinstance(outcome, Skipped):
            counts.skipped += 1
        elif isinstance(outcome, Refused):
            counts.refused += 1
        elif isinstance(outcome, BadInput):
            counts.bad += 1
        if isinstance(outcome, (Kept, Dropped, Skipped, Refused)) and outcome.page.unusable_date is not None:
            counts.unusable_dates += 1
