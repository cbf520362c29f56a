"""The workspace files a simple command runs, and how each one's content reaches the gate.

`bash s.sh`, `sh`, `source`, `.`, `./s.sh`, `python3 s.py`, `python3 -m mod`, `perl`, `node`, `make` …: the
file is read (scripts.py) and its text judged like a command: shell is walked as shell, a Makefile as the
recipes of the goals asked for, other languages through code.py. A file the gate cannot read asks.
"""

from __future__ import annotations

import json
import posixpath
import re

from . import code
from .commands import SHELLS, Cmd
from .makefile import MAKEFILES, Makefile, goals_and_options
from .scripts import Seen

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
# The most script text (shell, recipes, commands a script starts) one command line may bring to the parser;
# bashlex takes about 1.5 s for this much, and more is asked about rather than judged.
SHELL_BUDGET = 32 * 1024
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
    if name in PACKAGE_MANAGERS:
        return [("package.json", "npm:" + script) for script in package_scripts(name, args)]
    if name in SHELLS or name in CODE:
        language = "shell" if name in SHELLS else "awk" if "awk" in name else "code"
        target = script_argument(name, args)
        if target == "-m":
            module = args[args.index("-m") + 1] if args.index("-m") + 1 < len(args) else ""
            return [(module.replace(".", "/") + ".py", "module")] if module else []
        rcfile = [args[i + 1] for i in range(len(args) - 1) if args[i] in ("--rcfile", "--init-file")]
        if target or rcfile:
            return [(name, "shell") for name in rcfile] + ([(target, language)] if target else [])
        if any(op == "<" for op, _ in cmd.redirects):
            return [(next(t for op, t in cmd.redirects if op == "<"), language)]
    return []


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
    """A script the same line also writes (a redirect into it, or a command other than a reader naming it)."""
    names = {posixpath.basename(p) for p in analysis.script_paths}
    if not names:
        return None
    for cmd in analysis.commands:
        for op, target in cmd.redirects:
            if ">" in op and posixpath.basename(target) in names:
                return posixpath.basename(target)
        if cmd.name in READERS:
            continue
        own = {posixpath.basename(n) for n, _ in files_run(cmd, getattr(cmd, "path", cmd.name))}
        for word in cmd.argv[1:]:
            base = posixpath.basename(word.split("=", 1)[-1])
            if base in names and base not in own:
                return base
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


class FileJudge:
    """Reads and walks what one command runs, for one Walker (its analysis, folders and nesting)."""

    def __init__(self, walker) -> None:
        self.walker = walker
        self.a = walker.a

    def command(self, cmd: Cmd, path: str) -> None:
        if self.a.reader is None:
            return
        for name, language in files_run(cmd, path):
            for folder in sorted(self.walker.dirs) if self.walker.dirs else [None]:
                if language == "make":
                    self.make(cmd, folder)
                elif language.startswith("npm:"):
                    self.package_script(language[4:], folder)
                else:
                    self.file(name, language, folder)

    def read(self, name: str, folder: str | None) -> Seen | None:
        seen = self.a.reader.read(name, folder)
        if seen is None:
            return None
        if folder is not None and not seen.problem:
            self.a.script_paths.add(self.a.reader.path_of(name, folder))
        if (seen.name, seen.digest) not in {(s.name, s.digest) for s in self.a.scripts}:
            self.a.scripts.append(seen)
        if seen.problem:
            self.a.notes.add(f"runs a file the gate cannot read ({name}: {seen.problem})")
        return seen

    def file(self, name: str, language: str, folder: str | None) -> None:
        if language == "module":
            if self.a.reader.read(name, folder) is None or self.a.reader.read(name, folder).problem:
                return  # an installed module, or none: python finds it outside the workspace
        seen = self.read(name, folder)
        if seen is None or seen.text is None:
            return
        walked = (self.a.reader.path_of(name, folder) if folder else name, seen.digest)
        if walked in self.a.walked:
            return  # a script that sources itself (or one already judged) adds nothing new
        self.a.walked.add(walked)
        if language == "module":
            language = "code"
        elif not language:
            language = from_shebang(seen.text)
        if language == "binary":
            self.a.notes.add(f"runs a file the gate cannot read ({name}: it is a compiled program, "
                             f"sha256 {seen.digest[:16]})")  # a rebuilt program is a new question
        elif language == "shell":
            self.shell(name, seen.text)
        else:
            self.code(seen, folder)

    def shell(self, name: str, text: str) -> None:
        """Walk a script's shell text, within the line's budget: the parser's cost grows with the text."""
        self.a.shell_chars += len(text)
        if self.a.shell_chars > SHELL_BUDGET:
            self.a.notes.add(f"runs a file the gate cannot read ({name}: more shell than the gate judges at once, "
                             f"{SHELL_BUDGET // 1024} KiB)")
            return
        self.walker.nested(text, script=True)

    def code(self, seen: Seen, folder: str | None) -> None:
        view = code.view(seen.text or "")
        self.a.notes |= view.notes
        self.shell(seen.name, "\n".join(view.commands))
        here = posixpath.dirname(self.a.reader.path_of(seen.name, folder)) if folder else None
        modules = [[f"{m}.py", f"{m}/__init__.py"] for m in code.imported_modules(seen.text or "")]
        for candidates in modules + code.relative_requires(seen.text or ""):
            for candidate in candidates:
                found = self.a.reader.read(candidate, here)
                if found is not None and found.problem != "it does not exist yet" and self.walker.depth < 4:
                    self.file(candidate, "code", here)
                    break

    def package_script(self, script: str, folder: str | None) -> None:
        seen = self.a.reader.read("package.json", folder)
        if seen is None or seen.problem == "it does not exist yet":
            return
        seen = self.read("package.json", folder)
        try:
            scripts = json.loads(seen.text or "").get("scripts") or {} if seen and seen.text else {}
        except (ValueError, AttributeError):
            self.a.notes.add("runs a file the gate cannot read (package.json: it is not valid JSON)")
            return
        if isinstance(scripts, dict) and isinstance(scripts.get(script), str):
            self.shell("package.json", scripts[script])

    def make(self, cmd: Cmd, folder: str | None) -> None:
        goals, named, directory, overrides = goals_and_options(cmd.argv[1:])
        if directory and folder:
            folder = posixpath.join(folder, directory)
        for name in ([named] if named else MAKEFILES):
            seen = self.a.reader.read(name, folder)
            if seen is not None and seen.problem == "it does not exist yet" and not named:
                continue
            seen = self.read(name, folder)
            if seen is not None and seen.text is not None:
                included = [self.read(n, folder) for n in Makefile(seen.text).includes]
                makefile = Makefile("\n".join([seen.text, *(i.text for i in included if i and i.text)]), overrides)
                if makefile.odd_shell:
                    self.a.notes.add(f"runs a file the gate cannot read ({name}: recipes run by {makefile.odd_shell})")
                self.shell(name, makefile.shell_for(goals))
            return


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
