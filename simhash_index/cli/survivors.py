"""Which copy survives a run of `import` or `filter` (--prefer), and what became of every other.

Within one run (all its inputs, in order), a URL met again is another copy (capture) of the
same page: the survivor policy decides between it and the copy of that URL the run stored
(`SameUrl`); the other pages are decided by the index, whose policy may supersede a stored
page (index/prefer.py). `Fates` follows the run's answers to the end and says, for each page,
whether it survived the whole run, or which surviving page it is a copy of: what `filter`
writes in its second pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..dedup import Decision, Deduplicator
from ..fingerprinting.bits import hamming
from ..fingerprinting.fingerprinter import Signature
from ..fingerprinting.pages import PageSetup
from ..index import rule
from ..index.prefer import Prefer, supersedes
from ..index.records import Match
from .inputs import CorpusLine

PREFER_HELP = (
    "Which copy of a page survives: the first met, the longest (most words of main text), or the newest "
    "(its own date, else the capture's WARC-Date or Last-Modified, else the later in the input)."
)


def page_setup(setup: PageSetup, prefer: Prefer) -> PageSetup:
    """The page setup a policy needs: "newest" reads each page's own date."""
    return replace(setup, dates=prefer == "newest")


def with_evidence(signature: Signature, line: CorpusLine) -> Signature:
    """The page's Signature with its line's date (an archive's capture date, a corpus line's
    last_modified), for the "newest" policy."""
    return signature if line.modified is None else replace(signature, modified=line.modified)


class RunDeduplicator(Deduplicator):
    """The dedup core of one run: the index decides, except between copies of one URL (SameUrl)."""

    def __init__(self, *args: Any, prefer: Prefer, **options: Any) -> None:
        super().__init__(*args, **options)
        self.same_url = SameUrl(prefer)

    def _decide(self, batch: Sequence[Decision]) -> list[Match | None]:
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
        self, batch: Sequence[Decision], index: Callable[[Sequence[Decision]], list[Match | None]]
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

    def _learn(self, page: Decision, answer: Match | None) -> Match | None:
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


@dataclass
class _Stored:
    """A page stored during the run (or before it: `page` None), until superseded (`by`)."""

    key: str
    page: int | None
    by: _Stored | None = None

    def survivor(self) -> _Stored:
        found = self
        while found.by is not None:
            found = found.by
        return found


@dataclass(frozen=True)
class Copy:
    """A page that did not survive the run: the key of the page that did, that page's
    position among the run's pages (None: stored before the run), and the evidence of the
    decision that made it a copy."""

    duplicate_of: str
    survivor: int | None
    distance: int
    exact: bool


class Fates:
    """The run's rows (what `import` yields per page, in order) followed to the end: `copies()`
    gives each page that did not survive, the page it is a copy of at the end. A page
    superseded takes the page that superseded it as its survivor, and so do its copies."""

    def __init__(self) -> None:
        self.urls: list[str] = []  # of the pages added, in order
        self._stored: dict[str, _Stored] = {}
        self._copies: dict[int, tuple[_Stored, int, bool]] = {}

    def add(self, position: int, row: dict[str, Any]) -> None:
        """The row of the page at `position` (counted from 0 over all the run's pages)."""
        url, outcome = row["url"], row["outcome"]
        self.urls.append(url)
        evidence = (row.get("distance") or 0, bool(row.get("exact")))
        if outcome == "dropped":
            self._copies[position] = (self._node(row["duplicate_of"]), *evidence)
            return
        if outcome != "kept":
            return
        node = self._stored.get(url)
        if node is not None and node.by is None:  # its row follows the new copy
            if node.page is not None:
                self._copies[node.page] = (node, *evidence)
            node.page = position
        else:
            node = self._stored[url] = _Stored(url, position)
        gone = row.get("supersedes")
        if gone is not None and gone != url:
            old = self._node(gone)
            old.by = node
            if old.page is not None:
                self._copies[old.page] = (old, *evidence)

    def _node(self, key: str) -> _Stored:
        node = self._stored.get(key)
        if node is None:  # a page stored before the run
            node = self._stored[key] = _Stored(key, None)
        return node

    def copies(self) -> dict[int, Copy]:
        """{position: Copy} of every page that did not survive."""
        found = {}
        for position, (node, distance, exact) in self._copies.items():
            survivor = node.survivor()
            if survivor.page != position:
                found[position] = Copy(survivor.key, survivor.page, distance, exact)
        return found
