"""Text normalisation and tokenisation: Unicode words, and jieba for Chinese.

Runs of Han characters go to jieba; everything else is split into Unicode
word-character runs. Mixed text gets both, in order. With `join_numbers`, a
dot or comma between two digits does not split a word (1.7.0, 3,000, v2.1),
as in Unicode word segmentation (UAX #29).
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Literal, NamedTuple, cast

import numpy as np

from . import chars
from .segmenter import HanSegmenter

_HAN = "".join(f"{chr(low)}-{chr(high)}" for low, high in chars.HAN_RANGES)
_JOINED = rf"(?:(?<=\d)[.,](?=\d)[^\W{_HAN}]+)*"  # a dot or comma between digits continues a word
# a Han character alone, or a run of other word characters
_CHAR_OR_WORD = re.compile(rf"[{_HAN}]|[^\W{_HAN}]+")
_CHAR_OR_WORD_JOINED = re.compile(rf"[{_HAN}]|[^\W{_HAN}]+{_JOINED}")
# a run of Han characters, or a run of other word characters
_RUN = re.compile(rf"[{_HAN}]+|[^\W{_HAN}]+")
_RUN_JOINED = re.compile(rf"[{_HAN}]+|[^\W{_HAN}]+{_JOINED}")
_HAS_HAN = re.compile(f"[{_HAN}]")
_CJK = "".join(f"{chr(low)}-{chr(high)}" for low, high in chars.CJK_RANGES)  # Han, kana, hangul
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_SPLIT = re.compile(f"([{_CJK}]+)")
_WORD = re.compile(r"\w+")
_WORD_JOINED = re.compile(r"\w+(?:(?<=\d)[.,](?=\d)\w+)*")
_NUMBER = re.compile(r"\d[\d.,]*")  # \d is str.isdecimal
CJK_PAGE_SHARE = 0.05  # a page is CJK when at least this share of its word characters are

_jieba_lock = threading.Lock()
_segmenter: HanSegmenter | None = None


def _han_cut() -> Callable[[str], list[str]]:
    """jieba's accurate-mode cut (text.segmenter), set up once per process with jieba's log quiet."""
    global _segmenter
    if _segmenter is None:
        with _jieba_lock:
            if _segmenter is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _segmenter = HanSegmenter(jieba)
    return _segmenter.cut


def normalize(text: str, *, form: str | None = "NFKC", casefold: bool = True) -> str:
    """Unicode-normalise, case-fold and collapse white space."""
    if form == "NFKC":
        text = chars.nfkc(text)
    elif form:
        text = unicodedata.normalize(cast(Literal["NFC", "NFD", "NFKD"], form), text)
    if casefold:
        text = text.casefold()
    return " ".join(text.split())  # str.split's white space is the regex \s


def word_count(normalized_text: str) -> int:
    """The number of words (runs without white space) of a normalised text."""
    return normalized_text.count(" ") + 1 if normalized_text else 0


def has_han(text: str) -> bool:
    """Whether the text contains any Han (Chinese) character."""
    return _HAS_HAN.search(text) is not None


def number_shapes(text: str) -> str:
    """The text with every decimal digit replaced by 0: numbers count by their shape
    (1.7.4 and 2.0.1 are both 0.0.0), as in wordfreq's frequency tables."""
    points = chars.code_points(text)
    digits = (chars.classes(points) & chars.DIGIT).astype(bool)
    if not digits.any():
        return text
    return chars.text_of(np.where(digits, np.uint32(0x30), points))


def is_number(token: str) -> bool:
    """Whether a token is only digits, with dots or commas between them."""
    return _NUMBER.fullmatch(token) is not None


def number_match(token: str) -> re.Match[str] | None:
    """is_number as a regex match, for filtering token lists in C (itertools.filterfalse)."""
    return _NUMBER.fullmatch(token)


def words(text: str, *, join_numbers: bool = False) -> list[str]:
    """Unicode word-character runs; Han characters one per token."""
    points = chars.code_points(text)
    flags = chars.classes(points)
    if chars.count(flags, chars.HAN):
        return (_CHAR_OR_WORD_JOINED if join_numbers else _CHAR_OR_WORD).findall(text)
    return chars.word_runs(points, flags, join_numbers=join_numbers)


