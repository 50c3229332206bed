"""Forgetting on Redis: pages by key, pages stored before a time, the log's stale entries, everything.

Each in script calls that stop after CALL_US of the server's clock (a page goes with the
duplicates logged against it in one call, 500 of them a call at most), the client sending the
rest; the pages that go are in the change stream, which writers follow.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..base import Forgotten
from .codec import glob_escape, micros, text_of
from .server import CALL_US, STREAM_ROWS, Server


def forget(server: Server, keys: Sequence[str]) -> Forgotten:
    """The pages stored under these keys, with the duplicates logged against them, and these keys
    logged as duplicates."""
    replies = server.in_calls("forget", [[key.encode("utf-8")] for key in keys], CALL_US)
    total = _added(replies)
    return total + sweep(server, None) if total.pages else total  # logged before `against:` sets


def prune(server: Server, before: datetime) -> Forgotten:
    """HSCAN the stored keys; the script removes those stored before `before` with the duplicates
    logged against them; then a sweep of the log."""
    total, cutoff = Forgotten(), micros(before)
    batch: list[list[bytes]] = []
    with server.talking():
        for key, _ in server.client.hscan_iter(server.key("ids"), count=STREAM_ROWS):
            batch.append([key])
            if len(batch) >= STREAM_ROWS:
                total += _added(server.in_calls("prune", batch, cutoff, CALL_US))
                batch = []
    return total + _added(server.in_calls("prune", batch, cutoff, CALL_US)) + sweep(server, cutoff)


def stored_before(server: Server, before: datetime) -> int:
    """How many pages are stored before `before`."""
    cutoff, count = micros(before), 0
    with server.talking():
        ids = [page_id for _, page_id in server.client.hscan_iter(server.key("ids"), count=STREAM_ROWS)]
        for start in range(0, len(ids), STREAM_ROWS):
            pipe = server.client.pipeline(transaction=False)
            for page_id in ids[start : start + STREAM_ROWS]:
                pipe.hget(server.key(f"doc:{text_of(page_id)}"), "stored_at")
            count += sum(1 for stored in pipe.execute() if stored is not None and int(stored) < cutoff)
    return count


def sweep(server: Server, before: int | None) -> Forgotten:
    """Take out of the log the entries logged before `before` (microseconds) and those against a
    page no longer stored (logged before the `against:` sets were kept)."""
    removed, after = 0, "-inf"
    while True:
        with server.talking():
            ids = server.client.zrangebyscore(server.key("dup_log"), after, "+inf", start=0, num=STREAM_ROWS)
        if not ids:
            return Forgotten(0, removed)
        replies = server.in_calls("sweep", [[log_id] for log_id in ids], "" if before is None else before, CALL_US)
        removed += sum(int(reply[1]) for reply in replies)
        after = f"({text_of(ids[-1])}"


def reset(server: Server, data_keys: re.Pattern[bytes]) -> Forgotten:
    """Delete the index's data keys (those whose names match `data_keys`), a thousand a command;
    the epoch changes before and after, so that every writer reads the stored fingerprints again."""
    with server.talking():
        pages = int(server.client.hlen(server.key("ids")))
        duplicates = int(server.client.zcard(server.key("dup_log")))
    server.run("epoch")
    unlink(server, glob_escape(server.prefix) + "*", data_keys)
    server.run("epoch")
    return Forgotten(pages, duplicates)


def unlink(server: Server, pattern: str, names: re.Pattern[bytes]) -> None:
    """Unlink the keys matching the SCAN pattern whose names (after the prefix) match `names`
    (an index whose prefix extends this one's, `site:` and `site:news:`, keeps its keys)."""
    prefix = server.prefix.encode("utf-8")
    doomed: list[bytes] = []
    with server.talking():
        for key in server.client.scan_iter(match=pattern, count=STREAM_ROWS):
            if names.fullmatch(key[len(prefix) :]):
                doomed.append(key)
            if len(doomed) >= STREAM_ROWS:
                server.client.unlink(*doomed)
                doomed = []
        if doomed:
            server.client.unlink(*doomed)


def _added(replies: list[Any]) -> Forgotten:
    """The pages and duplicates forgotten, of `forget` or `prune` replies ({done, pages, duplicates})."""
    return sum((Forgotten(int(pages), int(duplicates)) for _, pages, duplicates in replies), Forgotten())
