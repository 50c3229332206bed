"""A chunk of pages decided in the writer, by the one duplicate rule (index/rule.py).

The writer reads the stored pages the chunk could see (those stored under its keys, those with
its text hashes, and those its Held finds near its fingerprints), decides each page in order
with rule.decide (a page sees the ones decided before it in the chunk), and turns the decisions
into what the script's `write` stores: 'S' a page stored (new, or its own row updated), 'D' a
duplicate logged, 'X' a stored page superseded by the page just stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .. import rule
from ..base import Keyed
from ..chunk import Chunk, Nearby
from ..records import Match, Policy
from . import reading
from .codec import hex_or_empty, page_args, similarity_text
from .following import Follower
from .server import Server

Ops = list[bytes | str]


@dataclass
class Decided:
    """The answers for a chunk of pages, and the script's writes that store them."""

    answers: list[Match | None] = field(default_factory=list)
    ops: Ops = field(default_factory=list)


def decide(server: Server, pages: Sequence[Keyed], follower: Follower, policy: Policy, moment: datetime) -> Decided:
    """Read what the pages could see, and decide them in order."""
    seen = Seen(server, pages, follower, policy, moment)
    decided = Decided()
    for position, (key, signature) in enumerate(pages):
        decision = rule.decide(
            signature,
            own=seen.own(key),
            same_text=seen.same_text(signature.text_hash),
            nearby=seen.nearby(position),
            policy=policy,
            moment=moment,
            key=key,
        )
        match = decision.match
        if match is not None and not decision.supersedes:
            decided.ops += ["D", key, hex_or_empty(signature.simhash), match.key, *_evidence(match)]
        elif decision.store:
            decided.ops += ["S", *page_args(key, signature)]
            seen.add(key, signature, position)
            if decision.supersedes:
                match, matched = decision.displaced()
                fingerprint = hex_or_empty(matched.signature.simhash)
                decided.ops += ["X", matched.key, key, fingerprint, *_evidence(match), match.superseded or ""]
                seen.supersede(matched.key)
        decided.answers.append(match)
    return decided


def _evidence(match: Match) -> list[str]:
    added = "" if match.added is None else str(match.added)
    return [str(match.distance), "1" if match.exact else "0", similarity_text(match.similarity), added]


class Seen(Chunk):
    """The stored pages the chunk can see, read up front, and the pages it stores as it goes."""

    def __init__(
        self, server: Server, pages: Sequence[Keyed], follower: Follower, policy: Policy, moment: datetime
    ) -> None:
        keys = [key for key, _ in pages]
        texts = sorted({s.text_hash for _, s in pages if s.text_hash is not None})
        near = [s.near_simhash for _, s in pages]
        found = iter(follower.near([fp for fp in near if fp is not None], policy.max_distance))
        near_ids = [next(found) if fp is not None else [] for fp in near]
        # the oldest page with a text is its match, unless the chunk hides it (superseded, or its own
        # key updated): without a window, that one of the oldest len(pages) + 1 is enough
        oldest = reading.ALL if policy.window is not None else len(pages) + 1
        stored = reading.read(server, keys, texts, {i for ids in near_ids for i in ids}, oldest=oldest)
        read = stored.pages
        by_key = {key: read[i] for key, i in zip(keys, stored.own) if i in read and read[i].key == key}
        by_text = {
            text_hash: [read[i] for i in found_ids if i in read and read[i].signature.text_hash == text_hash]
            for text_hash, found_ids in zip(texts, stored.texts)
        }
        super().__init__(pages, policy, moment, by_key=by_key, by_text=by_text)
        self.near = [Nearby([read[i] for i in found_ids if i in read]) for found_ids in near_ids]
