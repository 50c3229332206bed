"""The pages a crawl has passed on, by key: a URL met again with the same text is not passed on twice.

Scrapy fetches a URL again when asked to (a start URL is requested without its duplicate
filter, so a link back to it fetches it a second time; a spider's own `dont_filter`): the index
takes it for the page it stored, kept, and the storage pipelines after it would get it twice.
A page whose key the crawl passed on before, with the same normalised text, is a repeat;
with another text it is an update, decided (and passed on) as usual.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..fingerprinting.fingerprinter import Signature
from ..index.records import key_hash


@dataclass(frozen=True)
class Claim:
    """A page noted as passed on while it is decided: its key's hash, its text hash, and the text
    hash the key had before (None: the crawl had not passed it on)."""

    key: int
    text: int
    before: int | None


class PassedOn:
    """Each key's text hash when the crawl last passed it on (two 64-bit hashes a page: about
    120 bytes in a dict, as Scrapy's own duplicate filter keeps a fingerprint of each request)."""

    def __init__(self) -> None:
        self._texts: dict[int, int] = {}

    def again(self, key: str, signature: Signature) -> bool:
        """Whether the crawl passed this key on before, with this text."""
        return signature.text_hash is not None and self._texts.get(key_hash(key)) == signature.text_hash

    def claim(self, key: str, signature: Signature) -> Claim | None:
        """Note the page as passed on while it is decided, so that a copy met meanwhile is a
        repeat; `release` the claim when it is not passed on after all."""
        if signature.text_hash is None:
            return None
        hashed = key_hash(key)
        claim = Claim(hashed, signature.text_hash, self._texts.get(hashed))
        self._texts[hashed] = signature.text_hash
        return claim

    def release(self, claim: Claim | None) -> None:
        """The claimed page was not passed on (dropped): the key's text before it stands again,
        unless another page of the key was claimed since."""
        if claim is None or self._texts.get(claim.key) != claim.text:
            return
        if claim.before is None:
            del self._texts[claim.key]
        else:
            self._texts[claim.key] = claim.before
