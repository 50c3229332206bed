"""What a writer keeps in memory beside each stored fingerprint (a NearIndex payload row): the
page's row id, to read the rows of the candidates it keeps, and one bit of each slot of the
page's sketch (sketch.slot_bits), to turn away in memory the candidates the rule would turn away.

Slots that hold the same byte hold the same bit, so two sketches agree on no fewer bits than
slots: a candidate whose bits agree on fewer than the slots the rule needs (least_agreeing) can
never pass the rule, whatever the rest of its row says. A page whose bits are not known (no
sketch of DEFAULT_SLOTS slots, or stored by an earlier version) is always kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ...fingerprinting.sketch import DEFAULT_SLOTS, slot_bits
from ..memory.near import Payload

WORDS = DEFAULT_SLOTS // 64  # words of sketch bits
WIDTH = 1 + WORDS  # the row id, then the bits
UNKNOWN = np.uint64(1 << 63)  # in the id word: the page's sketch bits are not known


def payload(ids: npt.NDArray[np.int64] | Sequence[int], bits: Sequence[bytes | None]) -> Payload:
    """The payload rows of pages with these row ids and sketch bits (None: not known)."""
    rows = np.zeros((len(bits), WIDTH), np.uint64)
    rows[:, 0] = np.asarray(ids, np.int64).astype(np.uint64)
    known = [i for i, value in enumerate(bits) if value is not None and len(value) == WORDS * 8]
    if known:
        packed = b"".join(bits[i] for i in known)  # type: ignore[misc]
        rows[known, 1:] = np.frombuffer(packed, np.uint64).reshape(-1, WORDS)
    unknown = np.ones(len(bits), bool)
    unknown[known] = False
    rows[unknown, 0] |= UNKNOWN
    return rows


def row_ids(rows: Payload) -> npt.NDArray[np.int64]:
    """The row ids of payload rows."""
    ids: npt.NDArray[np.int64] = (rows[:, 0] & ~UNKNOWN).astype(np.int64)
    return ids


def query_bits(sketches: Sequence[bytes | None]) -> tuple[Payload, npt.NDArray[np.bool_]]:
    """The sketch bits of the pages a writer looks up, as rows of words, and which are known."""
    rows = np.zeros((len(sketches), WORDS), np.uint64)
    known = np.zeros(len(sketches), bool)
    for i, sketch in enumerate(sketches):
        bits = slot_bits(sketch)
        if bits is not None:
            rows[i] = np.frombuffer(bits, np.uint64)
            known[i] = True
    return rows, known


def could_pass(rows: Payload, bits: Payload, known: npt.NDArray[np.bool_], needed: int) -> npt.NDArray[np.bool_]:
    """Which candidates (payload `rows`) the rule could take for the pages looked up (their
    `bits` and `known`, a row each candidate): all whose bits or the page's are not known, else
    those whose bits agree on `needed` slots or more."""
    agree = DEFAULT_SLOTS - np.bitwise_count(rows[:, 1:] ^ bits).sum(axis=1, dtype=np.int64)
    result: npt.NDArray[np.bool_] = (agree >= needed) | ~known | ((rows[:, 0] & UNKNOWN) != 0)
    return result
