"""What became of each page of a run at its end: a run's outcomes are each page's decision when
it was made, and a page kept then may be superseded by one read after it. `Fates` follows the
outcomes to the end and says, of each page that did not survive the run, which page did: what
`filter` writes in its second pass, and what a dry run lists."""

from __future__ import annotations

from dataclasses import dataclass

from ..archives.copying import Gone
from ..index.records import Match
from .outcomes import Dropped, Kept, Page


@dataclass
class _Stored:
    """A page stored during the run (or before it: `page` None), until superseded (`by`)."""

    key: str
    page: Page | None
    by: _Stored | None = None

    def survivor(self) -> _Stored:
        found = self
        while found.by is not None:
            found = found.by
        return found


@dataclass(frozen=True)
class Copy:
    """A page that did not survive the run: the key of the page that did, that page (None:
    stored before the run), the evidence of the decision that made it a copy (the Match of a
    page dropped, or of the page that superseded it), and whether it was kept when decided."""

    duplicate_of: str
    survivor: Page | None
    evidence: Match
    superseded: bool


class Fates:
    """The run's outcomes followed to the end: `copies()` gives each page that did not survive,
    with the page it is a copy of at the end. A page superseded takes the page that superseded
    it as its survivor, and so do its copies."""

    def __init__(self) -> None:
        self._stored: dict[str, _Stored] = {}
        self._copies: dict[Page, tuple[_Stored, Match, bool]] = {}

    def add(self, outcome: Kept | Dropped) -> None:
        """A page's outcome, in the order the run decided them."""
        page = outcome.page
        if isinstance(outcome, Dropped):
            self._copies[page] = (self._node(outcome.match.key), outcome.match, False)
            return
        evidence = outcome.match or Match(page.url, None, 0)
        node = self._stored.get(page.url)
        if node is not None and node.by is None:  # its row follows the new copy
            if node.page is not None:
                self._copies[node.page] = (node, evidence, True)
            node.page = page
        else:
            node = self._stored[page.url] = _Stored(page.url, page)
        gone = outcome.supersedes
        if gone is not None and gone != page.url:
            old = self._node(gone)
            old.by = node
            if old.page is not None:
                self._copies[old.page] = (old, evidence, True)

    def _node(self, key: str) -> _Stored:
        node = self._stored.get(key)
        if node is None:  # a page stored before the run
            node = self._stored[key] = _Stored(key, None)
        return node

    def copies(self) -> dict[Page, Copy]:
        """{page: Copy} of every page that did not survive."""
        found = {}
        for page, (node, evidence, superseded) in self._copies.items():
            survivor = node.survivor()
            if survivor.page != page:
                found[page] = Copy(survivor.key, survivor.page, evidence, superseded)
        return found

    def gone(self) -> dict[tuple[int, int], Gone]:
        """The archive pages that did not survive, as a copy of their archives leaves them out:
        {(input's number, record's offset): Gone}."""
        found = {}
        for page, copy in self.copies().items():
            if page.record is not None:
                survivor = None if copy.survivor is None else copy.survivor.record
                found[page.source, page.record.offset] = Gone(
                    copy.duplicate_of, survivor, copy.evidence.distance, copy.evidence.exact
                )
        return found
