"""The duplicate rule, written once: every backend fetches the stored pages a check could
see and asks `decide` (the Redis backend's server-side script is held to it by a
differential test).

For a page checked under a key:
1. A key already stored is never a duplicate of itself: its row follows the new content.
2. Else the oldest stored page with the same normalised text (text hash) is an exact match.
3. Else, for a page long enough to have a simhash match (not `exact_only`), the stored pages
   within `max_distance` bits, nearest first and oldest first on a tie: the first whose
   sketch is at least `min_similarity` similar (or that cannot be compared, lacking a
   sketch) and to which the page adds fewer words than `Policy.added_threshold` (`adds`:
   what the page has that the stored one lacks, fingerprinting/additions.py; a page that may
   add that many is not its duplicate) is a near match.
4. Else the page is new, and is stored (a similar page it adds to stays stored too).
5. A page that matched in step 2 or 3 supersedes its match when the survivor policy
   (`Policy.prefer`, prefer.py) prefers it: the page is stored, and the matched page
   becomes its duplicate, with the duplicates logged against it. So does a page stored in
   step 4 the first similar page it adds to: under "first" both stay stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from ..fingerprinting.additions import Added, SketchBound, added
from ..fingerprinting.bits import hamming
from ..fingerprinting.fingerprinter import Signature
from ..fingerprinting.sketch import agreeing
from ..fingerprinting.sketch import similarity as sketch_similarity
from .prefer import Contender, supersedes
from .records import Match, Policy, StoredPage

ADDS = "adds"  # the verdict on a similar page the checked one adds words to


@dataclass(frozen=True)
class Verdict:
    """Why a candidate was or was not the page's match; `added`: about how many words the
    checked page adds to it (None: not asked, or not known)."""

    page: StoredPage
    distance: int
    similarity: float | None
    accepted: bool
    reason: str  # "same text", "similar", "not comparable", "below min_similarity", ADDS
    added: int | None = None

    def match(self) -> Match:
        """The candidate as the page's match."""
        stored = self.page.signature.simhash
        exact = self.reason == "same text"
        return Match(self.page.key, stored, self.distance, exact, self.similarity, added=self.added)


@dataclass(frozen=True)
class Decision:
    """The outcome of a check: `match` (a duplicate), else `store` the page (a new row, or
    `update` of its own row when its content changed; neither when it did not). When the
    page supersedes its match (step 5), `match.superseded` says why and `store` is set."""

    match: Match | None
    store: bool
    update: bool = False
    checked: tuple[Verdict, ...] = ()

    @property
    def supersedes(self) -> bool:
        return self.match is not None and self.match.superseded is not None

    @property
    def matched(self) -> StoredPage | None:
        """The stored page the page matched (or superseded), as the backend read it."""
        verdict = next((verdict for verdict in self.checked if verdict.accepted), None)
        if verdict is None and self.supersedes:
            verdict = self.added_to
        return None if verdict is None else verdict.page

    def displaced(self) -> tuple[Match, StoredPage]:
        """The match and the stored page of a decision that supersedes it (step 5)."""
        matched = self.matched
        if self.match is None or self.match.superseded is None or matched is None:
            raise RuntimeError(f"simhash_index: a decision that supersedes no page: {self!r}")
        return self.match, matched

    @property
    def added_to(self) -> Verdict | None:
        """The first similar stored page the page adds words to (why it was not its duplicate)."""
        return next((verdict for verdict in self.checked if verdict.reason == ADDS), None)


def near(signature: Signature, pages: Iterable[StoredPage], max_distance: int) -> list[tuple[int, StoredPage]]:
    """(distance, page) of the near-matchable pages within max_distance, nearest then oldest first."""
    fingerprint = signature.near_simhash
    if fingerprint is None:
        return []
    found = []
    for page in pages:
        stored = page.signature.near_simhash
        if stored is not None:
            bits = hamming(stored, fingerprint)
            if bits <= max_distance:
                found.append((bits, page))
    found.sort(key=lambda pair: (pair[0], pair[1].order))
    return found


def same_content(a: Signature, b: Signature) -> bool:
    """Whether a stored row already holds this content (no update needed)."""
    return (a.simhash, a.text_hash, a.near_matchable) == (b.simhash, b.text_hash, b.near_matchable)


