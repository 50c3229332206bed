"""The `simhash-index` group: its error handling, the options commands share, and how a
command opens the index.

Library errors, bad arguments (InvalidArgumentError) and what the system refuses a file (the
disk full, permission denied: SYSTEM_REFUSALS) become one line on stderr and a non-zero exit: 2
when the database cannot be opened or has no simhash tables, 1 for everything else (click's own
usage errors exit 2 too). Any other exception is a bug's: it keeps its traceback.
Ctrl-C (SIGINT) and SIGTERM stop a command as an error does (its worker processes stopped,
its transactions committed or rolled back, a file being written removed): one line, and
the shell's exit status for the signal, 130 or 143.
"""

from __future__ import annotations

import errno
import signal
from collections.abc import Callable
from typing import Any

import click
from sqlalchemy.exc import SQLAlchemyError

from .. import DISTRIBUTION, defaults
from ..errors import (
    IndexNotFoundError,
    IndexUnavailableError,
    InvalidArgumentError,
    LayoutMismatchError,
    SchemaVersionError,
    SimhashIndexError,
    one_line,
)
from ..index.base import Index
from ..index.factory import open_index as open_backend
from ..index.probes import MAX_HALVES_RADIUS
from . import formats

# What the system answers a command's reading or writing of a file (an input, OUT, a report,
# standard output) when the fault is the file's or the disk's, not the command's.
SYSTEM_REFUSALS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EIO,
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ENAMETOOLONG,
        errno.ELOOP,
    }
)


class DatabaseError(click.ClickException):
    """The database cannot be opened, or holds no simhash index."""

    exit_code = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, so that it stops a command as cleanly."""


def stop_on_sigterm() -> None:
    """Make SIGTERM raise Terminated in the main thread."""

    def stop(signum: int, frame: object) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, stop)


class _Group(click.Group):
    """Turns the library's errors, bad arguments and the system's refusals into one-line click
    errors; a bug keeps its traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return self._invoke(ctx)
        except KeyboardInterrupt as exc:
            stopped_by = signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT
            click.echo(f"Interrupted ({stopped_by.name}): stopped", err=True)
            ctx.exit(128 + stopped_by)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (IndexUnavailableError, IndexNotFoundError, SchemaVersionError, LayoutMismatchError) as exc:
            raise DatabaseError(one_line(exc)) from None
        except SimhashIndexError as exc:
            raise click.ClickException(one_line(exc)) from None
        except SQLAlchemyError as exc:
            raise DatabaseError(f"database error: {one_line(getattr(exc, 'orig', None) or exc)}") from None
        except InvalidArgumentError as exc:
            raise click.ClickException(one_line(exc)) from None
        except OSError as exc:
            if exc.errno not in SYSTEM_REFUSALS:
                raise
            raise click.ClickException(one_line(exc)) from None


# -- shared options ---------------------------------------------------------------


FILE_OR_STDIN = click.Path(exists=True, dir_okay=False, allow_dash=True)


DB_HELP = "Index URL: sqlite:///path, postgresql://user@host/db or redis://host:6379/0?prefix=P."


def db_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command's --db, which may come before the command too (`simhash-index --db URL stats`)."""
    return click.option(
        "--db",
        metavar="URL",
        envvar=defaults.DATABASE_URL_ENV,
        default=defaults.DATABASE_URL,
        show_default=True,
        show_envvar=True,
        callback=_db_before_the_command,
        help=DB_HELP,
    )(command)


def _db_before_the_command(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """--db as given after the command, else as given before it, else the environment or the default."""
    before = ctx.parent.params.get("db") if ctx.parent is not None else None
    if before is None:
        return value
    if ctx.get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE and value != before:
        raise click.UsageError("--db is given before and after the command, with different URLs: give it once")
    return str(before)


def format_option(
    choices: tuple[str, ...] = formats.FORMATS, piped: str = "jsonl"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        help=f"Output format [default: {choices[0]} on a terminal, {piped} when piped].",
    )


def max_distance_option(help: str) -> Callable[..., Any]:
    return click.option(
        "--max-distance",
        type=click.IntRange(0, defaults.MAX_SUPPORTED_DISTANCE),
        help=f"{help} Default: {defaults.MAX_DISTANCE}, or {MAX_HALVES_RADIUS} on a halves index.",
    )


def added_words_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--added-words",
        type=click.IntRange(min=0),
        default=defaults.ADDED_WORDS,
        show_default=True,
        help="A similar page that may add this many words the stored page lacks is kept, not dropped "
        "(SIMHASH_ADDED_WORDS; 0: the plain similarity rule).",
    )(command)


def word_weights_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--word-weights",
        metavar="FILE",
        type=click.Path(dir_okay=False),
        help="A weight table, one word and weight per line, as the index was built with (SIMHASH_WORD_WEIGHTS).",
    )(command)


def allow_truncated_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--allow-truncated",
        is_flag=True,
        help="Read an archive cut short up to its cut, with a warning (by default it is an error, exit status 1).",
    )(command)


def output_format(fmt: str | None, piped: str = "jsonl") -> str:
    return fmt or formats.default_format(piped)


# -- opening the index ---------------------------------------------------------------


def open_index(db: str, *, write: bool = False, **options: Any) -> Index:
    """The index at `db`, closed when the command ends. A command that only reads opens it
    read-only: it never creates or changes anything (not even a file's journal mode).
    `options` go to the library's open_index (create, max_distance, layout, scheme, ...);
    an existing index keeps its own fingerprint scheme unless `scheme` is given."""
    options.setdefault("create", False)
    options.setdefault("scheme", None)
    index = open_backend(db, read_only=not write, **options)
    return click.get_current_context().with_resource(index)


# -- the group ----------------------------------------------------------------------


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION, prog_name="simhash-index")  # read on --version
@click.option("--db", metavar="URL", help=DB_HELP + " Before the command, or after it.")
def cli(db: str | None) -> None:
    """Inspect and query a simhash-index near-duplicate database.

    The database is --db (before the command or after it), else $SIMHASH_DATABASE_URL, else
    sqlite:///simhash.db.
    """
