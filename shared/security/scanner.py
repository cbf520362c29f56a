"""Threat scanner for text that ends up in a model's context (memory entries, skills, recalled history).

`scan(text)` returns the first `Finding` or None. Order of checks:
1. invisible and bidi control characters, on the RAW text (they are the splitting trick itself);
2. NFKC normalisation (full-width, mathematical and circled letters become plain), accents stripped
   (so the other languages' patterns need no accents), removal of every other format character,
   casefold, a small Cyrillic/Greek look-alike fold (beyond Hermes Agent, which leaves confusables
   alone), then the patterns of `threat_patterns` in their order;
3. the same patterns on the other readings of that text (`deobfuscate`: spaced or dotted letters
   closed up, leetspeak folded);
4. base64 and hex runs that decode to text (`encoded`), scanned again from step 1, two levels deep.
A filter of known families, not a proof of safety: see the README's "What the memory scanner does and
does not promise".
Only the first `MAX_SCAN_CHARS` characters are scanned, which bounds the time. Longer input is not
let through unscanned: when the scanned head is clean, the over-size finding `oversize` is returned,
so a payload placed after the cap is never accepted (callers with larger documents split them).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from shared.security.deobfuscate import variants
from shared.security.encoded import MAX_DEPTH, decoded_runs
from shared.security.threat_patterns import PATTERNS, WORD

MAX_SCAN_CHARS = 65_536

# Hermes Agent's 17, plus U+2061 (the brief's U+2060-U+2064 range) and the Unicode tag block, which
# smuggles whole ASCII sentences invisibly.
INVISIBLE = re.compile("[\u200b-\u200d\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")

# Every format (Cf) character: soft hyphen, joiners, bidi controls, tags…; removed before matching so
# one cannot split a key word with them (Unicode 15.1 ranges; a test checks Python's tables).
FORMAT_CHARS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)

# Letters NFKC leaves alone but that read as Latin: an attacker's cheapest disguise.
_LOOKALIKE_MAP = {
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j",
    "ѕ": "s", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ο": "o", "α": "a", "ε": "e",
    "ι": "i", "κ": "k", "ν": "v", "τ": "t", "υ": "u", "ρ": "p",
}
_LOOKALIKES = str.maketrans(_LOOKALIKE_MAP)
_HAS_LOOKALIKE = re.compile(f"[{''.join(_LOOKALIKE_MAP)}]")  # translate() is slow; most text needs none

# Combining accents of Latin, Greek and Cyrillic letters (not the kana voicing marks, which carry meaning).
_ACCENTS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")

PATTERN_MESSAGE = (
    "Blocked: content matches threat pattern '{id}'. Content is injected into the system prompt and "
    "must not contain injection or exfiltration payloads."
)


@dataclass(frozen=True)
class Finding:
    """Why a text was refused: a stable pattern id, its category and the message shown to the model."""

    pattern_id: str
    category: str
    message: str


def scan(text: str) -> Finding | None:
    """The first threat found in `text`, or None when it is clean."""
    head = text[:MAX_SCAN_CHARS]
    finding = _invisible(head) or _threat(head, 0)
    if finding is None and len(text) > MAX_SCAN_CHARS:
        return Finding(
            "oversize", "oversize",
            f"Blocked: content is {len(text):,} characters; only {MAX_SCAN_CHARS:,} can be scanned. "
            "Split it into smaller pieces.",
        )
    return finding


def normalise(text: str) -> str:
    """The form patterns run on: NFKC, accents and format characters removed, casefolded, look-alikes folded."""
    if text.isascii():  # the common case: nothing to normalise or fold
        return text.lower()
    plain = _ACCENTS.sub("", unicodedata.normalize("NFKD", FORMAT_CHARS.sub("", text)))
    folded = unicodedata.normalize("NFC", plain).casefold()
    return folded.translate(_LOOKALIKES) if _HAS_LOOKALIKE.search(folded) else folded


def _threat(text: str, depth: int) -> Finding | None:
    """The first pattern found in any reading of `text`, or in the text its encoded runs hide."""
    normalised = normalise(text)
    for reading in (normalised, *variants(normalised)):
        finding = _pattern(reading)
        if finding is not None:
            return finding
    if depth >= MAX_DEPTH:
        return None
    for kind, decoded in decoded_runs(text):
        inner = _invisible(decoded) or _threat(decoded, depth + 1)
        if inner is not None:
            return Finding(f"{kind}:{inner.pattern_id}", inner.category,
                           f"Blocked: content hides a {kind}-encoded payload. {inner.message}")
    return None


def _invisible(text: str) -> Finding | None:
    match = None if text.isascii() else INVISIBLE.search(text)
    if match is None:
        return None
    code = ord(match.group())
    return Finding(
        f"invisible_unicode_U+{code:04X}", "invisible_unicode",
        f"Blocked: content contains invisible unicode character U+{code:04X} (possible injection).",
    )


def _pattern(text: str) -> Finding | None:
    words = set(WORD.findall(text))
    for pattern in PATTERNS:
        if pattern.matches(text, words):
            return Finding(pattern.pattern_id, pattern.category, PATTERN_MESSAGE.format(id=pattern.pattern_id))
    return None
