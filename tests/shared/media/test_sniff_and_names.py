"""Types by content, never by name; names neutralised and bounded; archives bounded without extracting."""

from __future__ import annotations

import io
import zipfile

import pytest

from shared.errors import UnsupportedMediaType
from shared.media import archives, sniff
from shared.media.names import MAX_NAME_BYTES, safe_name
from tests.support.media import OGG_OPUS, PNG, pdf_with_text


@pytest.mark.parametrize("head,mime,kind", [
    (PNG, "image/png", "image"), (b"\xff\xd8\xff\xe0" + b"\0" * 20, "image/jpeg", "image"),
    (b"GIF89a" + b"\0" * 20, "image/gif", "image"), (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp", "image"),
    (pdf_with_text("x"), "application/pdf", "document"), (b"PK\x03\x04" + b"\0" * 30, "application/zip", "document"),
    (OGG_OPUS, "audio/ogg", "audio"), (b"ID3\x04" + b"\0" * 20, "audio/mpeg", "audio"),
    (b"RIFF\0\0\0\0WAVEfmt ", "audio/wav", "audio"), (b"\0\0\0\x20ftypM4A \0\0", "audio/mp4", "audio"),
    ("héllo wörld\n".encode(), "text/plain", "document"), (b"#!/bin/sh\necho hi\n", "text/plain", "document"),
])
def test_types_come_from_the_bytes(head, mime, kind):
    found = sniff.sniff(head, "whatever.bin" if kind != "document" else "notes.txt")
    assert (found.mime, found.kind) == (mime, kind)


@pytest.mark.parametrize("head,name,words", [
    (b"\x7fELF\x02\x01", "cat.png", "ELF executable although it is named like an image"),
    (b"\x7fELF\x02\x01", "tool", "ELF executable"),
    (b"MZ\x90\x00", "setup.txt", "Windows executable"),
    (b"#!/bin/sh\nrm -rf ~\n", "holiday.jpg", "script although it is named like an image"),
    (b"#!/bin/sh\n", "voice.ogg", "named like audio"),
    (PNG, "voice.mp3", "named like audio but its content is image/png"),
    (b"\x00\x01\x02\x03binary", "x.dat", "not accepted"),
])
def test_programs_and_mismatched_claims_are_refused(head, name, words):
    with pytest.raises(UnsupportedMediaType, match=words):
        sniff.sniff(head, name)


@pytest.mark.parametrize("raw,expected", [
    ("../../etc/passwd", "passwd"), ("..\\..\\boot.ini", "boot.ini"), ("a\x00b.png", "ab.png"),
    ("..", "file"), ("", "file"), ("   .hidden", "hidden"), ("line\nbreak.txt", "linebreak.txt"),
    ("\u202egnp.exe", "gnp.exe"), ('x<>:"|?*.txt', "x_______.txt"),
])
def test_names_are_one_safe_component(raw, expected):
    assert safe_name(raw) == expected


def test_a_thousand_character_name_is_bounded_and_keeps_its_extension():
    name = safe_name("é" * 1000 + ".png")
    assert len(name.encode()) <= MAX_NAME_BYTES and name.endswith(".png") and name.startswith("é")


def test_a_name_without_extension_gets_the_sniffed_one():
    assert safe_name("photo", "jpg") == "photo.jpg" and safe_name("report.pdf", "pdf") == "report.pdf"


def zipped(members: dict[str, int]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, size in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                for _ in range(size // (1 << 20)):
                    member.write(b"\0" * (1 << 20))
    return buffer.getvalue()


def test_a_zip_bomb_is_refused_from_its_directory_alone():
    bomb = zipped({"a.bin": 300 << 20})
    with pytest.raises(UnsupportedMediaType, match="zip bomb"):
        archives.check_zip(io.BytesIO(bomb), len(bomb))
    honest = zipped({"a.bin": 1 << 20})
    archives.check_zip(io.BytesIO(honest), len(honest))


def test_a_broken_zip_is_refused():
    with pytest.raises(UnsupportedMediaType, match="cannot be read"):
        archives.check_zip(io.BytesIO(b"PK\x03\x04garbage"), 13)
