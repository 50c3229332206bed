"""fingerprint.py: text -> features -> simhash, Signature and scheme."""

from __future__ import annotations

import math
import random
import string
import unicodedata
from collections import Counter

import pytest
import xxhash

from simhash_index import Fingerprinter, NoFeaturesError, fingerprint, hamming
from simhash_index.fingerprinting.sketch import similarity
from simhash_index.text.stopwords import ALL as STOP_WORDS
from simhash_index.text.stopwords import ENGLISH

DEFAULT = Fingerprinter()
# explicit settings, so these tests check the mechanism rather than the tuned defaults
PLAIN = Fingerprinter(stopwords=False, tf_power=1.0)
STOPPED = Fingerprinter(stopwords=True, tf_power=1.0)


# -- features -----------------------------------------------------------------------------


def test_case_folding_and_nfkc():
    assert PLAIN.features("ＨＥＬＬＯ Ｗｏｒｌｄ, HeLLo!") == {"hello": 2.0, "world": 1.0}
    assert DEFAULT.features("ＨＥＬＬＯ Ｗｏｒｌｄ") == DEFAULT.features("hello world")
    assert DEFAULT.features("Straße") == DEFAULT.features("STRASSE")  # casefold, not lower
    assert Fingerprinter(casefold=False, tf_power=1.0).features("Hello hello") == {"Hello": 1.0, "hello": 1.0}
    # without NFKC the fullwidth letters stay a different word
    assert "hello" not in Fingerprinter(normalization=None).features("ＨＥＬＬＯ")


def test_stop_words_removed():
    text = "The cat and the dog sat on a mat"
    assert STOPPED.features(text) == {"cat": 1.0, "dog": 1.0, "sat": 1.0, "mat": 1.0}
    assert PLAIN.features(text)["the"] == 2.0
    assert Fingerprinter(stopwords={"cat", "dog"}, tf_power=1.0).features(text) == {
        "the": 2.0,
        "and": 1.0,
        "sat": 1.0,
        "on": 1.0,
        "a": 1.0,
        "mat": 1.0,
    }


def test_chinese_segmented_by_jieba():
    features = STOPPED.features("自然语言处理是人工智能的一个重要方向")
    assert {"自然语言", "处理", "人工智能"} <= features.keys()
    assert not {"的", "是", "一个"} & features.keys()  # Chinese stop words
    assert {"自然语言", "处理", "的"} <= PLAIN.features("自然语言处理的方向").keys()
    assert "的" not in DEFAULT.features("自然语言处理的方向")  # stop words are on by default
    # the plain word tokenizer cuts Han text into single characters instead
    chars = Fingerprinter(tokenizer="words").features("自然语言处理")
    assert set(chars) == set("自然语言处理")
    bigrams = Fingerprinter(tokenizer="bigrams", stopwords=False).features("自然语言 and 处理")
    assert set(bigrams) == {"自然", "然语", "语言", "and", "处理"}


def test_mixed_chinese_and_english():
    features = STOPPED.features("我们使用 Python 进行自然语言处理 and Machine Learning")
    assert {"python", "machine", "learning"} <= features.keys()
    assert {"自然语言", "处理"} <= features.keys()
    assert "and" not in features and "我们" not in features


def test_weightings():
    text = "apple apple apple apple pear"
    assert Fingerprinter(weighting="tf", tf_power=1.0).features(text) == {"apple": 4.0, "pear": 1.0}
    boosted = Fingerprinter(weighting="tf", tf_power=1.5).features(text)
    assert boosted == pytest.approx({"apple": 8.0, "pear": 1.0})  # 4 ** 1.5
    sub = Fingerprinter(weighting="sublinear").features(text)
    assert sub == pytest.approx({"apple": 1 + math.log(4), "pear": 1.0})
    assert 1 < sub["apple"] / sub["pear"] < 4  # damped, still ordered
    tfidf = Fingerprinter(weighting="tfidf", tf_power=1.0, idf={"apple": 1.0, "pear": 8.0}).features(text)
    assert tfidf == pytest.approx({"apple": 4.0, "pear": 8.0})  # the rare word now outweighs
    assert Fingerprinter(weighting="tfidf", tf_power=2.0, idf={"apple": 1.0, "pear": 8.0}).features(
        text
    ) == pytest.approx({"apple": 16.0, "pear": 8.0})


