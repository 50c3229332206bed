"""A text's main language, and the stop words of that language (for `stopwords="language"`).

Chinese, Japanese and Korean are told by script: a CJK text (tokens.is_cjk_text) with kana is
Japanese, with hangul Korean, else Chinese. A text whose first SAMPLE characters are at least
ENGLISH_SHARE built-in English stop words is English, which spares most English pages the
identifier's cost; other texts go to py3langid (its 97-language model) on their first SAMPLE
characters. The stop words of a language are its TOP most frequent words in wordfreq's
tables, normalised like the text: short, like the built-in lists. English and Chinese keep the
built-in lists (stopwords.ALL), which were tuned on the evaluation corpus, and every text gets
those too, so a page that mixes its own language with English (code, untranslated paragraphs)
loses both languages' function words. A language wordfreq has no table for gets only the
built-in lists. Japanese and Korean text is cut into character bigrams (tokens.cjk_bigrams;
words in other scripts, code and numbers stay whole), not into jieba's Chinese words: they
measured better than fugashi's and kiwipiepy's morphemes on the development corpus, with no
dictionary to load (docs/accuracy.md).
"""

from __future__ import annotations

import re
import threading
from functools import cache
from importlib import metadata
from typing import Any

from ..errors import install_extra
from . import stopwords as _stopwords
from .frequencies import WORDLIST, require_wordfreq
from .tokens import is_cjk_text, normalize

SAMPLE = 2000  # characters identified: enough for py3langid on this corpus (docs/accuracy.md)
TOP = 100
ENGLISH_SHARE = 0.25
BUILTIN = ("en", "zh")  # languages whose built-in list is the whole of their stop words
BIGRAMS = frozenset({"ja", "ko"})  # cut into character bigrams, not jieba's words (docs/accuracy.md)
_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af]")
_WORD = re.compile(r"\w+")
_lock = threading.Lock()
_identifier: Any = None


def _classify(text: str) -> str:
    global _identifier
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                _identifier = LanguageIdentifier.from_pickled_model(MODEL_FILE)
    return str(_identifier.classify(text)[0])


def identify(normalized_text: str) -> str:
    """The ISO 639-1 code of a normalised text's main language."""
    if is_cjk_text(normalized_text):
        if _KANA.search(normalized_text):
            return "ja"
        return "ko" if _HANGUL.search(normalized_text) else "zh"
    if looks_english(normalized_text):
        return "en"
    return _classify(normalized_text[:SAMPLE])


def looks_english(normalized_text: str) -> bool:
    """Whether ENGLISH_SHARE of the words in the first SAMPLE characters are English stop words."""
    words = _WORD.findall(normalized_text[:SAMPLE])
    return bool(words) and sum(word in _stopwords.ENGLISH for word in words) >= ENGLISH_SHARE * len(words)


@cache
def stop_words(language: str) -> frozenset[str]:
    """The built-in lists and, but for English and Chinese, the language's TOP commonest words."""
    if language in BUILTIN:
        return _stopwords.ALL
    wordfreq = require_wordfreq()
    if language not in wordfreq.available_languages(WORDLIST):
        return _stopwords.ALL
    return _stopwords.ALL | frozenset(normalize(word) for word in wordfreq.top_n_list(language, TOP, WORDLIST))


def scheme() -> str:
    """The libraries and versions that decide a text's language and stop words."""
    return (
        f"py3langid-{_version('py3langid')}+wordfreq-{_version('wordfreq')}-{WORDLIST}-top{TOP}+builtin"
        f"+{','.join(sorted(BIGRAMS))}:bigrams"
    )


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        raise ImportError(f"stopwords='language' needs {package}: {install_extra('languages')}") from None
