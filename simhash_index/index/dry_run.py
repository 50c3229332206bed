"""DryRunIndex: the answers `check_and_add` would give on an index, without writing to it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .. import defaults
from .base import Index, Keyed
from .memory import MemoryIndex
from .prefer import Prefer
from .records import Match, Policy


class DryRunIndex(MemoryIndex):
    """Decides as `source` would (or, when there is none, a new index searching `max_distance`),
    writing nothing to it; `prefer`: the survivor policy the real run would open it with (a
    preferred page supersedes as it would there).

    Decides in memory. Before each check it copies in, read-only, every page of `source` the
    checked one could see (its key, its text, its near pages: Index.neighbourhood), so the
    memory holds all a real check would see, plus the pages kept so far. Closing it leaves
    `source` open.
    """

    def __init__(
        self,
        source: Index | None,
        *,
        scheme: str,
        max_distance: int | None = None,
        prefer: Prefer = "first",
        added_words: int | None = defaults.ADDED_WORDS,
    ) -> None:
        policy = source.policy if source is not None else Policy.of(max_distance)
        super().__init__(policy=replace(policy, prefer=prefer, added_words=added_words), scheme=scheme)
        self._source = source

    def _check_and_add_many(self, pages: Sequence[Keyed]) -> list[Match | None]:
        answers: list[Match | None] = []
        for key, signature in pages:  # one at a time: each sees the source as the page before it left it
            if self._source is not None:
                self.copy_in(self._source.neighbourhood(key, signature))
            answers += super()._check_and_add_many([(key, signature)])
        return answers
