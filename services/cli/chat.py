"""`hstack chat`: a terminal conversation through the api, streaming answers and tool activity."""

from __future__ import annotations

import json
from typing import Callable, TextIO

from services.cli.client import ApiClient, CliError, Event

HELP = "Type a message and press Enter. /new starts a new session, /quit exits."
ARGS_WIDTH = 60
COMMAND_PREVIEW = 200
APPROVAL_KEYS = {"y": ("approve", "once"), "s": ("approve", "session"), "n": ("deny", "once")}
APPROVAL_PROMPT = "  approve? [y] once  [s] for this session  [n] deny › "


def format_call(name: str, arguments) -> str:
    """`read_file(path="a.txt")` from a tool name and its JSON arguments, cut to a readable width."""
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in parsed.items())
    else:
        inner = str(arguments or "")
    if len(inner) > ARGS_WIDTH:
        inner = inner[: ARGS_WIDTH - 1] + "…"
    return f"{name}({inner})"


class TurnPrinter:
    """Writes one turn's events: text as it streams, a line per tool call, errors in words."""

    def __init__(self, out: TextIO, answer: Callable[[dict], None] | None = None,
                 choose: Callable[[dict], None] | None = None) -> None:
        self.out = out
        self.answer = answer
        self.choose = choose
        self.streamed = False
        self.at_line_start = True
        self.open_tool: str | None = None
        self.calls: dict[str, str] = {}

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = text.endswith("\n")

    def new_line(self) -> None:
        if self.open_tool is not None:
            self.open_tool = None
        if not self.at_line_start:
            self.write("\n")

    def handle(self, event: Event) -> None:
        handler = getattr(self, "on_" + event.type.replace(".", "_"), None)
        if handler is not None:
            handler(event.data)

    def on_message_delta(self, data: dict) -> None:
        if self.open_tool is not None:
            self.new_line()
        self.streamed = True
        self.write(data.get("delta") or "")

    def on_tool_started(self, data: dict) -> None:
        self.new_line()
        call_id = str(data.get("id") or len(self.calls))
        self.calls[call_id] = format_call(data.get("name", "?"), data.get("arguments"))
        self.write(f"  ↳ {self.calls[call_id]} …")
        self.open_tool = call_id

    def on_tool_completed(self, data: dict) -> None:
        call_id = str(data.get("id"))
        outcome = "ok" if data.get("ok", True) else "failed"
        if self.open_tool == call_id:
            self.open_tool = None
            self.write(f" {outcome}\n")
            return
        self.new_line()
        self.write(f"  ↳ {self.calls.get(call_id, data.get('name', '?'))} … {outcome}\n")

    def on_approval_requested(self, data: dict) -> None:
        self.new_line()
        command = str(data.get("command") or "a command")
        if len(command) > COMMAND_PREVIEW:
            command = command[: COMMAND_PREVIEW - 1] + "…"
        self.write(f"  ⚠ approval needed: {command}\n    why: {data.get('reason') or 'it matched a dangerous pattern'}\n")
        if self.answer is not None:
            self.answer(data)
        else:
            self.write(f"    decide with POST /v1/approvals/{data.get('approval_id', '?')}\n")

    def on_clarify_requested(self, data: dict) -> None:
        """The agent's question as a numbered list of its choices."""
        self.new_line()
        self.write(f"  ? {data.get('question') or 'a question'}\n")
        for number, choice in enumerate(data.get("choices") or [], 1):
            self.write(f"    {number}. {choice}\n")
        if self.choose is not None:
            self.choose(data)
        else:
            self.write(f"    answer with POST /v1/clarifications/{data.get('clarification_id', '?')}\n")

    def on_review_completed(self, data: dict) -> None:
        self.new_line()
        self.write(f"  💾 {data.get('summary') or 'Self-improvement review: saved'}\n")

    def on_turn_completed(self, data: dict) -> None:
        if not self.streamed and data.get("output"):
            self.new_line()
            self.write(data["output"])
        self.new_line()

    def on_turn_failed(self, data: dict) -> None:
        error = data.get("error") or {}
        self.new_line()
        self.write(f"error: {error.get('message', 'the turn failed')} ({error.get('code', 'error')})\n")

    def on_turn_cancelled(self, data: dict) -> None:
        self.new_line()
        self.write("(the turn was cancelled)\n")


