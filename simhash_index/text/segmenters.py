"""Word segmenters for Japanese and Korean, for `stopwords="language"` (the `languages` extra).

Japanese has no spaces between words: fugashi (MeCab) with the unidic-lite dictionary cuts each
run of Japanese characters into words. Korean separates words by spaces, but each carries its
particles and endings (컴포넌트를, 컴포넌트가): kiwipiepy cuts each into morphemes. Both drop
what their part-of-speech tags call function morphemes (particles, auxiliaries, endings,
punctuation), the stop words of these languages. Text in other scripts (code, English, numbers)
is split into Unicode words as everywhere else. Runs are remembered, as jieba's are
(tokens._Segmentations): a site's pages repeat most of theirs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from importlib import metadata
from typing import Any

from ..errors import install_extra

_JAPANESE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30fc]")
_HANGUL = re.compile("[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_WORD = re.compile(r"\w+")
_WORD_JOINED = re.compile(r"\w+(?:(?<=\d)[.,](?=\d)\w+)*")
# unidic's first part-of-speech level: particles, auxiliary verbs, symbols, punctuation, blanks
_JAPANESE_FUNCTION = frozenset({"助詞", "助動詞", "補助記号", "記号", "空白"})
# Sejong tags: particles (J*), endings (E*), affixes (XP*, XS*), punctuation and symbols (SF...SW)
_KOREAN_FUNCTION = ("J", "E", "XP", "XS", "SF", "SP", "SS", "SE", "SO", "SW")
PACKAGES = {"ja": ("fugashi", "unidic-lite"), "ko": ("kiwipiepy",)}
LANGUAGES = frozenset(PACKAGES)

_lock = threading.Lock()
_analysers: dict[str, Any] = {}


def _analyser(language: str) -> Any:
    """fugashi's Tagger or kiwipiepy's Kiwi, created once per process."""
    analyser = _analysers.get(language)
    if analyser is None:
        with _lock:
            analyser = _analysers.get(language)
            if analyser is None:
                analyser = _analysers[language] = _load(language)
    return analyser


def _load(language: str) -> Any:
    try:
        if language == "ja":
            import fugashi
            import unidic_lite

            return fugashi.Tagger(f"-d {unidic_lite.DICDIR}")
        from kiwipiepy import Kiwi

        # num_workers=-1: no threads of its own (the caller runs pages in its threads); no typo or
        # multi-word dictionaries: they slow the load and change nothing on edited text
        return Kiwi(num_workers=-1, load_typo_dict=False, load_multi_dict=False)
    except ImportError:
        raise ImportError(
            f"segmenting {language!r} text needs {' and '.join(PACKAGES[language])}: {install_extra('languages')}"
        ) from None


def _japanese(run: str) -> tuple[str, ...]:
    return tuple(word.surface for word in _analyser("ja")(run) if word.feature.pos1 not in _JAPANESE_FUNCTION)


def _korean(run: str) -> tuple[str, ...]:
    return tuple(token.form for token in _analyser("ko").tokenize(run) if not token.tag.startswith(_KOREAN_FUNCTION))


class _Segmentations(dict[str, tuple[str, ...]]):
    """run -> its content words, remembered (emptied when full; long runs are not kept)."""

    __slots__ = ("_segment",)
    size = 1 << 16
    longest = 256

    def __init__(self, segment: Callable[[str], tuple[str, ...]]) -> None:
        super().__init__()
        self._segment = segment

    def __missing__(self, run: str) -> tuple[str, ...]:
        words = self._segment(run)
        if len(run) <= self.longest:
            if len(self) >= self.size:
                self.clear()
            self[run] = words
        return words


_SEGMENTED = {"ja": _Segmentations(_japanese), "ko": _Segmentations(_korean)}
_SCRIPT = {"ja": _JAPANESE, "ko": _HANGUL}


def segment(text: str, language: str, *, join_numbers: bool = False) -> list[str]:
    """The content words of a normalised Japanese ("ja") or Korean ("ko") text: each Unicode
    word with that language's characters in it segmented, the others kept whole."""
    segmented, script = _SEGMENTED[language], _SCRIPT[language]
    tokens: list[str] = []
    for word in (_WORD_JOINED if join_numbers else _WORD).findall(text):
        if script.search(word):
            tokens.extend(segmented[word])
        else:
            tokens.append(word)
    return tokens


def scheme() -> str:
    """The segmenters and dictionaries, with their versions."""
    versions = {package: _version(package) for packages in PACKAGES.values() for package in packages}
    return "+".join(
        f"{language}:" + "/".join(f"{package}-{versions[package]}" for package in packages)
        for language, packages in PACKAGES.items()
    )


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        raise ImportError(f"stopwords='language' needs {package}: {install_extra('languages')}") from None
