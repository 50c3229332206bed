"""The SIMHASH_* settings: read once, checked at start with a message naming the setting."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from .. import defaults
from ..fingerprinting.fingerprinter import Fingerprinter
from ..index.prefer import NAMED, Prefer, check_prefer
from ..index.records import Policy, as_window
from ..index.sql.layouts import ASSIGNMENTS, LAYOUTS
from ..text.extract import ExtractOptions
from ..workers import default_size

ON_DB_ERROR = ("stop", "pass")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
KNOWN = (  # every setting read (docs/scrapy.md's settings table lists each)
    "SIMHASH_ENABLED",
    "SIMHASH_DATABASE_URL",
    "SIMHASH_MAX_DISTANCE",
    "SIMHASH_MIN_SIMILARITY",
    "SIMHASH_ADDED_WORDS",
    "SIMHASH_WINDOW",
    "SIMHASH_PREFER",
    "SIMHASH_KEEP_TEXTS",
    "SIMHASH_FINGERPRINTER",
    "SIMHASH_MIN_TEXT_LENGTH",
    "SIMHASH_WORD_WEIGHTS",
    "SIMHASH_INDEX_LAYOUT",
    "SIMHASH_BLOCK_ASSIGNMENT",
    "SIMHASH_URL_FIELD",
    "SIMHASH_HTML_FIELD",
    "SIMHASH_TEXT_FIELD",
    "SIMHASH_KEY",
    "SIMHASH_CANONICALIZE_URL",
    "SIMHASH_SKIP_DUPLICATES",
    "SIMHASH_DROP_LOG_LEVEL",
    "SIMHASH_ON_DB_ERROR",
    "SIMHASH_WORKERS",
    "SIMHASH_WORKER_TIMEOUT",
    "SIMHASH_BATCH_SIZE",
    "SIMHASH_CONNECT_TIMEOUT",
    "SIMHASH_STATEMENT_TIMEOUT",
    "SIMHASH_EXTRACT_FAVOR",
    "SIMHASH_EXTRACT_COMMENTS",
    "SIMHASH_EXTRACT_TABLES",
    "SIMHASH_EXTRACT_FAST",
    "SIMHASH_EXTRACT_MAX_BYTES",
)


@dataclass(frozen=True)
class PipelineSettings:
    """The SIMHASH_* settings, read and checked once (PipelineSettings.from_settings)."""

    database_url: str = defaults.DATABASE_URL
    layout: str | None = None  # for a new SQL index; None: the default, or an existing index's own
    block_assignment: str | None = None
    max_distance: int | None = None  # None: the default radius, capped by a halves index
    min_similarity: float = defaults.MIN_SIMILARITY
    added_words: int | None = defaults.ADDED_WORDS  # None: the plain similarity rule
    window: timedelta | None = None  # a page is a duplicate only of pages stored within it
    keep_texts: bool = False  # keep each page's text, compressed (explain and report diffs)
    prefer: Prefer = "first"  # the survivor policy: which of two duplicates is kept (index/prefer.py)
    fingerprinter: Fingerprinter = field(default_factory=Fingerprinter)
    html_field: str = "html"
    text_field: str = "text"
    url_field: str = "url"
    key: Callable[[Any], object] | None = None  # the item's key in the index; None: its URL field
    canonicalize_url: bool = False
    drop_log_level: str = "INFO"
    on_db_error: str = "stop"
    workers: int = field(default_factory=default_size)
    worker_timeout: float = defaults.WORKER_TIMEOUT_S
    batch_size: int = defaults.BATCH_SIZE
    connect_timeout: float = defaults.CONNECT_TIMEOUT_S
    statement_timeout: float = defaults.STATEMENT_TIMEOUT_S
    extract: ExtractOptions = field(default_factory=ExtractOptions)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PipelineSettings:
        """Every SIMHASH_* setting, checked: ValueError naming the first bad one."""
        read = _Reader(settings)
        values = cls(
            database_url=read.text("DATABASE_URL", os.environ.get(defaults.DATABASE_URL_ENV) or defaults.DATABASE_URL),
            layout=read.optional_choice("INDEX_LAYOUT", LAYOUTS),
            block_assignment=read.optional_choice("BLOCK_ASSIGNMENT", ASSIGNMENTS),
            max_distance=read.optional_integer("MAX_DISTANCE", 0, defaults.MAX_SUPPORTED_DISTANCE),
            min_similarity=read.number("MIN_SIMILARITY", defaults.MIN_SIMILARITY, 0.0, 1.0),
            added_words=read.integer("ADDED_WORDS", defaults.ADDED_WORDS, 0, None) or None,
            window=read.window("WINDOW"),
            keep_texts=read.boolean("KEEP_TEXTS", False),
            prefer=_prefer(settings.get("SIMHASH_PREFER")),
            fingerprinter=fingerprinter_from(settings),
            html_field=read.text("HTML_FIELD", "html"),
            text_field=read.text("TEXT_FIELD", "text"),
            url_field=read.text("URL_FIELD", "url"),
            key=_key_function(settings.get("SIMHASH_KEY")),
            canonicalize_url=read.boolean("CANONICALIZE_URL", False),
            drop_log_level=read.choice("DROP_LOG_LEVEL", LOG_LEVELS, "INFO", fold=str.upper),
            on_db_error=read.choice("ON_DB_ERROR", ON_DB_ERROR, "stop", fold=str.lower),
            workers=read.integer("WORKERS", default_size(), 0, None),
            worker_timeout=read.number("WORKER_TIMEOUT", defaults.WORKER_TIMEOUT_S, 1e-3, None),
            batch_size=read.integer("BATCH_SIZE", defaults.BATCH_SIZE, 1, defaults.MAX_BATCH_SIZE),
            connect_timeout=read.number("CONNECT_TIMEOUT", defaults.CONNECT_TIMEOUT_S, 0.1, None),
            statement_timeout=read.number("STATEMENT_TIMEOUT", defaults.STATEMENT_TIMEOUT_S, 0.1, None),
            extract=_extract_options(settings),
        )
        if (values.layout or values.block_assignment) and not values.database_url.startswith(("sqlite", "postgres")):
            raise ValueError(
                "SIMHASH_INDEX_LAYOUT and SIMHASH_BLOCK_ASSIGNMENT apply to SQL indexes (sqlite://, postgresql://)"
            )
        if not values.url_field and values.key is None:
            raise ValueError("SIMHASH_URL_FIELD is empty and SIMHASH_KEY is not set: items need a key")
        if not (values.html_field or values.text_field):
            raise ValueError("one of SIMHASH_HTML_FIELD and SIMHASH_TEXT_FIELD must name a field")
        return values


def _prefer(raw: object) -> Prefer:
    """SIMHASH_PREFER: a policy's name, a function, or the import path of one."""
    if raw in (None, ""):
        return "first"
    if isinstance(raw, str) and raw not in NAMED and "." in raw:
        raw = load_object(raw)
    try:
        check_prefer(raw)
    except ValueError:
        raise ValueError(
            f"SIMHASH_PREFER must be first, longest, newest, or a function (new, stored) -> bool or its "
            f"import path; got {raw!r}"
        ) from None
    return raw  # type: ignore[return-value]


