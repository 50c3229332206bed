"""Near-duplicate detection for web crawls: simhash fingerprints, an index, a Scrapy pipeline.

The names below are imported on first use, so that a process needing one part (a worker
fingerprinting pages, the command line) does not pay for importing the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    __version__: str
    from .errors import (
        IndexNotFoundError,
        IndexUnavailableError,
        InvalidArgumentError,
        LayoutMismatchError,
        SchemaVersionError,
        SchemeMismatchError,
        SimhashIndexError,
    )
    from .fingerprinting.bits import hamming
    from .fingerprinting.fingerprinter import Fingerprinter, NoFeaturesError, Signature, fingerprint
    from .fingerprinting.simhash import bit_similarity, simhash, simhash_sparse
    from .fingerprinting.weights import load_word_weights
    from .index.base import Index
    from .index.factory import SimhashIndex, open_index
    from .index.memory import MemoryIndex
    from .index.records import Duplicate, Match, Policy
    from .text.extract import ExtractOptions, extract_text

_HOMES = {
    "IndexNotFoundError": "errors",
    "IndexUnavailableError": "errors",
    "InvalidArgumentError": "errors",
    "LayoutMismatchError": "errors",
    "SchemaVersionError": "errors",
    "SchemeMismatchError": "errors",
    "SimhashIndexError": "errors",
    "Fingerprinter": "fingerprinting.fingerprinter",
    "NoFeaturesError": "fingerprinting.fingerprinter",
    "Signature": "fingerprinting.fingerprinter",
    "fingerprint": "fingerprinting.fingerprinter",
    "bit_similarity": "fingerprinting.simhash",
    "hamming": "fingerprinting.bits",
    "simhash": "fingerprinting.simhash",
    "simhash_sparse": "fingerprinting.simhash",
    "load_word_weights": "fingerprinting.weights",
    "ExtractOptions": "text.extract",
    "extract_text": "text.extract",
    "Index": "index.base",
    "SimhashIndex": "index.factory",
    "open_index": "index.factory",
    "MemoryIndex": "index.memory",
    "Duplicate": "index.records",
    "Match": "index.records",
    "Policy": "index.records",
}
__all__ = [
    "Duplicate",
    "ExtractOptions",
    "Fingerprinter",
    "Index",
    "IndexNotFoundError",
    "IndexUnavailableError",
    "InvalidArgumentError",
    "LayoutMismatchError",
    "Match",
    "MemoryIndex",
    "NoFeaturesError",
    "Policy",
    "SchemaVersionError",
    "SchemeMismatchError",
    "Signature",
    "SimhashIndex",
    "SimhashIndexError",
    "bit_similarity",
    "extract_text",
    "fingerprint",
    "hamming",
    "load_word_weights",
    "open_index",
    "simhash",
    "simhash_sparse",
]
DISTRIBUTION = "simhash-index"  # the name pip knows; its metadata holds the version (pyproject.toml)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read on first use: importing importlib.metadata takes tens of ms
        from importlib.metadata import version

        return version(DISTRIBUTION)
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'simhash_index' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES, "__version__"])
