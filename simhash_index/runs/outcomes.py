"""What a run says of each page and line it read, as it decides them, and what it counts.

A page's outcome is the index's answer put in words (`decided`): kept, kept in the place of a
stored copy it supersedes, dropped as the copy of a stored page. A kind of answer the index
gains is a branch there, and the kinds below are matched on by type, never by a string.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..archives.records import Record
from ..index.records import Match


@dataclass(frozen=True)
class Page:
    """A page of the inputs: where it is (`file line N`, `file record at byte N`), its URL, its
    input's number among the run's, and, for an archive's page, its record."""

    where: str
    url: str
    source: int
    record: Record | None = None
    unusable_date: str | None = None  # a date given that could not be used (taken as none)


@dataclass(frozen=True)
class Kept:
    """Stored. `match`: the index's answer when it kept the page beside a near one (a stored copy
    it took the place of: `supersedes`)."""

    page: Page
    match: Match | None = None

    @property
    def supersedes(self) -> str | None:
        """The key of the stored copy this page took the place of, or None."""
        return None if self.match is None or self.match.superseded is None else self.match.key


@dataclass(frozen=True)
class Dropped:
    """A copy of a stored page, `match` (its key and the evidence); not stored."""

    page: Page
    match: Match


@dataclass(frozen=True)
class Skipped:
    """Not decided: no text (`reason` None), or why it was not read (over the page limit, a failed
    extraction)."""

    page: Page
    reason: str | None = None


@dataclass(frozen=True)
class Refused:
    """Not decided: its URL is no key an index stores (`reason`)."""

    page: Page
    reason: str


@dataclass(frozen=True)
class BadInput:
    """A line or record that is no page (not JSON, a record whose Content-Length does not match
    it), skipped; `fatal`: the input cannot be read past it (or the run was to stop at the first
    bad line), and the run ends there."""

    where: str
    error: str
    fatal: bool = False


@dataclass(frozen=True)
class Truncated:
    """An archive cut short, read up to its cut (allow_truncated)."""

    where: str
    reason: str


PageOutcome = Kept | Dropped | Skipped | Refused
Outcome = Kept | Dropped | Skipped | Refused | BadInput | Truncated


def decided(page: Page, answer: Match | None) -> Kept | Dropped:
    """The index's answer on a page, as its outcome."""
    if answer is None or answer.superseded is not None:
        return Kept(page, answer)
    return Dropped(page, answer)


@dataclass
class Counts:
    """What a run did, page by page: every page read is counted once, in kept (stored at the end),
    superseded (kept when decided, then superseded by a page read after it in the same run),
    dropped, skipped or refused; `supersedings`: the pages that took a stored copy's place when
    decided."""

    kept: int = 0
    superseded: int = 0
    dropped: int = 0
    skipped: int = 0
    refused: int = 0
    bad: int = 0  # lines or records that are no page, skipped
    supersedings: int = 0
    unusable_dates: int = 0  # pages whose date was given but could not be used
    not_pages: Counter[str] = field(default_factory=Counter)  # an archive's other records, by why
