"""simhash.py: the simhash itself and the bit helpers, against independent references."""

from __future__ import annotations

import doctest
import importlib
import struct
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from simhash_index.fingerprinting.bits import blocks, hamming, to_signed, to_unsigned
from simhash_index.fingerprinting.simhash import (
    bit_similarity,
    from_hex,
    simhash,
    simhash_sparse,
    to_hex,
    xxh64_dimensions,
)

U64 = st.integers(min_value=0, max_value=2**64 - 1)
FEATURE = st.text(min_size=1, max_size=8)
# Weights that float64 adds exactly (multiples of 1/16, small): the reference below
# sums exact Fractions, so a different bit can only come from a wrong algorithm,
# never from rounding at a tie.
WEIGHT = st.builds(lambda n, k: n / 2**k, st.integers(0, 1000), st.integers(0, 4))


def reference_simhash(weights: dict[str, float], bits: int, hashfunc) -> int:
    """Charikar's simhash written out: one signed vote per feature per bit, exact arithmetic."""
    votes = [Fraction(0)] * bits
    for feature, weight in weights.items():
        h = hashfunc(feature)
        for i in range(bits):
            votes[i] += Fraction(weight) if (h >> i) & 1 else -Fraction(weight)
    return sum(1 << i for i in range(bits) if votes[i] > 0)


def flip(value: int, positions) -> int:
    for p in positions:
        value ^= 1 << p
    return value


# -- simhash --------------------------------------------------------------------------


THREE_BIT = {"w1": 0b101, "w2": 0b011, "w3": 0b100, "w4": 0b001, "w5": 0b110}


def test_known_answer():
    # bit 0: w1 +1, w2 +2, w4 +3 -> +6 -> 1; bit 1: -1 +2 -3 -> 0; bit 2: +1 -2 -3 -> 0
    weights = {"w1": 1, "w2": 2, "w3": 0, "w4": 3, "w5": 0}
    assert simhash(weights, bits=3, hashfunc=THREE_BIT.__getitem__) == 0b001


def test_input_forms_agree():
    mapping = {"w1": 1, "w2": 2, "w4": 3}
    pairs = [("w1", 1), ("w2", 2), ("w4", 3)]
    strings = ["w4", "w2", "w1", "w4", "w2", "w4"]
    results = {
        simhash(form, bits=3, hashfunc=THREE_BIT.__getitem__)
        for form in (mapping, pairs, iter(pairs), strings, iter(strings))
    }
    assert results == {0b001}


@given(st.lists(FEATURE, min_size=1, max_size=30))
def test_strings_count_occurrences(strings):
    counts = Counter(strings)
    expected = simhash(dict(counts))
    assert simhash(strings) == expected
    assert simhash(iter(strings)) == expected
    assert simhash(list(counts.items())) == expected
    assert expected == reference_simhash(counts, 64, lambda f: xxhash.xxh64_intdigest(f.encode("utf-8")))


def test_zero_weights_add_nothing():
    # w3 and w5 would each flip bit 2 to 1 if they counted (their hashes have bit 2 set)
    heavy_zeros = {"w1": 1, "w2": 2, "w4": 3, "w3": 0, "w5": 0.0}
    assert simhash(heavy_zeros, bits=3, hashfunc=THREE_BIT.__getitem__) == 0b001
    assert simhash({"w3": 0, "w5": 0}, bits=3, hashfunc=THREE_BIT.__getitem__) == 0
    assert simhash({}) == 0
    assert simhash([]) == 0


