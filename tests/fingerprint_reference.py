"""The text -> Signature path as it was before it was vectorised (commit 80f8a41), kept as the reference
the library's faster one must equal: same tokens, features, simhash, text hash and sketch, for every
Fingerprinter setting. Python loops per word and per shingle, on purpose: this is the definition,
written plainly. The parts that did not change (simhash, heaviest, IDF tables, stop-word lists,
py3langid) are the library's own.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from typing import Literal, cast

import jieba
import numpy as np
import xxhash

from simhash_index import Fingerprinter, Signature, simhash
from simhash_index.fingerprinting.fingerprinter import heaviest
from simhash_index.text import languages

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_TOKEN = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W{_HAN}]+)")
_TOKEN_JOINED = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W{_HAN}]+(?:(?<=\d)[.,](?=\d)[^\W{_HAN}]+)*)")
_HAS_HAN = re.compile(f"[{_HAN}]")
_SPACES = re.compile(r"\s+")
_CJK = _HAN + "\u3040-\u30ff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_SPLIT = re.compile(f"([{_CJK}]+)")
_WORD = re.compile(r"\w+")
_WORD_JOINED = re.compile(r"\w+(?:(?<=\d)[.,](?=\d)\w+)*")
_NUMBER = re.compile(r"[\d.,]+")
_DIGIT = re.compile(r"\d")
_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af]")


def normalize(text: str, *, form: str | None = "NFKC", casefold: bool = True) -> str:
    if form:
        text = unicodedata.normalize(cast(Literal["NFC", "NFD", "NFKC", "NFKD"], form), text)
    if casefold:
        text = text.casefold()
    return _SPACES.sub(" ", text).strip()


def number_shapes(text: str) -> str:
    return _DIGIT.sub("0", text)


def is_number(token: str) -> bool:
    return _NUMBER.fullmatch(token) is not None and token[0].isdecimal()


def words(text: str, *, join_numbers: bool = False) -> list[str]:
    tokens: list[str] = []
    for match in (_TOKEN_JOINED if join_numbers else _TOKEN).finditer(text):
        run = match.group("han")
        tokens.extend(run if run else [match.group("word")])
    return tokens


def jieba_words(text: str, *, join_numbers: bool = False) -> list[str]:
    tokens: list[str] = []
    for match in (_TOKEN_JOINED if join_numbers else _TOKEN).finditer(text):
        run = match.group("han")
        if run:
            tokens.extend(jieba.lcut(run, HMM=True))
        else:
            tokens.append(match.group("word"))
    return tokens


def auto_words(text: str, *, join_numbers: bool = False) -> list[str]:
    if _HAS_HAN.search(text) is not None:
        return jieba_words(text, join_numbers=join_numbers)
    return words(text, join_numbers=join_numbers)


def cjk_bigrams(text: str, *, join_numbers: bool = False) -> list[str]:
    tokens: list[str] = []
    for word in (_WORD_JOINED if join_numbers else _WORD).findall(text):
        if not _CJK_CHAR.search(word):
            tokens.append(word)
            continue
        for i, part in enumerate(_CJK_SPLIT.split(word)):
            if not part:
                continue
            if i % 2 == 0 or len(part) == 1:
                tokens.append(part)
            else:
                tokens.extend(part[j : j + 2] for j in range(len(part) - 1))
    return tokens


TOKENIZERS = {"auto": auto_words, "jieba": jieba_words, "words": words, "bigrams": cjk_bigrams}


def is_cjk_text(text: str) -> bool:
    word_chars = sum(len(w) for w in _WORD.findall(text))
    return word_chars > 0 and len(_CJK_CHAR.findall(text)) >= 0.05 * word_chars


def shingles(normalized_text: str, *, words_n: int = 3, chars_n: int = 5) -> set[str]:
    if is_cjk_text(normalized_text):
        chars = normalized_text.replace(" ", "")
        return {chars[i : i + chars_n] for i in range(max(1, len(chars) - chars_n + 1))}
    tokens = _WORD.findall(normalized_text)
    return {" ".join(tokens[i : i + words_n]) for i in range(max(1, len(tokens) - words_n + 1))}


def minhash(shingle_set: set[str], k: int) -> bytes:
    hashes = np.unique(np.fromiter((xxhash.xxh64_intdigest(s.encode("utf-8")) for s in shingle_set), dtype=np.uint64))
    if hashes.size == 0:
        return bytes(k)
    a = np.array([xxhash.xxh64_intdigest(f"a{i}".encode()) | 1 for i in range(k)], dtype=np.uint64)
    b = np.array([xxhash.xxh64_intdigest(f"b{i}".encode()) for i in range(k)], dtype=np.uint64)
    best = np.full(k, np.iinfo(np.uint64).max, dtype=np.uint64)
    for start in range(0, hashes.size, 4096):
        permuted = hashes[start : start + 4096, None] * a + b  # wraps mod 2**64
        np.minimum(best, permuted.min(axis=0), out=best)
    return ((best >> np.uint64(32)) & np.uint64(0xFF)).astype(np.uint8).tobytes()


def identify(normalized_text: str) -> str:
    if is_cjk_text(normalized_text):
        if _KANA.search(normalized_text):
            return "ja"
        return "ko" if _HANGUL.search(normalized_text) else "zh"
    sample = _WORD.findall(normalized_text[: languages.SAMPLE])
    english = sum(word in languages._stopwords.ENGLISH for word in sample)
    if sample and english >= languages.ENGLISH_SHARE * len(sample):
        return "en"
    return languages._classify(normalized_text[: languages.SAMPLE])


def tokens(fp: Fingerprinter, normalized_text: str) -> list[str]:
    by_language = isinstance(fp.stopwords, str) and fp.stopwords.strip().lower() == "language"
    language = identify(normalized_text) if by_language else None
    stop = fp._stop if language is None else languages.stop_words(language)
    if fp.numbers == "shape":
        normalized_text = number_shapes(normalized_text)
    tokenizer = fp.tokenizer
    if tokenizer == "auto" and language in languages.BIGRAMS:
        tokenizer = "bigrams"
    if isinstance(tokenizer, str):
        found = TOKENIZERS[tokenizer](normalized_text, join_numbers=fp.numbers != "split")
    else:
        found = tokenizer(normalized_text)
    if fp.numbers == "drop":
        return [t for t in found if t not in stop and not is_number(t)]
    return [t for t in found if t not in stop] if stop else list(found)


def ngrams(found: list[str], n: int) -> list[str]:
    if n == 1 or len(found) < n:
        return found if n == 1 or not found else [" ".join(found)]
    return [" ".join(found[i : i + n]) for i in range(len(found) - n + 1)]


def weigh(fp: Fingerprinter, counts: Counter[str]) -> dict[str, float]:
    power = fp.tf_power
    if fp.weighting == "tf":
        weights = {f: float(c) ** power for f, c in counts.items()}
    elif fp.weighting == "sublinear":
        weights = {f: 1.0 + math.log(c) for f, c in counts.items()}
    else:
        idf = fp._idf
        weights = {f: float(c) ** power * idf(f) for f, c in counts.items()}
    table = fp._word_weights
    if table:
        for feature in weights:
            weights[feature] *= table.get(feature, 1.0)
    if fp.top_k is not None and len(weights) > fp.top_k:
        weights = heaviest(weights, fp.top_k)
    return weights


def features(fp: Fingerprinter, text: str) -> dict[str, float]:
    normalized = normalize(text, form=fp.normalization, casefold=fp.casefold)
    return weigh(fp, Counter(ngrams(tokens(fp, normalized), fp.ngram)))


def signature(fp: Fingerprinter, text: str) -> Signature | None:
    """What Fingerprinter.signature returned for a text before it was vectorised."""
    normalized = normalize(text, form=fp.normalization, casefold=fp.casefold)
    counts = Counter(ngrams(tokens(fp, normalized), fp.ngram))
    if not counts:
        return None
    exact = xxhash.xxh64_intdigest(normalized.encode("utf-8"))
    fingerprint = simhash(weigh(fp, counts))
    found = len(normalized.split())
    if len(normalized) < fp.min_length:
        return Signature(fingerprint, exact, exact_only=True, words=found)
    sketch = minhash(shingles(normalized), fp.sketch_size) if fp.sketch_size else None
    return Signature(fingerprint, exact, sketch, words=found)
