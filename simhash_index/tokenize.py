"""Text normalisation and tokenisation: Unicode words, and jieba for Chinese.

Runs of Han characters go to jieba; everything else is split into Unicode
word-character runs. Mixed text gets both, in order.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_TOKEN = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W{_HAN}]+)")
_HAS_HAN = re.compile(f"[{_HAN}]")
_SPACES = re.compile(r"\s+")

_jieba_lock = threading.Lock()
_jieba = None


def _jieba_cut():
    """jieba's cutter, initialised once per process with its log quiet."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return _jieba.lcut


def normalize(text: str, *, form: str | None = "NFKC", casefold: bool = True) -> str:
    """Unicode-normalise, case-fold and collapse white space."""
    if form:
        text = unicodedata.normalize(form, text)
    if casefold:
        text = text.casefold()
    return _SPACES.sub(" ", text).strip()


def has_han(text: str) -> bool:
    """Whether the text contains any Han (Chinese) character."""
    return _HAS_HAN.search(text) is not None


def words(text: str) -> list[str]:
    """Unicode word-character runs; Han characters one per token."""
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        run = match.group("han")
        tokens.extend(run if run else [match.group("word")])
    return tokens


def jieba_words(text: str) -> list[str]:
    """Words, with each run of Han characters segmented by jieba."""
    cut = None
    tokens: list[str] = []
    for match in _TOKEN.finditer(text):
        run = match.group("han")
        if run:
            cut = cut or _jieba_cut()
            tokens.extend(cut(run, HMM=True))
        else:
            tokens.append(match.group("word"))
    return tokens


def auto_words(text: str) -> list[str]:
    """jieba for text with Chinese in it, plain Unicode words otherwise."""
    return jieba_words(text) if has_han(text) else words(text)



TOKENIZERS = {"auto": auto_words, "jieba": jieba_words, "words": words}