@pytest.mark.parametrize(
    ("bits", "digest"),
    [
        (32, xxhash.xxh32_intdigest),
        (64, xxhash.xxh64_intdigest),
        (128, xxhash.xxh3_128_intdigest),
    ],
)
def test_default_hash_is_stable_xxhash(bits, digest):
    # one feature with positive weight: every bit follows that feature's hash
    for feature in ("hello", "自然语言", "", "x" * 1000):
        assert simhash({feature: 2.5}, bits=bits) == digest(feature.encode("utf-8"))
    weights = {"alpha": 3, "beta": 1, "gamma": 2, "delta": 5}
    expected = reference_simhash(weights, bits, lambda f: digest(f.encode("utf-8")))
    assert simhash(weights, bits=bits) == expected
    assert 0 <= expected < 2**bits


@given(st.dictionaries(FEATURE, WEIGHT, max_size=40), st.sampled_from([32, 64, 128]))
def test_results_fit_in_bits(weights, bits):
    assert 0 <= simhash(weights, bits=bits) < 2**bits


@st.composite
def weighted_features_with_hashes(draw, hash_range):
    bits = draw(st.sampled_from([1, 3, 8, 13, 32, 63, 64, 65, 100, 128]))
    low, high = hash_range(bits)
    features = draw(st.dictionaries(FEATURE, st.tuples(WEIGHT, st.integers(low, high)), max_size=30))
    weights = {f: w for f, (w, _) in features.items()}
    hashes = {f: h for f, (_, h) in features.items()}
    return weights, hashes, bits


@given(weighted_features_with_hashes(lambda bits: (0, 2**bits - 1)))
def test_matches_reference(case):
    weights, hashes, bits = case
    assert simhash(weights, bits=bits, hashfunc=hashes.__getitem__) == reference_simhash(
        weights, bits, hashes.__getitem__
    )


@given(weighted_features_with_hashes(lambda bits: (-(2**bits), 2 ** (bits + 64))))
def test_uses_the_low_bits_of_wider_hashes(case):
    # A hashfunc may return more bits than asked for (md5 as an int, Python's signed
    # hash()): simhash uses the low `bits` bits of each hash, for every width.
    weights, hashes, bits = case
    assert simhash(weights, bits=bits, hashfunc=hashes.__getitem__) == reference_simhash(
        weights, bits, hashes.__getitem__
    )


def test_bad_bits_raise():
    with pytest.raises(ValueError, match="bits"):
        simhash({"a": 1}, bits=16)
    with pytest.raises(ValueError, match="bits"):
        simhash({"a": 1}, bits=0, hashfunc=lambda f: 1)


# -- hamming ----------------------------------------------------------------------------


@given(U64, st.sets(st.integers(0, 63), max_size=64))
def test_hamming_counts_flipped_bits(value, positions):
    other = flip(value, positions)
    assert hamming(value, other) == len(positions)
    assert hamming(other, value) == len(positions)
    assert hamming(value, value) == 0


# -- signed storage -----------------------------------------------------------------------


def struct_signed(value: int) -> int:
    return struct.unpack("<q", struct.pack("<Q", value))[0]


@pytest.mark.parametrize("value", [0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1])
def test_to_signed_edges(value):
    signed = to_signed(value)
    assert signed == struct_signed(value)
    assert -(2**63) <= signed < 2**63
    assert to_unsigned(signed) == value


@given(U64)
def test_signed_round_trip(value):
    assert to_signed(value) == struct_signed(value)
    assert to_unsigned(to_signed(value)) == value


@pytest.mark.parametrize("value", [-1, -(2**63), 2**64, 2**70])
def test_to_signed_out_of_range(value):
    with pytest.raises(ValueError, match="64-bit"):
        to_signed(value)


# -- blocks -----------------------------------------------------------------------------


@given(U64)
def test_blocks_split_the_fingerprint(value):
    parts = blocks(value)
    assert len(parts) == 4
    assert all(0 <= part < 2**16 for part in parts)
    assert sum(part << (16 * i) for i, part in enumerate(parts)) == value


@given(U64, st.sets(st.integers(0, 63), max_size=3))
def test_blocks_pigeonhole(value, positions):
    other = flip(value, positions)
    assert hamming(value, other) <= 3
    assert any(a == b for a, b in zip(blocks(value), blocks(other)))


