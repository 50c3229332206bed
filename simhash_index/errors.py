"""Errors the library raises; each message says what went wrong and what to do."""


def one_line(error: object) -> str:
    """An error's message on one line: library and driver messages may span several."""
    return " ".join(part.strip() for part in str(error).splitlines() if part.strip())


class SimhashIndexError(Exception):
    """Base class of this library's errors."""


class IndexUnavailableError(SimhashIndexError):
    """The database cannot be reached or opened."""


class IndexNotFoundError(SimhashIndexError):
    """The database has no simhash tables (and creating them was not asked for)."""


class SchemaVersionError(SimhashIndexError):
    """The database was written by an incompatible version of simhash-index."""


class SchemeMismatchError(SimhashIndexError):
    """The database holds fingerprints of another scheme; they are not comparable."""


class LayoutMismatchError(SimhashIndexError):
    """The database's table has another layout than the one asked for."""


class ArchiveError(SimhashIndexError):
    """A web archive cannot be read or written as asked (warcio missing, archives of different
    kinds, one that changed while it was read)."""


class InvalidArgumentError(ValueError):
    """An argument the caller gave cannot be used (a URL's option, a layout, a radius, a key):
    the message names it and the fix. A ValueError, as Python's own checks raise; not a
    SimhashIndexError, which callers take for the index failing."""


class MissingDependencyError(IndexUnavailableError, ImportError):
    """The database's driver is not installed: the message names the extra to install."""


def install_extra(extra: str) -> str:
    """How to install an extra. The package is not on PyPI: it installs from a clone."""
    return f"pip install '/path/to/simhash-index[{extra}]' (your clone's path; '.[{extra}]' from inside it)"
