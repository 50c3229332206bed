"""The survivor policy: of a page and the stored page it duplicates, which one is kept.

"first" (the default): the stored page, always; the page checked is its duplicate.
"longest": the page with more words of main text; "newest": the page with the later date
(its own, Signature.dated, from the page's metadata or the HTTP Last-Modified; else the time
it was checked or stored). A function `f(new, stored) -> bool` of two Contenders: True keeps
the new page. A tie, or a length or date not known (a page stored before the index kept
them), keeps the stored page. When the new page is preferred it supersedes the stored one:
it is stored, and the stored page becomes its duplicate, with its own duplicates.
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
    """A page as a survivor policy compares it: its key, its words of main text (None: not
    known) and its date (its own, else when it was checked or stored)."""

    key: str
    words: int | None
    dated: datetime | None


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
        won = new.dated is not None and stored.dated is not None and new.dated > stored.dated
    else:
        won = bool(prefer(new, stored))
    return (REASONS.get(prefer, FUNCTION_REASON) if isinstance(prefer, str) else FUNCTION_REASON) if won else None


def name_of(prefer: Prefer) -> str:
    """The policy as the Redis script takes it: its name; a function has none there."""
    if not isinstance(prefer, str):
        raise ValueError(
            "a function survivor policy needs an SQL or memory index (it runs inside their lock); "
            "on Redis use prefer='first', 'longest' or 'newest'"
        )
    return prefer
