"""A command line into the simple commands it really runs, seen through quoting, nesting and encoding.

bashlex gives the structure; words.py undoes what it cannot see. When bashlex gives up, a
quote-aware tokenizer splits the line at its operators and the result is marked `unparsed`, so the
gate can fail closed on it.
"""

from __future__ import annotations

import re
import shlex

import bashlex

from .analysis import Analysis
from .commands import SHELLS, Cmd, program_name, strip_prefixes, unwrap
from .handed import environment, handed_commands, skip_options
from .runners import line_writes_its_scripts, reads_code_from_stdin
from .runs import FileJudge
from .scripts import MOUNT, Workspace
from .payload import DECODERS, evaluate
from .words import expand, pre_parse

MAX_DEPTH = 6
MAX_FOLDERS = 8
INTERPRETERS = {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh", "awk", "gawk"}
EMBEDDED_SHELL = re.compile(r"(?:system|popen|call|run|check_output|check_call|exec|execSync|spawn|Popen)\s*\(\s*\[?\s*(['\"])(.+?)\1")
HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z_0-9]*)\2")
OPERATOR = re.compile(r"^[;&|()]+$")
REDIRECT = re.compile(r"^(\d*)(>>?|<<<|<|>\||&>>?|<>)$")


def analyse(text: str, reader: Workspace | None = None) -> Analysis:
    """The simple commands of `text`, nested shells, decoded payloads and (with a reader) the files it runs."""
    analysis = Analysis(reader=reader)
    Walker(analysis, 0, {}, {MOUNT}).run(text)
    rewritten = line_writes_its_scripts(analysis)
    if rewritten:
        analysis.notes.add(f"runs a file the gate cannot read ({rewritten}: the same command line writes it)")
    return analysis


