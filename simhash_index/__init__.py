"""Near-duplicate detection for web crawls: simhash fingerprints and an SQL index on their halves."""

from .errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    SchemaVersionError,
    SchemeMismatchError,
    SimhashIndexError,
)
from .fingerprint import Fingerprinter, NoFeaturesError, Signature, fingerprint
from .index import Duplicate, Match, SimhashIndex
from .simhash import hamming, simhash

__all__ = [
    "Duplicate",
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
    "fingerprint",
    "hamming",
    "simhash",
]
__version__ = "0.1.0"
