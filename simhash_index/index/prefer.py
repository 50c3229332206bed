"""The survivor policy: of a page and the stored page it duplicates, which one is kept.

"first" (the default): the stored page, always; the page checked is its duplicate.
"longest": the page with more words of main text; a tie, or a length not known (a page
stored before the index kept them), keeps the stored page.
"newest": the newer page by the evidence of its age (Contender.ages), most telling first:
its own date (Signature.dated, from its metadata), then its HTTP Last-Modified
(Signature.modified). The first evidence both pages have and that differs decides; evidence
they tie on, or that one of them lacks, passes to the next; when none decides, the page
checked later (the new one: in a crawl, about the one fetched later) is the newer.
A function `f(new, stored) -> bool` of two Contenders: True keeps the new page.
When the new page is preferred it supersedes the stored one: it is stored, and the stored
page becomes its duplicate, with its own duplicates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

NAMED = ("first", "longest", "newest")
REASONS = {"longest": "longer", "newest": "newer"}  # why the new page won, as the log and explain say it
FUNCTION_REASON = "preferred"


@dataclass(frozen=True)
class Contender:
    """A page as a survivor policy compares it: its key, its words of main text, its own date
    and its HTTP Last-Modified (each None when not known)."""

    key: str
    words: int | None
    dated: datetime | None = None
    modified: datetime | None = None

    @property
    def ages(self) -> tuple[datetime | None, ...]:
        """The evidence of the page's age, most telling first, as "newest" compares it."""
        return (self.dated, self.modified)


Prefer = Literal["first", "longest", "newest"] | Callable[[Contender, Contender], bool]


def check_prefer(prefer: object) -> None:
    """Refuse a policy that is neither a known name nor a function, naming the choices."""
    if callable(prefer) or (isinstance(prefer, str) and prefer in NAMED):
        return
    raise ValueError(f"prefer must be one of {', '.join(NAMED)} or a function (new, stored) -> bool; got {prefer!r}")


def supersedes(prefer: Prefer, new: Contender, stored: Contender) -> str | None:
    """Why the new page is kept instead of the stored one ("longer", "newer", "preferred"),
    or None when the stored page stays."""
    if prefer == "first":
        return None
    if prefer == "longest":
        won = new.words is not None and stored.words is not None and new.words > stored.words
    elif prefer == "newest":
        won = newer(new, stored)
    else:
        won = bool(prefer(new, stored))
    return (REASONS.get(prefer, FUNCTION_REASON) if isinstance(prefer, str) else FUNCTION_REASON) if won else None


def newer(new: Contender, stored: Contender) -> bool:
    """Whether the new page is the newer: the first of their ages (Contender.ages) that both
    know and that differ decides; when none does, the new page, checked later, is the newer."""
    for mine, theirs in zip(new.ages, stored.ages):
        if mine is not None and theirs is not None and mine != theirs:
            return mine > theirs
    return True