def unknown_settings(settings: BaseSettings) -> list[str]:
    """A warning for each SIMHASH_* setting that nothing reads (a misspelt name would be ignored
    without a word), naming the known setting closest to it."""
    known = {name.removeprefix("SIMHASH_"): name for name in KNOWN}
    warnings = []
    for name in sorted(n for n in settings if isinstance(n, str) and n.startswith("SIMHASH_") and n not in KNOWN):
        closest = difflib.get_close_matches(name.removeprefix("SIMHASH_"), known, n=1)
        hint = f"did you mean {known[closest[0]]}?" if closest else "docs/scrapy.md's Settings list the known ones"
        warnings.append(f"simhash: unknown setting {name}, ignored: {hint}")
    return warnings


def enabled(settings: BaseSettings) -> bool:
    """SIMHASH_ENABLED (True unless set): ValueError naming it when it is not True or False."""
    return _Reader(settings).boolean("ENABLED", True)


@dataclass(frozen=True)
class SkipSettings:
    """What SimhashSkipDuplicatesMiddleware reads, checked (SkipSettings.from_settings)."""

    skip: bool = False
    enabled: bool = True
    keyed_otherwise: bool = False  # SIMHASH_KEY is set: items are not keyed by their URL
    canonicalize_url: bool = False

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SkipSettings:
        """ValueError naming the first bad value."""
        read = _Reader(settings)
        return cls(
            skip=read.boolean("SKIP_DUPLICATES", False),
            enabled=enabled(settings),
            keyed_otherwise=bool(settings.get("SIMHASH_KEY")),
            canonicalize_url=read.boolean("CANONICALIZE_URL", False),
        )