class Chat:
    """A loop of lines in, streamed answers out; one turn per line."""

    def __init__(self, client: ApiClient, stdin: TextIO, out: TextIO, *, session_id: str | None = None) -> None:
        self.client = client
        self.stdin = stdin
        self.out = out
        self.interactive = stdin.isatty()
        self.api_errors = 0
        self.session_id = self._open(session_id)
        if self.interactive:
            import readline  # noqa: F401  (line editing and history for input())

            self.say(f"session {self.session_id} — {HELP}")

    def _open(self, session_id: str | None) -> str:
        if session_id:
            return self.client.get(f"/v1/sessions/{session_id}")["id"]
        return self.client.post("/v1/sessions", {})["id"]

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def run(self) -> int:
        """0 at /quit or the end of input; 1 when the api refused or dropped a turn along the way."""
        while True:
            line = self.read_line()
            if line is None or line.strip() == "/quit":
                return 1 if self.api_errors else 0
            text = line.strip()
            if not text:
                continue
            if text == "/new":
                self.client.post(f"/v1/sessions/{self.session_id}/end")  # that session has really ended
                self.session_id = self._open(None)
                self.say(f"new session {self.session_id}")
                continue
            self.turn(text)

    def read_line(self) -> str | None:
        """The next line, or None at the end of input."""
        if not self.interactive:
            return self.stdin.readline() or None
        try:
            return input("you › ")
        except EOFError:
            self.say("")
            return None

    def turn(self, text: str) -> None:
        """Post one turn and print its events until it ends; a refused or failed turn does not end the chat."""
        printer = TurnPrinter(self.out, self.answer_approval, self.answer_question)
        try:
            for event in self.client.turn_events(self.session_id, text):  # one request: the POST streams
                printer.handle(event)
        except CliError as exc:
            printer.new_line()
            self.say(f"error: {exc}")
            self.api_errors += 1


    def answer_approval(self, data: dict) -> None:
        """Ask for y / s / n and send the decision; the turn's events go on once it resumes."""
        while True:
            line = self._ask(APPROVAL_PROMPT)
            if not line:
                self.say("    no answer: the command is refused when the approval times out")
                return
            key = line.strip().lower()[:1]
            if key in APPROVAL_KEYS:
                break
        decision, scope = APPROVAL_KEYS[key]
        try:
            self.client.post(f"/v1/approvals/{data.get('approval_id')}", {"decision": decision, "scope": scope})
        except CliError as exc:
            self.say(f"    could not send the decision: {exc}")
            return
        self.say({"once": "    approved once", "session": "    approved for this session"}[scope]
                 if decision == "approve" else "    denied")

    def answer_question(self, data: dict) -> None:
        """Ask for a choice's number and send that choice; the turn's events go on once it resumes."""
        choices = [str(c) for c in data.get("choices") or []]
        while True:
            line = self._ask(f"  choose [1-{len(choices)}] › ")
            if not line:
                self.say("    no answer: the agent goes on without one when the question times out")
                return
            if line.strip().isdigit() and 1 <= int(line.strip()) <= len(choices):
                break
        choice = choices[int(line.strip()) - 1]
        try:
            self.client.post(f"/v1/clarifications/{data.get('clarification_id')}", {"choice": choice})
        except CliError as exc:
            self.say(f"    could not send the answer: {exc}")
            return
        self.say(f"    answered: {choice}")

    def _ask(self, prompt: str) -> str | None:
        """One answer line; piped input is echoed after the prompt so the transcript reads the same."""
        if self.interactive:
            try:
                return input(prompt)
            except EOFError:
                return None
        self.out.write(prompt)
        line = self.stdin.readline()
        self.say(line.strip())
        return line or None


def chat(client: ApiClient, stdin: TextIO, out: TextIO, session_id: str | None = None) -> int:
    """Run `hstack chat` until /quit or the end of input."""
    return Chat(client, stdin, out, session_id=session_id).run()
