"""The bit helpers of 64-bit fingerprints: distance, signed storage, and the 16-bit blocks.

Pure functions, used by the fingerprints and by every index backend.
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints."""
    return (a ^ b).bit_count()


def to_signed(value: int) -> int:
    """An unsigned 64-bit value as the signed integer a BIGINT column holds."""
    if not 0 <= value <= MASK64:
        raise ValueError(f"fingerprint must be an unsigned 64-bit integer; got {value!r}")
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned(value: int) -> int:
    """The inverse of `to_signed`."""
    if not -(1 << 63) <= value <= MASK64:
        raise ValueError(f"value must fit in 64 bits (signed or unsigned); got {value!r}")
    return value & MASK64


def blocks(fingerprint: int) -> tuple[int, int, int, int]:
    """The four 16-bit blocks of a 64-bit fingerprint, lowest first: bits 0-15, 16-31, 32-47, 48-63.

    Two fingerprints within Hamming distance 3 agree on at least one block.
    """
    return (fingerprint & 0xFFFF, (fingerprint >> 16) & 0xFFFF, (fingerprint >> 32) & 0xFFFF, fingerprint >> 48)


def interleaved_blocks(fingerprint: int) -> tuple[int, int, int, int]:
    """Block i holds bits i, i+4, ..., i+60 of the fingerprint, bit i+4j as its bit j."""
    out = []
    for i in range(4):
        x = (fingerprint >> i) & 0x1111111111111111  # every fourth bit, gathered below
        x = (x | (x >> 3)) & 0x0303030303030303
        x = (x | (x >> 6)) & 0x000F000F000F000F
        x = (x | (x >> 12)) & 0x000000FF000000FF
        out.append((x | (x >> 24)) & 0xFFFF)
    return out[0], out[1], out[2], out[3]
