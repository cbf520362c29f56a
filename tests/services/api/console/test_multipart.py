"""The upload form's streaming multipart reader: any chunking gives the same fields and file bytes."""

from __future__ import annotations

import asyncio
import os

import pytest

from services.api.console.multipart import read_form
from shared.errors import InvalidInput

BOUNDARY = "----hstackBoundary7MA4YWxk"
FILE = os.urandom(5000) + b"\r\n--" + BOUNDARY[:-1].encode() + os.urandom(100)  # a near-delimiter inside


def form(*parts: tuple[str, str | None, bytes]) -> bytes:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


def read(body: bytes, size: int):
    got: dict = {"file": bytearray(), "names": []}

    async def on_file(fields, filename):
        got["names"].append((dict(fields), filename))

        async def write(data):
            got["file"] += data
        return write

    async def chunks():
        for start in range(0, len(body), size):
            yield body[start:start + size]

    fields = asyncio.run(read_form(chunks(), f"multipart/form-data; boundary={BOUNDARY}", on_file))
    return fields, got


@pytest.mark.parametrize("size", [1, 7, 64, 65536])
def test_fields_come_before_the_file_and_the_bytes_survive_any_chunking(size):
    body = form(("csrf_token", None, b"tok"), ("message", None, "héllo\r\nthere".encode()),
                ("file", "cat.png", FILE), ("empty", "", b""))
    fields, got = read(body, size)
    assert fields == {"csrf_token": "tok", "message": "héllo\nthere"}
    assert got["names"] == [({"csrf_token": "tok", "message": "héllo\nthere"}, "cat.png")]
    assert bytes(got["file"]) == FILE


@pytest.mark.parametrize("body,content_type", [
    (b"no boundary here", "multipart/form-data; boundary=" + BOUNDARY),
    (form(("x", None, b"1")), "application/x-www-form-urlencoded"),
    (form(("x", None, b"y" * 70_000)), "multipart/form-data; boundary=" + BOUNDARY),
    (form(("x", None, b"1"))[:-20], "multipart/form-data; boundary=" + BOUNDARY),
])
def test_broken_forms_are_refused(body, content_type):
    async def on_file(fields, filename):
        raise AssertionError("no file expected")

    async def chunks():
        yield body

    with pytest.raises(InvalidInput):
        asyncio.run(read_form(chunks(), content_type, on_file))
