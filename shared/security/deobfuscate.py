"""Other readings of a normalised text, for the patterns to run on: letters un-spaced, leetspeak folded.

`variants(text)` returns the readings of `text` that differ from it (usually none):
- letter runs spread out with one repeated separator ("i g n o r e", "i.g.n.o.r.e", "i-g-n-o-r-e") are
  closed up; a long closed-up run ("ignoreallpreviousinstructions") is split at the words the threat
  patterns look for, so "p r e v i o u s" next to "i n s t r u c t i o n s" reads as two words;
- words mixing letters with leetspeak digits and symbols are folded (0→o 1→i 3→e 4→a 5→s 7→t @→a
  $→s !→i |→l); a 1 reads as l instead when only that makes a word the patterns look for ("ru135");
  e-mail addresses and URLs are kept as written so the exfiltration patterns still see them.
Every regex here is linear: single-character steps, no nested quantifiers.
"""

from __future__ import annotations

import re

_LETTER = r"[^\W_]|[@$]"
_SEPARATOR = r"[ .\-_*·•/|,+~:]"
# At least four letters, each one alone between the same separator: "i g n o r e", "s.y.s.t.e.m".
_SPREAD = re.compile(rf"(?<![^\W_])(?:{_LETTER})(?P<sep>{_SEPARATOR})(?:{_LETTER})(?:(?P=sep)(?:{_LETTER})){{2,}}(?![^\W_])")
SPLIT_FROM = 10  # closed-up runs this long are split into the words below

# Words the patterns look for (English and the other languages'), longest first so the longest wins.
_VOCABULARY = sorted(set("""
ignore ignoring disregard forget previous prior above earlier preceding all any every your you the my this
instructions instruction rules guidelines guidance directives directions prompt system reveal show print
display repeat tell give now are from on new override bypass safety send email forward upload post to at
passwords password keys key secrets secret credentials tokens token history conversation memory
dan mode jailbreak developer admin pretend act as do not user and then no longer restrictions filters
ignorez ignore ignoriere ignoriert vergiss ignora ignorar olvida dimentica esqueca instructions anweisungen
instrucciones istruzioni instrucoes precedentes vorherigen anteriores precedenti alle toutes tutte todas
todas les die las le as tes deine tus tue suas
""".split()), key=len, reverse=True)
_WORDS = re.compile("|".join(_VOCABULARY))
_KNOWN = frozenset(_VOCABULARY)

_LEET = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i", "|": "l"}
_LEET_I = str.maketrans(_LEET)
_LEET_L = str.maketrans({**_LEET, "1": "l"})
# A word holding at least one leet character: starts only at a word's start, so each word is read once.
_TOKEN = re.compile(r"(?<![\w@$!|])[\w@$!|]*?[0134573@$!|][\w@$!|]*")
_HAS_LEET = re.compile(r"[0134573@$!|]")
# Kept as written while folding: the exfiltration patterns need the address or URL itself.
_ADDRESS = re.compile(r"[^\s@]{1,64}@[\w-]{1,63}\.[\w.-]{1,253}|https?://\S{1,2048}")


def variants(text: str) -> list[str]:
    """The other readings of normalised `text`, each different from it and from one another."""
    closed = close_up(text)
    out: list[str] = []
    for reading in (closed, fold_leet(closed)):
        if reading != text and reading not in out:
            out.append(reading)
    return out


def close_up(text: str) -> str:
    """`text` with every spread-out letter run closed up (and split into words when long)."""
    return _SPREAD.sub(_closed, text) if _SPREAD.search(text) else text


def _closed(match: re.Match[str]) -> str:
    letters = match.group().replace(match.group("sep"), "")
    if len(letters) < SPLIT_FROM:
        return letters
    return re.sub(r"\s+", " ", _WORDS.sub(lambda m: f" {m.group()} ", letters)).strip()


def fold_leet(text: str) -> str:
    """`text` with words that mix letters and leetspeak folded; addresses and URLs left alone."""
    if not _HAS_LEET.search(text):
        return text
    pieces, at = [], 0
    for address in _ADDRESS.finditer(text):
        pieces += [_TOKEN.sub(_fold_token, text[at:address.start()]), address.group()]
        at = address.end()
    pieces.append(_TOKEN.sub(_fold_token, text[at:]))
    return "".join(pieces)


def _fold_token(match: re.Match[str]) -> str:
    """A word with at least one letter and one leet character, folded; any other word as it is."""
    token = match.group()
    if not _HAS_LEET.search(token) or not any(ch.isalpha() for ch in token):
        return token
    as_i = token.translate(_LEET_I)
    if "1" not in token or as_i in _KNOWN:
        return as_i
    as_l = token.translate(_LEET_L)
    return as_l if as_l in _KNOWN else as_i
