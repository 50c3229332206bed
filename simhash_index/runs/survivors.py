"""Which copy survives a run (prefer): within one run (all its inputs, in order), a URL met again
is another copy (capture) of the same page, and the survivor policy decides between it and the
copy of that URL the run stored (`SameUrl`); the other pages are decided by the index, whose
policy may supersede a stored page (index/prefer.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..dedup import Deduplicator, Undecided
from ..fingerprinting.bits import hamming
from ..fingerprinting.fingerprinter import Signature
from ..fingerprinting.pages import PageSetup
from ..index import rule
from ..index.prefer import Prefer, supersedes
from ..index.records import Match
from .inputs import Line


def page_setup(setup: PageSetup, prefer: Prefer) -> PageSetup:
    """The page setup a policy needs: "newest" reads each page's own date."""
    return replace(setup, dates=prefer == "newest")


def with_evidence(signature: Signature, line: Line) -> Signature:
    """The page's Signature with its line's date (an archive's capture date, a corpus line's
    last_modified), for the "newest" policy."""
    return signature if line.modified is None else replace(signature, modified=line.modified)


class RunDeduplicator(Deduplicator):
    """The dedup core of one run: the index decides, except between copies of one URL (SameUrl)."""

    def __init__(self, *args: Any, prefer: Prefer, **options: Any) -> None:
        super().__init__(*args, **options)
        self.same_url = SameUrl(prefer)

    def _decide(self, batch: Sequence[Undecided]) -> list[Match | None]:
        return self.same_url.decide(batch, super()._decide)


class SameUrl:
    """Decides a page whose URL the run stored before as the policy would a stored copy: kept in
    its place (the answer a Match with `superseded` set, the index's row follows it), or
    dropped as its copy (a Match to the URL itself; the index is left alone). "first" always
    drops. Every other page goes to the index, in order; its answers say which URLs the run
    has stored. Runs on the writer thread, one batch at a time."""

    def __init__(self, prefer: Prefer) -> None:
        self.prefer = prefer
        # URL -> the Signature of the copy the run stored, without its sketch (a run may store millions)
        self.stored: dict[str, Signature] = {}

    def decide(
        self, batch: Sequence[Undecided], index: Callable[[Sequence[Undecided]], list[Match | None]]
    ) -> list[Match | None]:
        """The answers for the batch, in order; `index` decides the pages sent to it, in order.
        Pages go to it in runs; a run ends before a page whose URL the run stored, unless the
        run holds only such pages (replacing a copy in place supersedes nothing)."""
        answers: list[Match | None] = [None] * len(batch)
        sent: list[int] = []
        replacing: dict[int, Match] = {}

        def flush() -> None:
            if sent:
                for position, answer in zip(sent, index([batch[p] for p in sent])):
                    answers[position] = replacing.get(position) or self._learn(batch[position], answer)
            sent.clear()
            replacing.clear()

        for position, (key, signature, _) in enumerate(batch):
            own = self.stored.get(key)
            if any(batch[p][0] == key for p in sent) or (own is not None and len(replacing) < len(sent)):
                flush()
                own = self.stored.get(key)
            if own is None:
                sent.append(position)
                continue
            match = copy_match(key, signature, own)
            reason = supersedes(self.prefer, rule.contender(key, signature), rule.contender(key, own))
            if reason is None:
                answers[position] = match
                continue
            self.stored[key] = slim(signature)
            replacing[position] = replace(match, superseded=reason)
            sent.append(position)
        flush()
        return answers

    def _learn(self, page: Undecided, answer: Match | None) -> Match | None:
        """What the index's answer says the run stored."""
        key, signature, _ = page
        if answer is None or answer.superseded is not None:
            self.stored[key] = slim(signature)
        if answer is not None and answer.superseded is not None:
            self.stored.pop(answer.key, None)
        return answer


def slim(signature: Signature) -> Signature:
    """What SameUrl keeps of a stored copy: what the policies compare, its fingerprint and text hash."""
    return replace(signature, sketch=None)


def copy_match(key: str, signature: Signature, own: Signature) -> Match:
    """A page as a copy of the stored copy of its own URL, with the evidence between them (no
    similarity: the copy's sketch is not kept, and the URL, not the text, makes it a copy)."""
    bits = 0 if signature.simhash is None or own.simhash is None else hamming(signature.simhash, own.simhash)
    exact = signature.text_hash is not None and signature.text_hash == own.text_hash
    return Match(key, own.simhash, bits, exact=exact)
