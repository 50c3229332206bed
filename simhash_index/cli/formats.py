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
from typing import Any, TextIO

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
