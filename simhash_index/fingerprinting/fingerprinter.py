"""Text -> weighted features -> fingerprint, with the settings that define a scheme."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from itertools import filterfalse, repeat
from typing import cast

import numpy as np
import numpy.typing as npt
import xxhash

from ..text import languages
from ..text import stopwords as _stopwords
from ..text.extract import ExtractOptions, extract_text
from ..text.frequencies import WORDLIST, check_languages, idf_table
from ..text.tokens import TOKENIZERS, normalize, number_match, number_shapes, shingling, word_count
from .additions import Shingled, bitmap
from .simhash import simhash, simhash_weighted
from .sketch import DEFAULT_SLOTS, minhash_of, shingle_hashes
from .weights import load_word_weights

Tokenizer = Callable[[str], list[str]]
WordWeights = Mapping[str, float] | str | os.PathLike[str]
WEIGHTINGS = ("tf", "sublinear", "tfidf")
NUMBERS = ("shape", "keep", "split", "drop")
NORMALIZATIONS = ("NFKC", "NFC", "NFKD", "NFD", None)
# tf ** 0.5 (Lucene's classic TF) with stop words: the most frequent words no longer decide
# the bits, so unrelated pages stop colliding (docs/accuracy.md has the measurements).
DEFAULT_TF_POWER = 0.5
_TF_TABLE = 1024  # term weights of counts below this are looked up
LANGUAGE = "language"  # stopwords: the built-in lists and those of each text's language


class NoFeaturesError(ValueError):
    """The text has no features (empty, punctuation or stop words only): it has no fingerprint."""


@dataclass(frozen=True)
class Signature:
    """What the index stores of a page's text.

    `text_hash` is the hash of the normalised text. Short texts are
    `exact_only`: simhash on a few words is unreliable, so they match only by
    text_hash. `sketch` verifies simhash candidates before a drop; `shingles` (how many
    distinct shingles the sketch was made of) and `bloom` (their bitmap, additions.py) are kept
    to tell what another page adds to this one, and `shingled` (its shingles in text order,
    never stored) what this one adds to a stored one. `words` (the text's length), `dated` (the
    page's own date) and `modified` (its HTTP Last-Modified) are what a survivor policy compares
    (index/prefer.py). Only the first four take part in equality.
    """

    simhash: int | None
    text_hash: int | None
    sketch: bytes | None = None
    exact_only: bool = False
    words: int | None = field(default=None, compare=False)
    dated: datetime | None = field(default=None, compare=False)
    modified: datetime | None = field(default=None, compare=False)
    shingles: int | None = field(default=None, compare=False)
    bloom: bytes | None = field(default=None, compare=False, repr=False)
    shingled: Shingled | None = field(default=None, compare=False, repr=False, metadata={"stored": False})

    @property
    def near_simhash(self) -> int | None:
        """The fingerprint this page is near-matched by; None when it is matched only exactly."""
        return None if self.exact_only else self.simhash

    @property
    def near_matchable(self) -> bool:
        """Whether this page takes part in simhash (near-duplicate) matching."""
        return self.near_simhash is not None


def text_hash(normalized_text: str) -> int:
    """Unsigned 64-bit hash of an already normalised text."""
    return xxhash.xxh64_intdigest(normalized_text.encode("utf-8"))


def _mapping_digest(mapping: Mapping[str, float] | None) -> str:
    if mapping is None:
        return "none"
    digest = xxhash.xxh64()
    for key in sorted(mapping):
        digest.update(f"{key}\0{float(mapping[key])!r}\0".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Fingerprinter:
    """Turns text into weighted features, a 64-bit simhash and a Signature.

    normalization: Unicode form applied first (None to skip); casefold: fold case.
    tokenizer: "auto" (jieba where there is Chinese), "jieba", "words", "bigrams", or a callable.
    stopwords: True for the built-in English and Chinese lists, "english" or "chinese" for one
      of them, "common" for both and the 50 commonest words of de, es, fr, pl, pt, ru and uk on
      every page (stopwords.COMMON), "language" for the built-in lists and the stop words of each
      text's identified language (text.languages; needs the `languages` extra), False, or your
      own collection of words.
      With "language" and tokenizer "auto", Japanese and Korean texts are cut into "bigrams".
    numbers: "shape" (a dot or comma between digits joins them, and every digit counts as 0:
      1.7.4 and 2.0.1 are one feature, so a version or date bump does not move the fingerprint),
      "keep" (joined, digits kept), "split" (split at dots and commas, digits kept: the previous default)
      or "drop" (numbers are no features). A custom tokenizer gets the shaped text for "shape";
      "drop" removes the number tokens it returns.
    weighting: "tf" (tf ** tf_power), "sublinear" (1 + log tf) or "tfidf" (tf ** tf_power * idf).
    idf: your own IDF table for "tfidf" (words it lacks get its median). By default, jieba's
      IDF for Han words and ln(1 / frequency) from wordfreq's tables of `idf_languages` for the
      others (simhash_index.frequencies).
    word_weights: multiplies the weight of given words: a mapping, or the path of a file with
      one word and weight per line (load_word_weights). Words are normalised like the text.
    top_k: only the K heaviest features vote (None: all).
    ngram: word n-gram shingles as features (1 = single words).
    min_length: normalised texts shorter than this many characters are matched only
      exactly; simhash on a few words is unreliable.
    sketch_size: one-byte slots of the MinHash verification sketch (0 disables); it is
      computed over word 3-shingles, or character 5-shingles for Chinese/Japanese/Korean text.
    """

    normalization: str | None = "NFKC"
    casefold: bool = True
    tokenizer: str | Tokenizer = "auto"
    stopwords: bool | str | Collection[str] = True
    weighting: str = "tf"
    tf_power: float = DEFAULT_TF_POWER
    idf: Mapping[str, float] | None = None
    word_weights: WordWeights | None = None
    ngram: int = 1
    min_length: int = 100
    sketch_size: int = DEFAULT_SLOTS
    numbers: str = "shape"
    idf_languages: str | Collection[str] = ("en",)
    top_k: int | None = None
    _stop: frozenset[str] = field(init=False, repr=False, compare=False)
    _by_language: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check()
        by_language = isinstance(self.stopwords, str) and self.stopwords.strip().lower() == LANGUAGE
        object.__setattr__(self, "_by_language", by_language)
        object.__setattr__(self, "_stop", _stopwords.ALL if by_language else _stop_words(self.stopwords))
        if by_language:
            languages.scheme()  # fail now, naming the extra, when its libraries are missing
        object.__setattr__(self, "idf_languages", _languages(self.idf_languages))
        if self.weighting == "tfidf" and self.idf is None:
            check_languages(self._languages)  # fail now, not at the first page
        if self.word_weights is not None:
            object.__setattr__(self, "word_weights", self._normalized_weights(self.word_weights))

    def _check(self) -> None:
        if isinstance(self.tokenizer, str) and self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {sorted(TOKENIZERS)} or a callable; got {self.tokenizer!r}")
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}; got {self.weighting!r}")
        if not isinstance(self.ngram, int) or self.ngram < 1:
            raise ValueError(f"ngram must be a positive integer; got {self.ngram!r}")
        if self.min_length < 0:
            raise ValueError(f"min_length must be >= 0; got {self.min_length!r}")
        if self.sketch_size < 0:
            raise ValueError(f"sketch_size must be >= 0; got {self.sketch_size!r}")
        if self.tf_power <= 0:
            raise ValueError(f"tf_power must be positive; got {self.tf_power!r}")
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}; got {self.normalization!r}")
        if self.numbers not in NUMBERS:
            raise ValueError(f"numbers must be one of {NUMBERS}; got {self.numbers!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise ValueError(f"top_k must be a positive integer or None (all features); got {self.top_k!r}")

    def _normalized_weights(self, weights: WordWeights) -> dict[str, float]:
        """A weight table (or the file holding one) keyed by normalised words."""
        table = load_word_weights(weights) if isinstance(weights, (str, os.PathLike)) else weights
        normalized: dict[str, float] = {}
        for word, weight in table.items():
            key = self.normalize(word)
            if key in normalized and normalized[key] != float(weight):
                raise ValueError(f"word_weights: {word!r} normalises to {key!r}, which has another weight already")
            normalized[key] = float(weight)
        return normalized

    @cached_property
    def scheme(self) -> str:
        """Everything that makes fingerprints comparable, as one string the index records."""
        tokenizer = self.tokenizer if isinstance(self.tokenizer, str) else _callable_id(self.tokenizer)
        stop = _STOP_NAMES.get(self._stop) or _mapping_digest(dict.fromkeys(self._stop, 1))
        if self._by_language:
            stop = f"language:{languages.scheme()}"
        idf = _mapping_digest(self.idf)
        if self.idf is None and self.weighting == "tfidf":
            idf = f"jieba+wordfreq-{WORDLIST}:{','.join(self._languages)}"
        scheme = (
            f"xxh64/64 norm={self.normalization}{'+casefold' if self.casefold else ''} tokens={tokenizer}"
            f" stop={stop} ngram={self.ngram} weighting={self.weighting}^{self.tf_power} idf={idf}"
            f" weights={_mapping_digest(self._word_weights)} min_length={self.min_length}"
            f" sketch=minhash{self.sketch_size}x8/w3c5"
        )
        # settings added since the previous defaults are named only when they differ from what those
        # did, so an index built with them opens with the settings that reproduce its fingerprints
        if self.numbers != "split":
            scheme += f" numbers={self.numbers}"
        if self.top_k is not None:
            scheme += f" top_k={self.top_k}"
        return scheme

    @property
    def _languages(self) -> tuple[str, ...]:
        return tuple(self.idf_languages)  # a sorted tuple since __post_init__

    @property
    def _word_weights(self) -> Mapping[str, float] | None:
        return cast("Mapping[str, float] | None", self.word_weights)  # a dict since __post_init__

    def normalize(self, text: str) -> str:
        """The text as features and exact hashes see it (Unicode form, case, white space)."""
        return normalize(text, form=self.normalization, casefold=self.casefold)

    def tokens(self, normalized_text: str) -> list[str]:
        """The words of a normalised text that become features: stop words out, numbers as set."""
        language = languages.identify(normalized_text) if self._by_language else None
        stop = self._stop if language is None else languages.stop_words(language)
        if self.numbers == "shape":
            normalized_text = number_shapes(normalized_text)
        tokenizer = self.tokenizer
        if tokenizer == "auto" and language in languages.BIGRAMS:
            tokenizer = "bigrams"
        if isinstance(tokenizer, str):
            words: Iterable[str] = TOKENIZERS[tokenizer](normalized_text, join_numbers=self.numbers != "split")
        else:
            words = tokenizer(normalized_text)
        if self.numbers == "drop":
            words = filterfalse(number_match, words)
        return list(filterfalse(stop.__contains__, words)) if stop else list(words)

    def features(self, text: str) -> dict[str, float]:
        """Weighted features of a text: feature -> weight."""
        names, weights = self._weigh(self._feature_counts(self.normalize(text)))
        return dict(zip(names, weights.tolist()))

    def fingerprint(self, text: str) -> int:
        """The 64-bit simhash of a text; NoFeaturesError when it has no features."""
        features = self.features(text)
        if not features:
            raise NoFeaturesError("text has no features (empty, or only punctuation/stop words): it has no fingerprint")
        return simhash(features)

    def signature_of_html(self, html: str | bytes, options: ExtractOptions | None = None) -> Signature | None:
        """The Signature of a page's main text, extracted as the pipeline does (`options`:
        trafilatura's settings, ExtractOptions() by default); None when the page has no main
        text or no features. Raises extract.ExtractionError when trafilatura fails on it."""
        text = extract_text(html, options or ExtractOptions())
        return None if text is None else self.signature(text)

    def signature(self, text: str) -> Signature | None:
        """What the index stores for a text, or None when it has no features."""
        normalized = self.normalize(text)
        counts = self._feature_counts(normalized)
        if not counts:
            return None
        exact = text_hash(normalized)
        fingerprint = simhash_weighted(*self._weigh(counts))
        words = word_count(normalized)
        if len(normalized) < self.min_length:
            return Signature(fingerprint, exact, exact_only=True, words=words)
        if not self.sketch_size:
            return Signature(fingerprint, exact, None, words=words)
        shingled = shingling(normalized)
        hashes = shingle_hashes(shingled.shingles)
        distinct = np.unique(hashes)
        return Signature(
            fingerprint,
            exact,
            minhash_of(distinct, self.sketch_size),
            words=words,
            shingles=len(distinct),
            bloom=bitmap(distinct),
            shingled=Shingled.of(shingled.size, hashes, characters=shingled.characters),
        )

    def _feature_counts(self, normalized: str) -> Counter[str]:
        return Counter(_ngrams(self.tokens(normalized), self.ngram))

    def _weigh(self, counts: Counter[str]) -> tuple[list[str], npt.NDArray[np.float64]]:
        """The features and their weights, in the counts' order (the heaviest first with top_k)."""
        names = list(counts)
        weights = self._tf_weights(np.fromiter(counts.values(), dtype=np.int64, count=len(names)))
        if self.weighting == "tfidf":
            weights *= np.fromiter(map(self._idf, names), dtype=np.float64, count=len(names))
        table = self._word_weights
        if table:
            weights *= np.fromiter(map(table.get, names, repeat(1.0)), dtype=np.float64, count=len(names))
        if self.top_k is not None and len(names) > self.top_k:
            kept = heaviest(dict(zip(names, weights.tolist())), self.top_k)
            return list(kept), np.fromiter(kept.values(), dtype=np.float64, count=len(kept))
        return names, weights

    def _tf_weights(self, counts: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Each count's term weight: tf ** tf_power, or 1 + ln tf (sublinear); a table look-up
        for the common counts, computed by the same Python float operations as the rare ones."""
        table = self._tf_table
        if counts.size and counts.max() >= table.size:
            return np.fromiter(map(self._tf_weight, counts.tolist()), dtype=np.float64, count=counts.size)
        return table[counts]

    def _tf_weight(self, count: int) -> float:
        return 1.0 + math.log(count) if self.weighting == "sublinear" else float(count) ** self.tf_power

    @cached_property
    def _tf_table(self) -> npt.NDArray[np.float64]:
        return np.array([0.0] + [self._tf_weight(count) for count in range(1, _TF_TABLE)])

    @cached_property
    def _idf(self) -> Callable[[str], float]:
        """feature -> IDF, from `idf` (its median for words it lacks) or the built-in tables."""
        if self.idf is None:
            return idf_table(self._languages).get
        table = self.idf
        values = sorted(table.values())
        default = values[len(values) // 2] if values else 1.0
        return lambda feature: table.get(feature, default)


def heaviest(weights: Mapping[str, float], k: int) -> dict[str, float]:
    """The k heaviest features; among equal weights the smallest features, so the choice
    is the same in every process."""
    ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))
    return dict(ranked[:k])


_STOP_NAMES = {
    frozenset(): "none",
    _stopwords.ALL: "builtin",
    _stopwords.ENGLISH: "english",
    _stopwords.CHINESE: "chinese",
    # named by its words' digest too, so a regenerated list changes the scheme
    _stopwords.COMMON: f"builtin+common:{xxhash.xxh64_hexdigest(' '.join(sorted(_stopwords.COMMON)).encode())}",
}


def _stop_words(setting: bool | str | Collection[str]) -> frozenset[str]:
    if setting is True:
        return _stopwords.ALL
    if setting is False:
        return frozenset()
    if isinstance(setting, str):  # a string is a collection of letters: not what anyone means
        return _stopwords.by_name(setting)
    return frozenset(setting)


def _languages(setting: str | Collection[str]) -> tuple[str, ...]:
    """idf_languages as a sorted tuple: "en,de" or ("en", "de")."""
    names = setting.split(",") if isinstance(setting, str) else list(setting)
    languages = tuple(sorted({name.strip() for name in names if name.strip()}))
    if not languages:
        raise ValueError(f"idf_languages must name at least one wordfreq language, e.g. 'en'; got {setting!r}")
    return languages


def _callable_id(function: Callable[..., object]) -> str:
    """Names a custom tokenizer by its qualified name and a digest of its code, so two
    different functions (two lambdas, say) give different schemes."""
    name = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', type(function).__name__)}"
    code = getattr(function, "__code__", None)
    body = repr((code.co_code, code.co_consts, code.co_names)) if code is not None else repr(function)
    return f"{name}:{xxhash.xxh64_hexdigest(body.encode())}"


def _ngrams(tokens: list[str], n: int) -> list[str]:
    if n == 1 or len(tokens) < n:
        return tokens if n == 1 or not tokens else [" ".join(tokens)]
    return list(map(" ".join, zip(*(tokens[i:] for i in range(n)))))


DEFAULT = Fingerprinter()


def fingerprint(text: str) -> int:
    """The 64-bit simhash of a text with the default Fingerprinter."""
    return DEFAULT.fingerprint(text)
