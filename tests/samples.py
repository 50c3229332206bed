"""Texts whose signatures the evidence tests compare: a text, a near copy of it, another one."""

from __future__ import annotations

from simhash_index.fingerprinting.fingerprinter import DEFAULT, Signature

WORDS = [f"word{i:03d}" for i in range(300)]
TEXT = " ".join(WORDS)
NEAR_TEXT = " ".join([*WORDS[:-3], "changed", "words", "here"])
OTHER = " ".join(f"other{i:03d}" for i in range(300))
KEPT = "https://example.com/kept"  # the page TEXT is stored under


def signature(text: str) -> Signature:
    """The default Fingerprinter's signature of a text that has one."""
    found = DEFAULT.signature(text)
    assert found is not None
    return found
