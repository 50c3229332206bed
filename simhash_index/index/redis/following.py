"""Where a Redis writer finds the stored pages near a batch: a Held in its own memory, built from
the server's fingerprint buckets and kept in step with the change stream (changes.py).

Building reads the stream's position first, then every bucket `P fp:<n>` (pages 1024n to
1024n + 1023 by id: 9 bytes a page, 1 when near-matchable and the fingerprint), a few dozen
buckets a round trip, then follows the stream from that position: a page stored meanwhile comes
through the stream if the buckets missed it, and one that went leaves a fingerprint whose page
the writer does not find. So the Held holds every stored near-matchable fingerprint (and maybe
some that went), as the writer's decisions need. It is built again when the stream can no
longer be followed from where the writer stands (trimmed past it, or a new epoch: the index was
emptied), or when more than a quarter of what it holds went.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import IndexUnavailableError
from . import changes
from .codec import text_of
from .held import I64, U64, Held
from .server import Server

BUCKET = 1024  # pages (by id) a fingerprint bucket holds: script.lua's BUCKET
SLOT = np.dtype([("near", "u1"), ("fingerprint", ">u8")])  # a page in its bucket: script.lua's SLOT
BUCKETS_AT_ONCE = 64  # buckets read a round trip (about 600 KB)
STALE_SHARE = 4  # build anew once more fingerprints went than a quarter of those held
MIN_STALE = 10_000
BUILD_TRIES = 3


class Follower:
    """A Held of the stored pages' fingerprints, following the index's change stream."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.held: Held | None = None
        self.epoch: bytes | None = None
        self.position = changes.START
        self.builds = 0  # times the Held was built from the server
        self._stale = 0

    def follow(self) -> None:
        """Catch up with the stream (build the Held when there is none, or it cannot follow)."""
        for _ in range(BUILD_TRIES):
            if self.held is None:
                self._build()
            if self._catch_up() and self._stale * STALE_SHARE <= max(MIN_STALE, len(self)):
                return
            self.held = None
        raise IndexUnavailableError(
            f"{self.server.url} (prefix {self.server.prefix!r}) changed faster than this writer could read it "
            f"{BUILD_TRIES} times in a row"
        )

    def ready(self) -> None:
        """Have a Held to decide with: built when there is none, or once a quarter of what it
        holds went. It may be behind the stream: a write refused for that returns what it missed."""
        if self.held is None or self._stale * STALE_SHARE > max(MIN_STALE, len(self)):
            self.held = None
            self.follow()

    def __len__(self) -> int:
        """Fingerprints held."""
        return 0 if self.held is None else len(self.held)

    def apply(self, found: changes.Changes) -> None:
        """Follow entries read past the position (a write's own, or those it missed)."""
        assert self.held is not None  # followed before
        self.held.add(found.came, found.ids)
        self._stale += found.went
        if found.position is not None:
            self.position = found.position

    def near(self, queries: list[int], radius: int) -> list[list[int]]:
        """For each query fingerprint, the ids of the pages held within `radius` of it."""
        if self.held is None or not queries:
            return [[] for _ in queries]
        return self.held.near(np.array(queries, np.uint64), radius)

    def _catch_up(self) -> bool:
        """Read the stream past the position; False when it cannot be followed from there."""
        read = 0
        while True:
            epoch, status, *found = self.server.run("follow", self.position, changes.FOLLOW_COUNT)
            if epoch != self.epoch or status != b"ok":
                return False
            count, said = found
            self.apply(changes.parse(said))
            read += count
            if count < changes.FOLLOW_COUNT:
                return True
            if read > changes.BEHIND:
                return False

    def _build(self) -> None:
        epoch, position, last = self.server.run("start")
        fingerprints, ids = _read_buckets(self.server, int(last) // BUCKET + 1)
        self.held = Held(fingerprints, ids)
        self.epoch, self.position, self._stale = epoch, text_of(position), 0
        self.builds += 1


def _read_buckets(server: Server, count: int) -> tuple[U64, I64]:
    """The near-matchable fingerprints of the buckets 0 to count - 1, and their page ids."""
    fingerprints: list[U64] = []
    ids: list[I64] = []
    for first in range(0, count, BUCKETS_AT_ONCE):
        numbers = range(first, min(count, first + BUCKETS_AT_ONCE))
        pipe: Any = server.client.pipeline(transaction=False)
        for number in numbers:
            pipe.get(server.key(f"fp:{number}"))
        with server.talking():
            replies = pipe.execute()
        for number, held in zip(numbers, replies):
            if held:
                slots = np.frombuffer(held, SLOT, len(held) // SLOT.itemsize)
                near = np.flatnonzero(slots["near"] == 1)
                fingerprints.append(slots["fingerprint"][near].astype(np.uint64))
                ids.append(near.astype(np.int64) + number * BUCKET)
    if not fingerprints:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    return np.concatenate(fingerprints), np.concatenate(ids)
