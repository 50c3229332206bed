"""What every index backend shares: its answers, the policy it decides by, and the checks
its arguments get (keys every database can store, fingerprints as plain unsigned ints)."""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import SupportsIndex, cast

import xxhash

from .. import defaults
from ..errors import InvalidArgumentError
from ..fingerprinting.additions import Shingled
from ..fingerprinting.bits import MASK64, to_signed
from ..fingerprinting.fingerprinter import Signature
from ..text.dates import utc
from .prefer import Prefer, check_prefer

Fingerprint = int | Signature | None  # what check_and_add and add take


@dataclass(frozen=True)
class Match:
    """A stored page near a query: its key, fingerprint and Hamming distance; `exact` when
    the normalised texts are identical; `similarity` the sketches' estimated Jaccard.

    `superseded`: set when the survivor policy (Policy.prefer) preferred the page checked to
    this stored one: the checked page was kept, and this one became its duplicate; the
    reason ("longer", "newer", "preferred"). A check that returns such a Match kept its page.

    `added`: about how many words the checked page adds to this stored one (new word
    3-shingles, fingerprinting/additions.py); None when not known."""

    key: str
    fingerprint: int | None
    distance: int
    exact: bool = False
    similarity: float | None = None
    superseded: str | None = None
    added: int | None = field(default=None, compare=False)  # an estimate: not part of what matched


@dataclass(frozen=True)
class Duplicate:
    """A page dropped as a duplicate of a stored one, with the evidence: its fingerprint,
    the distance and similarity to the stored page, the search radius it was checked at, and
    the rule that decided ("exact": the same normalised text; "near": within the radius,
    verified). Evidence an older index did not log is None. `superseded`: set when this page
    was stored until a page the survivor policy preferred came (the reason: "longer",
    "newer", "preferred"). `added`: about how many words it added to the stored page."""

    key: str
    duplicate_of: str
    distance: int
    exact: bool
    seen_at: datetime
    fingerprint: int | None = None
    similarity: float | None = None
    radius: int | None = None
    superseded: str | None = None
    added: int | None = field(default=None, compare=False)

    @property
    def rule(self) -> str:
        return "exact" if self.exact else "near"


@dataclass(frozen=True)
class StoredPage:
    """A stored page as the duplicate rule sees it; `order` ranks pages by age (the older
    first); `row_id`: its row in an SQL table (None: not stored in one, or not yet)."""

    key: str
    signature: Signature
    order: int
    stored_at: datetime | None = None
    row_id: int | None = None


@dataclass(frozen=True)
class Policy:
    """When a page is a near-duplicate: within `max_distance` bits, and (when both pages
    have sketches) at least `min_similarity` similar; `window`: only of pages stored within
    this time before the check (None: of any stored page); `prefer`: which of a page and
    the stored page it duplicates survives (index/prefer.py: "first", "longest", "newest",
    or a function); `added_words`: a similar page that may add this many words to the
    stored page (fewer for a short page: `added_threshold`) is not its duplicate (None: the
    plain similarity rule)."""

    max_distance: int = defaults.MAX_DISTANCE
    min_similarity: float = defaults.MIN_SIMILARITY
    window: timedelta | None = None
    prefer: Prefer = "first"
    added_words: int | None = defaults.ADDED_WORDS

    def __post_init__(self) -> None:
        limit = defaults.MAX_SUPPORTED_DISTANCE
        if (
            isinstance(self.max_distance, bool)
            or not isinstance(self.max_distance, int)
            or not 0 <= self.max_distance <= limit
        ):
            raise InvalidArgumentError(
                f"max_distance must be an integer from 0 to {limit} (the widest radius the index searches); "
                f"got {self.max_distance!r}"
            )
        if not isinstance(self.min_similarity, (int, float)) or not 0.0 <= self.min_similarity <= 1.0:
            raise InvalidArgumentError(f"min_similarity must be between 0 and 1; got {self.min_similarity!r}")
        if self.window is not None and (not isinstance(self.window, timedelta) or self.window <= timedelta(0)):
            raise InvalidArgumentError(
                f"window must be a positive duration, e.g. '30d' or timedelta(days=30); got {self.window!r}"
            )
        check_prefer(self.prefer)
        words = self.added_words
        if words is not None and (isinstance(words, bool) or not isinstance(words, int) or words < 1):
            raise InvalidArgumentError(
                f"added_words must be a positive number of words, or None for the plain similarity rule; got {words!r}"
            )

    @classmethod
    def of(
        cls,
        max_distance: int | None,
        min_similarity: float = defaults.MIN_SIMILARITY,
        window: timedelta | None = None,
        prefer: Prefer = "first",
        added_words: int | None = defaults.ADDED_WORDS,
    ) -> Policy:
        """The policy of options as given, where `max_distance` None means the default radius."""
        radius = defaults.MAX_DISTANCE if max_distance is None else max_distance
        return cls(radius, min_similarity, window, prefer, added_words)

    def added_threshold(self, shingles: int) -> int | None:
        """The words a page of `shingles` distinct shingles may add before it is not a duplicate:
        `added_words`, or a share of a short page (defaults.ADDED_SHARE); None: not asked."""
        if self.added_words is None:
            return None
        return min(self.added_words, max(1, math.ceil(defaults.ADDED_SHARE * shingles)))

    def within(self, page: StoredPage, moment: datetime | None) -> bool:
        """Whether a stored page is in the window at `moment` (pages of this batch always are)."""
        if self.window is None or moment is None or page.stored_at is None:
            return True
        return page.stored_at >= moment - self.window


