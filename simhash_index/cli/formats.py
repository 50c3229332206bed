"""Output of the command line: rich tables, JSON, JSON lines and CSV.

Every string that reaches a terminal or a spreadsheet may come from a crawled
page, so each format escapes it its own way: tables show control and
invisible formatting characters as escapes (and never read rich markup), JSON
escapes them too, and CSV cells that a spreadsheet would run as a formula get a
leading apostrophe.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ..index.base import Cluster, Description
    from ..index.records import Duplicate, Match
    from .reports import Stats

FORMATS = ("table", "json", "jsonl", "csv")
TABLE_WIDTH_OFF_TERMINAL = 10_000  # piped tables are not wrapped: one line per row

_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NOT_PLAIN = re.compile(r"[^\x20-\x7e]")
_NOT_PLAIN_JSON = re.compile(r"[^\x20-\x7e\n]")  # json.dumps escapes newlines in strings; the others are indents
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_FORMULA_START = ("=", "+", "-", "@")

Row = Mapping[str, Any]


def default_format(piped: str = "jsonl", stream: TextIO | None = None) -> str:
    """`table` when writing to a terminal (stdout unless given), `piped` otherwise."""
    return "table" if isatty(stream or sys.stdout) else piped


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _escape_char(char: str, *, json_style: bool) -> str:
    if not json_style and char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    code = ord(char)
    if code > 0xFFFF:  # JSON needs a surrogate pair
        if json_style:
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\U{code:08x}"
    if code < 0x100 and not json_style:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _escape_invisible(text: str, *, json_style: bool) -> str:
    def replace(match: re.Match[str]) -> str:
        char = match.group()
        if unicodedata.category(char) in _INVISIBLE:
            return _escape_char(char, json_style=json_style)
        return char

    return (_NOT_PLAIN_JSON if json_style else _NOT_PLAIN).sub(replace, text)


def visible(text: str) -> str:
    r"""Text with control, invisible formatting and line separator characters as escapes.

    >>> visible("a\x1b[31mb\ttab\u202e")
    'a\\x1b[31mb\\ttab\\u202e'
    """
    return _escape_invisible(text, json_style=False)


def to_json(value: Any, *, indent: int | None = None) -> str:
    r"""JSON whose strings carry no raw control, bidi or line separator characters.

    Safe to print on a terminal and to split into lines, even by readers that
    treat U+2028 or U+0085 as line breaks.

    >>> to_json({"url": "a\u2028b"})
    '{"url": "a\\u2028b"}'
    """
    encoded = json.dumps(value, ensure_ascii=False, indent=indent, default=_json_default)
    return _escape_invisible(encoded, json_style=True)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def csv_cell(value: Any) -> str:
    r"""A value as a CSV cell: invisible characters escaped as in tables, and text a
    spreadsheet would run as a formula given a leading `'`, even when the formula's first
    character hides behind white space or invisible characters, or is a full-width `＝`.

    >>> csv_cell("=HYPERLINK(1)"), csv_cell("-2+3"), csv_cell(-2), csv_cell(None), csv_cell(True)
    ("'=HYPERLINK(1)", "'-2+3", '-2', '', 'true')
    >>> csv_cell("\ufeff=1"), csv_cell("\u3000＝1"), csv_cell("a\x1bb")
    ("'\\ufeff=1", "'\u3000＝1", 'a\\x1bb')
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if not isinstance(value, str):
        return str(value)
    return ("'" if _runs_as_formula(value) else "") + visible(value)


def _runs_as_formula(text: str) -> bool:
    """Whether a spreadsheet may read the text as a formula: its first visible character,
    after white space and invisible characters, is = + - @ (or a full-width form of one),
    or the text starts with a tab or carriage return."""
    if text[:1] in ("\t", "\r"):
        return True
    for char in text:
        if char.isspace() or unicodedata.category(char) in _INVISIBLE or char == "\ufeff":
            continue
        return unicodedata.normalize("NFKC", char).startswith(_FORMULA_START)
    return False


