"""Indexes in this process's memory: the MemoryIndex backend, and the NearIndex that SQL writers
keep of the stored fingerprints."""

from .backend import MemoryIndex
from .near import NearIndex

__all__ = ["MemoryIndex", "NearIndex"]