def test_custom_idf_and_word_weights():
    idf = {"apple": 1.0, "pear": 8.0, "plum": 3.0}
    fp = Fingerprinter(weighting="tfidf", tf_power=1.0, idf=idf, word_weights={"pear": 0.25, "kiwi": 10.0})
    # kiwi is not in the table: it gets the table's median idf (3.0), then its word weight
    assert fp.features("apple pear kiwi kiwi") == pytest.approx(
        {"apple": 1.0, "pear": 8.0 * 0.25, "kiwi": 2 * 3.0 * 10.0}
    )
    assert Fingerprinter(word_weights={"pear": 3.0}).features("apple pear") == {"apple": 1.0, "pear": 3.0}
    assert Fingerprinter(weighting="tfidf", idf={}).features("apple apple") == pytest.approx(
        {"apple": 2**DEFAULT.tf_power}  # an empty table: every idf is 1
    )


# jieba.analyse reads its IDF file without closing it
@pytest.mark.filterwarnings("ignore:unclosed file:ResourceWarning")
def test_default_tfidf_uses_jiebas_table_for_chinese():
    from jieba.analyse import default_tfidf

    text = "量子纠缠 量子纠缠 天气 𬺓𬺓"
    fingerprinter = Fingerprinter(weighting="tfidf")
    features = fingerprinter.features(text)
    table, median = default_tfidf.idf_freq, default_tfidf.median_idf
    power = fingerprinter.tf_power
    expected = {w: count**power * table.get(w, median) for w, count in Counter(fingerprinter.tokens(text)).items()}
    assert features == pytest.approx(expected)
    assert features["𬺓"] == pytest.approx(2**power * median)  # not in jieba's table: its median


def test_default_tfidf_has_real_english_idf():
    import wordfreq

    frequency = wordfreq.get_frequency_dict("en", "small")
    fingerprinter = Fingerprinter(weighting="tfidf", stopwords=False, tf_power=1.0)
    features = fingerprinter.features("the the the photosynthesis zzqxwv")
    assert features["the"] == pytest.approx(3 * math.log(1 / frequency["the"]))
    assert features["photosynthesis"] == pytest.approx(math.log(1 / frequency["photosynthesis"]))
    assert features["the"] < features["photosynthesis"] < features["zzqxwv"]  # unknown: rarer than any listed
    # numbers are looked up by shape, as wordfreq stores them
    assert fingerprinter.features("2023")["0000"] == pytest.approx(math.log(1 / frequency["0000"]))


def test_tfidf_languages():
    german = Fingerprinter(weighting="tfidf", stopwords=False, idf_languages="de")
    english = Fingerprinter(weighting="tfidf", stopwords=False)
    # "und" is the commonest German word and rare in English
    assert german.features("und")["und"] < english.features("und")["und"]
    assert Fingerprinter(weighting="tfidf", idf_languages=["en", "de"]).idf_languages == ("de", "en")
    assert (
        Fingerprinter(weighting="tfidf", idf_languages="en, de").scheme
        == Fingerprinter(weighting="tfidf", idf_languages=("de", "en")).scheme
    )
    with pytest.raises(ValueError, match="idf_languages: wordfreq has no 'small' table for 'xx'; use language codes"):
        Fingerprinter(weighting="tfidf", idf_languages="en,xx")
    Fingerprinter(idf_languages="xx")  # no TF-IDF: not read
    with pytest.raises(ValueError, match="idf_languages must name"):
        Fingerprinter(idf_languages="")


def test_ngram_features_are_word_pairs():
    assert Fingerprinter(ngram=2, stopwords=True).features("Alpha beta the gamma beta") == {
        "alpha beta": 1.0,
        "beta gamma": 1.0,
        "gamma beta": 1.0,
    }


@pytest.mark.parametrize("text", ["", "   ", "!!! ... --- ???", "«»—…", "\u200b\t\n"])
def test_no_features(text):
    with pytest.raises(NoFeaturesError):
        DEFAULT.fingerprint(text)
    with pytest.raises(ValueError):  # NoFeaturesError is a ValueError
        fingerprint(text)
    assert DEFAULT.signature(text) is None


