"""Why a page was kept or dropped, and how near it is to others: the evidence, read back.

Every backend answers through the Index interface: a dropped page's logged evidence
(Index.duplicate), a stored page's signature (Index.page) and the stored pages near it
(Index.neighbourhood), judged by the rule's own code (rule.judge).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from ..fingerprinting.additions import SketchBound
from ..fingerprinting.fingerprinter import DEFAULT, Signature
from . import rule
from .base import Index
from .records import Duplicate, Match, StoredPage


@dataclass(frozen=True)
class Found:
    """A key as the index knows it: a stored page, a logged duplicate, or neither."""

    key: str
    page: StoredPage | None = None
    duplicate: Duplicate | None = None

    @property
    def status(self) -> str:
        return "kept" if self.page is not None else "dropped" if self.duplicate is not None else "unknown"

    @property
    def fingerprint(self) -> int | None:
        if self.page is not None:
            return self.page.signature.simhash
        return None if self.duplicate is None else self.duplicate.fingerprint

    @property
    def signature(self) -> Signature | None:
        """What the index keeps of the page's signature: a dropped page's fingerprint only."""
        if self.page is not None:
            stored = self.page.signature
            return Signature(stored.simhash, stored.text_hash, stored.sketch)  # near-matchable, for a query
        if self.duplicate is not None and self.duplicate.fingerprint is not None:
            return Signature(self.duplicate.fingerprint, None)
        return None


def find(index: Index, key: str) -> Found:
    """The stored page with this key, else the duplicate logged under it, else neither."""
    page = index.page(key)
    if page is not None:
        return Found(key, page=page)
    return Found(key, duplicate=index.duplicate(key))


def similarity_between(a: Found | Signature, b: Found | Signature) -> float | None:
    """The estimated similarity of two pages: from their sketches, else from the log when one
    was dropped as a duplicate of the other (a dropped page's sketch is not kept)."""
    for one, other in ((a, b), (b, a)):
        logged = isinstance(one, Found) and one.duplicate is not None and isinstance(other, Found)
        if logged and other.page is not None and one.duplicate.duplicate_of == other.key:  # type: ignore[union-attr]
            return one.duplicate.similarity  # type: ignore[union-attr]
    first = a.signature if isinstance(a, Found) else a
    second = b.signature if isinstance(b, Found) else b
    return None if first is None or second is None else rule.similarity(first, second)


def near(index: Index, signature: Signature, *, exclude: Found | None = None) -> list[Match]:
    """The stored pages within the index's max_distance of a signature, nearest then oldest
    first, each with its similarity (None without both sketches); `exclude`: the page asked
    about, left out, whose logged similarity to the page it duplicated is used."""
    if signature.simhash is None:
        raise ValueError("signature has no simhash (a text matched only exactly): it has no near pages to list")
    plain = Signature(signature.simhash, signature.text_hash, signature.sketch)
    pages = index.neighbourhood(exclude.key if exclude is not None else "", plain)
    found = []
    for bits, page in rule.near(plain, pages, index.max_distance):
        if exclude is not None and page.key == exclude.key:
            continue
        score = rule.similarity(plain, page.signature)
        if exclude is not None and exclude.duplicate is not None and exclude.duplicate.duplicate_of == page.key:
            score = exclude.duplicate.similarity
        found.append(Match(page.key, page.signature.simhash, bits, similarity=score))
    return found


@dataclass(frozen=True)
class Candidate:
    """A stored page a kept page was checked against, and why it was not its duplicate."""

    key: str
    fingerprint: int | None
    distance: int
    similarity: float | None
    accepted: bool
    reason: str  # "below min_similarity", "adds", "outside the window", or "similar"/"not comparable" now
    added: int | None = None  # about how many words the kept page adds to it
    bounded: bool = False  # `added` is a bound from the sketches (the page's shingles not at hand)


@dataclass(frozen=True)
class Explanation:
    """The decision on a page and its reasons."""

    found: Found
    max_distance: int
    min_similarity: float
    candidates: tuple[Candidate, ...] = ()  # kept pages: the older stored pages within max_distance
    logged: tuple[Duplicate, ...] = ()  # kept pages: the pages logged against it (Index.duplicates_of)

    @property
    def short_text(self) -> bool:
        return self.found.page is not None and self.found.page.signature.exact_only

    @property
    def dropped(self) -> tuple[Duplicate, ...]:
        """The pages dropped as this kept page's duplicates (or as those of a page it superseded)."""
        return tuple(d for d in self.logged if d.superseded is None)

    @property
    def superseded(self) -> tuple[Duplicate, ...]:
        """The stored pages this kept page took the place of (the survivor policy)."""
        return tuple(d for d in self.logged if d.superseded is not None)

    @property
    def stored_at(self) -> datetime | None:
        return None if self.found.page is None else self.found.page.stored_at

    def reasons(self) -> list[str]:
        """The decision in sentences: why the page was kept or dropped, then, for a kept page,
        the pages logged against it."""
        return [*self._decision(), *self._logged_lines()]

    def _logged_lines(self) -> list[str]:
        lines = []
        if self.dropped:
            lines.append(f"dropped as its duplicates: {len(self.dropped)} page(s)")
            lines += [f"  {d.key}: {_evidence(d)}" for d in self.dropped]
        if self.superseded:
            lines.append(f"superseded: {len(self.superseded)} page(s), stored before it")
            for d in self.superseded:
                lines.append(f"  {d.key}: {_evidence(d, superseded=True)}; this page is {d.superseded}")
        return lines

    def _decision(self) -> list[str]:
        found, duplicate = self.found, self.found.duplicate
        if duplicate is not None:
            if duplicate.superseded is not None:
                how = "the same normalised text" if duplicate.exact else f"{duplicate.distance} bits apart"
                return [
                    f"superseded by {duplicate.duplicate_of} ({duplicate.superseded}): stored until that copy "
                    f"came ({how}), which the survivor policy (prefer) keeps instead"
                ]
            if duplicate.exact:
                return [f"dropped: the same normalised text as {duplicate.duplicate_of} (rule: exact)"]
            shown = "unknown" if duplicate.similarity is None else f"{duplicate.similarity:.3f}"
            radius = "radius not logged" if duplicate.radius is None else f"checked at radius {duplicate.radius}"
            added = "" if duplicate.added is None else f", adding about {words(duplicate.added)} to it"
            return [
                f"dropped: {duplicate.distance} bits from {duplicate.duplicate_of} ({radius}), "
                f"similarity {shown} (at least {self.min_similarity:g}){added} (rule: near, verified)"
            ]
        if found.page is None:
            return ["neither stored nor logged as a duplicate in this index"]
        if self.short_text:
            return [
                "kept: its text is too short for a near match (exact text only), and no older page has the same text"
            ]
        if not self.candidates:
            return [f"kept: no older stored page within {self.max_distance} bits, and none with the same text"]
        lines = [f"kept: {len(self.candidates)} older stored page(s) within {self.max_distance} bits, none a duplicate"]
        for candidate in self.candidates:
            score = "no sketch" if candidate.similarity is None else f"similarity {candidate.similarity:.3f}"
            if candidate.reason == "below min_similarity":
                why = f"{score} < {self.min_similarity:g}"
            elif candidate.reason == rule.ADDS and candidate.bounded:
                why = f"{score}, but this page may add up to {words(candidate.added)} to it (the sketches tell)"
            elif candidate.reason == rule.ADDS:
                why = f"{score}, but this page adds about {words(candidate.added)} to it, which it lacks"
            elif candidate.reason == "outside the window":
                why = f"{score}, but stored more than the window before this page"
            else:
                why = f"{score}: would be a duplicate now (stored or changed after this page was checked)"
            lines.append(f"  {candidate.key}: {candidate.distance} bits, {why}")
        return lines


def _evidence(duplicate: Duplicate, *, superseded: bool = False) -> str:
    """How near a logged page is to the page it was logged against; for a superseded page, the
    words logged are those the page that superseded it adds to it."""
    if duplicate.exact:
        return "the same normalised text"
    shown = "similarity not logged" if duplicate.similarity is None else f"similarity {duplicate.similarity:.3f}"
    if duplicate.added is None:
        added = ""
    elif superseded:
        added = f", to which this page adds about {words(duplicate.added)}"
    else:
        added = f", adding about {words(duplicate.added)} to it"
    return f"{duplicate.distance} bits, {shown}{added}"


def explain(index: Index, key: str) -> Explanation:
    """Why `key` was kept or dropped, as the index holds it now and under its policy."""
    found = find(index, key)
    explanation = Explanation(found, index.max_distance, index.min_similarity)
    page = found.page
    if page is not None:
        explanation = replace(explanation, logged=tuple(index.duplicates_of(key)))
    if page is None or page.signature.exact_only or page.signature.simhash is None:
        return explanation
    signature = shingled(index, key, page.signature)
    older = [p for p in index.neighbourhood(key, signature) if p.order < page.order and p.key != key]
    candidates = []
    for bits, stored in rule.near(signature, older, index.max_distance):
        verdict = rule.judge(signature, stored, bits, index.policy)
        accepted, reason = verdict.accepted, verdict.reason
        if not index.policy.within(stored, page.stored_at):  # the window as of the page's check
            accepted, reason = False, "outside the window"
        fingerprint, score = stored.signature.simhash, verdict.similarity
        bounded = isinstance(rule.adds(signature, stored.signature), SketchBound)
        candidates.append(Candidate(stored.key, fingerprint, bits, score, accepted, reason, verdict.added, bounded))
    return replace(explanation, candidates=tuple(candidates))


def shingled(index: Index, key: str, stored: Signature) -> Signature:
    """A stored page's signature with its shingles in text order (what tells what it adds to
    another), when the index keeps its text and fingerprints as the default Fingerprinter does;
    else as stored."""
    text = index.text(key) if index.keep_texts else None
    if text is None or index.scheme != DEFAULT.scheme:
        return stored
    again = DEFAULT.signature(text)
    if again is None or again.text_hash != stored.text_hash:  # not the text the page was stored with
        return stored
    return replace(stored, shingled=again.shingled, shingles=again.shingles)


def words(count: int | None) -> str:
    """A count of words as a sentence says it: "1 word", "600 words"."""
    return "an unknown number of words" if count is None else f"{count} word{'' if count == 1 else 's'}"
