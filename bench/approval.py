"""`python -m bench.approval`: how long the approval gate takes to decide, over the evasion corpus,
the ordinary commands, and hostile inputs at the length cap. Prints figures; asserts nothing."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from services.worker.approval import decide
from services.worker.approval.gate import MAX_COMMAND_CHARS

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "services" / "worker" / "data" / "approval_corpus"


def lines(name: str) -> list[str]:
    return [line for line in (CORPUS / name).read_text().splitlines() if line and not line.startswith("#")]


def timings_ms(commands: list[str], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        for command in commands:
            start = time.perf_counter()
            decide(command, "manual")
            out.append((time.perf_counter() - start) * 1000)
    return out


def report(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(f"{label:<34} n={len(samples):5d}  p50 {statistics.median(samples):7.3f} ms  p99 {p99:7.3f} ms  "
          f"max {ordered[-1]:7.3f} ms")


def main() -> None:
    report("evasion corpus (hardline.txt)", timings_ms(lines("hardline.txt"), 5))
    report("ordinary commands", timings_ms(lines("ordinary.txt"), 5))
    cap = MAX_COMMAND_CHARS - 10
    hostile = {
        "10k chars of simple commands": ("echo hello world; " * 600)[:cap],
        "10k chars of nested $(": ("$(" * 3000)[:cap // 2] + "true" + ")" * (cap // 4),
        "10k chars of quotes": ('"a" ' * 3000)[:cap],
        "10k chars of bash -c nesting": ("bash -c " * 1200)[:cap] + " true",
    }
    for label, command in hostile.items():
        report(label, timings_ms([command], 3))
    report("over the cap (refused unparsed)", timings_ms(["echo " + "a" * MAX_COMMAND_CHARS], 20))


if __name__ == "__main__":
    main()