@pytest.mark.parametrize("text", ["the and of a", "的 了 是", "The, AND... of!"])
def test_stop_words_only_has_no_features(text):
    with pytest.raises(NoFeaturesError):
        STOPPED.fingerprint(text)
    assert STOPPED.signature(text) is None
    assert PLAIN.signature(text) is not None


# -- signature ----------------------------------------------------------------------------


def normalized(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def test_short_text_is_matched_only_exactly():
    fp = Fingerprinter(min_length=10)
    short = fp.signature("abcde    fgh")  # 9 characters once white space is collapsed
    assert short.exact_only and not short.near_matchable
    assert short.text_hash == xxhash.xxh64_intdigest(b"abcde fgh")
    assert short.sketch is None
    assert fp.signature("ABCDE fgh").text_hash == fp.signature(" abcde\tfgh ").text_hash
    boundary = fp.signature("abcde fghi")  # exactly min_length characters
    assert not boundary.exact_only and boundary.near_matchable
    assert boundary.simhash == fp.fingerprint("abcde fghi")
    assert len(boundary.sketch) == fp.sketch_size


def test_long_text_signature():
    text = "Ｎear-duplicate detection " + " ".join(f"word{i}" for i in range(60))
    signature = DEFAULT.signature(text)
    assert len(normalized(text)) >= DEFAULT.min_length
    assert signature.simhash == DEFAULT.fingerprint(text) == fingerprint(text)
    assert signature.near_matchable and not signature.exact_only
    assert signature.text_hash == xxhash.xxh64_intdigest(normalized(text).encode("utf-8"))
    assert len(signature.sketch) == DEFAULT.sketch_size > 0
    assert Fingerprinter(sketch_size=0).signature(text).sketch is None


# -- scheme -------------------------------------------------------------------------------

VARIANTS = [
    {},
    {"normalization": None},
    {"normalization": "NFC"},
    {"casefold": False},
    {"tokenizer": "words"},
    {"tokenizer": "jieba"},
    {"stopwords": False},
    {"stopwords": "english"},
    {"stopwords": "chinese"},
    {"stopwords": {"cat"}},
    {"stopwords": {"dog"}},
    {"weighting": "sublinear"},
    {"weighting": "tfidf"},
    {"weighting": "tfidf", "idf_languages": "de"},
    {"weighting": "tfidf", "idf": {"cat": 2.0}},
    {"weighting": "tfidf", "idf": {"cat": 3.0}},
    {"word_weights": {"cat": 2.0}},
    {"ngram": 2},
    {"min_length": 50},
    {"min_length": 500},
    {"tokenizer": "bigrams"},
    {"tf_power": 1.0},
    {"tf_power": 2.0},
    {"sketch_size": 32},
    {"numbers": "keep"},
    {"numbers": "split"},
    {"numbers": "drop"},
    {"top_k": 10},
    {"top_k": 20},
]


def test_scheme_differs_when_settings_differ():
    schemes = [Fingerprinter(**settings).scheme for settings in VARIANTS]
    assert len(set(schemes)) == len(VARIANTS)


def test_scheme_equal_for_equal_settings():
    for settings in VARIANTS:
        assert Fingerprinter(**settings).scheme == Fingerprinter(**settings).scheme
    assert Fingerprinter(stopwords={"x", "y"}).scheme == Fingerprinter(stopwords=["y", "x", "y"]).scheme
    assert Fingerprinter(stopwords=STOP_WORDS).scheme == Fingerprinter(stopwords=True).scheme
    assert Fingerprinter(stopwords=()).scheme == Fingerprinter(stopwords=False).scheme
    assert Fingerprinter(stopwords="English").scheme == Fingerprinter(stopwords=ENGLISH).scheme
    assert Fingerprinter(idf={"a": 1.0, "b": 2.0}).scheme == Fingerprinter(idf={"b": 2.0, "a": 1.0}).scheme


def test_scheme_equal_for_equal_numeric_weights():
    # equal settings (the Fingerprinters compare equal and give identical fingerprints)
    # must not make an index refuse the other's database
    ints, floats = Fingerprinter(word_weights={"cat": 2}), Fingerprinter(word_weights={"cat": 2.0})
    assert ints == floats
    assert ints.fingerprint("cat dog cat bird") == floats.fingerprint("cat dog cat bird")
    assert ints.scheme == floats.scheme


def test_scheme_tells_custom_tokenizers_apart():
    split_words = Fingerprinter(tokenizer=lambda text: text.split())
    split_chars = Fingerprinter(tokenizer=lambda text: [c for c in text if not c.isspace()])
    assert split_words.fingerprint("near duplicate pages") != split_chars.fingerprint("near duplicate pages")
    assert split_words.scheme != split_chars.scheme


# -- near copies and unrelated texts ----------------------------------------------------------


def vocabulary(rng: random.Random, size: int) -> list[str]:
    out: set[str] = set()
    while len(out) < size:
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9)))
        if word not in STOP_WORDS:
            out.add(word)
    return sorted(out)


