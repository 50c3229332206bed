"""Reading stored pages from the server: by id, and the ids stored under keys and text hashes.

Plain reads, pipelined, outside any script call: a writer's decision on what it read holds only
if the change stream did not move in a way that touches it, which the write call checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..records import StoredPage
from .codec import BLOBS, hex_or_empty, stored_page
from .server import Server

PAGES_AT_ONCE = 500  # pages read a round trip


def pages_by_id(server: Server, ids: Iterable[int]) -> dict[int, StoredPage]:
    """The stored pages with these ids (an id whose page went is left out)."""
    wanted = sorted(set(ids))
    found: dict[int, StoredPage] = {}
    for start in range(0, len(wanted), PAGES_AT_ONCE):
        chunk = wanted[start : start + PAGES_AT_ONCE]
        pipe: Any = server.client.pipeline(transaction=False)
        for page_id in chunk:
            pipe.hgetall(server.key(f"doc:{page_id}"))
            for field in BLOBS:
                pipe.get(server.key(f"{field.name}:{page_id}"))
        with server.talking():
            replies = pipe.execute()
        width = 1 + len(BLOBS)
        for n, page_id in enumerate(chunk):
            doc, *blobs = replies[n * width : (n + 1) * width]
            if doc:
                found[page_id] = stored_page(page_id, doc, blobs)
    return found


def ids_of(server: Server, keys: Sequence[str], text_hashes: Sequence[int]) -> tuple[list[int | None], list[list[int]]]:
    """The id stored under each key (or None), and the ids of the pages with each text hash, oldest first."""
    pipe: Any = server.client.pipeline(transaction=False)
    if keys:
        pipe.hmget(server.key("ids"), [key.encode("utf-8") for key in keys])
    for text_hash in text_hashes:
        pipe.zrange(server.key(f"text:{hex_or_empty(text_hash)}"), 0, -1)
    with server.talking():
        replies = pipe.execute() if keys or text_hashes else []
    own = [None if found is None else int(found) for found in replies[0]] if keys else []
    texts = [[int(member) for member in members] for members in replies[1 if keys else 0 :]]
    return own, texts
