"""Per-word weight tables read from files, for `Fingerprinter(word_weights=...)`."""

from __future__ import annotations

import math
import os
from pathlib import Path


def load_word_weights(path: str | os.PathLike[str]) -> dict[str, float]:
    """Read a weight table: one word and its weight per line, separated by white space.

    The weight is the last field, so a feature with spaces in it (a word n-gram) may come
    before it. Blank lines and lines starting with # are skipped. A weight is a finite
    number >= 0 (0 ignores the word). Raises ValueError naming the file and line of a
    malformed entry, OSError when the file cannot be read.

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder, "finance.txt")
    ...     _ = path.write_text("# finance\\nequity 2.5\\ninterest rate 3\\n", encoding="utf-8")
    ...     load_word_weights(path)
    {'equity': 2.5, 'interest rate': 3.0}
    """
    weights: dict[str, float] = {}
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            word, weight = _entry(text, f"{path}:{number}")
            if word in weights and weights[word] != weight:
                raise ValueError(f"{path}:{number}: {word!r} is listed twice with different weights")
            weights[word] = weight
    return weights


def _entry(text: str, where: str) -> tuple[str, float]:
    parts = text.rsplit(None, 1)
    if len(parts) != 2:
        raise ValueError(f"{where}: expected a word and a weight separated by white space; got {text!r}")
    word, raw = parts
    try:
        weight = float(raw)
    except ValueError:
        raise ValueError(f"{where}: the weight of {word!r} must be a number; got {raw!r}") from None
    if not math.isfinite(weight) or weight < 0:
        raise ValueError(f"{where}: the weight of {word!r} must be a finite number >= 0; got {raw!r}")
    return word, weight
