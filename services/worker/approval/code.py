"""What a script in another language (Python, Perl, Ruby, Node, PHP, Lua, Tcl, awk) shows the gate.

A general-purpose language can do anything, so this catches the obvious moves only: the programs it
starts (their literal command lines are judged as shell), a start that builds its command at run time
(asked), recursive deletes, and writes to shell start-up or credential files. The sandbox is the boundary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Calls that start a program or run code given as text. Builtins that also name common methods (re.compile,
# model.eval, obj.send) count only when called bare; getattr only on the modules that start programs.
SPAWN = re.compile(
    r"(?<!\w)(?:os\.(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*)|subprocess\.\w+|Popen|check_output|check_call"
    r"|pty\.spawn|commands\.getoutput|system|exec|execSync|execFileSync|execFile|spawnSync|spawn|shell_exec|passthru"
    r"|proc_open|popen|IO\.popen|Open3\.\w+|Kernel\.\w+|os\.execute|io\.popen|importlib\.\w+)\s*\("
    r"|(?<![\w.])(?:eval|compile|__import__|instance_eval|class_eval|send|public_send)\s*\("
    r"|(?<![\w.])getattr\s*\((?=\s*(?:os|subprocess|shutil|pty|posix|builtins|__builtins__|__import__|importlib|sys)\b)")
# Perl, Ruby and Tcl call without parentheses: `system "rm", "-rf", "v";`, `exec "sh s.sh"`.
BARE_CALL = re.compile(r"(?<![\w.$@%])(system|exec|spawn|popen)\s+(?=[\"'\[qQ%])")
# Ways to run another file or rename a program-starting function, which the text above cannot follow.
INDIRECT = re.compile(r"\brunpy\.|\bexecfile\s*\(|\bSourceFileLoader\b|\bspec_from_file_location\b|\bload\s+['\"]"
                      r"|\bdo\s+['\"]"
                      r"|\bfrom\s+(os|posix|subprocess|pty|shutil|commands)\s+import\b[^\n]*"
                      r"\b(system|popen|exec\w*|spawn\w*|run|call|check_\w+|Popen|getoutput|rmtree|\*)\b"
                      r"|=\s*(os\.(system|popen|exec\w*|spawn\w*)|subprocess\.\w+|shutil\.rmtree)\s*($|[;,)\n])", re.M)
# A relative require or import in JavaScript or Ruby: the file is in the workspace and is judged too.
RELATIVE = re.compile(r"\b(?:require(?:_relative)?\s*\(?\s*|import\s+[^'\"\n]*?from\s+|import\s*\(\s*|import\s+)"
                      r"['\"](\.{0,2}/?[\w./-]+)['\"]")
EXTENSIONS = ("", ".js", ".mjs", ".cjs", ".ts", ".rb", "/index.js")
MODULE_CALL = re.compile(r"\b(?:import_module|__import__)\s*\(\s*['\"]([\w.]+)['\"]")
# Perl and Ruby backticks, qx// and %x(), Tcl's `exec prog args`, awk's `"cmd" | getline` and `print | "cmd"`.
INLINE = re.compile(r"`([^`]*)`|\bqx\s*[({/|]([^)}/|]*)|%x[({]([^)}]*)|^\s*exec\s+([^\n;\]]+)"
                    r"|([\"'])([^\"'\n]*)\5\s*\|\s*getline|\|\s*([\"'])([^\"'\n]*)\7", re.M)
LITERAL = re.compile(r"[rbfu]{0,2}(\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')")
# What may stand beside literals in a call whose command line is still known before it runs.
PLAIN_ARGUMENT = re.compile(
    r"^[\s,\[\]()+]*$|^[\s,\[\]()]*(\b(shell|check|text|capture_output|universal_newlines|timeout|cwd|stdout|stderr"
    r"|encoding|True|False|None|true|false|nil|subprocess|DEVNULL|PIPE|STDOUT)\b|\d+|=|[\s,\[\]().])*$")
RECURSIVE_DELETE = re.compile(r"\b(rmtree|rm_rf|rm_r|remove_tree|remove_dir|remove_entry\w*|removedirs|rmSync|rmdirSync"
                              r"|rimraf|removeSync|emptyDir\w*)\b"
                              r"|\bfs\.(promises\.)?rm\s*\(|\bfile\s+delete\s+-force\b|\bFile::Path\b")
START_UP_FILES = re.compile(r"\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zshenv|zprofile|zlogin"
                            r"|inputrc|netrc|pgpass|npmrc|pypirc|gitconfig)\b|\.ssh/|\.config/(git|autostart)\b")
IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\b|import\s+([\w., ]+))", re.M)
MAX_CALL_CHARS = 4000


@dataclass
class CodeView:
    """The shell command lines a script starts, and what made it dangerous or unreadable."""

    commands: list[str] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)


def view(text: str) -> CodeView:
    """What one script's text starts and does, as far as its text shows."""
    out = CodeView()
    for m in SPAWN.finditer(text):
        arguments, options = positional(call_arguments(text, m.end()))
        literals = [unquote(s.group(0)) for s in LITERAL.finditer(arguments)]
        if not PLAIN_ARGUMENT.match(LITERAL.sub("", arguments)) or re.search(r"\bexecutable\s*=", options):
            out.notes.add(f"a script starts a program built at run time ({m.group(0).rstrip('(').strip()})")
        elif literals:
            out.commands.append(" ".join(literals))
    for m in BARE_CALL.finditer(text):
        statement = re.split(r"[;\n]|\s(?:or|and|if|unless)\s", text[m.end():m.end() + MAX_CALL_CHARS], maxsplit=1)[0]
        literals = [unquote(s.group(0)) for s in LITERAL.finditer(statement)]
        if not literals or re.search(r"[$@]\w|\.\s*\$|#\{", LITERAL.sub("", statement) + "".join(literals)):
            out.notes.add(f"a script starts a program built at run time ({m.group(1)})")
        out.commands.append(" ".join(literals))
    if m := INDIRECT.search(text):
        out.notes.add(f"a script starts a program built at run time ({m.group(0).strip()[:40]})")
    for m in INLINE.finditer(text):
        command = next(g for g in m.groups() if g and g not in ("'", '"'))
        if re.search(r"[$@#{]", command):
            out.notes.add("a script starts a program built at run time (backticks, qx, exec)")
        out.commands.append(command)
    if m := RECURSIVE_DELETE.search(text):
        out.notes.add(f"a script deletes recursively ({m.group(0).strip()})")
    if m := START_UP_FILES.search(text):
        out.notes.add(f"a script touches shell start-up or credential files ({m.group(0)})")
    return out