def zipf_text(rng: random.Random, vocab: list[str], length: int = 300) -> list[str]:
    return rng.choices(vocab, weights=[1 / (rank + 1) for rank in range(len(vocab))], k=length)


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(w * b.get(f, 0.0) for f, w in a.items())
    return dot / math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))


def shingles(tokens: list[str], n: int = 3) -> set[str]:
    return {" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def corpus(pairs: int = 20):
    """(original, near copy with 3 of ~300 words replaced, unrelated text on another vocabulary)."""
    for seed in range(pairs):
        rng = random.Random(seed)
        vocab = vocabulary(rng, 2000)
        topic, other_topic = vocab[:1000], vocab[1000:]
        original = zipf_text(rng, topic)
        near = list(original)
        for position in rng.sample(range(len(near)), 3):
            near[position] = rng.choice([w for w in topic if w != near[position]])
        yield original, near, zipf_text(rng, other_topic)


def test_near_copies_are_close_and_unrelated_texts_far():
    near_distances, unrelated_distances, expected = [], [], []
    for original, near, unrelated in corpus():
        a, b, c = (" ".join(words) for words in (original, near, unrelated))
        near_distances.append(hamming(DEFAULT.fingerprint(a), DEFAULT.fingerprint(b)))
        unrelated_distances.append(hamming(DEFAULT.fingerprint(a), DEFAULT.fingerprint(c)))
        # a simhash bit differs with probability ~ angle/pi between the weight vectors
        angle = math.acos(min(1.0, cosine(DEFAULT.features(a), DEFAULT.features(b))))
        expected.append(64 * angle / math.pi)
    mean_expected = sum(expected) / len(expected)
    assert mean_expected < 2.5  # the construction really is a near copy
    assert sum(near_distances) / len(near_distances) <= 2 * mean_expected + 1
    assert max(near_distances) <= 8  # Binomial(64, ~2%) tail
    # the index's max_distance=3 catches nearly all of them
    assert sum(d <= 3 for d in near_distances) >= 0.8 * len(near_distances)
    # disjoint vocabularies: every bit a fair coin, Binomial(64, 1/2) is below 16 with p ~ 3e-5
    assert min(unrelated_distances) >= 16
    assert max(near_distances) < min(unrelated_distances)


def test_sketch_similarity_estimates_jaccard():
    for original, near, unrelated in corpus(5):
        a, b, c = (DEFAULT.signature(" ".join(words)).sketch for words in (original, near, unrelated))
        jaccard = len(shingles(original) & shingles(near)) / len(shingles(original) | shingles(near))
        assert jaccard > 0.9
        # k slots: the estimate's standard deviation is about sqrt(J(1-J)/k)
        tolerance = 5 * math.sqrt(jaccard * (1 - jaccard) / DEFAULT.sketch_size) + 0.02
        assert abs(similarity(a, b) - jaccard) <= tolerance
        assert similarity(a, c) <= 0.1
        assert similarity(a, a) == 1.0


def test_chinese_sketches():
    rng = random.Random(7)
    common = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可也你"
    page = "".join(rng.choice(common) for _ in range(600))
    edited = page[:300] + "变" + page[301:]  # one character changed: at most 5 of ~600 shingles
    unrelated = "".join(rng.choice("天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏") for _ in range(600))
    a, b, c = (DEFAULT.signature(text).sketch for text in (page, edited, unrelated))
    assert similarity(a, b) >= 0.9
    assert similarity(a, c) <= 0.1