class _Reader:
    """Typed reads of SIMHASH_* settings, each refusing a bad value with a message naming it."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings

    def _raw(self, name: str, default: object) -> object:
        return self.settings.get(f"SIMHASH_{name}", default)

    def text(self, name: str, default: str) -> str:
        raw = self._raw(name, default)
        if not isinstance(raw, str):
            raise ValueError(f"SIMHASH_{name} must be a string; got {raw!r}")
        return raw

    def window(self, name: str) -> timedelta | None:
        raw = self._raw(name, None)
        if raw in (None, ""):
            return None
        try:
            return Policy(window=as_window(raw)).window
        except (TypeError, ValueError):
            raise ValueError(
                f"SIMHASH_{name} must be a positive duration such as 30d, 12h or 3600 (seconds); got {raw!r}"
            ) from None

    def boolean(self, name: str, default: bool) -> bool:
        try:
            return self.settings.getbool(f"SIMHASH_{name}", default)
        except ValueError:
            raise ValueError(f"SIMHASH_{name} must be True or False; got {self._raw(name, default)!r}") from None

    def integer(self, name: str, default: int, low: int, high: int | None) -> int:
        raw = self._raw(name, default)
        try:
            value: int = int(raw)  # type: ignore[call-overload]
            if isinstance(raw, float) and raw != value:
                raise ValueError
        except (TypeError, ValueError):
            raise ValueError(f"SIMHASH_{name} must be an integer; got {raw!r}") from None
        if value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise ValueError(f"SIMHASH_{name} must be {span}; got {value}")
        return value

    def optional_integer(self, name: str, low: int, high: int | None) -> int | None:
        return None if self._raw(name, None) in (None, "") else self.integer(name, 0, low, high)

    def number(self, name: str, default: float, low: float, high: float | None) -> float:
        raw = self._raw(name, default)
        try:
            value = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(f"SIMHASH_{name} must be a number; got {raw!r}") from None
        if value < low or (high is not None and value > high):
            span = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
            raise ValueError(f"SIMHASH_{name} must be {span}; got {value:g}")
        return value

    def optional_choice(self, name: str, choices: tuple[str, ...]) -> str | None:
        return None if self._raw(name, None) in (None, "") else self.choice(name, choices, "")

    def choice(self, name: str, choices: tuple[str, ...], default: str, fold: Callable[[str], str] = str) -> str:
        value = fold(self.text(name, default))
        if value not in choices:
            raise ValueError(f"SIMHASH_{name} must be one of {', '.join(choices)}; got {value!r}")
        return value


def fingerprinter_from(settings: BaseSettings) -> Fingerprinter:
    """The Fingerprinter the settings describe: SIMHASH_FINGERPRINTER (a dict of its keyword
    arguments, or the import path of a Fingerprinter or of a function returning one), with
    SIMHASH_MIN_TEXT_LENGTH and SIMHASH_WORD_WEIGHTS (a file of "word weight" lines) on top."""
    given = settings.get("SIMHASH_FINGERPRINTER")
    if given is None:
        options: dict[str, Any] = {}
    elif isinstance(given, Mapping):
        options = dict(given)
    elif isinstance(given, str) and given.lstrip().startswith("{"):
        try:
            options = settings.getdict("SIMHASH_FINGERPRINTER")  # -s SIMHASH_FINGERPRINTER='{"top_k": 64}'
        except ValueError as exc:
            raise ValueError(
                f"SIMHASH_FINGERPRINTER is not a JSON object ({exc}): quote its keys and strings with "
                """double quotes, as in -s 'SIMHASH_FINGERPRINTER={"weighting": "tfidf"}'"""
            ) from None
    elif isinstance(given, str):
        return _with_overrides(_loaded_fingerprinter(given), settings)
    else:
        raise ValueError(
            f"SIMHASH_FINGERPRINTER must be a dict of Fingerprinter arguments or an import path; got {given!r}"
        )
    try:
        made = Fingerprinter(**options)
    except (TypeError, ValueError, ImportError) as exc:  # ImportError: tfidf without wordfreq
        raise ValueError(f"SIMHASH_FINGERPRINTER: {exc}") from None
    return _with_overrides(made, settings)


def _loaded_fingerprinter(path: str) -> Fingerprinter:
    try:
        found = load_object(path)
    except (ImportError, NameError, ValueError, AttributeError) as exc:
        raise ValueError(f"SIMHASH_FINGERPRINTER: cannot import {path!r}: {exc}") from None
    try:
        made = found() if callable(found) and not isinstance(found, Fingerprinter) else found
    except Exception as exc:  # the user's factory: any failure is a bad setting, one line
        raise ValueError(f"SIMHASH_FINGERPRINTER: {path}() failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(made, Fingerprinter):
        raise ValueError(f"SIMHASH_FINGERPRINTER: {path!r} is not a Fingerprinter (nor a function returning one)")
    return made


def _with_overrides(fingerprinter: Fingerprinter, settings: BaseSettings) -> Fingerprinter:
    changes: dict[str, Any] = {}
    if settings.get("SIMHASH_MIN_TEXT_LENGTH") is not None:
        changes["min_length"] = _Reader(settings).integer("MIN_TEXT_LENGTH", fingerprinter.min_length, 0, None)
    weights = settings.get("SIMHASH_WORD_WEIGHTS")
    if weights:
        changes["word_weights"] = weights
    if not changes:
        return fingerprinter
    from dataclasses import replace

    try:
        return replace(fingerprinter, **changes)
    except (OSError, TypeError, ValueError) as exc:
        name = "SIMHASH_WORD_WEIGHTS" if "word_weights" in changes else "SIMHASH_MIN_TEXT_LENGTH"
        raise ValueError(f"{name}: {exc}") from None


def _key_function(given: object) -> Callable[[Any], object] | None:
    """SIMHASH_KEY: a function of the item (or its import path) giving its key in the index."""
    if given is None or given == "":
        return None
    if isinstance(given, str):
        try:
            given = load_object(given)
        except (ImportError, NameError, ValueError, AttributeError) as exc:
            raise ValueError(f"SIMHASH_KEY: cannot import {given!r}: {exc}") from None
    if not callable(given):
        raise ValueError(f"SIMHASH_KEY must be a function of the item (or its import path); got {given!r}")
    return given


def _extract_options(settings: BaseSettings) -> ExtractOptions:
    read = _Reader(settings)
    favor = settings.get("SIMHASH_EXTRACT_FAVOR") or None
    try:
        return ExtractOptions(
            favor=favor,
            include_comments=read.boolean("EXTRACT_COMMENTS", True),
            include_tables=read.boolean("EXTRACT_TABLES", True),
            max_bytes=read.integer("EXTRACT_MAX_BYTES", ExtractOptions().max_bytes, 1, None),
            fast=read.boolean("EXTRACT_FAST", False),
        )
    except ValueError as exc:
        message = str(exc)
        raise ValueError(message if message.startswith("SIMHASH_") else f"SIMHASH_EXTRACT_FAVOR: {message}") from None