def call_arguments(text: str, start: int) -> str:
    """The text between a call's parentheses (bounded), string literals skipped over."""
    depth, i, end = 1, start, min(len(text), start + MAX_CALL_CHARS)
    while i < end and depth:
        literal = LITERAL.match(text, i)
        if literal and text[i] in "\"'rbfu" and literal.group(0)[-1] in "\"'":
            i = literal.end()
            continue
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1 if depth == 0 else i]


def positional(arguments: str) -> tuple[str, str]:
    """A call's arguments split before its first keyword argument (cwd=, check=, …): the command is before."""
    bare = LITERAL.sub(lambda m: "x" * len(m.group(0)), arguments)
    m = re.search(r",\s*[A-Za-z_]\w*\s*=(?!=)", bare)
    return (arguments[:m.start()], arguments[m.start():]) if m else (arguments, "")


def unquote(literal: str) -> str:
    body = literal.lstrip("rbfuRBFU")
    quote = 3 if body[:3] in ('"""', "'''") else 1
    return body[quote:-quote]


def relative_requires(text: str) -> list[list[str]]:
    """For each relative require/import, the files it may name (./lib -> lib, lib.js, lib/index.js, …)."""
    out = []
    for m in RELATIVE.finditer(text):
        name = m.group(1)
        if name.startswith((".", "/")) or "require_relative" in m.group(0):
            out.append([name + ext for ext in EXTENSIONS])
    return out


def imported_modules(text: str) -> list[str]:
    """The module paths a Python script imports (`pkg/sub` for pkg.sub); a workspace one among them is judged too."""
    dotted = [d for m in IMPORT.finditer(text) for part in (m.group(1) or m.group(2) or "").split(",")
              if (d := part.strip().split(" ")[0])]
    dotted += MODULE_CALL.findall(text)
    names: list[str] = []
    for name in dotted:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            path = "/".join(parts[:i])
            if all(p.isidentifier() for p in parts[:i]) and path not in names:
                names.append(path)
    return names