def table_cell(value: Any) -> str:
    """A value as a table cell: escaped text, datetimes to the second."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return visible(str(value))


def write_rows(
    rows: Iterable[Row], columns: Sequence[str], fmt: str, out: TextIO, *, numeric: Iterable[str] = ()
) -> None:
    """Write a listing. `rows` may be a generator: json, jsonl and csv stream it."""
    if fmt == "table":
        write_table([[row.get(c) for c in columns] for row in rows], columns, out, numeric=numeric)
    elif fmt == "jsonl":
        for row in rows:
            out.write(to_json({c: row.get(c) for c in columns}) + "\n")
    elif fmt == "json":
        write_json_array(({c: row.get(c) for c in columns} for row in rows), out)
    elif fmt == "csv":
        write_csv(([row.get(c) for c in columns] for row in rows), columns, out)
    else:
        raise ValueError(f"format must be one of {FORMATS}; got {fmt!r}")


def write_json_array(objects: Iterable[Any], out: TextIO) -> None:
    """A JSON array with one element per line, streamed."""
    first = True
    for obj in objects:
        out.write(("[\n  " if first else ",\n  ") + to_json(obj))
        first = False
    out.write("[]\n" if first else "\n]\n")


def write_json(obj: Any, out: TextIO) -> None:
    out.write(to_json(obj, indent=2) + "\n")


def write_csv(rows: Iterable[Sequence[Any]], columns: Sequence[str], out: TextIO) -> None:
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])


def write_objects(objects: Iterable[Any], fmt: str, out: TextIO) -> None:
    """Nested objects as a JSON array (`json`) or one per line (`jsonl`)."""
    if fmt == "json":
        write_json_array(objects, out)
    elif fmt == "jsonl":
        out.writelines(to_json(obj) + "\n" for obj in objects)
    else:
        raise ValueError(f"objects are written as json or jsonl; got {fmt!r}")


def bar(value: int, largest: int, width: int = 40) -> str:
    """A histogram bar: `width` blocks for the largest value, at least one for any other.

    >>> bar(10, 40, width=8), bar(1, 1000, width=8), bar(0, 5)
    ('██', '█', '')
    """
    if value <= 0 or largest <= 0:
        return ""
    return "█" * max(1, round(width * value / largest))


def write_table(
    rows: Iterable[Sequence[Any]],
    columns: Sequence[str],
    out: TextIO,
    *,
    numeric: Iterable[str] = (),
    show_header: bool = True,
) -> None:
    """A rich table: coloured and fitted to a terminal, plain lines when piped.

    A table wider than the terminal would fold its URLs into pieces no one can copy: it is
    shown one record at a time instead, a field a line (as psql's expanded display).
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    numeric = set(numeric)
    cells = [[table_cell(v) for v in row] for row in rows]
    table = Table(
        box=box.SIMPLE_HEAD if show_header else None,
        show_edge=False,
        show_header=show_header,
        pad_edge=False,
        header_style="bold",
    )
    for name in columns:
        table.add_column(name, justify="right" if name in numeric else "left", overflow="fold")
    for row in cells:
        # Text, not str: rich never reads page-controlled strings as markup
        table.add_row(*(Text(cell) for cell in row))
    if show_header and cells and isatty(out) and _natural_width(table) > terminal_width(out):
        write_records(cells, columns, out)
        return
    print_rich(table, out)


def terminal_width(out: TextIO) -> int:
    """The width rich sees for a terminal stream (COLUMNS, else the terminal's own)."""
    from rich.console import Console

    return Console(file=out).width


def _natural_width(renderable: Any) -> int:
    """How wide a renderable is when nothing constrains it."""
    from rich.console import Console

    return Console(file=io.StringIO(), width=TABLE_WIDTH_OFF_TERMINAL).measure(renderable).maximum


def write_records(cells: Sequence[Sequence[str]], columns: Sequence[str], out: TextIO) -> None:
    """Each row as a block of `column  value` lines, blocks a blank line apart; a value is
    never broken, so a long URL stays one string to copy (the terminal may wrap it)."""
    width = max(len(name) for name in columns)
    blocks = (
        "".join(f"{name.ljust(width)}  {cell}".rstrip() + "\n" for name, cell in zip(columns, row)) for row in cells
    )
    out.write("\n".join(blocks))


# -- the reports ------------------------------------------------------------------

DUPLICATE_COLUMNS = ("url", "duplicate_of", "distance", "similarity", "exact", "seen_at")


def score(similarity: float | None) -> float | None:
    """A similarity estimate as shown: three decimals (the sketch's precision is about 0.02)."""
    return None if similarity is None else round(similarity, 3)


def write_duplicates(duplicates: Iterable[Duplicate], fmt: str, out: TextIO) -> None:
    rows = (
        {
            "url": d.key,
            "duplicate_of": d.duplicate_of,
            "distance": d.distance,
            "similarity": score(d.similarity),
            "exact": d.exact,
            "seen_at": d.seen_at,
        }
        for d in duplicates
    )
    write_rows(rows, DUPLICATE_COLUMNS, fmt, out, numeric={"distance", "similarity"})


def write_matches(matches: Iterable[Match], fmt: str, out: TextIO) -> None:
    """Stored pages near a query: url, simhash (16 hex digits), distance, bit_similarity (the share
    of bits alike), similarity (of the sketches: what decides a duplicate)."""
    rows = (
        {
            "url": m.key,
            "simhash": _hex(m.fingerprint),
            "distance": m.distance,
            "bit_similarity": bits_alike(m.distance),
            "similarity": score(m.similarity),
        }
        for m in matches
    )
    write_rows(rows, MATCH_COLUMNS, fmt, out, numeric={"distance", "bit_similarity", "similarity"})


MATCH_COLUMNS = ("url", "simhash", "distance", "bit_similarity", "similarity")


def bits_alike(distance: int, bits: int = 64) -> float:
    """The share of a fingerprint's bits two pages agree on, as shown: 1 - distance / bits, three decimals."""
    return round(1 - distance / bits, 3)


DRY_RUN_COLUMNS = ("url", "outcome", "duplicate_of", "distance", "exact", "similarity")


def dropped_row(url: str, match: Match) -> dict[str, Any]:
    """A page an import would drop: the page it duplicates, and the evidence."""
    similarity = None if match.similarity is None else round(match.similarity, 2)
    return {
        "url": url,
        "outcome": "dropped",
        "duplicate_of": match.key,
        "distance": match.distance,
        "exact": match.exact,
        "similarity": similarity,
    }


def write_dry_run(rows: Iterable[Row], fmt: str, out: TextIO) -> None:
    """What an import would do, a row per page: kept, dropped (of what, how near), skipped, refused."""
    write_rows(rows, DRY_RUN_COLUMNS, fmt, out, numeric={"distance", "similarity"})


def _hex(fingerprint: int | None) -> str | None:
    return None if fingerprint is None else f"{fingerprint:016x}"


def write_clusters(clusters: Iterable[Cluster], fmt: str, out: TextIO) -> None:
    """json and jsonl: one object per cluster, its duplicates in a list; csv and table: one row per duplicate."""
    if fmt in ("json", "jsonl"):
        objects = (
            {
                "url": c.key,
                "count": len(c.duplicates),
                "duplicates": [
                    {"url": d.key, "distance": d.distance, "exact": d.exact, "seen_at": d.seen_at} for d in c.duplicates
                ],
            }
            for c in clusters
        )
        write_objects(objects, fmt, out)
        return
    table = fmt == "table"  # a table names the stored page once per cluster; a CSV row stands alone
    rows = (
        {
            "url": c.key if i == 0 or not table else None,
            "count": len(c.duplicates) if i == 0 or not table else None,
            "duplicate": d.key,
            "distance": d.distance,
            "exact": d.exact,
            "seen_at": d.seen_at,
        }
        for c in clusters
        for i, d in enumerate(c.duplicates)
    )
    columns = ("url", "count", "duplicate", "distance") + (() if table else ("exact", "seen_at"))
    write_rows(rows, columns, fmt, out, numeric={"count", "distance"})


def write_stats(stats: Stats, fmt: str, out: TextIO) -> None:
    """An object (json), or a summary, a histogram of distances and the top hosts (table)."""
    hosts = [{"host": host, "duplicates": count} for host, count in stats.top_hosts]
    distances: list[dict[str, Any]] = [{"distance": d, "duplicates": count} for d, count in stats.distances.items()]
    if fmt == "json":
        summary = {
            "documents": stats.documents,
            "duplicates": stats.duplicates,
            "exact_duplicates": stats.exact_duplicates,
            "near_duplicates": stats.near_duplicates,
        }
        if stats.texts.texts:
            summary |= {
                "texts_kept": stats.texts.texts,
                "text_bytes": stats.texts.compressed_bytes,
                "text_bytes_per_page": round(stats.texts.bytes_per_page),
            }
        index: dict[str, str | None] = {
            "backend": stats.description.backend,
            "schema_version": stats.description.schema_version,
        }
        if stats.description.layout is not None:
            index |= {"layout": stats.description.layout, "block_assignment": stats.description.block_assignment}
        write_json(summary | {"distances": distances, "top_hosts": hosts, "scheme": stats.scheme, "index": index}, out)
        return
    if fmt != "table":
        raise ValueError(f"stats are written as table or json; got {fmt!r}")
    out.write(f"index: {index_line(stats.description)}\n\n")
    summary_rows = [
        ("pages stored", stats.documents),
        ("duplicates", stats.duplicates),
        ("exact", stats.exact_duplicates),
        ("near", stats.near_duplicates),
    ]
    if stats.texts.texts:
        summary_rows += [
            ("texts kept", stats.texts.texts),
            ("bytes per text", round(stats.texts.bytes_per_page)),
        ]
    write_table(summary_rows, ("name", "count"), out, numeric={"count"}, show_header=False)
    widest = max(stats.distances.values(), default=0)
    for row in distances:
        row["histogram"] = bar(row["duplicates"], widest)
    for rows, columns in ((distances, ("distance", "duplicates", "histogram")), (hosts, ("host", "duplicates"))):
        if rows:
            out.write("\n")
            write_rows(rows, columns, "table", out, numeric={"distance", "duplicates"})


def index_line(description: Description) -> str:
    """The backend, schema version and (SQL) lookup layout, e.g. "sqlite, schema 3, blocks (contiguous)"."""
    line = f"{description.backend}, schema {description.schema_version}"
    if description.layout is not None:
        line += f", {description.layout} layout"
        if description.layout == "blocks" and description.block_assignment:
            line += f" ({description.block_assignment} bits)"
    return line


def print_rich(renderable: Any, out: TextIO) -> None:
    """Print a rich renderable: straight to a terminal, else as plain lines without trailing blanks."""
    from rich.console import Console

    options: dict[str, Any] = {"markup": False, "highlight": False, "emoji": False}
    if isatty(out):
        Console(file=out, **options).print(renderable)
        return
    buffer = io.StringIO()
    Console(file=buffer, width=TABLE_WIDTH_OFF_TERMINAL, force_terminal=False, color_system=None, **options).print(
        renderable
    )
    out.writelines(line.rstrip() + "\n" for line in buffer.getvalue().rstrip("\n").split("\n"))
