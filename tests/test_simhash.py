"""simhash.py: the simhash itself and the bit helpers, against independent references."""

from __future__ import annotations

import struct
from collections import Counter
from fractions import Fraction

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from simhash_index.fingerprinting.simhash import blocks, from_hex, hamming, simhash, to_hex, to_signed, to_unsigned

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
    assert simhash(weights, bits=bits, hashfunc=hashes.__getitem__) == reference_simhash(weights, bits, hashes.__getitem__)


@given(weighted_features_with_hashes(lambda bits: (-(2**bits), 2 ** (bits + 64))))
def test_uses_the_low_bits_of_wider_hashes(case):
    # A hashfunc may return more bits than asked for (md5 as an int, Python's signed
    # hash()): simhash uses the low `bits` bits of each hash, for every width.
    weights, hashes, bits = case
    assert simhash(weights, bits=bits, hashfunc=hashes.__getitem__) == reference_simhash(weights, bits, hashes.__getitem__)


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
