"""Text-level de-obfuscation the parser cannot do: ANSI-C quotes, arithmetic, `time`, `[[ ]]`,
parameter tricks (`$IFS`, `${x:-rm}`, `${HOME}`), brace lists, and the decoders a payload may use."""

from __future__ import annotations

import base64
import binascii
import codecs
import re

ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'", re.S)
TIME_PREFIX = re.compile(r"(^|[;&|(\n]\s*)time\s+(?:-p\s+)?")
DOUBLE_BRACKET_OPEN = re.compile(r"(?<!\S)\[\[(?=\s)")
DOUBLE_BRACKET_CLOSE = re.compile(r"(?<=\s)\]\](?!\S)")
IFS = re.compile(r"\$\{?IFS(?:[^}\s]*\})?(?:\$\d)?|\$\{IFS\}")
PARAM = re.compile(r"\$\{([!#]?)([A-Za-z_][A-Za-z_0-9]*|\d)((?::?[-=+?])[^}]*|:\d+(?::\d+)?|//?[^}]*)?\}|\$([A-Za-z_][A-Za-z_0-9]*)")
BRACES = re.compile(r"^(.*?)\{([^{}]*,[^{}]*)\}(.*)$")
HOME_NAMES = {"HOME"}
GLOB_CHARS = set("*?[")


def decode_ansi_c(body: str) -> str:
    """The value of a $'...' string."""
    try:
        return codecs.decode(body.replace("\\'", "'").encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body


def single_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _arithmetic(text: str) -> str:
    """Replace each $(( ... )) with "$(: ...)" so the parser survives and inner $(...) stays visible."""
    out, i = [], 0
    while True:
        start = text.find("$((", i)
        if start < 0:
            return "".join(out) + text[i:]
        depth, j = 2, start + 3
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        inner = text[start + 3: j - 2] if depth == 0 else text[start + 3:]
        out += [text[i:start], '"$(: ', inner, ')"']
        i = j


def pre_parse(text: str) -> str:
    """Rewrite what bashlex mis-parses or refuses, keeping every command visible."""
    text = ANSI_C.sub(lambda m: single_quote(decode_ansi_c(m.group(1))), text)
    text = _arithmetic(text)
    text = TIME_PREFIX.sub(lambda m: m.group(1), text)
    text = DOUBLE_BRACKET_CLOSE.sub("]", DOUBLE_BRACKET_OPEN.sub("[", text))
    return text


def expand(word: str, variables: dict[str, str], force_split: bool = False) -> list[str]:
    """One shell word after parameter and brace expansion, as the fields it becomes."""
    split = [False]

    def ifs(_m: re.Match) -> str:
        split[0] = True
        return " "

    word = IFS.sub(ifs, word)

    def param(m: re.Match) -> str:
        value = _param(m)
        split[0] = split[0] or any(c.isspace() for c in value)
        return value

    def _param(m: re.Match) -> str:
        name = m.group(2) or m.group(4)
        op = m.group(3) or ""
        if name in HOME_NAMES and name not in variables:
            return "~"
        value = variables.get(name)
        if op[:2] in (":-", ":=") or op[:1] in ("-", "="):
            default = op[2:] if op.startswith(":") else op[1:]
            return value if value else default
        if value is None:
            return m.group(0)
        if op.startswith(":") and op[1:].replace(":", "").isdigit():
            parts = [int(p) for p in op[1:].split(":")]
            return value[parts[0]: parts[0] + parts[1]] if len(parts) == 2 else value[parts[0]:]
        if op.startswith("/"):
            pat, _, rep = op.lstrip("/").partition("/")
            return value.replace(pat, rep) if op.startswith("//") else value.replace(pat, rep, 1)
        return value

    word = PARAM.sub(param, word)
    # Only what an expansion produced is split into fields; quoted spaces stay inside the word.
    fields = word.split() if split[0] or force_split else [word]
    return [f for field in fields for f in braces(field)] or [""]


def braces(word: str, limit: int = 64) -> list[str]:
    """Brace-list expansion ({rm,-rf,/} -> rm -rf /), bounded."""
    m = BRACES.match(word)
    if not m:
        return [word]
    out: list[str] = []
    for item in m.group(2).split(","):
        out += braces(m.group(1) + item + m.group(3), limit)
        if len(out) >= limit:
            break
    return out[:limit]


def has_glob(word: str) -> bool:
    return any(c in GLOB_CHARS for c in word)


def decode_base64(data: str) -> str | None:
    compact = re.sub(r"\s+", "", data)
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def decode_hex(data: str) -> str | None:
    compact = re.sub(r"\s+|0x|\\x", "", data)
    try:
        return bytes.fromhex(compact).decode("utf-8", "replace")
    except ValueError:
        return None


def echo_escapes(text: str) -> str:
    """What `echo -e` or printf's format make of backslash escapes."""
    return decode_ansi_c(text) if "\\" in text else text