class Walker:
    """Walks one shell text (and, recursively, the texts it runs)."""

    def __init__(self, analysis: Analysis, depth: int, variables: dict[str, str], dirs: set[str]) -> None:
        self.a, self.depth, self.variables = analysis, depth, variables
        self.source = ""
        self.cwd: str | None = None
        self.dirs = dirs  # the folders the command may be in (empty: only known when it runs)

    def run(self, text: str) -> None:
        if self.depth > MAX_DEPTH:
            self.a.too_deep = True
            return
        self.a.texts.append(text)
        self._heredocs(text)
        self.source = pre_parse(text)
        try:
            trees = bashlex.parse(self.source)
        except Exception:  # bashlex raises several types, RecursionError among them
            self.a.unparsed = True
            self._fallback(self.source)
            return
        for tree in trees:
            self.node(tree)

    def nested(self, text: str, script: bool = False) -> None:
        """Walk a text this one runs; a script file gets a fresh set of variables, as a new shell would."""
        Walker(self.a, self.depth + 1, {} if script else dict(self.variables), set(self.dirs)).run(text)

    # --- the syntax tree -----------------------------------------------------------------------
    def node(self, n, piped_in: bool = False):
        kind = n.kind
        if kind == "command":
            return self.command(n, piped_in)
        if kind == "pipeline":
            stages = [p for p in n.parts if p.kind != "pipe"]
            cmds = [c for i, st in enumerate(stages) if isinstance(c := self.node(st, i > 0), Cmd)]
            self.pipeline(cmds)
            return cmds
        if kind == "function":
            self.function(n)
            return None
        for child in [*getattr(n, "parts", []), *getattr(n, "list", [])]:
            if hasattr(child, "kind") and child.kind not in ("operator", "reservedword", "pipe"):
                self.node(child)
        return None

    def function(self, n) -> None:
        name = n.name.word
        start = len(self.a.commands)
        self.node(n.body)
        body = self.a.commands[start:]
        self.a.functions[name] = body
        text = self.source[n.body.pos[0]:n.body.pos[1]]
        calls = sum(1 for c in body if c.name == name)
        if calls >= 2 or (calls and re.search(r"&(?!&)", text)):
            self.a.forking_functions.add(name)

    def command(self, n, piped_in: bool) -> Cmd | None:
        words: list[str] = []
        redirects: list[tuple[str, str]] = []
        assigned: dict[str, str] = {}
        for p in n.parts:
            if p.kind == "assignment":
                name, _, _ = p.word.partition("=")
                assigned[name] = " ".join(self.word(p)).partition("=")[2]
            elif p.kind == "word":
                words += self.word(p)
            elif p.kind == "redirect":
                target = p.output
                value = " ".join(self.word(target)) if getattr(target, "kind", None) == "word" else str(target)
                redirects.append((p.type, value))
                if p.type in ("<<", "<<-") and getattr(p, "heredoc", None) is not None:
                    redirects.append(("<<body", p.heredoc.value.rpartition("\n")[0]))
        self.environment(assigned)
        if not words:
            if "IFS" in assigned:
                self.a.notes.add("the line changes IFS, so its words split in ways the gate cannot see")
            self.variables.update(assigned)
            return None
        return self.add(words, redirects, piped_in)

    def word(self, p) -> list[str]:
        """A word's fields: command substitutions walked (and replaced when their output is static)."""
        value, substituted = p.word, False
        for sub in getattr(p, "parts", []):
            if sub.kind in ("commandsubstitution", "processsubstitution"):
                produced = self.node(sub.command)
                stages = produced if isinstance(produced, list) else [produced] if isinstance(produced, Cmd) else []
                static = evaluate(stages) if stages else None
                original = self.source[sub.pos[0]:sub.pos[1]]
                if static is not None and sub.kind == "commandsubstitution":
                    value = value.replace(original, static.strip(), 1)
                    substituted = True
        quoted = self.source[p.pos[0]:p.pos[0] + 1] in ("'", '"')
        return expand(value, self.variables, force_split=substituted and not quoted)

    # --- one simple command --------------------------------------------------------------------
    def add(self, words: list[str], redirects: list[tuple[str, str]], piped_in: bool) -> Cmd | None:
        raw, prefixes, sudo_flags = unwrap(words)
        self.environment(dict(w.split("=", 1) for w in words[:max(0, len(words) - len(raw))] if "=" in w
                              and w.split("=", 1)[0].isidentifier()))
        if not raw:
            return None
        argv = [program_name(raw[0]), *raw[1:]]
        fed = piped_in or any(op in ("<<<", "<") for op, _ in redirects)
        cmd = Cmd(argv, redirects, prefixes, sudo_flags, fed)
        cmd.cwd = self.cwd  # type: ignore[attr-defined]
        cmd.path = raw[0]  # type: ignore[attr-defined]
        self.a.commands.append(cmd)
        if re.search(r"[$`]", raw[0]):
            self.a.notes.add(f"runs a program whose name is only known when the command runs ({raw[0]})")
        if cmd.name == "cd" and len(argv) > 1:
            self.cwd = argv[1] if argv[1].startswith(("/", "~")) else self.cwd
        if cmd.name in ("cd", "pushd"):
            self.change_folder(argv[1] if len(argv) > 1 else "~")
        self.inner(cmd)
        FileJudge(self).command(cmd, cmd.path)  # type: ignore[attr-defined]
        return cmd

    def environment(self, assigned: dict[str, str]) -> None:
        """Variables set on the line: a command-valued one is walked, one that loads other code is noted."""
        for note, text in environment(assigned):
            if note:
                self.a.notes.add(note)
            else:
                self.nested(text)

    def change_folder(self, target: str) -> None:
        """Every folder the line may now be in; a subshell's `cd` may not last, so the old ones stay."""
        if self.a.reader is None:
            return
        if target == "-" or re.search(r"[$`*?\[]", target) or len(self.dirs) >= MAX_FOLDERS:
            self.dirs.clear()
            return
        self.dirs |= {self.a.reader.path_of(target, d) for d in self.dirs}
        self.a.folders |= self.dirs

    def inner(self, cmd: Cmd) -> None:
        """Walk what a command runs in turn: shells' -c, eval, su -c, xargs, find -exec, trap, here-strings."""
        name, args = cmd.name, cmd.argv[1:]
        if name in SHELLS or name == "su":
            for i, arg in enumerate(args):
                if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:] and i + 1 < len(args):
                    self.a.notes.add("runs a nested shell command")
                    self.nested(args[i + 1])
                    break
            for op, target in cmd.redirects:
                if op == "<<<":
                    self.a.notes.add("runs a nested shell command")
                    self.nested(target)
        elif name == "eval" and args:
            self.a.notes.add("runs a nested shell command (eval)")
            self.nested(" ".join(args))
        elif name == "trap" and args:
            self.nested(args[0])
        elif name == "xargs":
            rest = skip_options(args, {"-I", "-i", "-n", "-P", "-d", "-L", "-s", "-E", "-a", "--max-args"})
            if rest and program_name(rest[0]) in SHELLS | INTERPRETERS | {"source", "."}:
                self.a.notes.add(f"runs a file the gate cannot read (xargs {rest[0]}: named on its input)")
            if rest:
                self.add(rest, [], True)
        elif name == "find":
            for i, arg in enumerate(args):
                if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                    end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+", "\\;")), len(args))
                    if args[i + 1:end]:
                        self.add(args[i + 1:end], [], False)
        if name in ("export", "declare", "typeset", "readonly", "local"):
            self.environment(dict(a.split("=", 1) for a in args if "=" in a and a.split("=", 1)[0].isidentifier()))
        for note, text in handed_commands(name, args):
            if note:
                self.a.notes.add(note)
            if text:
                self.nested(text)
        if name in INTERPRETERS and reads_code_from_stdin(cmd) and any(op == "<<<" for op, _ in cmd.redirects):
            self.a.notes.add("runs a here-string as an inline script")
        if name in INTERPRETERS:
            for arg in args:
                for m in EMBEDDED_SHELL.finditer(arg):
                    self.nested(m.group(2))

    def pipeline(self, cmds: list[Cmd]) -> None:
        """Record the pipeline; decode what flows into a shell and walk it too."""
        self.a.pipelines.append(cmds)
        for i, cmd in enumerate(cmds):
            if not i or not reads_code_from_stdin(cmd):
                continue
            payload = evaluate(cmds[:i])
            if cmd.name not in SHELLS:
                self.a.notes.add("runs piped text as an inline script")
            elif any(c.name in DECODERS for c in cmds[:i]):
                self.a.notes.add("decoded content piped to a shell")
            if cmd.name in SHELLS and payload is not None:
                self.nested(payload)
            elif cmd.name in SHELLS:
                self.a.notes.add("a shell runs piped input the gate cannot see")

    # --- heredocs and the fallback -------------------------------------------------------------
    def _heredocs(self, text: str) -> None:
        for m in HEREDOC.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            head = re.split(r"[;&|(]", text[line_start:m.start()])[-1].split()
            argv, _, _ = strip_prefixes(head) if head else ([], [], set())
            body_start = text.find("\n", m.end())
            if not argv or body_start < 0:
                continue
            lines, delimiter = text[body_start + 1:].split("\n"), m.group(3)
            body = []
            for line in lines:
                if (line.lstrip("\t") if m.group(1) else line) == delimiter:
                    break
                body.append(line)
            if argv[0] in SHELLS:
                self.a.notes.add("runs a heredoc as a shell script")
                self.nested("\n".join(body))
            elif argv[0] in INTERPRETERS:
                self.a.notes.add("runs a heredoc as an inline script")

    def _fallback(self, text: str) -> None:
        """Split at operators outside quotes; each piece is one simple command."""
        spaced = text.replace("`", " ; ").replace("\n", " ; ").replace("$(", " ; (")
        try:
            lexer = shlex.shlex(spaced, posix=True, punctuation_chars=";&|()<>")
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            self.a.notes.add("unbalanced quotes")
            tokens = re.findall(r"[;&|()<>]+|[^\s;&|()<>]+", re.sub(r"[\"'\\]", "", spaced))
        segment: list[str] = []
        redirects: list[tuple[str, str]] = []
        pipe: list[Cmd] = []
        pending: str | None = None
        for token in [*tokens, ";"]:
            if pending is not None:
                redirects.append((pending, token))
                pending = None
            elif REDIRECT.match(token) or token in (">", ">>", "<", "<<<", ">&", "&>"):
                pending = token.lstrip("0123456789")
            elif OPERATOR.match(token):
                fields = [f for w in segment for f in expand(w, self.variables)]
                cmd = self.add(fields, redirects, bool(pipe)) if fields else None
                if cmd is not None:
                    pipe.append(cmd)
                if token != "|":
                    if pipe:
                        self.pipeline(pipe)
                    pipe = []
                segment, redirects = [], []
            else:
                segment.append(token)
