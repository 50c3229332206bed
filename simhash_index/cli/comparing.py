"""Pages side by side: `query` (stored pages near a page, a file or a simhash), `fingerprint`
(the simhash of files) and `compare` (two files or stored pages)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..errors import one_line
from ..fingerprinting.bits import hamming
from ..fingerprinting.fingerprinter import Fingerprinter, Signature
from ..fingerprinting.simhash import from_hex, to_hex
from ..index import explain as evidence
from ..index.base import Index
from . import formats, listings
from .group import (
    FILE_OR_STDIN,
    db_option,
    format_option,
    max_distance_option,
    open_index,
    output_format,
    word_weights_option,
)
from .inputs import fingerprint_of, fingerprinter_for, progress, read_page


@click.command()
@db_option
@format_option()
@click.option("--url", help="A page stored in the database.")
@click.option("--text", "text_file", type=FILE_OR_STDIN, help="A text file, or - for stdin.")
@click.option("--html", "html_file", type=FILE_OR_STDIN, help="An HTML file, or - for stdin; its main text is used.")
@click.option("--simhash", "simhash_hex", metavar="HEX", help="A fingerprint: 16 hex digits.")
@max_distance_option("Largest Hamming distance to list (the search radius).")
@word_weights_option
def query(
    db: str,
    fmt: str | None,
    url: str | None,
    text_file: str | None,
    html_file: str | None,
    simhash_hex: str | None,
    max_distance: int | None,
    word_weights: str | None,
) -> None:
    """Stored pages near a page, a file or a simhash.

    Give one of --url (a page stored or dropped), --text, --html or --simhash.
    Lists the stored pages within --max-distance, nearest first (--url itself
    is left out), with the similarity of their sketches (empty when either has
    none: a --simhash has none, and a dropped page's is not kept, but its
    similarity to the page it duplicated is logged).
    """
    sources = (url, text_file, html_file, simhash_hex)
    if sum(source is not None for source in sources) != 1:
        raise click.UsageError("give exactly one of --url, --text, --html, --simhash")
    index = open_index(db, max_distance=max_distance)
    exclude = None
    if simhash_hex is not None:
        try:
            signature = Signature(from_hex(simhash_hex), None)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--simhash") from None
    elif url is not None:
        exclude = find_page(index, url)
        page_fingerprint(exclude)  # a one-line error when it has none
        signature = exclude.signature  # type: ignore[assignment]
    else:
        path, kind = (text_file, "text") if text_file is not None else (str(html_file), "html")
        signature = signature_of(fingerprinter_for(index.scheme, word_weights), read_page(path, kind), path)
    matches = evidence.near(index, signature, exclude=exclude)
    listings.write_matches(matches, output_format(fmt), sys.stdout)
    if not matches:
        given = url or text_file or html_file or simhash_hex
        others = " other" if url is not None else ""
        radius = index.max_distance
        click.echo(f"no{others} stored page within {radius} bits of {formats.visible(str(given))}", err=True)


def find_page(index: Index, url: str) -> evidence.Found:
    """A page stored or dropped under this URL; a one-line error when neither."""
    found = evidence.find(index, url)
    if found.status == "unknown":
        raise click.ClickException(
            f"{formats.visible(url)} is neither stored nor logged as a duplicate in the database"
        )
    return found


def page_fingerprint(found: evidence.Found | Signature) -> int:
    """The fingerprint of a file, or of a page stored or dropped; a one-line error when it has none."""
    if isinstance(found, Signature):
        if found.simhash is None:  # signature_of gives every file one: fingerprint_of refuses a text without
            raise click.ClickException("the text has no simhash")
        return found.simhash
    if found.fingerprint is None:
        raise click.ClickException(
            f"{formats.visible(found.key)} has no simhash in the index (its text is short: exact matches only)"
        )
    return found.fingerprint


def signature_of(fingerprinter: Fingerprinter, text: str, name: str) -> Signature:
    """A file's fingerprint with its sketch, for distances and similarities."""
    fingerprint = fingerprint_of(fingerprinter, text, name)
    signature = fingerprinter.signature(text)
    return Signature(fingerprint, None, None if signature is None else signature.sketch)


@click.command()
@format_option()
@click.argument("files", nargs=-1, required=True, type=FILE_OR_STDIN)
@word_weights_option
def fingerprint(fmt: str | None, files: tuple[str, ...], word_weights: str | None) -> None:
    """The simhash of text or HTML files.

    HTML (by extension .html/.htm, or content) has its main text extracted
    first. text_hash is the hash of the normalised text, for exact matches.
    """
    fingerprinter = fingerprinter_for(None, word_weights)
    rows, failed = [], 0
    with progress(len(files), "fingerprinting") as advance:
        for path in files:
            try:
                text = read_page(path)
                fingerprint = fingerprint_of(fingerprinter, text, path)
            except (click.ClickException, OSError) as exc:  # one bad file does not stop the others
                message = exc.format_message() if isinstance(exc, click.ClickException) else one_line(exc)
                click.echo(f"Error: {message}", err=True)
                failed += 1
            else:
                signature = fingerprinter.signature(text)  # not None: the text has a fingerprint
                text_hash = to_hex(signature.text_hash) if signature and signature.text_hash is not None else None
                rows.append({"file": path, "simhash": to_hex(fingerprint), "text_hash": text_hash})
            advance(1)
    formats.write_rows(rows, ("file", "simhash", "text_hash"), output_format(fmt), sys.stdout)
    if failed:
        click.get_current_context().exit(1)


@click.command()
@db_option
@format_option()
@click.argument("a")
@click.argument("b")
@word_weights_option
def compare(db: str, fmt: str | None, a: str, b: str, word_weights: str | None) -> None:
    """The distance and similarity of two files or two URLs in the index.

    A and B are text or HTML files (- for stdin) or URLs of pages stored or
    dropped in the database (with ://); prints their simhashes, Hamming
    distance and the similarity of their sketches (empty when one has none:
    a dropped page's sketch is not kept, only its logged similarity to the
    page it duplicated).
    """
    if a == b == "-":
        raise click.UsageError("only one of A and B can be - (stdin)")
    files = {value: value == "-" or Path(value).is_file() for value in (a, b)}
    for name, value in (("A", a), ("B", b)):
        if not files[value] and "://" not in value:
            raise click.BadParameter(f"{formats.visible(value)!r} is neither a file nor a URL", param_hint=name)
    index = None if all(files.values()) else open_index(db)
    fingerprinter = fingerprinter_for(None if index is None else index.scheme, word_weights)
    pages: list[Any] = [
        signature_of(fingerprinter, read_page(value), value)
        if index is None or files[value]
        else find_page(index, value)
        for value in (a, b)
    ]
    fingerprints = [page_fingerprint(page) for page in pages]
    row: dict[str, Any] = {"a": a, "a_simhash": to_hex(fingerprints[0]), "b": b, "b_simhash": to_hex(fingerprints[1])}
    row["distance"] = hamming(*fingerprints)
    row["bit_similarity"] = listings.bits_alike(row["distance"])
    row["similarity"] = listings.score(evidence.similarity_between(*pages))
    numeric = {"distance", "bit_similarity", "similarity"}
    formats.write_rows([row], tuple(row), output_format(fmt), sys.stdout, numeric=numeric)
