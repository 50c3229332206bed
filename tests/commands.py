"""The command line run in this process, through click's CliRunner."""

from __future__ import annotations

from click.testing import CliRunner, Result

from simhash_index.cli import cli


def run(*args: str, env: dict[str, str] | None = None, input: str | bytes | None = None) -> Result:
    """`simhash-index ARGS`: its result, whatever its exit status; never an uncaught exception."""
    result = CliRunner().invoke(cli, list(args), env=env, input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def ok(*args: str, **kwargs: object) -> str:
    """`simhash-index ARGS`, which must succeed without a word on stderr: its stdout."""
    result = run(*args, **kwargs)  # type: ignore[arg-type]
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # no progress bar, no warnings when piped
    return result.stdout_bytes.decode("utf-8")  # exact: .stdout turns CSV's \r\n into \n
