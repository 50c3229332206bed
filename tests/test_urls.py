"""Database URLs in messages: every credential hidden, wherever it sits in the URL."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from simhash_index import IndexUnavailableError, SimhashIndex
from simhash_index.cli import cli
from simhash_index.urls import masked, scrub, unescaped_userinfo

SECRET = "S3cretPw"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://bob:{SECRET}@db.example/x", "postgresql://bob:***@db.example/x"),
        (f"postgresql://bob@db.example/x?password={SECRET}", "postgresql://bob@db.example/x?password=***"),
        (
            f"postgresql://bob@h/x?sslmode=require&sslpassword={SECRET}",
            "postgresql://bob@h/x?sslmode=require&sslpassword=***",
        ),
        (f"redis://127.0.0.1:6379/0?password={SECRET}&prefix=a:", "redis://127.0.0.1:6379/0?password=***&prefix=a:"),
        (f"redis://:{SECRET}@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        (
            f"redis://{SECRET}@127.0.0.1:6379/0",
            "redis://***@127.0.0.1:6379/0",
        ),  # redis reads a lone user info as a password
        (f"rediss://user:{SECRET}@h:1/0?prefix=a:", "rediss://user:***@h:1/0?prefix=a:"),
        ("sqlite:////tmp/a@b/simhash.db", "sqlite:////tmp/a@b/simhash.db"),  # no user info in SQLite URLs
        (f"postgresql//u:{SECRET}@127.0.0.1/x", "***@127.0.0.1/x"),  # not a URL at all
    ],
)
def test_masked_hides_every_credential(url: str, shown: str) -> None:
    assert masked(url) == shown
    if SECRET in url:
        assert SECRET not in scrub(f"failed to connect to {url} with {SECRET}", url)


@pytest.mark.parametrize(
    ("url", "char"),
    [
        ("redis://:Kq7#Zx9w@127.0.0.1:6379/0", "#"),
        ("redis://:Kq7/Zx9w@127.0.0.1:6379/0", "/"),
        ("postgresql://u:Kq7@Zx9w@127.0.0.1/db", "@"),
        ("postgresql://u:Kq7?Zx9w@127.0.0.1/db", "?"),
    ],
)
def test_an_unescaped_password_is_refused_without_echoing_it(url: str, char: str) -> None:
    assert char in unescaped_userinfo(url)
    with pytest.raises(IndexUnavailableError, match="percent-encode") as info:
        SimhashIndex(url)
    password = url.split("://")[1].rpartition("@")[0].partition(":")[2]
    assert all(piece not in str(info.value) for piece in (password, *password.split(char)))
    result = CliRunner().invoke(cli, ["stats", "--db", url])
    assert result.exit_code == 2 and "percent-encode" in result.output
    assert all(piece not in result.output for piece in (password, *password.split(char)))


def test_query_parameter_passwords_never_reach_messages(redis_url: str) -> None:
    url = f"postgresql://u@127.0.0.1:1/db?password={SECRET}"  # nothing listens on port 1
    with pytest.raises(IndexUnavailableError) as info:
        SimhashIndex(url)
    assert SECRET not in str(info.value) and "password=***" in str(info.value)
    with SimhashIndex(f"{redis_url}&password=") as index:  # an empty password is no password
        assert SECRET not in repr(index)
    result = CliRunner().invoke(cli, ["stats", "--db", f"redis://127.0.0.1:1/0?password={SECRET}"])
    assert result.exit_code == 2 and SECRET not in result.output and "password=***" in result.output


def test_repr_hides_a_query_parameter_password(postgres_url: str) -> None:
    url = f"{postgres_url}&password="  # trust auth: the password is not checked
    with SimhashIndex(url.replace("password=", f"password={SECRET}")) as index:
        assert SECRET not in repr(index) and "password=***" in repr(index)
