"""An archived response's payload with its encodings undone, read no further than a limit.

warcio undoes `Transfer-Encoding: chunked` and the gzip and deflate content encodings. Its
brotli reader does not work with the brotli module of today (1.2 has no `decompress` and no
settable `unused_data`: every `br` page raised AttributeError), and brotli, unlike gzip, can
inflate a few hundred bytes to hundreds of megabytes: so `br` is undone here, with brotli's
bounded stream, never past the limit.
"""

from __future__ import annotations

from typing import Any

CHUNK = 1 << 16  # compressed bytes handed to brotli at a time
OUT_STEP = 1 << 20  # bytes brotli inflates at a time


def payload(record: Any, limit: int) -> bytes:
    """At most `limit` bytes of the record's HTTP payload, its encodings undone. A `br` payload
    that cannot be inflated (brotli missing, or older than 1.2 and its bounded stream, or the data
    broken before any came out) is its bytes as they are, as warcio gives a broken gzip one."""
    encoding = (record.http_headers.get_header("Content-Encoding") or "").strip().lower()
    if encoding != "br":
        return bytes(record.content_stream().read(limit))
    raw = record.raw_stream
    if (record.http_headers.get_header("Transfer-Encoding") or "").strip().lower() == "chunked":
        from warcio.bufferedreaders import ChunkedDataReader

        raw = ChunkedDataReader(raw)
    inflater = _brotli_stream()
    if inflater is None:
        return bytes(raw.read(limit))
    return _inflated(inflater, raw, limit)


def _brotli_stream() -> Any:
    try:
        import brotli
    except ImportError:
        return None
    inflater = brotli.Decompressor()
    return inflater if hasattr(inflater, "can_accept_more_data") else None


def _inflated(inflater: Any, raw: Any, limit: int) -> bytes:
    import brotli

    pieces: list[bytes] = []
    size = 0
    read = bytearray()  # the first bytes read, for a payload that turns out not to be brotli data
    while size < limit:
        data = b""
        if inflater.can_accept_more_data():
            data = raw.read(CHUNK)
            if not data:
                break
            if len(read) < limit:
                read += data[: limit - len(read)]
        try:
            # brotli's output limit is a size past which its buffer stops growing, not a cap:
            # small steps keep what it returns close to the limit
            produced = inflater.process(data, output_buffer_limit=min(OUT_STEP, limit - size))
        except brotli.error:
            return b"".join(pieces) if pieces else bytes(read) + bytes(raw.read(max(0, limit - len(read))))
        if not produced and not data:
            break
        pieces.append(produced)
        size += len(produced)
    return b"".join(pieces)[:limit]
