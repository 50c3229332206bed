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
from collections.abc import Callable
from typing import Any, Literal, cast

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_TOKEN = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W{_HAN}]+)")
_TOKEN_JOINED = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W{_HAN}]+(?:(?<=\d)[.,](?=\d)[^\W{_HAN}]+)*)")
_HAS_HAN = re.compile(f"[{_HAN}]")
_SPACES = re.compile(r"\s+")
_CJK = _HAN + "\u3040-\u30ff\uac00-\ud7af"  # Han, kana, hangul
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_SPLIT = re.compile(f"([{_CJK}]+)")
_WORD = re.compile(r"\w+")
_WORD_JOINED = re.compile(r"\w+(?:(?<=\d)[.,](?=\d)\w+)*")
_NUMBER = re.compile(r"[\d.,]+")
_DIGIT = re.compile(r"\d")  # a decimal digit of any script
CJK_PAGE_SHARE = 0.05  # a page is CJK when at least this share of its word characters are

_jieba_lock = threading.Lock()
_jieba: Any = None


def _jieba_cut() -> Callable[..., list[str]]:
    """jieba's cutter, initialised once per process with its log quiet."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return cast("Callable[..., list[str]]", _jieba.lcut)


def normalize(text: str, *, form: str | None = "NFKC", casefold: bool = True) -> str:
    """Unicode-normalise, case-fold and collapse white space."""
    if form:
        text = unicodedata.normalize(cast(Literal["NFC", "NFD", "NFKC", "NFKD"], form), text)
    if casefold:
        text = text.casefold()
    return _SPACES.sub(" ", text).strip()


def has_han(text: str) -> bool:
    """Whether the text contains any Han (Chinese) character."""
    return _HAS_HAN.search(text) is not None


def number_shapes(text: str) -> str:
    """The text with every decimal digit replaced by 0: numbers count by their shape
    (1.7.4 and 2.0.1 are both 0.0.0), as in wordfreq's frequency tables."""
    return _DIGIT.sub("0", text)


def is_number(token: str) -> bool:
    """Whether a token is only digits, with dots or commas between them."""
    return _NUMBER.fullmatch(token) is not None and token[0].isdecimal()


def words(text: str, *, join_numbers: bool = False) -> list[str]:
    """Unicode word-character runs; Han characters one per token."""
    tokens: list[str] = []
    for match in (_TOKEN_JOINED if join_numbers else _TOKEN).finditer(text):
        run = match.group("han")
        tokens.extend(run if run else [match.group("word")])
    return tokens


class _Segmentations(dict[str, tuple[str, ...]]):
    """Han run -> jieba's words for it, remembered: pages of one site repeat most of their
    runs (navigation, footers, shared paragraphs), and jieba is the costliest step of a
    fingerprint. Emptied when full; long runs, rarely repeated, are not kept."""

    __slots__ = ()
    size = 1 << 16
    longest = 256

    def __missing__(self, run: str) -> tuple[str, ...]:
        words = tuple(_jieba_cut()(run, HMM=True))
        if len(run) <= self.longest:
            if len(self) >= self.size:
                self.clear()
            self[run] = words
        return words


_SEGMENTED = _Segmentations()


def jieba_words(text: str, *, join_numbers: bool = False) -> list[str]:
    """Words, with each run of Han characters segmented by jieba."""
    tokens: list[str] = []
    for match in (_TOKEN_JOINED if join_numbers else _TOKEN).finditer(text):
        run = match.group("han")
        if run:
            tokens.extend(_SEGMENTED[run])
        else:
            tokens.append(match.group("word"))
    return tokens


def auto_words(text: str, *, join_numbers: bool = False) -> list[str]:
    """jieba for text with Chinese in it, plain Unicode words otherwise."""
    if has_han(text):
        return jieba_words(text, join_numbers=join_numbers)
    return words(text, join_numbers=join_numbers)


def cjk_bigrams(text: str, *, join_numbers: bool = False) -> list[str]:
    """Unicode words; runs of CJK characters become overlapping character bigrams."""
    tokens: list[str] = []
    for word in (_WORD_JOINED if join_numbers else _WORD).findall(text):
        if not _CJK_CHAR.search(word):
            tokens.append(word)
            continue
        for i, part in enumerate(_CJK_SPLIT.split(word)):
            if not part:
                continue
            if i % 2 == 0 or len(part) == 1:  # latin letters or digits glued to CJK characters
                tokens.append(part)
            else:
                tokens.extend(part[j : j + 2] for j in range(len(part) - 1))
    return tokens


def is_cjk_text(text: str) -> bool:
    """Whether CJK characters make up at least CJK_PAGE_SHARE of the word characters."""
    word_chars = sum(len(w) for w in _WORD.findall(text))
    return word_chars > 0 and len(_CJK_CHAR.findall(text)) >= CJK_PAGE_SHARE * word_chars


def shingles(normalized_text: str, *, words_n: int = 3, chars_n: int = 5) -> set[str]:
    """The shingle set a page is compared by: character n-shingles of CJK text (spaces
    removed), word n-shingles otherwise. A text shorter than n is one shingle."""
    if is_cjk_text(normalized_text):
        chars = normalized_text.replace(" ", "")
        return {chars[i : i + chars_n] for i in range(max(1, len(chars) - chars_n + 1))}
    tokens = _WORD.findall(normalized_text)
    return {" ".join(tokens[i : i + words_n]) for i in range(max(1, len(tokens) - words_n + 1))}


TOKENIZERS = {"auto": auto_words, "jieba": jieba_words, "words": words, "bigrams": cjk_bigrams}