def decide(
    signature: Signature,
    *,
    own: StoredPage | None,
    same_text: Sequence[StoredPage],
    nearby: Iterable[StoredPage],
    policy: Policy,
    moment: datetime | None = None,
    key: str = "",
    complete: Callable[[StoredPage], StoredPage] | None = None,
) -> Decision:
    """Decide a page: `own` is the page stored under its key, `same_text` the stored pages
    with its text hash, `nearby` stored pages that may be within the distance (any superset);
    `moment`: the time of the check (pages stored before `moment - window` are not seen);
    `key`: the page's, for a survivor policy that is a function; `complete`: gives a matched
    page its words and dates, when the backend read it without them (called only when the
    policy is not "first")."""
    decision = _decide(signature, own=own, same_text=same_text, nearby=nearby, policy=policy, moment=moment)
    if policy.prefer == "first":
        return decision
    rival = next((verdict for verdict in decision.checked if verdict.accepted), None)
    if rival is None and decision.match is None and decision.store:
        rival = decision.added_to
    if rival is None:
        return decision
    stored = rival.page if complete is None else complete(rival.page)
    reason = supersedes(policy.prefer, contender(key, signature), contender(stored.key, stored.signature))
    if reason is None:
        return decision
    match = replace(decision.match or rival.match(), superseded=reason)
    return Decision(match, store=True, checked=decision.checked)


def contender(key: str, signature: Signature) -> Contender:
    """A page as a survivor policy compares it."""
    return Contender(key, signature.words, signature.dated, signature.modified)


def _decide(
    signature: Signature,
    *,
    own: StoredPage | None,
    same_text: Sequence[StoredPage],
    nearby: Iterable[StoredPage],
    policy: Policy,
    moment: datetime | None,
) -> Decision:
    """Steps 1 to 4."""
    if own is not None:
        return Decision(None, store=not same_content(own.signature, signature), update=True)
    if policy.window is not None:
        same_text = [page for page in same_text if policy.within(page, moment)]
        nearby = [page for page in nearby if policy.within(page, moment)]
    if same_text:
        first = min(same_text, key=lambda page: page.order)
        stored = first.signature.simhash
        bits = hamming(stored, signature.simhash) if stored is not None and signature.simhash is not None else 0
        verdict = Verdict(first, bits, None, True, "same text", added=0)
        return Decision(verdict.match(), store=False, checked=(verdict,))
    checked = []
    for bits, page in near(signature, nearby, policy.max_distance):
        verdict = judge(signature, page, bits, policy)
        checked.append(verdict)
        if verdict.accepted:
            return Decision(verdict.match(), store=False, checked=tuple(checked))
    return Decision(None, store=True, checked=tuple(checked))


def settles(signature: Signature, page: StoredPage, policy: Policy, moment: datetime | None) -> bool:
    """Whether step 3 would take this near page as the match of a page that has no nearer
    candidate: it is seen (policy.window) and accepted. A backend that reads the candidates
    nearest first needs no farther one once one of the nearest settles."""
    fingerprint, stored = signature.near_simhash, page.signature.near_simhash
    if fingerprint is None or stored is None or not policy.within(page, moment):
        return False
    return judge(signature, page, hamming(stored, fingerprint), policy).accepted


def judge(signature: Signature, page: StoredPage, bits: int, policy: Policy) -> Verdict:
    """The verdict on a stored page `bits` away from the checked one: similar enough and adding
    too little to it, or not."""
    score = similarity(signature, page.signature)
    if score is None:
        return Verdict(page, bits, None, True, "not comparable")
    if score < policy.min_similarity:
        return Verdict(page, bits, score, False, "below min_similarity")
    found = adds(signature, page.signature)
    threshold = None if signature.shingles is None else policy.added_threshold(signature.shingles)
    if found is None or threshold is None:
        return Verdict(page, bits, score, True, "similar")
    if found.reaches(threshold):
        return Verdict(page, bits, score, False, ADDS, found.estimate)
    return Verdict(page, bits, score, True, "similar", found.estimate)


def adds(a: Signature, b: Signature) -> Added | SketchBound | None:
    """What page `a` adds to page `b`: the words of `a` none of whose shingles is in `b`'s bitmap,
    else bounded from their sketches; None when `a` does not say how many shingles it has (a
    Signature made without them) or the sketches cannot be compared."""
    if a.shingles is None or a.sketch is None or b.sketch is None or len(a.sketch) != len(b.sketch) or not a.sketch:
        return None
    if a.shingled is not None and b.bloom is not None:
        return added(a.shingled, b.bloom)
    return SketchBound(a.shingles, agreeing(a.sketch, b.sketch), len(a.sketch))


def similarity(a: Signature, b: Signature) -> float | None:
    """The sketches' estimated Jaccard similarity; None when either has no sketch (or they differ in size)."""
    return _similarity(a, b)


def _similarity(a: Signature, b: Signature) -> float | None:
    if a.sketch is None or b.sketch is None or len(a.sketch) != len(b.sketch) or not a.sketch:
        return None
    return sketch_similarity(a.sketch, b.sketch)
