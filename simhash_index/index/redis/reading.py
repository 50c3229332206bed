"""Reading stored pages from the server: those stored under keys, those with text hashes, those with ids.

Reads outside any write: a writer's decision on what it read holds only if the change stream
did not move since in a way that touches it, which the write call checks. One `read` call of
the script reads at most PAGES_AT_ONCE pages by id, so that none holds the server long.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..records import StoredPage
from .codec import hex_or_empty, stored_page
from .server import Server

PAGES_AT_ONCE = 500  # pages read by id a call
ALL = 0  # every page with a text hash


@dataclass
class Read:
    """The ids stored under the keys asked for (None: not stored), the ids of the pages with each
    text hash asked for (oldest first), and every page of those ids and of the ids asked for."""

    own: list[int | None] = field(default_factory=list)
    texts: list[list[int]] = field(default_factory=list)
    pages: dict[int, StoredPage] = field(default_factory=dict)


def read(
    server: Server, keys: Sequence[str], text_hashes: Sequence[int], ids: Iterable[int], *, oldest: int = ALL
) -> Read:
    """The pages stored under these keys, with these text hashes (the `oldest` of each; ALL: every
    one), with these ids (a page that went meanwhile is left out)."""
    wanted = sorted(set(ids))
    found = Read()
    first = True
    while first or wanted:
        asked, wanted = wanted[:PAGES_AT_ONCE], wanted[PAGES_AT_ONCE:]
        by_key, by_text = (keys, text_hashes) if first else ((), ())
        arguments = [len(by_key), *(key.encode("utf-8") for key in by_key)]
        arguments += [len(by_text), *(hex_or_empty(text_hash) for text_hash in by_text)]
        own, texts, pages = server.run("read", oldest, *arguments, len(asked), *asked)
        if first:
            found.own = [None if page_id is None else int(page_id) for page_id in own]
            found.texts = [[int(page_id) for page_id in members] for members in texts]
            first = False
        for page_id, fields, *blobs in pages:
            if fields:
                found.pages[int(page_id)] = stored_page(int(page_id), dict(zip(fields[::2], fields[1::2])), blobs)
    return found


def pages_by_id(server: Server, ids: Iterable[int]) -> dict[int, StoredPage]:
    """The stored pages with these ids (an id whose page went is left out)."""
    return read(server, (), (), ids).pages
