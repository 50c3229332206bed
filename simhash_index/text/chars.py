"""The classes of a text's characters, all at once: word characters, decimal digits, Han, CJK.

Read from a table indexed by code point (NumPy) rather than by a regex scan, which tests each
character's Unicode properties one by one. The table is built from Python's own str predicates,
the ones the re module uses for \\w (str.isalnum() or "_") and \\d (str.isdecimal()), so the two agree
for the running Python's Unicode version. Spans are (start, end) arrays of character offsets.
"""

from __future__ import annotations

import unicodedata
from functools import cache

import numpy as np
import numpy.typing as npt

WORD, DIGIT, HAN, CJK = 1, 2, 4, 8
# Han: CJK unified ideographs and extension A, compatibility ideographs, extensions B-F
HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2EBEF))
# CJK: Han, kana and hangul syllables
CJK_RANGES = (*HAN_RANGES, (0x3040, 0x30FF), (0xAC00, 0xD7AF))
_BMP = 0x10000

Flags = npt.NDArray[np.uint8]


def _flags(char: str) -> int:
    code = ord(char)
    flags = _word_or_digit(char)
    flags |= HAN if any(low <= code <= high for low, high in HAN_RANGES) else 0
    return flags | (CJK if any(low <= code <= high for low, high in CJK_RANGES) else 0)


def _word_or_digit(char: str) -> int:
    return (WORD if char.isalnum() or char == "_" else 0) | (DIGIT if char.isdecimal() else 0)


@cache
def _table() -> Flags:
    """The flags of every code point below 0x10000, built once per process (some 20 ms)."""
    table = np.fromiter(map(_word_or_digit, map(chr, range(_BMP))), dtype=np.uint8, count=_BMP)
    for flag, ranges in ((HAN, HAN_RANGES), (CJK, CJK_RANGES)):
        for low, high in ranges:
            table[low : min(high, _BMP - 1) + 1] |= flag
    return table


def code_points(text: str) -> npt.NDArray[np.uint32]:
    """The text's code points (lone surrogates included), one array element each."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.uint32, copy=False)


def classes(points: npt.NDArray[np.uint32]) -> Flags:
    """The class flags (WORD | DIGIT | HAN | CJK) of each code point."""
    flags = _table()[np.minimum(points, _BMP - 1)]
    astral = np.flatnonzero(points >= _BMP)  # rare: looked up one by one
    if astral.size:
        flags[astral] = np.fromiter(map(_flags, map(chr, points[astral].tolist())), np.uint8, astral.size)
    return flags


def count(flags: Flags, flag: int) -> int:
    """How many characters have the flag."""
    return int(np.count_nonzero(flags & flag))


def word_runs(points: npt.NDArray[np.uint32], flags: Flags, *, join_numbers: bool = False) -> list[str]:
    r"""What the regex \w+ finds in the text (with `join_numbers`, \w+(?:(?<=\d)[.,](?=\d)\w+)*:
    a dot or comma between two decimal digits continues a word): every other character made a
    space, and the text split at spaces, in C."""
    word = (flags & WORD).astype(bool)
    if join_numbers and points.size > 2:
        digit = (flags & DIGIT).astype(bool)
        inner = points[1:-1]
        word[1:-1] |= digit[:-2] & digit[2:] & ((inner == 0x2E) | (inner == 0x2C))
    return text_of(np.where(word, points, np.uint32(0x20))).split()


def text_of(points: npt.NDArray[np.uint32]) -> str:
    """The text of these code points."""
    return points.astype("<u4", copy=False).tobytes().decode("utf-32-le", "surrogatepass")


def _nfkc_single(char: str) -> int:
    folded = unicodedata.normalize("NFKC", char)
    return ord(folded) if len(folded) == 1 else ord(char)


@cache
def _nfkc_table() -> npt.NDArray[np.uint32]:
    """Each BMP code point's NFKC form where that is one character, else the code point itself."""
    return np.fromiter(map(_nfkc_single, map(chr, range(_BMP))), dtype=np.uint32, count=_BMP)


def nfkc(text: str) -> str:
    """unicodedata.normalize("NFKC", text), faster on text with many compatibility characters
    (the full-width punctuation of Chinese text): each BMP character whose NFKC form is one
    character is replaced by it first, in NumPy, so that the quick check more often finds nothing
    left to do. The result is the same because a character and its NFKC form have the same NFKD
    (UAX #15), and NFKC is the canonical composition of the text's NFKD."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    points = code_points(text)
    mapped = np.where(points < _BMP, _nfkc_table()[np.minimum(points, _BMP - 1)], points)
    return unicodedata.normalize("NFKC", text_of(mapped))
