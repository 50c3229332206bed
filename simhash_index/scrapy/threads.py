"""Between Scrapy's reactor and blocking work: awaitables for thread-pool calls and futures, and
what a pipeline's open_spider/close_spider hand back to the Scrapy running them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from scrapy.pipelines import ItemPipelineManager
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

T = TypeVar("T")

# Scrapy awaits the coroutine of a pipeline's open_spider/close_spider from 2.14 on; before,
# it chains only a Deferred, and a coroutine returned there is never run.
AWAITS_PIPELINE_COROUTINES = hasattr(ItemPipelineManager, "open_spider_async")


def for_scrapy(coroutine: Coroutine[Any, Any, None]) -> Awaitable[None]:
    """A pipeline's open_spider/close_spider work as the running Scrapy takes it: the coroutine
    itself, or a Deferred running it before Scrapy 2.14."""
    return coroutine if AWAITS_PIPELINE_COROUTINES else deferred_from_coro(coroutine)


def installed_reactor() -> Any:
    """The installed reactor, imported late (installing one is Scrapy's decision). Typed loosely:
    Twisted's own type of `twisted.internet.reactor` differs between the releases we support."""
    from twisted.internet import reactor

    return reactor


def in_thread(threads: ThreadPool, function: Callable[..., T], *args: Any) -> Awaitable[T]:
    """Run a blocking call on `threads`; awaitable from a coroutine running on the reactor."""
    return maybe_deferred_to_future(deferToThreadPool(installed_reactor(), threads, function, *args))


def awaitable(future: Future[T]) -> Awaitable[T]:
    """A concurrent Future's result, awaitable on the reactor (callbacks fire in the reactor thread)."""
    reactor = installed_reactor()
    deferred: Deferred[T] = Deferred()

    def done(completed: Future[T]) -> None:
        error = completed.exception()
        if error is not None:
            reactor.callFromThread(deferred.errback, error)
        else:
            reactor.callFromThread(deferred.callback, completed.result())

    future.add_done_callback(done)
    return maybe_deferred_to_future(deferred)


def on_next_turn(function: Callable[..., object], *args: Any) -> None:
    """Call `function` on the reactor's next turn."""
    deferLater(installed_reactor(), 0, function, *args)
