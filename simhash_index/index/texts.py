"""Pages' texts, kept compressed when the index is opened with `keep_texts` (`?texts=1`,
SIMHASH_KEEP_TEXTS), so that `explain` and the HTML report can show what differs between two
pages, word by word. zlib at level 6: a few hundred bytes to a few KB a page.
"""

from __future__ import annotations

import difflib
import zlib
from dataclasses import dataclass

LEVEL = 6
MAX_DIFF_WORDS = 400  # words of a diff shown, at most


def pack(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8", "surrogatepass"), LEVEL)


def unpack(data: bytes) -> str:
    return zlib.decompress(data).decode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class TextSizes:
    """How many texts an index keeps, and their compressed bytes."""

    texts: int
    compressed_bytes: int

    @property
    def bytes_per_page(self) -> float:
        return self.compressed_bytes / self.texts if self.texts else 0.0


@dataclass(frozen=True)
class Piece:
    """A run of words of a diff: "same", "removed" (only in the first text) or "added"."""

    kind: str
    words: str


def word_diff(a: str, b: str, *, context: int = 8, limit: int = MAX_DIFF_WORDS) -> list[Piece]:
    """What changes the words of `a` into those of `b`: removed and added runs, with up to
    `context` words of what they share around each (longer shared runs are elided as "…");
    at most `limit` words in all.

    >>> [(p.kind, p.words) for p in word_diff("the cat sat on the mat", "the dog sat on the mat", context=1)]
    [('same', 'the'), ('removed', 'cat'), ('added', 'dog'), ('same', 'sat …')]
    """
    first, second = a.split(), b.split()
    pieces: list[Piece] = []
    shown = 0
    matcher = difflib.SequenceMatcher(None, first, second, autojunk=False)
    opcodes = matcher.get_opcodes()
    for position, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if shown >= limit:
            pieces.append(Piece("same", "…"))
            break
        if tag == "equal":
            words = first[i1:i2]
            keep_head = context if position > 0 else 0
            keep_tail = context if position < len(opcodes) - 1 else 0
            if len(words) <= keep_head + keep_tail:
                text = " ".join(words)
            else:
                text = " ".join([*words[:keep_head], "…", *words[len(words) - keep_tail :]])
            pieces.append(Piece("same", text))
            shown += min(len(words), 2 * context)
            continue
        if i2 > i1:
            pieces.append(Piece("removed", " ".join(first[i1:i2][: limit - shown])))
            shown += i2 - i1
        if j2 > j1:
            pieces.append(Piece("added", " ".join(second[j1:j2][: max(0, limit - shown)])))
            shown += j2 - j1
    return pieces


def diff_text(pieces: list[Piece]) -> str:
    """A diff on one line: [-removed-] {+added+} (as `git diff --word-diff`)."""
    marks = {"same": "{}", "removed": "[-{}-]", "added": "{{+{}+}}"}
    return " ".join(marks[p.kind].format(p.words) for p in pieces)
