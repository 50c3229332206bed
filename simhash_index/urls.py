"""Database URLs as they may be shown: passwords hidden, wherever the user put them.

A password can sit in the user info (`postgresql://u:S3cret@host/db`), in a query
parameter both drivers accept (`redis://host/0?password=S3cret`), or in a URL that does
not parse because the password holds a `#`, `/` or `@`. Messages and logs show
`masked(url)`, and `scrub(text, url)` removes the secrets from a driver's own message.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

HIDDEN = "***"
# Query parameters that carry a credential, by name (case-insensitive, `ssl_password` too).
_SECRET_NAME = re.compile(r"pass|pwd|secret|token|auth|credential|apikey|api_key", re.IGNORECASE)
# Schemes whose URL has no user info: an "@" in them belongs to a path.
_NO_AUTHORITY = ("sqlite",)
# Redis reads a lone user info (`redis://S3cret@host`) as a password.
_LONE_USERINFO_IS_SECRET = ("redis", "rediss", "unix")


def _split(url: str) -> tuple[str, str, str, str]:
    """(scheme, user info or '', the rest of the authority and path, query or '').

    The user info runs to the last "@" before the query, so a password holding "#", "/"
    or "@" is still taken whole (a parser would cut it there and show the rest).
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "", "", url, ""
    body, _, query = rest.partition("?")
    if scheme.split("+")[0].lower() in _NO_AUTHORITY:
        return scheme, "", body, query
    if "@" not in body and "/" not in body and "@" in query:  # a "?" in the password, before any path
        body, query = rest, ""
    if "@" not in body:
        return scheme, "", body, query
    userinfo, _, after = body.rpartition("@")
    return scheme, userinfo, after, query


def masked(url: object) -> str:
    """The URL with every credential hidden: the password in its user info, and any
    credential-like query parameter (password, sslpassword, token, ...).

    >>> masked("postgresql://bob:S3cret@db.example/x?sslmode=require&password=S3cret")
    'postgresql://bob:***@db.example/x?sslmode=require&password=***'
    >>> masked("redis://:pa#ss@127.0.0.1:6379/0")
    'redis://:***@127.0.0.1:6379/0'
    """
    text = str(url)
    scheme, userinfo, rest, query = _split(text)
    if not scheme:  # not a URL: whatever comes before an "@" may be a password
        return f"{HIDDEN}@{text.rpartition('@')[2]}" if "@" in text else text
    shown = f"{scheme}://"
    if userinfo:
        user, colon, _ = userinfo.partition(":")
        if colon:
            shown += f"{user}:{HIDDEN}@"
        elif scheme.split("+")[0].lower() in _LONE_USERINFO_IS_SECRET:
            shown += f"{HIDDEN}@"
        else:
            shown += f"{userinfo}@"
    shown += rest
    if query:
        shown += "?" + "&".join(_masked_parameter(part) for part in query.split("&"))
    return shown


def _masked_parameter(part: str) -> str:
    name, equals, _ = part.partition("=")
    return f"{name}={HIDDEN}" if equals and _SECRET_NAME.search(name) else part


def secrets(url: object) -> list[str]:
    """The credentials a URL holds, longest first (for `scrub`)."""
    text = str(url)
    scheme, userinfo, _, query = _split(text)
    found = []
    if not scheme and "@" in text:  # "postgresql//u:pw@host": the user info and its password
        userinfo = text.rpartition("@")[0]
        found += [userinfo, userinfo.rpartition("/")[2].partition(":")[2]]
    if userinfo:
        user, colon, password = userinfo.partition(":")
        if colon:
            found.append(password)
        elif scheme.split("+")[0].lower() in _LONE_USERINFO_IS_SECRET:
            found.append(user)
    for part in query.split("&") if query else ():
        name, equals, value = part.partition("=")
        if equals and _SECRET_NAME.search(name):
            found.append(value)
    found += [unquote(value) for value in found]
    return sorted({value for value in found if len(value) >= 2}, key=len, reverse=True)


def scrub(message: object, url: object) -> str:
    """A driver's message with the URL's credentials replaced by ***."""
    text = str(message)
    for secret in secrets(url):
        text = text.replace(secret, HIDDEN)
    return text


def first_line(error: object) -> str:
    """The first non-empty line of an error's message, or its type's name."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


_ESCAPES = {"@": "%40", "/": "%2F", "#": "%23", "?": "%3F"}


def unescaped_userinfo(url: object) -> str | None:
    """Why the URL's user info cannot be read as meant, or None: a password holding "@",
    "/", "#" or "?" must be percent-encoded, or drivers cut it there (and connect elsewhere).

    >>> unescaped_userinfo("postgresql://u:p@ss@host/db")
    "the user info holds an unescaped '@': percent-encode it as %40"
    """
    _, userinfo, _, _ = _split(str(url))
    for char, escape in _ESCAPES.items():
        if char in userinfo:
            return f"the user info holds an unescaped {char!r}: percent-encode it as {escape}"
    return None
