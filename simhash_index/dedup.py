"""The dedup core under the Scrapy pipeline and `simhash-index import`: pages analysed in
worker processes, decided against the index in batches.

`Deduplicator` answers with futures and never blocks its caller: `open()`, `analyse(job)`,
`decide(key, signature, text)` and `close()` each return a `concurrent.futures.Future`, so an
event loop (Scrapy's reactor) awaits them and a plain loop (the import) waits on them.

- Analysis (extraction and fingerprinting) runs in worker processes (`workers`; 0 runs it in
  a thread here, without crash isolation); a crash there raises `WorkerCrashed` for that page.
- One writer thread decides what queued while its last batch ran (up to `batch_size` pages,
  waiting up to `linger` seconds for them) in one transaction (`BatchWriter`); a page's future
  resolves after its batch committed. With `keep_texts` the batch's texts are stored right
  after its decision.
- Outage: once the index cannot be reached, decisions fail at once (IndexUnavailableError)
  instead of each waiting on a server that is down, while a probe pings the index every
  PROBE_EVERY_S seconds; deciding resumes as soon as it answers. An index gone from a server
  that answers (Redis restarted empty) is opened anew, empty, in its place.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .errors import IndexNotFoundError, IndexUnavailableError, SimhashIndexError, one_line
from .fingerprinting.fingerprinter import Signature
from .fingerprinting.pages import Analysed, PageJob, PageSetup, analyse, analyse_all, with_given_text
from .index.base import Index
from .index.records import Match
from .index.writer import BatchWriter
from .workers import WorkerCrashed, WorkerPool, WorkerTimeout

T = TypeVar("T")
M = TypeVar("M")
PROBE_EVERY_S = 1.0
CHUNK = 16  # pages a worker analyses per round trip in analyse_many
AHEAD = 4  # chunks in flight per worker: a slow chunk at the head leaves the others work to do
NOISY_LOGGERS = ("trafilatura", "htmldate", "courlan", "justext")
logger = logging.getLogger(__name__)

Undecided = tuple[str, Signature, str | None]  # a page to decide: (key, signature, text to keep)


class Deduplicator:
    """Pages analysed in `workers` processes and decided in batches against the index that
    `open_index()` opens (called again to start anew when the index vanished), and closes when
    it closes unless `close_index` is False (the caller's index); with `open_index` None, pages
    are only analysed (a dry run decides them elsewhere)."""

    def __init__(
        self,
        open_index: Callable[[], Index] | None,
        setup: PageSetup,
        *,
        workers: int = 0,
        worker_timeout: float | None = 120.0,
        batch_size: int = 64,
        linger: float = 0.0,
        on_index_lost: Callable[[], None] | None = None,
        close_index: bool = True,
    ) -> None:
        if not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be 0 (analyse here) or a number of worker processes; got {workers!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
        self.setup = setup
        self.workers = workers
        self.worker_timeout = worker_timeout
        self.batch_size = batch_size
        self.linger = linger
        self.index: Index | None = None
        self.pool: WorkerPool | None = None
        self.writer: BatchWriter[Undecided, Match | None] | None = None
        self.stored_at_start = 0
        self._open_index = open_index
        self._on_index_lost = on_index_lost
        self._close_index = close_index
        # a page's analysis waits on a worker here; two more threads for open, close and `call`
        self._threads = ThreadPoolExecutor(max(1, workers) + 2, thread_name_prefix="simhash")
        self._outage: str | None = None  # why the index is taken to be down, until a probe reaches it
        self._opened = False
        self._stopping = False  # close(now=True) began: analyse no more pages

    @property
    def ready(self) -> bool:
        """Whether open() finished and close() has not begun: pages can be decided."""
        return self.writer is not None or (self._open_index is None and self._opened)

    # -- lifecycle ----------------------------------------------------------------

    def open(self) -> Future[None]:
        """Open the index, then start the worker processes and the writer. On failure (the
        index's SimhashIndexError, WorkerStartError) nothing stays open."""
        return self._threads.submit(self._open)

    def _open(self) -> None:
        for noisy in NOISY_LOGGERS:
            logging.getLogger(noisy).setLevel(max(logging.INFO, logging.getLogger(noisy).getEffectiveLevel()))
        if self._open_index is not None:
            self.index = self._open_index()
        try:
            self.stored_at_start = 0 if self.index is None else len(self.index)
            if self.workers:
                self.pool = WorkerPool(analyse_all, self.setup, size=self.workers, timeout=self.worker_timeout)
        except BaseException:
            self._close()
            raise
        if self.index is not None:
            self.writer = BatchWriter(self._decide, batch_size=self.batch_size, linger=self.linger)
        self._opened = True

    def close(self, *, now: bool = False) -> Future[int | None]:
        """Decide what is queued, then stop the writer and the workers and close the index.
        With `now` (an interrupt, an error that ends the run) the pages queued are not
        decided (their futures are cancelled) and busy workers are killed: it returns as soon
        as the batch being decided is committed or rolled back. The future's result: the pages
        the index held at the end (None when it could not say, or was never opened)."""
        self._stopping = self._stopping or now
        closed: Future[int | None] = Future()

        def run() -> None:
            try:
                closed.set_result(self._close(now=now))
            except BaseException as exc:
                closed.set_exception(exc)
            finally:
                self._threads.shutdown(wait=False, cancel_futures=True)

        threading.Thread(target=run, name="simhash-close", daemon=True).start()
        return closed

    def _close(self, *, now: bool = False) -> int | None:
        self._opened = False
        if self.writer is not None:
            self.writer.close(cancel=now)
            self.writer = None
        if self.pool is not None:
            self.pool.close(kill=now)
            self.pool = None
        stored = None
        index, self.index = self.index, None  # stops the probe
        if index is not None and self._close_index:
            with contextlib.suppress(SimhashIndexError):  # the count is for a summary; closing goes on
                stored = len(index)
            index.close()
        return stored

    def call(self, function: Callable[..., T], *args: Any) -> Future[T]:
        """Run another blocking call (an index lookup, say) on the core's threads."""
        return self._threads.submit(function, *args)

    # -- pages ------------------------------------------------------------------------

    def analyse(self, job: PageJob) -> Future[Analysed]:
        """The page's text and Signature, computed in a worker process. The future raises
        WorkerCrashed or WorkerTimeout when its worker died or ran over the timeout; a page
        trafilatura cannot read comes back with `failure` set."""
        return self._threads.submit(self._analyse, job)

    def _analyse(self, job: PageJob) -> Analysed:
        return self._analyse_chunk([job])[0]

    def _analyse_chunk(self, jobs: list[PageJob]) -> list[Analysed]:
        pool = self.pool
        if pool is None:
            if self.workers or self._stopping:  # closed (or closing now): the pages queued are not analysed
                raise RuntimeError("the deduplicator is closed: its pages are not analysed")
            return [self._analyse_here(job) for job in jobs]
        pages: list[Analysed] = pool.run(jobs, weight=len(jobs))
        return [with_given_text(job, page) for job, page in zip(jobs, pages)]

    def _analyse_here(self, job: PageJob) -> Analysed:
        if self._stopping:
            raise RuntimeError("the deduplicator is closed: its pages are not analysed")
        return analyse(self.setup, job)

    def _analyse_apart(self, jobs: list[PageJob]) -> list[Analysed]:
        """A chunk analysed in one round trip; when its worker crashed or ran over the timeout,
        each page again on its own, so that only the page that did it fails."""
        try:
            return self._analyse_chunk(jobs)
        except (WorkerCrashed, WorkerTimeout) as exc:
            if len(jobs) == 1:
                return [Analysed(None, None, str(exc))]
        return [self._analyse_apart([job])[0] for job in jobs]

    def analyse_many(self, pages: Iterable[tuple[M, PageJob]]) -> Iterator[tuple[M, Analysed]]:
        """(meta, Analysed) for each (meta, job), in the order given, analysed side by side in
        chunks of CHUNK pages; a page whose worker crashed or ran over the timeout comes back
        with `failure` set. At most AHEAD chunks a worker are in flight: the input
        is read as it goes."""
        pending: deque[tuple[list[M], Future[list[Analysed]]]] = deque()
        for chunk in _chunks(pages, CHUNK):
            metas = [meta for meta, _ in chunk]
            pending.append((metas, self._threads.submit(self._analyse_apart, [job for _, job in chunk])))
            if len(pending) >= AHEAD * max(1, self.workers):
                yield from _in_order(*pending.popleft())
        while pending:
            yield from _in_order(*pending.popleft())

    def decide(self, key: str, signature: Signature, text: str | None = None) -> Future[Match | None]:
        """Check the page against the index and store it unless it duplicates a stored page:
        the future's result is that page's Match, or None (kept). With the index's keep_texts,
        `text` is stored with the batch. The future raises SimhashIndexError when the batch
        could not be decided (IndexUnavailableError during an outage)."""
        if self.writer is None:
            raise RuntimeError("the deduplicator is not open: call open() first")
        return self.writer.submit((key, signature, text))

    def _decide(self, batch: Sequence[Undecided]) -> list[Match | None]:
        """The writer thread's call: the batch checked and stored in one transaction, then its
        texts kept."""
        index = self.index
        if index is None:
            raise SimhashIndexError("the index is closed")
        outage = self._outage
        if outage is not None:
            raise IndexUnavailableError(f"{outage} (waiting for it to answer again)")
        pages = [(key, signature) for key, signature, _ in batch]
        try:
            try:
                answers = index.check_and_add_many(pages)
            except IndexNotFoundError as exc:
                index = self._start_anew(index, exc)
                answers = index.check_and_add_many(pages)
        except IndexUnavailableError as exc:
            self._outage = str(exc)
            threading.Thread(target=self._probe, args=(index,), name="simhash-probe", daemon=True).start()
            raise
        texts = [(key, text) for key, _, text in batch if text is not None]
        if texts and index.keep_texts:
            try:
                index.store_texts(texts)
            except SimhashIndexError as exc:  # the decisions stand; only these texts are not kept
                logger.warning("simhash: pages' texts were not kept: %s", _short(exc))
        return answers

    def _start_anew(self, vanished: Index, exc: IndexNotFoundError) -> Index:
        """The index is gone from a server that answers (Redis restarted without persistence,
        or flushed): a new, empty one is opened in its place, so that the pages after are
        deduplicated; the pages decided before are forgotten. Without an opener (an index
        given as it is), `exc` stands."""
        if self._open_index is None:
            raise exc
        logger.warning(
            "simhash: %s; starting a new, empty index there: the pages decided before it was lost are forgotten",
            _short(exc, 1000),
        )
        if self._on_index_lost is not None:
            self._on_index_lost()
        index = self._open_index()
        self.index = index
        vanished.close()
        return index

    def _probe(self, index: Index) -> None:
        """Ping the index until it answers (or the core closes), then let batches through again."""
        while self.index is index:
            time.sleep(PROBE_EVERY_S)
            try:
                index.ping()
            except SimhashIndexError:
                continue
            logger.info("simhash: the index answers again; deduplicating")
            self._outage = None
            return


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _in_order(metas: list[M], future: Future[list[Analysed]]) -> Iterator[tuple[M, Analysed]]:
    yield from zip(metas, future.result())


def _short(error: object, limit: int = 400) -> str:
    """An error for a log line: on one line, at most `limit` characters."""
    text = one_line(error)
    return text if len(text) <= limit else text[: limit - 3] + "..."
