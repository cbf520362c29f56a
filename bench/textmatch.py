"""`python -m bench.textmatch`: the patch matcher on 2 MiB files with hostile old_strings.

Prints the milliseconds per case (best of 3) and what the matcher answered; asserts nothing. Each case
is built so a naive window-by-window matcher would be quadratic: long runs of identical lines, a
single 2 MiB line, thousands of near-identical lines that wake the similarity strategies.
"""

from __future__ import annotations

import time

from shared.textmatch import MatchFailure, find_and_replace

MIB2 = 2 * 1024 * 1024


def cases() -> list[tuple[str, str, str, bool]]:
    """(name, content, old_string, replace_all)."""
    near = "".join(f"{'x' * 380} {n:07d}\n" for n in range(MIB2 // 390))
    return [
        ("1M equal lines, 500-line near miss", "a\n" * (MIB2 // 2), "a\n" * 500 + "b", False),
        ("one 2 MiB line, 10k-char near miss", "a" * MIB2, "a" * 10_000 + "b", False),
        ("blank runs, collapsed near miss", " \t" * (MIB2 // 2), " \t" * 300 + "x", False),
        ("near-identical 390-char lines (similarity)", near, f"{'x' * 380} 9999999\n" * 3 + "zz", False),
        ("1M equal lines, two-line pattern (ambiguous)", "a\n" * (MIB2 // 2), "a\na", False),
        ("replace_all of 1M single-line matches", "a\n" * (MIB2 // 2), "a", True),
        ("indent drift, unique match at the end", "    pass\n" * (MIB2 // 9) + "    return 1\n", "  return 1",
         False),
    ]


def run(content: str, old: str, replace_all: bool) -> str:
    try:
        result = find_and_replace(content, old, "NEW", replace_all=replace_all)
    except MatchFailure as failure:
        return f"{failure.kind}"
    return f"{result.strategy} x{result.count}"


def main() -> None:
    for name, content, old, replace_all in cases():
        times = []
        for _ in range(3):
            started = time.perf_counter()
            answer = run(content, old, replace_all)
            times.append(time.perf_counter() - started)
        print(f"{name:<48} {min(times) * 1000:8.0f} ms  {answer}")


if __name__ == "__main__":
    main()
