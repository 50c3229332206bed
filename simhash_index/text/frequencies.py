"""Inverse document frequencies from general word-frequency tables, for TF-IDF weighting.

Han words take jieba's IDF table (ln N/df over jieba's Chinese corpus, its median for a
word it does not list). Other words take ln(1/f), f being the word's frequency in
running text of the given languages in wordfreq's tables (`small`: every word at least
one in a million); a word none of them lists is taken to be as rare as their rarest.
Multi-digit numbers are looked up by shape (2023 as 0000), as wordfreq stores them.
The tables are read once per process.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from ..errors import install_extra

WORDLIST = "small"
_MULTI_DIGIT = re.compile(r"\d[\d.,]+")
_DIGIT = re.compile(r"\d")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")


class IdfTable:
    """word -> IDF: jieba's for Han words, wordfreq's for the others (see the module docstring)."""

    __slots__ = ("_table", "han_default", "languages", "other_default")

    def __init__(self, languages: tuple[str, ...]) -> None:
        self.languages = languages
        jieba_table, self.han_default = jieba_idf()
        frequencies = _merged_frequencies(languages)
        rarest = min(frequencies.values(), default=1.0)
        self.other_default = math.log(1 / rarest)
        table = {word: math.log(1 / f) for word, f in frequencies.items() if not _HAN.search(word)}
        table.update(jieba_table)
        self._table = table

    def get(self, word: str) -> float:
        """The IDF of a (normalised) word."""
        idf = self._table.get(word)
        if idf is not None:
            return idf
        if _HAN.search(word):
            return self.han_default
        if any(c.isdecimal() for c in word):
            return self._table.get(_MULTI_DIGIT.sub(_zeros, word), self.other_default)
        return self.other_default


def _zeros(match: re.Match[str]) -> str:
    return _DIGIT.sub("0", match.group())


@lru_cache(maxsize=8)
def idf_table(languages: tuple[str, ...] = ("en",)) -> IdfTable:
    """The IDF table for words of these wordfreq languages (and Han words), built once."""
    return IdfTable(languages)


def _merged_frequencies(languages: Iterable[str]) -> dict[str, float]:
    """Each word's highest frequency over the languages: common in any of them is common."""
    merged: dict[str, float] = {}
    for language in languages:
        for word, f in word_frequencies(language).items():
            if f > merged.get(word, 0.0):
                merged[word] = f
    return merged


@lru_cache(maxsize=8)
def word_frequencies(language: str) -> dict[str, float]:
    """wordfreq's `small` table of a language: word -> frequency in running text."""
    check_languages((language,))
    return dict(require_wordfreq().get_frequency_dict(language, WORDLIST))


def check_languages(languages: Iterable[str]) -> None:
    """Refuse a language wordfreq has no table for, naming the ones it has."""
    available = require_wordfreq().available_languages(WORDLIST)
    for language in languages:
        if language not in available:
            raise ValueError(
                f"idf_languages: wordfreq has no {WORDLIST!r} table for {language!r}; "
                f"use language codes from {sorted(available)}"
            )


def require_wordfreq() -> ModuleType:
    """The wordfreq module, or an ImportError that says how to install it."""
    try:
        import wordfreq
    except ImportError:
        raise ImportError(f"weighting='tfidf' without an idf table needs wordfreq: {install_extra('tfidf')}") from None
    return wordfreq


@lru_cache(maxsize=1)
def jieba_idf() -> tuple[dict[str, float], float]:
    """jieba's IDF table and its median, read once (jieba.analyse leaves the file open)."""
    import jieba

    path = Path(jieba.__file__).parent / "analyse" / "idf.txt"
    table = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            word, _, value = line.strip().rpartition(" ")
            if word:
                table[word] = float(value)
    values = sorted(table.values())
    return table, values[len(values) // 2]
