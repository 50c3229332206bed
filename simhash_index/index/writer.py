"""One thread that decides pages in batches: what queued while the last batch ran.

Under light load a batch is the one page that arrived (no added latency); under heavy
load pages queue while a batch is being decided, and the next call takes up to
`batch_size` of them at once. With `linger`, a batch short of `batch_size` waits up to that
many seconds for more pages: fewer, fuller transactions for a bulk import, whose pages
arrive a few at a time. Each submitted page gets a Future, resolved only after its batch's
decision returned (on the index, after its commit).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

logger = logging.getLogger(__name__)

Item = TypeVar("Item")
Answer = TypeVar("Answer")
_CLOSE = object()


class BatchWriter(Generic[Item, Answer]):
    """Calls `decide(batch) -> answers` (one answer per item, in order) on a thread of its own."""

    def __init__(
        self, decide: Callable[[Sequence[Item]], Sequence[Answer]], *, batch_size: int = 64, linger: float = 0.0
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
        if linger < 0:
            raise ValueError(f"linger must be 0 or more seconds; got {linger!r}")
        self.batch_size = batch_size
        self.linger = linger
        self.batches = 0  # decide() calls made
        self._decide = decide
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="simhash-writer", daemon=True)
        self._thread.start()

    def submit(self, item: Item) -> Future[Answer]:
        """Queue an item; its Future gets its answer, or the exception its batch raised."""
        if self._closed:
            raise RuntimeError("the writer is closed")
        future: Future[Answer] = Future()
        self._queue.put((item, future))
        return future

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is _CLOSE:
                return
            batch = [first]
            closing = False
            until = time.monotonic() + self.linger
            while len(batch) < self.batch_size:
                remaining = until - time.monotonic()
                try:
                    more = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is _CLOSE:
                    closing = True
                    break
                batch.append(more)
            self._run(batch)  # type: ignore[arg-type]
            if closing:
                return

    def _run(self, batch: list[tuple[Item, Future[Answer]]]) -> None:
        running = [(item, future) for item, future in batch if future.set_running_or_notify_cancel()]
        if not running:
            return
        self.batches += 1
        try:
            answers = self._decide([item for item, _ in running])
            if len(answers) != len(running):
                raise RuntimeError(f"decide() gave {len(answers)} answers for {len(running)} items")
        except BaseException as exc:  # every item of the batch gets it: none was decided
            for _, future in running:
                future.set_exception(exc)
            return
        for (_, future), answer in zip(running, answers):
            future.set_result(answer)

    def close(self, *, cancel: bool = False) -> None:
        """Decide what is queued (with `cancel`, cancel it instead), then stop the thread once
        the batch being decided is done."""
        if not self._closed:
            self._closed = True
            while cancel:
                try:
                    queued = self._queue.get_nowait()
                except queue.Empty:
                    break
                queued[1].cancel()  # type: ignore[index]
            self._queue.put(_CLOSE)
            self._thread.join()
