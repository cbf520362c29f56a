"""The parser's findings about one command line, filled in by parse.Walker and judged by gate.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from .commands import Cmd
from .scripts import MOUNT, Workspace


@dataclass
class Analysis:
    """Everything one command line would run, and what made it hard to see."""

    commands: list[Cmd] = field(default_factory=list)
    pipelines: list[list[Cmd]] = field(default_factory=list)
    functions: dict[str, list[Cmd]] = field(default_factory=dict)
    forking_functions: set[str] = field(default_factory=set)
    texts: list[str] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)
    unparsed: bool = False
    too_deep: bool = False
    reader: Workspace | None = None  # without one, the files the line runs are not read
    scripts: list = field(default_factory=list)  # every scripts.Seen read, for the guardian
    run_paths: set[str] = field(default_factory=set)  # files the line runs (or would, once they exist)
    walked: set[tuple[str, str | None]] = field(default_factory=set)  # (path, digest) already judged
    shell_chars: int = 0  # script text given to the parser so far (runs.SHELL_BUDGET)
    home_read: set[str] = field(default_factory=set)  # start-up files already judged for this line
    folders: set[str] = field(default_factory=lambda: {MOUNT})  # every folder the line may be in