def test_four_bits_can_defeat_the_blocks():
    # why the index stops at distance 3: one flipped bit in each block shares none
    other = flip(0x0123456789ABCDEF, [0, 16, 32, 48])
    assert not any(a == b for a, b in zip(blocks(0x0123456789ABCDEF), blocks(other)))


# -- hex ------------------------------------------------------------------------------------


@given(U64)
def test_hex_round_trip(value):
    text = to_hex(value)
    assert text == value.to_bytes(8, "big").hex()
    assert from_hex(text) == value
    assert from_hex(text.upper()) == value
    assert from_hex(f"  0x{text}\n") == value
    assert from_hex(f"{value:x}") == value  # leading zeros optional


@pytest.mark.parametrize("text", ["", "0x", "   ", "g", "12345678901234567", "0x12345678901234567", "ff ff"])
def test_from_hex_rejects_malformed(text):
    with pytest.raises(ValueError, match="hex"):
        from_hex(text)


@pytest.mark.parametrize("text", ["-1", "-ff", "+1", "1_0", "0x0x1", "0x 1"])
def test_from_hex_rejects_signs_underscores_and_double_prefix(text):
    # not "1 to 16 hex digits": int(..., 16) accepts these, a fingerprint parser must not
    with pytest.raises(ValueError, match="hex"):
        from_hex(text)


# -- sparse vectors: integer dimensions, bytes, arrays ---------------------------------------

DIMENSION = st.integers(min_value=-(2**63), max_value=2**64 - 1)
SIGNED_WEIGHT = st.builds(lambda n, k: n / 2**k, st.integers(-1000, 1000), st.integers(0, 4))


def dimension_hash(dimension: int) -> int:
    """An integer dimension's hash, from its definition: xxHash64 of 8 little-endian bytes."""
    return xxhash.xxh64_intdigest((dimension % 2**64).to_bytes(8, "little"))


def hyperplane_simhash(vector: dict[int, float], bits: int = 64) -> int:
    """Bit i = sign(sum_d w_d * r_i(d)), r_i(d) = +1 if bit i of hash(d) is set else -1 (0 -> bit 0)."""
    out = 0
    for i in range(bits):
        dot = sum(Fraction(w) * (1 if (dimension_hash(d) >> i) & 1 else -1) for d, w in vector.items())
        out |= (dot > 0) << i
    return out


def test_integer_dimensions():
    # fails in 0.1 with AttributeError: 'int' object has no attribute 'encode'
    vector = {12345: 0.5, 987654321: 1.2}
    assert simhash(vector) == hyperplane_simhash(vector)
    assert simhash_sparse(list(vector), list(vector.values())) == simhash(vector)
    assert simhash({7: 1.0}) == dimension_hash(7)  # one dimension: every bit follows its hash


@given(st.dictionaries(DIMENSION, SIGNED_WEIGHT, max_size=12))
def test_sparse_vectors_match_the_hyperplane_definition(vector):
    expected = hyperplane_simhash(vector)
    assert simhash(vector) == expected
    assert simhash(list(vector.items())) == expected
    indices = np.array([d - 2**64 if d >= 2**63 else d for d in vector], dtype=np.int64)  # as int64 arrays hold them
    assert simhash_sparse(indices, list(vector.values())) == expected
    unsigned = [d % 2**64 for d in vector]
    assert simhash_sparse(np.array(unsigned, dtype=np.uint64), np.array(list(vector.values()))) == expected


@given(st.lists(DIMENSION, min_size=1, max_size=50))
def test_vectorised_dimension_hash_is_xxhash(dimensions):
    unsigned = np.array([d % 2**64 for d in dimensions], dtype=np.uint64)
    assert xxh64_dimensions(unsigned).tolist() == [dimension_hash(d) for d in dimensions]


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=40), st.lists(SIGNED_WEIGHT, min_size=40, max_size=40))
def test_duplicate_indices_add_up(indices, weights):
    weights = weights[: len(indices)]
    summed: dict[int, float] = {}
    for d, w in zip(indices, weights):
        summed[d] = summed.get(d, 0.0) + w
    assert simhash_sparse(indices, weights) == hyperplane_simhash(summed)


