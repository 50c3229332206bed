"""Near-duplicate detection for web crawls: simhash fingerprints and an SQL index on their halves."""

from .errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashIndexError,
)
from .extract import ExtractOptions, extract_text
from .fingerprint import Fingerprinter, NoFeaturesError, Signature, fingerprint
from .index import Duplicate, Match, SimhashIndex
from .simhash import bit_similarity, hamming, simhash, simhash_sparse
from .weights import load_word_weights

__all__ = [
    "Duplicate",
    "ExtractOptions",
    "Fingerprinter",
    "IndexNotFoundError",
    "IndexUnavailableError",
    "Match",
    "NoFeaturesError",
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
    "simhash",
    "simhash_sparse",
]
__version__ = "0.1.0"
