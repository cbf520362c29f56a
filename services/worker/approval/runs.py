"""How the content of what a command runs reaches the gate (runners.py says which files those are).

The file is read (scripts.py) and its text judged like a command: shell is walked as shell, a Makefile as the
recipes of the goals asked for, package.json as the scripts run, git's config and hooks as what git runs,
other languages through code.py. A file the gate cannot read asks.
"""

from __future__ import annotations

import json
import posixpath

from . import code, gitfiles, homefiles
from .commands import Cmd
from .makefile import MAKEFILES, Makefile, goals_and_options
from .runners import files_run, from_shebang
from .scripts import Seen

# The most script text (shell, recipes, commands a script starts) one command line may bring to the parser;
# bashlex takes about 1.5 s for this much, and more is asked about rather than judged.
SHELL_BUDGET = 32 * 1024


class FileJudge:
    """Reads and walks what one command runs, for one Walker (its analysis, folders and nesting)."""

    def __init__(self, walker) -> None:
        self.walker = walker
        self.a = walker.a

    def command(self, cmd: Cmd, path: str) -> None:
        if self.a.reader is None:
            return
        self.home_files(cmd)
        for name, language in files_run(cmd, path):
            for folder in sorted(self.walker.dirs) if self.walker.dirs else [None]:
                if language == "make":
                    self.make(cmd, folder)
                elif language == "git":
                    self.git(cmd, folder)
                elif language == "pytest":
                    self.tests(name, folder)
                elif language.startswith("npm:"):
                    self.package_script(language[4:], folder)
                else:
                    self.file(name, language, folder)

    def read(self, name: str, folder: str | None) -> Seen | None:
        seen = self.a.reader.read(name, folder)
        if seen is None:
            return None
        if folder is not None:
            self.a.run_paths.add(self.a.reader.path_of(name, folder))
        if (seen.name, seen.digest) not in {(s.name, s.digest) for s in self.a.scripts}:
            self.a.scripts.append(seen)
        if seen.problem:
            self.a.notes.add(f"runs a file the gate cannot read ({name}: {seen.problem})")
        return seen

    def file(self, name: str, language: str, folder: str | None) -> None:
        if language == "module" and not self.exists(name, folder):
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

    def tests(self, name: str, folder: str | None) -> None:
        """pytest imports the conftest.py of every folder above what it is given, and the test files there."""
        if folder is None:
            return
        base = self.a.reader.path_of(name, folder)
        for above in gitfiles.repositories(posixpath.dirname(base), self.a.reader.mount):
            if self.exists(f"{above}/conftest.py", folder):
                self.file(f"{above}/conftest.py", "code", folder)
        if name.endswith(".py"):
            return self.file(name, "code", folder)
        for here in (base, f"{base}/tests", f"{base}/test"):
            for entry in self.a.reader.names_in(here):
                if entry == "conftest.py" or (entry.endswith(".py") and entry.startswith("test_")) \
                        or entry.endswith("_test.py"):
                    self.file(f"{here}/{entry}", "code", folder)

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
        if folder is None:
            return
        here = posixpath.dirname(self.a.reader.path_of(seen.name, folder))
        modules = [[f"{m}.py", f"{m}/__init__.py"] for m in code.imported_modules(seen.text or "")]
        for candidates in modules + code.relative_requires(seen.text or ""):
            for candidate in candidates:
                if self.exists(candidate, here) and self.walker.depth < 4:
                    self.file(candidate, "code", here)
                    break

    def package_script(self, script: str, folder: str | None) -> None:
        if not self.exists("package.json", folder):
            return
        seen = self.read("package.json", folder)
        try:
            scripts = json.loads(seen.text or "").get("scripts") or {} if seen and seen.text else {}
        except (ValueError, AttributeError):
            self.a.notes.add("runs a file the gate cannot read (package.json: it is not valid JSON)")
            return
        if isinstance(scripts, dict) and isinstance(scripts.get(script), str):
            self.shell("package.json", scripts[script])

    def home_files(self, cmd: Cmd) -> None:
        """Once per line: python's user-site start-up code; for ssh clients, ~/.ssh/config's commands."""
        if "python" not in self.a.home_read:
            self.a.home_read.add("python")
            for name in homefiles.user_site_files(self.a.reader):
                seen = self.read(name, self.a.reader.mount)
                if seen is not None and seen.text:
                    self.code(Seen(name, homefiles.pth_code(name, seen.text), seen.digest), self.a.reader.mount)
        if homefiles.uses_ssh(cmd.name, gitfiles.subcommand(cmd.argv[1:])[0]) and "ssh" not in self.a.home_read:
            self.a.home_read.add("ssh")
            if self.exists("~/.ssh/config", self.a.reader.mount):
                seen = self.read("~/.ssh/config", self.a.reader.mount)
                for command in homefiles.ssh_commands(seen.text or "") if seen else []:
                    self.shell("~/.ssh/config", command)

    def git(self, cmd: Cmd, folder: str | None) -> None:
        """Judge the command-valued settings git reads from workspace config files, and the hooks it may run."""
        used, directory = gitfiles.subcommand(cmd.argv[1:])
        if folder is None:
            return
        folder = posixpath.join(folder, directory) if directory else folder
        repos = [r for r in gitfiles.repositories(folder, self.a.reader.mount) if self.exists(f"{r}/.git", folder, runs=False)]
        configs = list(gitfiles.USER_CONFIGS) + [f"{r}/.git/config" for r in repos[:1]]
        pairs: list[tuple[str, str]] = []
        for path in configs:
            pairs += self.config(path, folder)
        for command in gitfiles.commands_from(pairs, used):
            self.shell(".gitconfig", command)
        for repo in repos[:1]:
            hooks = gitfiles.hooks_folder(pairs, repo)
            for hook in gitfiles.HOOKS:
                if self.exists(f"{hooks}/{hook}", folder):
                    self.file(f"{hooks}/{hook}", "", folder)

    def config(self, path: str, folder: str, depth: int = 0) -> list[tuple[str, str]]:
        if not self.exists(path, folder):
            return []
        seen = self.read(path, folder)
        pairs = gitfiles.config_pairs(seen.text) if seen is not None and seen.text else []
        for include in gitfiles.included(pairs, self.a.reader.path_of(path, folder)) if depth < 3 else []:
            pairs += self.config(include, folder, depth + 1)
        return pairs

    def exists(self, name: str, folder: str | None, runs: bool = True) -> bool:
        """Whether the workspace has this path (a symlink or unreadable entry counts: reading it will ask).

        Either way the path is one the line runs if it is there, so the line writing it is asked about.
        """
        seen = self.a.reader.read(name, folder)
        if seen is not None and folder is not None and runs:
            self.a.run_paths.add(self.a.reader.path_of(name, folder))
        return seen is not None and seen.problem != "it does not exist yet"

    def make(self, cmd: Cmd, folder: str | None) -> None:
        goals, named, directory, overrides = goals_and_options(cmd.argv[1:])
        if directory and folder:
            folder = posixpath.join(folder, directory)
        for name in ([named] if named else MAKEFILES):
            if not named and not self.exists(name, folder):
                continue
            seen = self.read(name, folder)
            if seen is not None and seen.text is not None:
                included = [self.read(n, folder) for n in Makefile(seen.text).includes]
                makefile = Makefile("\n".join([seen.text, *(i.text for i in included if i and i.text)]), overrides)
                if makefile.odd_shell:
                    self.a.notes.add(f"runs a file the gate cannot read ({name}: recipes run by {makefile.odd_shell})")
                self.shell(name, makefile.shell_for(goals))
            return