def test_negative_weights_turn_the_vote():
    assert simhash({7: -1.0}) == dimension_hash(7) ^ (2**64 - 1)
    assert simhash_sparse([7], [-1.0]) == dimension_hash(7) ^ (2**64 - 1)


@pytest.mark.parametrize("bits", [32, 128])
def test_sparse_vectors_at_other_widths(bits):
    vector = {3: 1.5, 2**40: -0.5, 99: 2.0}
    assert simhash_sparse(list(vector), list(vector.values()), bits=bits) == simhash(vector, bits=bits)
    assert simhash({5: 1.0}, bits=32) == xxhash.xxh32_intdigest((5).to_bytes(8, "little"))


def test_scipy_sparse_rows():
    sparse = pytest.importorskip("scipy.sparse")
    matrix = sparse.csr_matrix(np.array([[0.0, 1.5, 0.0, -2.0, 0.25], [1.0, 0.0, 0.0, 0.0, 0.0]]))
    assert simhash_sparse(matrix[0]) == simhash({1: 1.5, 3: -2.0, 4: 0.25})
    assert simhash_sparse(sparse.csr_array(matrix)[[1]]) == simhash({0: 1.0})
    with pytest.raises(ValueError, match="a sparse row has shape"):
        simhash_sparse(matrix)


def test_bytes_features():
    assert simhash({b"\x00\xff": 1.0}) == xxhash.xxh64_intdigest(b"\x00\xff")
    assert simhash({b"caf\xc3\xa9": 2.0, "tea": 1.0}) == simhash({"café": 2.0, "tea": 1.0})  # a str is its UTF-8
    assert simhash([b"a", b"b", b"a"]) == simhash({b"a": 2, b"b": 1})


def test_bad_features_and_vectors():
    with pytest.raises(TypeError, match="a feature is a str, bytes or an int"):
        simhash({1.5: 1.0})
    with pytest.raises(ValueError, match="must fit in 64 bits"):
        simhash({2**64: 1.0})
    with pytest.raises(ValueError, match="finite"):
        simhash({"a": float("nan")})
    with pytest.raises(ValueError, match="finite"):
        simhash_sparse([1], [float("inf")])
    with pytest.raises(ValueError, match="indices must be integers"):
        simhash_sparse([1.5], [1.0])
    with pytest.raises(ValueError, match="one length"):
        simhash_sparse([1, 2], [1.0])
    with pytest.raises(TypeError, match="give indices and values"):
        simhash_sparse([1, 2])
    assert simhash_sparse([], []) == 0


# -- bit similarity ---------------------------------------------------------------------------


@given(U64, U64)
def test_bit_similarity_is_the_share_of_equal_bits(a, b):
    assert bit_similarity(a, b) == 1 - hamming(a, b) / 64
    assert bit_similarity(a, b) == bit_similarity(b, a)
    assert bit_similarity(a, a) == 1.0


def test_bit_similarity_checks_its_arguments():
    assert bit_similarity(0b1011, 0b1001, bits=4) == 0.75
    with pytest.raises(ValueError, match="a must be an unsigned 4-bit fingerprint"):
        bit_similarity(16, 0, bits=4)
    with pytest.raises(ValueError, match="b must be an unsigned 64-bit"):
        bit_similarity(0, -1)
    with pytest.raises(ValueError, match="bits must be a positive integer"):
        bit_similarity(0, 0, bits=0)


def test_doctests():
    assert doctest.testmod(importlib.import_module("simhash_index.fingerprinting.simhash")).failed == 0
