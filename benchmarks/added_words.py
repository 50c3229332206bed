"""What one page adds to another: the words of its main text that the other lacks.

The truth behind "a page that adds real content to the stored copy is not its duplicate"
(issue 48), for the versioned-docs corpus (tools/versioned_corpus.py) and its scorer
(versioned_score.py). Both texts are normalised as the index normalises them
(Fingerprinter.normalize) and cut into units: words (runs of word characters) in most
languages; in a CJK text (tokens.is_cjk_text: the texts the index shingles by characters),
each CJK character is a unit, and each run of other word characters. Punctuation and symbols
are no units: a table's pipes or a heading's pilcrow add nothing.

The units of A are diffed against B's (difflib.SequenceMatcher, autojunk off). What B adds to
A is the units of B in the `insert` and `replace` blocks whose B side is longer than REWORDING
units (a renamed term, a short rewording or a word inserted here and there adds nothing; a
rewritten sentence or a new section adds its words), less the units of B that A holds
already elsewhere: a section that moved, or a sentence repeated from another part of the
page, is not new, and text B repeats (a note under each option) is new once. A unit is held
already when a run of MOVED units around it (it included) occurs in A or earlier in B.

>>> added("the quick brown fox", "the quick brown fox jumps over the lazy dog").b_adds
5
>>> added("install it with pip", "install it with uv").b_adds
0
>>> note = " changed in version 2.2: support added for path-like values."
>>> added("libfoo_a: a. libfoo_b: b.", "libfoo_a: a." + note + " libfoo_b: b." + note).b_adds
11
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from simhash_index.fingerprinting.fingerprinter import DEFAULT
from simhash_index.text.chars import CJK_RANGES
from simhash_index.text.tokens import is_cjk_text

REWORDING = 3  # a run of at most this many units inserted, removed or replaced adds nothing
MOVED = 10  # a run this long that the other text holds already is moved or repeated text
ADDS = 25  # a page that adds this many units or more adds real content
NOTHING = 3  # at most this many: it adds nothing

_CJK = "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK_RANGES)
_UNITS = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class Added:
    """Units A adds to B and units B adds to A; `cjk`: CJK characters counted one by one."""

    a_adds: int
    b_adds: int
    cjk: bool


def units(normalized_text: str) -> list[str]:
    """A normalised text's units: CJK characters and other words in a CJK text, else words."""
    return (_UNITS if is_cjk_text(normalized_text) else _WORDS).findall(normalized_text)


def added(a: str, b: str, *, normalized: bool = False, moved: int = MOVED) -> Added:
    """What each of two texts adds to the other (the module's definition; `moved` 0: count
    moved and repeated text as new too)."""
    if not normalized:
        a, b = DEFAULT.normalize(a), DEFAULT.normalize(b)
    cjk = is_cjk_text(a) or is_cjk_text(b)
    pattern = _UNITS if cjk else _WORDS
    return added_units(pattern.findall(a), pattern.findall(b), cjk, moved)


def added_units(a: list[str], b: list[str], cjk: bool = False, moved: int = MOVED) -> Added:
    """added() of two unit lists."""
    if a == b:
        return Added(0, 0, cjk)
    a_new: list[tuple[int, int]] = []
    b_new: list[tuple[int, int]] = []
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 - i1 > REWORDING:  # a delete, or a replace's A side
            a_new.append((i1, i2))
        if j2 - j1 > REWORDING:
            b_new.append((j1, j2))
    return Added(_new(a, a_new, b, moved), _new(b, b_new, a, moved), cjk)


def _new(units_: list[str], spans: list[tuple[int, int]], other: list[str], moved: int) -> int:
    """How many units of the spans are new: not held already (a run of `moved` units around
    them occurs in the other text, or earlier in this one: a note repeated under each option
    is new once)."""
    if not spans:
        return 0
    covered = bytearray(len(units_))
    if moved:
        held = {tuple(other[k : k + moved]) for k in range(max(1, len(other) - moved + 1))}
        for k in range(max(0, len(units_) - moved + 1)):
            window = tuple(units_[k : k + moved])
            if window in held:
                covered[k : k + moved] = b"\x01" * moved
            held.add(window)
    return sum(1 for i1, i2 in spans for k in range(i1, i2) if not covered[k])


def category(adds: int) -> str:
    """'adds' (>= ADDS units), 'nothing' (<= NOTHING) or 'some'."""
    return "adds" if adds >= ADDS else "nothing" if adds <= NOTHING else "some"