DEFAULT_POLICY = Policy()

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `45s` or `2w` as a timedelta; ValueError naming the forms otherwise.

    >>> parse_duration("30d"), parse_duration("12H")
    (datetime.timedelta(days=30), datetime.timedelta(seconds=43200))
    """
    found = _DURATION.match(text) if isinstance(text, str) else None
    if not found:
        raise InvalidArgumentError(
            f"{text!r} is not a duration: give a number and a unit, e.g. 30d, 12h, 90m, 45s or 2w"
        )
    return timedelta(**{_UNITS[found.group(2).lower()]: int(found.group(1))})


def as_window(window: object) -> timedelta | None:
    """A window given as a timedelta, a duration string ('30d') or seconds; None for none."""
    if window is None or isinstance(window, timedelta):
        return window
    if isinstance(window, (int, float)) and not isinstance(window, bool):
        return timedelta(seconds=window)
    return parse_duration(window)  # type: ignore[arg-type]


def check_key(key: object) -> str:
    """A page key (URL) every backend can store: text without NUL characters or lone
    surrogates (PostgreSQL and SQLite's driver refuse both); ValueError naming it otherwise."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a string (the page's URL); got {type(key).__name__}")
    if "\x00" in key:
        raise InvalidArgumentError(
            f"key {shown_key(key)} holds a NUL character, which no database stores: drop or escape it"
        )
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"key {shown_key(key)} holds a lone surrogate, not text: decode the URL properly"
        ) from None
    return key


def shown_key(key: str, limit: int = 200) -> str:
    """A key for a message or a log line: escaped, quoted, at most `limit` characters."""
    text = key.encode("unicode_escape", "backslashreplace").decode("ascii")
    return "'" + (text if len(text) <= limit else text[: limit - 20] + "...") + "'"


def key_hash(key: str) -> int:
    """Signed 64-bit hash of a key: the unique column (URLs can be too long to index)."""
    return to_signed(xxhash.xxh64_intdigest(key.encode("utf-8")))


def as_u64(value: object, name: str = "fingerprint") -> int:
    """An unsigned 64-bit value as a plain int: any integral type (NumPy's too) is accepted;
    anything else is refused with a message naming the argument."""
    if type(value) is int and 0 <= value <= MASK64:  # the usual case, first
        return value
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        hint = " (parse hex with simhash_index.fingerprinting.simhash.from_hex)" if isinstance(value, str) else ""
        raise TypeError(f"{name} must be an unsigned 64-bit integer; got {type(value).__name__} {value!r}{hint}")
    number = operator.index(cast(SupportsIndex, value))
    if not 0 <= number <= MASK64:
        raise ValueError(f"{name} must be an unsigned 64-bit integer; got {number!r}")
    return number


def as_signature(fingerprint: object, text_hash: object = None, sketch: object = None) -> Signature:
    """What check_and_add and add were given, as a Signature of plain ints and bytes (checked)."""
    exact_only, words, dated, modified, shingles, bloom, shingled = False, None, None, None, None, None, None
    if isinstance(fingerprint, Signature):
        given = fingerprint
        fingerprint, text_hash, sketch, exact_only = given.simhash, given.text_hash, given.sketch, given.exact_only
        words, dated, modified, shingles, bloom = given.words, given.dated, given.modified, given.shingles, given.bloom
        shingled = given.shingled
        if shingled is not None and not isinstance(shingled, Shingled):
            raise TypeError(f"Signature.shingled must be a Shingled (Fingerprinter.signature makes it): {shingled!r}")
        for name, count in (("words", words), ("shingles", shingles)):
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                raise ValueError(f"Signature.{name} must be a count (an int, 0 or more); got {count!r}")
        if bloom is not None and not (isinstance(bloom, (bytes, bytearray, memoryview)) and len(bloom)):
            raise TypeError("Signature.bloom must be bytes, not empty (Fingerprinter.signature makes it)")
        for name, moment in (("dated", dated), ("modified", modified)):
            if moment is not None and not isinstance(moment, datetime):
                raise TypeError(
                    f"Signature.{name} must be a datetime (a date of the page); got {type(moment).__name__}"
                )
    if fingerprint is None and text_hash is None:
        raise ValueError("fingerprint is None and no text_hash given: a page needs one of them to be stored")
    if sketch is not None and not isinstance(sketch, (bytes, bytearray, memoryview)):
        raise TypeError(f"sketch must be bytes (Fingerprinter.signature makes it); got {type(sketch).__name__}")
    return Signature(
        None if fingerprint is None else as_u64(fingerprint),
        None if text_hash is None else as_u64(text_hash, "text_hash"),
        None if sketch is None else bytes(sketch),
        exact_only=bool(exact_only),
        words=words,
        dated=None if dated is None else as_utc(dated),
        modified=None if modified is None else as_utc(modified),
        shingles=shingles,
        bloom=None if bloom is None else bytes(bloom),
        shingled=shingled,
    )


def as_utc(moment: datetime) -> datetime:
    """A timestamp read back from a database, as an aware UTC datetime (SQLite drops the zone);
    ValueError for one UTC's calendar cannot hold (dates.utc)."""
    found = utc(moment)
    if found is None:
        raise ValueError(f"{moment.isoformat()} is outside UTC's calendar (years 1 to 9999 UTC)")
    return found


def now() -> datetime:
    """The current UTC time, to the microsecond."""
    return datetime.now(timezone.utc)
