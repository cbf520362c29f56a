"""`python -m bench.scanner`: threat scanner speed on memory-sized and capped inputs, and what recall adds.

Prints figures and the ratio to the target (a 2 KB entry well under 1 ms); asserts nothing.
The 2 KB text is the benign corpus joined: ordinary memory entries that wake many patterns at once,
a harder case than one real entry.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from shared.security.scanner import MAX_SCAN_CHARS, scan
from shared.security.threat_patterns import PATTERNS

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "shared" / "data" / "threat_corpus"
TARGET_MS_2KB = 1.0


def lines(name: str) -> list[str]:
    return [line for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]


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
    for label, text, repeat in (
        ("one entry (~60 chars)", benign[0], 5000),
        ("2 KB of memory entries", memory_2kb, 500),
        ("2 KB, ASCII only (fast path)", ascii_2kb, 500),
        (f"{MAX_SCAN_CHARS:,} chars (the cap)", capped, 10),
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
