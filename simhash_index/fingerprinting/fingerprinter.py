"""Text -> weighted features -> fingerprint, with the settings that define a scheme."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import xxhash

from ..text import stopwords as _stopwords
from .simhash import simhash
from .sketch import DEFAULT_SLOTS, minhash
from ..text.tokens import TOKENIZERS, normalize, shingles

Tokenizer = Callable[[str], list[str]]
WEIGHTINGS = ("tf", "sublinear", "tfidf")
DEFAULT_TF_POWER = 1.33  # measured: lifts near-duplicate recall at distance 3 (README, Accuracy)


class NoFeaturesError(ValueError):
    """The text has no features (empty, punctuation or stop words only): it has no fingerprint."""


@dataclass(frozen=True)
class Signature:
    """What the index stores of a page's text.

    `text_hash` is the hash of the normalised text. Short texts are
    `exact_only`: simhash on a few words is unreliable, so they match only by
    text_hash. `sketch` verifies simhash candidates before a drop.
    """

    simhash: int | None
    text_hash: int | None
    sketch: bytes | None = None
    exact_only: bool = False

    @property
    def near_matchable(self) -> bool:
        """Whether this page takes part in simhash (near-duplicate) matching."""
        return self.simhash is not None and not self.exact_only


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
    tokenizer: "auto" (jieba where there is Chinese), "jieba", "words", or a callable.
    stopwords: True for the built-in English and Chinese lists, False, or your own set.
    weighting: "tf" (tf ** tf_power), "sublinear" (1 + log tf) or "tfidf" (tf ** tf_power * idf;
      jieba's IDF table unless `idf` is given). word_weights multiplies the weight of given words.
    ngram: word n-gram shingles as features (1 = single words).
    min_length: normalised texts shorter than this many characters are matched only
      exactly; simhash on a few words is unreliable.
    sketch_size: one-byte slots of the MinHash verification sketch (0 disables); it is
      computed over word 3-shingles, or character 5-shingles for Chinese/Japanese/Korean text.
    """

    normalization: str | None = "NFKC"
    casefold: bool = True
    tokenizer: str | Tokenizer = "auto"
    stopwords: bool | Collection[str] = False
    weighting: str = "tf"
    tf_power: float = DEFAULT_TF_POWER
    idf: Mapping[str, float] | None = None
    word_weights: Mapping[str, float] | None = None
    ngram: int = 1
    min_length: int = 100
    sketch_size: int = DEFAULT_SLOTS
    _stop: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
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
        if self.stopwords is True:
            stop = _stopwords.ALL
        elif self.stopwords is False:
            stop = frozenset()
        else:
            stop = frozenset(self.stopwords)
        object.__setattr__(self, "_stop", stop)

    @cached_property
    def scheme(self) -> str:
        """Everything that makes fingerprints comparable, as one string the index records."""
        tokenizer = self.tokenizer if isinstance(self.tokenizer, str) else _callable_id(self.tokenizer)
        stop = {frozenset(): "none", _stopwords.ALL: "builtin"}.get(self._stop) or _mapping_digest(dict.fromkeys(self._stop, 1))
        return (
            f"xxh64/64 norm={self.normalization}{'+casefold' if self.casefold else ''} tokens={tokenizer}"
            f" stop={stop} ngram={self.ngram} weighting={self.weighting}^{self.tf_power} idf={_mapping_digest(self.idf)}"
            f" weights={_mapping_digest(self.word_weights)} min_length={self.min_length}"
            f" sketch=minhash{self.sketch_size}x8/w3c5"
        )

    def normalize(self, text: str) -> str:
        return normalize(text, form=self.normalization, casefold=self.casefold)

    def tokens(self, normalized_text: str) -> list[str]:
        cut = TOKENIZERS[self.tokenizer] if isinstance(self.tokenizer, str) else self.tokenizer
        return [t for t in cut(normalized_text) if t not in self._stop]

    def features(self, text: str) -> dict[str, float]:
        """Weighted features of a text: feature -> weight."""
        return self._weigh(self._feature_counts(self.normalize(text)))

    def fingerprint(self, text: str) -> int:
        """The 64-bit simhash of a text; NoFeaturesError when it has no features."""
        features = self.features(text)
        if not features:
            raise NoFeaturesError("text has no features (empty, or only punctuation/stop words): it has no fingerprint")
        return simhash(features)

    def signature(self, text: str) -> Signature | None:
        """What the index stores for a text, or None when it has no features."""
        normalized = self.normalize(text)
        counts = self._feature_counts(normalized)
        if not counts:
            return None
        exact = text_hash(normalized)
        fingerprint = simhash(self._weigh(counts))
        if len(normalized) < self.min_length:
            return Signature(fingerprint, exact, exact_only=True)
        sketch = None
        if self.sketch_size:
            sketch = minhash(shingles(normalized), self.sketch_size)
        return Signature(fingerprint, exact, sketch)

    def _feature_counts(self, normalized: str) -> Counter[str]:
        return Counter(_ngrams(self.tokens(normalized), self.ngram))

    def _weigh(self, counts: Counter[str]) -> dict[str, float]:
        power = self.tf_power
        if self.weighting == "tf":
            weights = {f: float(c) ** power for f, c in counts.items()}
        elif self.weighting == "sublinear":
            weights = {f: 1.0 + math.log(c) for f, c in counts.items()}
        else:
            idf, default = self._idf_table
            weights = {f: float(c) ** power * idf.get(f, default) for f, c in counts.items()}
        if self.word_weights:
            for feature in weights:
                weights[feature] *= self.word_weights.get(feature, 1.0)
        return weights

    @cached_property
    def _idf_table(self) -> tuple[Mapping[str, float], float]:
        if self.idf is not None:
            values = sorted(self.idf.values())
            return self.idf, values[len(values) // 2] if values else 1.0
        return _jieba_idf()


@lru_cache(maxsize=1)
def _jieba_idf() -> tuple[dict[str, float], float]:
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


def _callable_id(function: Callable) -> str:
    """Names a custom tokenizer by its qualified name and a digest of its code, so two
    different functions (two lambdas, say) give different schemes."""
    name = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', type(function).__name__)}"
    code = getattr(function, "__code__", None)
    body = repr((code.co_code, code.co_consts, code.co_names)) if code is not None else repr(function)
    return f"{name}:{xxhash.xxh64_hexdigest(body.encode())}"


def _ngrams(tokens: list[str], n: int) -> list[str]:
    if n == 1 or len(tokens) < n:
        return tokens if n == 1 or not tokens else [" ".join(tokens)]
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


DEFAULT = Fingerprinter()


def fingerprint(text: str) -> int:
    """The 64-bit simhash of a text with the default Fingerprinter."""
    return DEFAULT.fingerprint(text)
