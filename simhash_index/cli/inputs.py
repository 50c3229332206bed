"""What the command line reads: dates, page files and the fingerprint settings of a database;
plus its progress bar."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from ..fingerprinting.fingerprinter import DEFAULT, Fingerprinter, NoFeaturesError
from ..text.dates import iso_date
from ..text.extract import decode, extract_text, looks_binary, looks_like_html
from . import formats


class IsoDateTime(click.ParamType):  # type: ignore[type-arg]  # generic in click >= 8.2 only
    """An ISO 8601 date or datetime; UTC unless it carries an offset."""

    name = "DATETIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        moment = iso_date(str(value))
        if moment is None:
            self.fail(
                f"{value!r} is not an ISO date or datetime within years 1 to 9999 UTC, "
                "e.g. 2024-05-01 or 2024-05-01T12:00:00+02:00"
            )
        return moment


def fingerprinter_for(scheme: str | None, word_weights: str | None = None) -> Fingerprinter:
    """A Fingerprinter whose fingerprints are comparable with a database's (None: no database).

    The command line uses the default settings, with the --word-weights file if given; a
    different minimum text length (SIMHASH_MIN_TEXT_LENGTH) is read back from the scheme.
    """
    if scheme == DEFAULT.scheme and word_weights is None:
        return DEFAULT
    found = re.search(r" min_length=(\d+) ", scheme or "")
    min_length = int(found.group(1)) if found else DEFAULT.min_length
    try:
        candidate = Fingerprinter(min_length=min_length, word_weights=word_weights)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="--word-weights") from None
    if scheme is None or candidate.scheme == scheme:
        return candidate
    ours, theirs = _weights_of(candidate.scheme), _weights_of(scheme)
    if ours != theirs:
        hint = "without --word-weights" if theirs == "none" else "with the --word-weights file it was built with"
        raise click.ClickException(f"the database's fingerprints were made with other word weights: run {hint}")
    raise click.ClickException(
        f"the database's fingerprints were made with settings the command line cannot reproduce ({scheme}): "
        "use the library with the same Fingerprinter settings"
    )


def _weights_of(scheme: str) -> str | None:
    found = re.search(r" weights=(\S+)", scheme)
    return found.group(1) if found else None


def read_page(path: str, kind: str = "auto") -> str:
    """The text of a file ('-' for stdin): HTML has its main text extracted, as the pipeline does;
    a binary file is refused."""
    raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    content = decode(raw)
    if looks_binary(content):
        raise click.ClickException(f"{path}: a binary file (an image, an archive?), not text or HTML: left out")
    if kind == "html" or (kind == "auto" and looks_like_html(path, content)):
        text = extract_text(content)
        if text is None:
            raise click.ClickException(f"{path}: no main text found in the HTML")
        return text
    return content


def fingerprint_of(fingerprinter: Fingerprinter, text: str, name: str) -> int:
    try:
        return fingerprinter.fingerprint(text)
    except NoFeaturesError:
        raise click.ClickException(
            f"{name}: no words to fingerprint (empty, or only punctuation and stop words)"
        ) from None


@contextmanager
def progress(total: int | None, description: str) -> Iterator[Callable[[int], None]]:
    """advance(n) for a progress bar on stderr, shown only when stderr is a terminal."""
    if not formats.isatty(sys.stderr):
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
