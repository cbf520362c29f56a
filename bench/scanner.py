"""`python -m bench.scanner`: the threat corpus figures (attacks caught, false positives, µs per entry),
and scanner speed on memory-sized, capped and hostile inputs.

Prints figures and the ratio to the target (a 2 KB entry well under 1 ms); asserts nothing.
Attack lines of the forged-fence families count as caught when `neutralise` defangs them.
The 2 KB text is the benign corpus joined: ordinary memory entries that wake many patterns at once,
a harder case than one real entry.
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

from shared.security.fences import neutralise
from shared.security.scanner import MAX_SCAN_CHARS, scan
from shared.security.threat_patterns import PATTERNS

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "shared" / "data" / "threat_corpus"
TARGET_MS_2KB = 1.0


NEUTRALISED = {"forged_fence", "forged_note"}
_ESCAPE = re.compile(r"\\u\{([0-9A-Fa-f]+)\}")


def rows(name: str) -> list[tuple[str, str]]:
    """(family, text) of a corpus file's lines, escapes decoded."""
    out, family = [], "-"
    for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("# family:"):
            family = line.split(":", 1)[1].strip()
        elif line and not line.startswith("#"):
            out.append((family, _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), line)))
    return out


def lines(name: str) -> list[str]:
    return [text for _, text in rows(name)]


def corpus_figures() -> None:
    """Attacks caught per family, false positives, and the mean time per entry."""
    attacks, benign = rows("attacks.txt"), rows("benign.txt")
    start = time.perf_counter()
    caught: dict[str, list[int]] = {}
    for family, text in attacks:
        hit = neutralise(text) != text if family in NEUTRALISED else scan(text) is not None
        tally = caught.setdefault(family, [0, 0])
        tally[0] += hit
        tally[1] += 1
    false_positives = [text for _, text in benign if scan(text) is not None]
    per_entry_us = (time.perf_counter() - start) / (len(attacks) + len(benign)) * 1e6
    total = sum(c for c, _ in caught.values())
    print(f"attacks caught: {total}/{len(attacks)}; false positives: {len(false_positives)}/{len(benign)}; "
          f"{per_entry_us:.1f} µs per entry")
    print("  " + ", ".join(f"{family} {c}/{n}" for family, (c, n) in caught.items()))
    for text in false_positives:
        print(f"  false positive: {text[:80]}")


def per_call_ms(text: str, repeat: int) -> float:
    """Median milliseconds of one scan over 5 rounds of `repeat` scans."""
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            scan(text)
        rounds.append((time.perf_counter() - start) / repeat * 1000)
    return statistics.median(rounds)


def main() -> None:
    benign, attacks = lines("benign.txt"), lines("attacks.txt")
    memory_2kb = "\n§\n".join(benign)[:2048]
    ascii_2kb = memory_2kb.encode("ascii", "ignore").decode()
    capped = ("\n§\n".join(benign) * 40)[:MAX_SCAN_CHARS]
    print(f"patterns: {len(PATTERNS)}; corpus: {len(attacks)} attacks, {len(benign)} benign")
    corpus_figures()
    for label, text, repeat in (
        ("one entry (~60 chars)", benign[0], 5000),
        ("2 KB of memory entries", memory_2kb, 500),
        ("2 KB, ASCII only (fast path)", ascii_2kb, 500),
        (f"{MAX_SCAN_CHARS:,} chars (the cap)", capped, 10),
        ("hostile: spaced letters at the cap", ("i g n o r e " * 11_000)[:MAX_SCAN_CHARS], 3),
        ("hostile: leet symbols at the cap", ("@$!|" * 16_384)[:MAX_SCAN_CHARS], 3),
        ("hostile: one base64 run at the cap", "A" * MAX_SCAN_CHARS, 3),
    ):
        ms = per_call_ms(text, repeat)
        print(f"{label:32s} {ms:8.3f} ms per scan")
        if text is memory_2kb:
            print(f"{'':32s} {ms / TARGET_MS_2KB:8.2f} x the {TARGET_MS_2KB} ms target")
    start = time.perf_counter()
    for text in attacks:
        scan(text)
    print(f"{'whole attack corpus':32s} {(time.perf_counter() - start) * 1000:8.3f} ms")


if __name__ == "__main__":
    main()
