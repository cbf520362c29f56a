"""What `make` runs from a Makefile: the recipes of the goals asked for (and what they depend on), as shell.

Only the goals' recipes are judged, so `make test` is not asked about because `clean` deletes `build/`.
`$(shell …)` and `!=` run while make reads the file, whatever the goal, so they are always included.
"""

from __future__ import annotations

import re

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
ASSIGN = re.compile(r"^\s*(?:export\s+|override\s+)*(\.?[A-Za-z_][\w.-]*)\s*(\+=|\?=|:::=|::=|:=|!=|=)\s*(.*)$")
DEFINE = re.compile(r"^\s*(?:export\s+|override\s+)*define\s+([A-Za-z_][\w.-]*)")
RULE = re.compile(r"^([^\t#:=][^:=]*?)\s*::?\s*([^=;]*?)(?:;(.*))?$")
INCLUDE = re.compile(r"^\s*-?s?include\s+(.+)$")
SHELL_CALL = re.compile(r"\$[({]shell\s+([^)}]*)[)}]")
REFERENCE = re.compile(r"\$[({]([A-Za-z_][\w.-]*)[)}]|\$([A-Za-z_])")
DEFAULTS = {"RM": "rm -f", "MAKE": "make", "SHELL": "/bin/sh", "CC": "cc", "CXX": "g++"}
STANDARD_SHELLS = {"/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env bash", "sh", "bash"}
MAX_EXPANSIONS = 8


class Makefile:
    """The rules, variables and includes of one Makefile's text."""

    def __init__(self, text: str, overrides: dict[str, str] | None = None) -> None:
        self.variables: dict[str, str] = dict(DEFAULTS)
        self.overrides = overrides or {}
        self.rules: dict[str, tuple[list[str], list[list[str]]]] = {}
        self.order: list[str] = []
        self.includes: list[str] = []
        self.at_parse: list[str] = SHELL_CALL.findall(text)
        self._read(text.replace("\\\n", " "))
        self.variables.update(self.overrides)

    def _read(self, text: str) -> None:
        current: list[str] = []
        prefix, defining, body = "\t", None, []
        for line in text.split("\n"):
            if defining is not None:
                if line.strip() == "endef":
                    self.variables[defining], defining = "\n".join(body), None
                else:
                    body.append(line)
                continue
            if line.startswith(prefix):
                current.append(line[len(prefix):].lstrip("\t@-+ "))
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if m := DEFINE.match(line):
                defining, body = m.group(1), []
            elif m := INCLUDE.match(line):
                self.includes += m.group(1).split()
            elif m := ASSIGN.match(line):
                self._assign(m.group(1), m.group(2), m.group(3))
                prefix = (self.variables.get(".RECIPEPREFIX") or "\t")[:1]
            elif m := RULE.match(line):
                current = [m.group(3).strip()] if m.group(3) else []
                for target in m.group(1).split():
                    deps, recipes = self.rules.setdefault(target, ([], []))
                    deps += m.group(2).split()
                    recipes.append(current)
                    if not target.startswith(".") and "%" not in target:
                        self.order.append(target)

    def _assign(self, name: str, op: str, value: str) -> None:
        if op == "!=":
            self.at_parse.append(value)
        if op == "+=":
            value = f"{self.variables.get(name, '')} {value}".strip()
        if op != "?=" or name not in self.variables:
            self.variables[name] = value

    def expand(self, text: str) -> str:
        """Variables replaced (bounded), `$$` made `$`, automatic variables named by a placeholder."""
        for _ in range(MAX_EXPANSIONS):
            new = REFERENCE.sub(lambda m: self.variables.get(m.group(1) or m.group(2), ""), text)
            if new == text:
                break
            text = new
        return re.sub(r"\$[@<^?*|+]", "target", text).replace("$$", "$")

    @property
    def odd_shell(self) -> str | None:
        """A SHELL other than sh or bash: make runs every recipe through it."""
        shell = self.expand(self.variables.get("SHELL", "/bin/sh")).strip()
        return None if shell in STANDARD_SHELLS else shell

    def shell_for(self, goals: list[str]) -> str:
        """The shell text make would run for these goals (the first target when none is named) and its includes."""
        wanted = [g for g in goals if g in self.rules] or self.order[:1]
        wanted += [i for i in self.includes if i in self.rules]  # make rebuilds an include it has a rule for
        seen: set[str] = set()
        lines = list(self.at_parse)
        while wanted:
            target = wanted.pop(0)
            if target in seen:
                continue
            seen.add(target)
            deps, recipes = self.rules.get(target, ([], []))
            wanted += [d for d in deps if d in self.rules]
            lines += [line for recipe in recipes for line in recipe]
        return "\n".join(self.expand(line) for line in lines if line.strip())


def goals_and_options(args: list[str]) -> tuple[list[str], str | None, str | None, dict[str, str]]:
    """make's goals, its -f file, its -C folder and the variables set on its command line."""
    goals: list[str] = []
    overrides: dict[str, str] = {}
    makefile = directory = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-f", "--file", "--makefile") and i + 1 < len(args):
            makefile, i = args[i + 1], i + 2
            continue
        if arg in ("-C", "--directory") and i + 1 < len(args):
            directory, i = args[i + 1], i + 2
            continue
        if arg.startswith(("--file=", "--makefile=")):
            makefile = arg.split("=", 1)[1]
        elif arg.startswith("--directory="):
            directory = arg.split("=", 1)[1]
        elif arg.startswith("-f") and len(arg) > 2:
            makefile = arg[2:]
        elif arg.startswith("-C") and len(arg) > 2:
            directory = arg[2:]
        elif not arg.startswith("-") and "=" not in arg:
            goals.append(arg)
        elif not arg.startswith("-"):
            name, _, value = arg.partition("=")
            overrides[name.rstrip(":+?")] = value
        i += 1
    return goals, makefile, directory, overrides
