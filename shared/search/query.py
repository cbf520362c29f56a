"""What people and models type, parsed into a safe full-text query for FTS5 or Postgres tsquery.

Rules, so a natural question finds the right messages and no text is a syntax error:
- Plain words are alternatives ranked by BM25; stop words are dropped unless nothing else is left.
- `"a phrase"` must appear as written; `deploy*` matches by prefix; `a AND b` requires both;
  `NOT x` (or `a NOT x`) excludes; OR and spaces rank alternatives. Operators count in capitals only.
- Words joined by `-`, `.`, `_` or `/` (`chat-send`, `v2.1`) are searched as a phrase.
- Everything else (`( ) : ^ + { }`, NEAR, unbalanced quotes, emoji) is plain text: only letters and
  digits reach the database, always inside quotes.
- Irregular verb forms are searched together ("went" also finds "go"); the index stems the rest.
- A word before "n't" is a negated auxiliary ("won't", "can't"): a stop word, never "won" as in "win".
- Runs of CJK characters are matched as substrings (they have no spaces to split words on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.search.words import STOP_WORDS, word_forms

MAX_QUERY_CHARS = 2048
MAX_TERMS = 24
MIN_PREFIX_CHARS = 2
CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_RUN = re.compile(rf"[{CJK_CHARS}]+|[^\W_{CJK_CHARS}]+")
_CJK = re.compile(rf"[{CJK_CHARS}]")
_CONNECTORS = set("-._/")
_OPERATORS = {"AND", "OR", "NOT"}
_NEGATION = re.compile(r"['\u2019]t\b", re.IGNORECASE)  # the "'t" of "won't", "don't" (straight or curly)
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"'})


@dataclass(frozen=True)
class Atom:
    """One searchable unit: a word, a phrase (words in order), optionally a prefix, or a CJK run."""

    words: tuple[str, ...]
    prefix: bool = False
    cjk: bool = False

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Term:
    """One thing asked for: alternative atoms (a word and its irregular forms, or one phrase)."""

    atoms: tuple[Atom, ...]
    required: bool = False

    @property
    def cjk(self) -> bool:
        return self.atoms[0].cjk


@dataclass(frozen=True)
class ParsedQuery:
    """Positive terms (required ones filter, all of them rank) and excluded terms."""

    terms: tuple[Term, ...] = ()
    excluded: tuple[Term, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def has_required(self) -> bool:
        return any(t.required for t in self.terms)


@dataclass
class _Entry:
    atom: Atom
    required: bool = False
    excluded: bool = False

    @property
    def stop_word(self) -> bool:
        """A lone, unquoted, optional stop word: dropped when the query has anything better."""
        atom = self.atom
        plain = not (self.required or atom.prefix or atom.cjk or len(atom.words) > 1)
        return plain and atom.words[0] in STOP_WORDS


def parse_query(text: str | None) -> ParsedQuery:
    """Parse any user text; never raises."""
    text = (text or "")[:MAX_QUERY_CHARS].translate(_QUOTES)
    entries = _combine(_items(text))
    positive = [e for e in entries if not e.excluded]
    if any(not e.stop_word for e in positive):
        positive = [e for e in positive if not e.stop_word]
    terms = _dedupe([_term(e) for e in positive])[:MAX_TERMS]
    excluded = _dedupe([_term(e) for e in entries if e.excluded])[:MAX_TERMS]
    return ParsedQuery(tuple(terms), tuple(excluded))


def _items(text: str) -> list[tuple[str, object]]:
    """Operators and (atom, quoted) pairs in the order written; an unmatched quote is plain text."""
    parts = text.split('"')
    if len(parts) % 2 == 0:
        parts[-2:] = [parts[-2] + " " + parts[-1]]
    items: list[tuple[str, object]] = []
    for index, part in enumerate(parts):
        if index % 2:
            items.extend(("atom", (atom, True)) for atom in _phrase_atoms(part))
            continue
        for raw in part.split():
            if raw in _OPERATORS:
                items.append(("op", raw))
            else:
                items.extend(("atom", (atom, False)) for atom in _token_atoms(raw))
    return items


def _runs(text: str) -> list[re.Match]:
    return list(_RUN.finditer(text.lower()))


def _phrase_atoms(text: str) -> list[Atom]:
    """A quoted phrase: its words in order; CJK runs inside it become their own atoms."""
    runs = _runs(text)
    latin = tuple(m.group() for m in runs if not _CJK.match(m.group()))
    atoms = [Atom((m.group(),), cjk=True) for m in runs if _CJK.match(m.group())]
    if latin:
        atoms.insert(0, Atom(latin, prefix=_wants_prefix(text, latin[-1])))
    return atoms


def _token_atoms(raw: str) -> list[Atom]:
    """Atoms of one space-separated token: words, connector-joined compounds, CJK runs."""
    runs = [run for run in _runs(raw) if not _NEGATION.match(raw, run.end())]
    groups: list[list[re.Match]] = []
    for run in runs:
        joined = (
            groups
            and not _CJK.match(run.group())
            and not _CJK.match(groups[-1][-1].group())
            and run.start() - groups[-1][-1].end() == 1
            and raw[run.start() - 1] in _CONNECTORS
        )
        if joined:
            groups[-1].append(run)
        else:
            groups.append([run])
    atoms = []
    for group in groups:
        words = tuple(m.group() for m in group)
        if _CJK.match(words[0]):
            atoms.append(Atom(words, cjk=True))
        else:
            atoms.append(Atom(words))
    if atoms and not atoms[-1].cjk and _wants_prefix(raw, atoms[-1].words[-1]):
        atoms[-1] = Atom(atoms[-1].words, prefix=True)
    return atoms


def _wants_prefix(text: str, last_word: str) -> bool:
    """`word*` at the end of the text, with a prefix long enough to be useful."""
    return text.rstrip(" ,;:!?.)").endswith("*") and len(last_word) >= MIN_PREFIX_CHARS


def _combine(items: list[tuple[str, object]]) -> list[_Entry]:
    """Apply AND (both neighbours required) and NOT (the next atom excluded); OR is the default."""
    entries: list[_Entry] = []
    negate = join = False
    for kind, value in items:
        if kind == "op":
            if value == "NOT":
                negate = True
            else:
                join = value == "AND" and bool(entries)
            continue
        atom, quoted = value
        entry = _Entry(atom, required=quoted and not negate, excluded=negate)
        if join:
            entries[-1].required = entries[-1].required or not entries[-1].excluded
            entry.required = entry.required or not negate
        entries.append(entry)
        negate = join = False
    return entries


def _term(entry: _Entry) -> Term:
    atom = entry.atom
    if atom.prefix or atom.cjk or len(atom.words) > 1:
        return Term((atom,), required=entry.required)
    return Term(tuple(Atom((form,)) for form in word_forms(atom.words[0])), required=entry.required)


def _dedupe(terms: list[Term]) -> list[Term]:
    """One term per distinct atom set; a repeated term is required if any copy was."""
    seen: dict[tuple[Atom, ...], Term] = {}
    for term in terms:
        old = seen.get(term.atoms)
        seen[term.atoms] = Term(term.atoms, required=term.required or (old is not None and old.required))
    return list(seen.values())


def fts5_term(term: Term) -> str:
    """An FTS5 expression for one term: its atoms quoted, OR'ed."""
    parts = [f'"{atom.text}"' + (" *" if atom.prefix else "") for atom in term.atoms]
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def fts5_match(query: ParsedQuery, body: str, columns: str) -> str | None:
    """The FTS5 MATCH text for the non-CJK terms, or None when only CJK (or nothing) is asked for.

    Required and excluded terms look at the message itself (`body`); alternatives may also match the
    surrounding messages (`columns`), which ranks an answer whose question held the words.
    """
    terms = [t for t in query.terms if not t.cjk]
    if not terms:
        return None
    required = [f"{body} : {fts5_term(t)}" for t in terms if t.required]
    anywhere = " OR ".join(f"{columns} : {fts5_term(t)}" for t in terms if not t.required)
    if required:
        expression = " AND ".join(required)
        if anywhere:
            expression += f" AND ({required[0]} OR {anywhere})"
    else:
        expression = anywhere
    excluded = [t for t in query.excluded if not t.cjk]
    if excluded:
        expression = f"({expression}) NOT ({body} : ({' OR '.join(fts5_term(t) for t in excluded)}))"
    return expression


def tsquery_atom(atom: Atom, weights: str = "") -> str:
    """A to_tsquery operand: the atom quoted (CJK characters spaced, as the index spaces them)."""
    text = " ".join(atom.words[0]) if atom.cjk else atom.text
    marks = ("*" if atom.prefix else "") + weights
    return f"'{text}'" + (f":{marks}" if marks else "")


def tsquery_term(term: Term, weights: str = "") -> str:
    parts = [tsquery_atom(atom, weights) for atom in term.atoms]
    return parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"


def tsquery_match(query: ParsedQuery, *, body_only: bool = False) -> str | None:
    """The to_tsquery text: required terms AND'ed (in the message itself), alternatives OR'ed
    (anywhere in the document, or in the message itself when `body_only`)."""
    if query.empty:
        return None
    required = [tsquery_term(t, "A") for t in query.terms if t.required]
    optional = [tsquery_term(t, "A" if body_only else "") for t in query.terms if not t.required]
    expression = " & ".join(required) if required else " | ".join(optional)
    if query.excluded:
        expression = f"({expression}) & !({' | '.join(tsquery_term(t, 'A') for t in query.excluded)})"
    return expression
