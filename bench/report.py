"""One way to print a benchmark figure: its value, its target and a pass/miss word.

    from bench.report import figure
    figure("turn overhead p50 (SQLite)", 11.2, "ms", target=12, better="lower")
    figure("recall@10 held-out folds", 0.83, "", target=0.82, better="higher", digits=3)
    figure("anchor ratio", 0.22, "x", target=0.25, better="lower", note="ours 11 ms / anchor 50 ms")

A benchmark never fails on a timing: `figure` prints and returns whether the target was met, and
`summary()` prints every figure of the run once more as a table at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

_FIGURES: list["Figure"] = []


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    target: float | None
    better: str
    digits: int
    note: str

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.value <= self.target if self.better == "lower" else self.value >= self.target

    def line(self) -> str:
        value = f"{self.value:.{self.digits}f}{(' ' + self.unit) if self.unit else ''}"
        if self.target is None:
            verdict = "(no target)"
        else:
            sign = "≤" if self.better == "lower" else "≥"
            word = "pass" if self.met else "MISS"
            verdict = f"target {sign} {self.target:.{self.digits}f}{(' ' + self.unit) if self.unit else ''}  {word}"
        note = f"  [{self.note}]" if self.note else ""
        return f"  {self.name:<58} {value:>14}   {verdict}{note}"


def figure(name: str, value: float, unit: str = "", *, target: float | None = None, better: str = "lower",
           digits: int = 1, note: str = "") -> bool | None:
    """Print one figure with its target and pass/MISS; returns whether the target was met (None: no target)."""
    if better not in ("lower", "higher"):
        raise ValueError("better is 'lower' or 'higher'")
    fig = Figure(name, float(value), unit, target, better, digits, note)
    _FIGURES.append(fig)
    print(fig.line(), flush=True)
    return fig.met


def summary(title: str = "figures") -> None:
    """Print every figure of this run again, together, so a long log ends with its verdicts."""
    if not _FIGURES:
        return
    print(f"\n{title}:")
    for fig in _FIGURES:
        print(fig.line())
    missed = sum(1 for f in _FIGURES if f.met is False)
    print(f"  {len(_FIGURES)} figures, {missed} missed their target", flush=True)
