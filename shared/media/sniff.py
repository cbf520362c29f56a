"""What a file really is, judged by its first bytes (and, for text, by all of them), never by its name.

Only the types the stack knows how to hand on are accepted: images the model may see, audio it may hear,
and documents the file tools can read. Executables are refused whatever they are called, and a file named
like an image or audio whose bytes say otherwise (a script called cat.png) is refused too.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from shared.errors import UnsupportedMediaType

HEAD_BYTES = 8192  # what the sniffer needs to see before it decides


@dataclass(frozen=True)
class FileType:
    kind: str  # image | audio | document
    mime: str
    extension: str  # the usual one, without the dot


PNG = FileType("image", "image/png", "png")
JPEG = FileType("image", "image/jpeg", "jpg")
GIF = FileType("image", "image/gif", "gif")
WEBP = FileType("image", "image/webp", "webp")
PDF = FileType("document", "application/pdf", "pdf")
ZIP = FileType("document", "application/zip", "zip")
OGG = FileType("audio", "audio/ogg", "ogg")
OPUS = FileType("audio", "audio/ogg", "opus")
MP3 = FileType("audio", "audio/mpeg", "mp3")
WAV = FileType("audio", "audio/wav", "wav")
M4A = FileType("audio", "audio/mp4", "m4a")
TEXT = FileType("document", "text/plain", "txt")

_EXECUTABLES = ((b"\x7fELF", "an ELF executable"), (b"MZ", "a Windows executable"),
                (b"\xcf\xfa\xed\xfe", "a Mach-O executable"), (b"\xce\xfa\xed\xfe", "a Mach-O executable"),
                (b"\xca\xfe\xba\xbe", "a Mach-O or Java class file"), (b"\x00asm", "a WebAssembly module"))
IMAGE_EXTENSIONS = {"png", "jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff", "heic", "svg", "ico"}
AUDIO_EXTENSIONS = {"ogg", "oga", "opus", "mp3", "wav", "m4a", "aac", "flac", "weba"}
M4A_BRANDS = {b"M4A ", b"M4B ", b"M4P ", b"F4A "}


def by_magic(head: bytes) -> FileType | None:
    """The binary type the first bytes announce, None when they announce none of the accepted ones."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return GIF
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return WAV
    if head.startswith(b"%PDF-"):
        return PDF
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return ZIP
    if head.startswith(b"OggS"):
        return OPUS if b"OpusHead" in head[:128] else OGG
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and head[1] & 0x06):
        return MP3
    if head[4:8] == b"ftyp" and head[8:12] in M4A_BRANDS:
        return M4A
    return None


def executable(head: bytes) -> str | None:
    """What kind of program these bytes start, or None."""
    for magic, what in _EXECUTABLES:
        if head.startswith(magic):
            return what
    if head.startswith(b"#!"):
        return "a script"
    return None


def looks_textual(head: bytes) -> bool:
    """No NUL and valid UTF-8 as far as the head goes (a character cut at the end is allowed)."""
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def claimed_kind(filename: str) -> str | None:
    """The kind a file's name claims (image or audio), or None when it claims neither."""
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    return "image" if ext in IMAGE_EXTENSIONS else "audio" if ext in AUDIO_EXTENSIONS else None


def sniff(head: bytes, filename: str = "") -> FileType:
    """The accepted type of a file from its first HEAD_BYTES; UnsupportedMediaType with the reason otherwise.

    Text is only provisionally text here: the caller checks the rest of the bytes are UTF-8 too."""
    program = executable(head)
    found = None if program and program != "a script" else by_magic(head)
    if found is None and program is None and head and looks_textual(head):
        found = TEXT
    claim = claimed_kind(filename)
    if program and (program != "a script" or claim):
        named = f" although it is named like {_like(claim)}" if claim else ""
        raise UnsupportedMediaType(f"The file is {program}{named}; programs are not accepted.")
    if found is None and program == "a script":
        found = TEXT
    if found is None:
        raise UnsupportedMediaType("The file's content is of a type that is not accepted (images: PNG, JPEG, GIF, "
                                   "WebP; audio: OGG/Opus, MP3, WAV, M4A; documents: PDF, ZIP, UTF-8 text).")
    if claim and found.kind != claim:
        raise UnsupportedMediaType(f"The file is named like {_like(claim)} but its content is {found.mime}.")
    return found


def image_part(data: bytes) -> dict | None:
    """An OpenAI `image_url` part holding `data` as a data URL; None when the bytes are no accepted image."""
    found = by_magic(data[:HEAD_BYTES])
    if found is None or found.kind != "image":
        return None
    url = f"data:{found.mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def _like(kind: str) -> str:
    return "an image" if kind == "image" else "audio"
