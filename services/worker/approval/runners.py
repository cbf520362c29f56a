"""Which workspace file a simple command runs, and with what: a shell, another language, make, a package manager.

`bash s.sh`, `sh`, `source`, `.`, `./s.sh`, `python3 s.py`, `python3 -m mod`, `perl`, `node`, `make`, `npm run x`,
`git` (its config and hooks) …; runs.FileJudge reads what these name and judges it.
"""

from __future__ import annotations

import posixpath
import re

from .commands import SHELLS, Cmd

CODE = {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh", "wish", "Rscript",
        "awk", "gawk", "mawk", "nawk"}
# Options of the runners that take a value: the value is not the script.
VALUED = {"-o", "-O", "+o", "+O", "--rcfile", "--init-file", "-W", "-X", "-I", "-M", "--require"}
INLINE_FLAGS = {"-c", "-e", "-E", "-p", "--eval", "--print", "-r"}
PACKAGE_MANAGERS = {"npm", "yarn", "pnpm"}
PACKAGE_VERBS = {"add", "remove", "install", "i", "ci", "exec", "dlx", "x", "create", "init", "info", "list", "ls",
                 "outdated", "upgrade", "update", "why", "config", "cache", "publish", "pack", "link", "audit"}
READERS = {"cat", "less", "more", "head", "tail", "wc", "ls", "stat", "file", "chmod", "test", "[", "grep", "echo",
           "printf", "diff", "cmp", "md5sum", "sha256sum", "shellcheck", "bat", "nl", "cd"}
SHEBANG = re.compile(r"^#!\s*(\S+)(?:\s+(\S+))?")


def files_run(cmd: Cmd, path: str) -> list[tuple[str, str]]:
    """(file, language) for each workspace file this command runs; `path` is how the line named the program."""
    name, args = cmd.name, cmd.argv[1:]
    if "/" in path and name not in SHELLS and name not in CODE:
        return [(path, "")]
    if name in ("source", ".") and args:
        return [(args[0], "shell")]
    if name == "make":
        return [("", "make")]
    if name == "git":
        return [("", "git")]
    if name in ("pytest", "py.test"):
        return test_paths(args)
    if name in PACKAGE_MANAGERS:
        return [("package.json", "npm:" + script) for script in package_scripts(name, args)]
    if name in SHELLS or name in CODE:
        language = "shell" if name in SHELLS else "awk" if "awk" in name else "code"
        target = script_argument(name, args)
        if target == "-m":
            module = args[args.index("-m") + 1] if args.index("-m") + 1 < len(args) else ""
            base = module.replace(".", "/")
            if module == "pytest":
                return [(f"{base}.py", "module")] + test_paths(args[args.index("-m") + 2:])
            return [(f"{base}.py", "module"), (f"{base}/__main__.py", "module")] if module else []
        rcfile = [args[i + 1] for i in range(len(args) - 1) if args[i] in ("--rcfile", "--init-file")]
        if target or rcfile:
            return [(file, "shell") for file in rcfile] + ([(target, language)] if target else [])
        if any(op == "<" for op, _ in cmd.redirects):
            return [(next(t for op, t in cmd.redirects if op == "<"), language)]
    return []


def test_paths(args: list[str]) -> list[tuple[str, str]]:
    """What pytest runs from the workspace: the files and folders named (the current folder when none is)."""
    named = [a.split("::")[0] for a in args if not a.startswith("-")]
    return [(path, "pytest") for path in named or ["."]][:4]


def package_scripts(name: str, args: list[str]) -> list[str]:
    """The package.json scripts `npm run x`, `npm test`, `yarn x`, `npm install` … run (with their pre and post)."""
    words = [a for a in args if not a.startswith("-")]
    verb = words[0] if words else "install"
    if verb in ("run", "run-script") and len(words) > 1:
        script = words[1]
    elif verb in ("test", "t", "tst", "start", "stop", "restart"):
        script = "test" if verb.startswith("t") and verb != "test" else verb
    elif verb in ("install", "i", "ci") and len(words) == 1:
        return ["preinstall", "install", "postinstall", "prepare"]
    elif name != "npm" and verb not in PACKAGE_VERBS:
        script = verb
    else:
        return []
    return [f"pre{script}", script, f"post{script}"]


def reads_code_from_stdin(cmd: Cmd) -> bool:
    """A shell or interpreter that takes its program from stdin (no script, no inline code)."""
    name, args = cmd.name, cmd.argv[1:]
    if name in SHELLS:
        return not any(not a.startswith("-") or "c" in a for a in args)
    if name not in CODE or "awk" in name:
        return False
    return script_argument(name, args) is None and not INLINE_FLAGS & set(args) and "-m" not in args


def line_writes_its_scripts(analysis) -> str | None:
    """A file the line runs that it also writes: a redirect into it, or a command other than a reader naming it."""
    if not analysis.run_paths:
        return None

    def hits(word: str) -> set[str]:
        return {analysis.reader.path_of(word, d) for d in analysis.folders} & analysis.run_paths

    for cmd in analysis.commands:
        for op, target in cmd.redirects:
            if ">" in op and not target.isdigit() and (re.search(r"[$`*?]", target) or hits(target)):
                return posixpath.basename(target)
        if cmd.name in READERS:
            continue
        own = {p for name, _ in files_run(cmd, getattr(cmd, "path", cmd.name)) for p in hits(name)}
        for word in cmd.argv[1:]:
            written = hits(word.split("=", 1)[-1]) - own
            if written:
                return posixpath.basename(written.pop())
    return None


def script_argument(name: str, args: list[str]) -> str | None:
    """The script a runner is given: its first non-option argument (or `-m` for a module); None for inline code."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m" and name.startswith("python"):
            return "-m"
        if "awk" in name and arg == "-f" and i + 1 < len(args):
            return args[i + 1]
        if name in SHELLS and arg.startswith("-") and not arg.startswith("--") and "c" in arg:
            return None
        if name not in SHELLS and arg in INLINE_FLAGS:
            return None
        if arg == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if arg == "-" or not arg.startswith(("-", "+")):
            return None if arg == "-" or "awk" in name else arg
        i += 2 if arg in VALUED else 1
    return None


def from_shebang(text: str) -> str:
    """How a file run by its own name is read: its #! line's interpreter, shell without one, binary if not text."""
    if "\0" in text[:1024] or text.startswith("\x7fELF"):
        return "binary"
    m = SHEBANG.match(text)
    if not m:
        return "shell"
    program = posixpath.basename(m.group(2) if m.group(1).endswith("/env") and m.group(2) else m.group(1))
    if program in SHELLS:
        return "shell"
    return "code"