class _Memo(dict[str, tuple[str, ...]]):
    """token -> its parts, computed on first use: pages of one site repeat most of their Han runs
    (navigation, footers, shared paragraphs), and cutting them is the costliest step of a
    fingerprint. Emptied when full; long tokens, rarely repeated, are not kept."""

    __slots__ = ("cut",)
    size = 1 << 16
    longest = 256

    def __init__(self, cut: Callable[[str], tuple[str, ...]]) -> None:
        super().__init__()
        self.cut = cut

    def __missing__(self, token: str) -> tuple[str, ...]:
        parts = self.cut(token)
        if len(token) <= self.longest:
            if len(self) >= self.size:
                self.clear()
            self[token] = parts
        return parts

    def cut_all(self, tokens: list[str]) -> list[str]:
        """The parts of every token, in order (dict look-ups in C; `cut` only for new tokens)."""
        return list(chain.from_iterable(map(self.__getitem__, tokens)))


def _segment(run: str) -> tuple[str, ...]:
    """jieba's words of a Han run; any other token is a word by itself."""
    return tuple(_han_cut()(run)) if _HAS_HAN.match(run) else (run,)


_SEGMENTED = _Memo(_segment)


def jieba_words(text: str, *, join_numbers: bool = False) -> list[str]:
    """Words, with each run of Han characters segmented by jieba."""
    return _SEGMENTED.cut_all((_RUN_JOINED if join_numbers else _RUN).findall(text))


def auto_words(text: str, *, join_numbers: bool = False) -> list[str]:
    """jieba for text with Chinese in it, plain Unicode words otherwise."""
    points = chars.code_points(text)
    flags = chars.classes(points)
    if chars.count(flags, chars.HAN):
        return jieba_words(text, join_numbers=join_numbers)
    return chars.word_runs(points, flags, join_numbers=join_numbers)


def _bigrams(word: str) -> tuple[str, ...]:
    """A word's runs of CJK characters as overlapping character bigrams, other runs whole."""
    if not _CJK_CHAR.search(word):
        return (word,)
    parts: list[str] = []
    for i, part in enumerate(_CJK_SPLIT.split(word)):
        if not part:
            continue
        if i % 2 == 0 or len(part) == 1:  # latin letters or digits glued to CJK characters
            parts.append(part)
        else:
            parts.extend(part[j : j + 2] for j in range(len(part) - 1))
    return tuple(parts)


_BIGRAMS = _Memo(_bigrams)


def cjk_bigrams(text: str, *, join_numbers: bool = False) -> list[str]:
    """Unicode words; runs of CJK characters become overlapping character bigrams."""
    return _BIGRAMS.cut_all((_WORD_JOINED if join_numbers else _WORD).findall(text))


def is_cjk_text(text: str) -> bool:
    """Whether CJK characters make up at least CJK_PAGE_SHARE of the word characters."""
    return _is_cjk(chars.classes(chars.code_points(text)))


def _is_cjk(flags: chars.Flags) -> bool:
    word_chars = chars.count(flags, chars.WORD)
    return word_chars > 0 and chars.count(flags, chars.CJK) >= CJK_PAGE_SHARE * word_chars


def shingle_list(normalized_text: str, *, words_n: int = 3, chars_n: int = 5) -> Iterable[str]:
    """The shingles of `shingles`, in text order, repeats included (built in C, not one by one)."""
    return shingling(normalized_text, words_n=words_n, chars_n=chars_n).shingles


class Shingling(NamedTuple):
    """A text's shingles: `size` tokens each, characters (`characters`: CJK text) or words."""

    size: int
    characters: bool
    shingles: Iterable[str]


def shingling(normalized_text: str, *, words_n: int = 3, chars_n: int = 5) -> Shingling:
    """The shingles of shingle_list, and what they are made of: `chars_n` characters of CJK
    text, else `words_n` words."""
    points = chars.code_points(normalized_text)
    flags = chars.classes(points)
    cjk = _is_cjk(flags)
    if cjk:
        tokens, n, glue = list(normalized_text.replace(" ", "")), chars_n, ""
    else:
        tokens, n, glue = chars.word_runs(points, flags), words_n, " "
    if len(tokens) <= n:
        return Shingling(n, cjk, [glue.join(tokens)])
    return Shingling(n, cjk, map(glue.join, zip(*(tokens[i:] for i in range(n)))))


def shingles(normalized_text: str, *, words_n: int = 3, chars_n: int = 5) -> set[str]:
    """The shingle set a page is compared by: character n-shingles of CJK text (spaces
    removed), word n-shingles otherwise. A text shorter than n is one shingle."""
    return set(shingle_list(normalized_text, words_n=words_n, chars_n=chars_n))


TOKENIZERS = {"auto": auto_words, "jieba": jieba_words, "words": words, "bigrams": cjk_bigrams}
