"""`python -m bench.cache`: prompt-cache reuse and request size, on the real turn loop and review fork.

A scripted conversation of 50 turns runs through the worker's own code (turn loop, context builders,
review fork) against the scripted model, whose prefix cache reports, per request, the tokens of the
longest prefix (tools, system prompt, messages) an earlier request of the run already sent. A first
session on the same topics gives the recall provider something to find (`<memory-context>` blocks);
memory writes, from the turns' own tool calls and from background reviews, bring `<memory-update>`
notes. Figures: the share of prompt tokens cached over the conversation (and over its turns that
carry a block), a review's first request, and the request bytes of a session's first model call.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import json
import os
from itertools import cycle

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from bench.report import figure, summary  # noqa: E402
from shared.config import get_settings  # noqa: E402
from shared.db import get_database  # noqa: E402
from shared.stores import sessions, turns  # noqa: E402
from services.demo_model.prefix_cache import PrefixCache  # noqa: E402
from services.worker.agent.drain import drain_session  # noqa: E402
from services.worker.review import trigger  # noqa: E402
from services.worker.review.drain import drain_reviews  # noqa: E402
from services.worker.runtime import Runtime  # noqa: E402
from tests.fakes.model import FakeModel, Reply, text, tool_call  # noqa: E402
from tests.fakes.replies import latest_user_text  # noqa: E402
from tests.support.factories import make_session, make_user  # noqa: E402

TURNS = 50
REVIEW = "[Background review"
EARLIER = [  # the first session: what recall can find later
    "My favourite tea is Assam with a splash of milk.",
    "The deploy script for the garden-planner project lives in scripts/deploy.sh.",
    "We use Postgres 16 for the garden-planner database.",
    "My cat is called Biscuit and she hates the vacuum cleaner.",
    "Invoices for the bakery client go out on the first Monday of the month.",
]
ASKS = cycle([
    "What tea did I say I like best?",
    "Please read notes.txt and tell me what is in it.",
    "Where does the garden-planner deploy script live?",
    "Remember: I prefer metric units in every answer.",
    "Write a haiku about autumn rain.",
    "When do the bakery invoices go out?",
    "Please list the files in my workspace.",
    "What is my cat called?",
    "Explain the difference between a process and a thread in two sentences.",
    "Summarise what we have talked about so far in three bullet points.",
    "Please read todo.md and tell me what is left.",
    "Suggest a name for a bakery that sells only sourdough.",
])


def respond(body: dict) -> Reply:
    """The scripted model: turns answer (with a tool round when asked), reviews save one fact each."""
    asked = latest_user_text(body)
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        return text(f"Done. Here is what I found, in short: {str(last.get('content'))[:160]}")
    if asked.startswith(REVIEW):
        fact = f"User mentioned {len(body['messages'])} things in this chat so far."
        return tool_call([("memory", {"action": "add", "target": "user", "content": fact})])
    if asked.startswith("Remember:"):
        fact = asked.removeprefix("Remember:").strip()
        return tool_call([("memory", {"action": "add", "target": "user", "content": fact})])
    if asked.startswith("Please read "):
        return tool_call([("read_file", {"path": asked.split()[2]})])
    if "list the files" in asked:
        return tool_call([("list_files", {})])
    return text(f"Here is my answer to that: {asked} " + "Some detail follows. " * 12)


NOTES = "\n".join(f"- {n}. Garden-planner note: water the tomatoes, check the sourdough starter, call the bakery "
                  f"about invoice #{1000 + n}, and move the deploy to Thursday." for n in range(16))
TODO = "\n".join(f"- [ ] Task {n}: review the garden-planner pull request {n} and update the changelog." for n in range(16))


def workspace_files(settings, user_id: str) -> None:
    """Files the conversation reads: a tool round brings a few KB, as real ones do."""
    workspace = settings.data_dir / "users" / user_id / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text(NOTES)
    (workspace / "todo.md").write_text(TODO)


def converse(db, runtime, user_id: str, session_id: str, inputs: list[str]) -> None:
    """Each input as a turn, run here, then the session's due reviews (as the reviewer would)."""
    for asked in inputs:
        turns.create_turn(db, user_id, session_id, asked)
        drain_session(runtime, session_id)
        drain_reviews(runtime, session_id)


def turn_usages(db, session_id: str) -> list[tuple[str, dict]]:
    """(what the user message carried, usage) for each turn of the session."""
    carried = {}
    for message in sessions.list_messages(db, session_id):
        if message.role == "user" and message.turn_id:
            content = message.api_content or ""
            carried[message.turn_id] = " ".join(tag for tag in ("<memory-context>", "<memory-update>")
                                                if tag in content)
    return [(carried.get(turn_id, ""), turns.get_turn(db, None, turn_id).usage or {}) for turn_id in carried]


def share(usages: list[dict]) -> tuple[float, int]:
    prompt = sum(u.get("prompt_tokens", 0) for u in usages)
    return (sum(u.get("cached_tokens", 0) for u in usages) / prompt if prompt else 0.0), prompt


def review_first_requests(model: FakeModel) -> list[float]:
    """Cached share of each review's first request, replaying the model's prefix cache over what it answered."""
    cache, shares = PrefixCache(), []
    for recorded in model.answered:
        usage = cache.measure(recorded.body)
        messages = recorded.body.get("messages") or []
        if latest_user_text(recorded.body).startswith(REVIEW) and messages[-1].get("role") == "user":
            shares.append(usage.cached_tokens / usage.prompt_tokens)
    return shares


def first_call_bytes(db, runtime, model: FakeModel) -> tuple[int, dict]:
    """Bytes on the wire of a brand-new user's first model call (empty memory, no skills of their own)."""
    user = make_user(db)
    chat = make_session(db, user.id)
    before = len(model.requests)
    converse(db, runtime, user.id, chat.id, ["Hello!"])
    first = model.requests[before]
    return int(first.headers.get("content-length") or 0), first.body


def main() -> int:
    settings = get_settings()  # the default review intervals (a memory review after 10 turns without a write)
    db = get_database(settings.sqlalchemy_url)
    trigger.enqueue = lambda name, payload: None  # no reviewer process here: the bench drains reviews itself
    model = FakeModel(port=ENV.model_port, default=respond).start()
    runtime = Runtime.build(settings, worker_id="worker@bench-cache")
    try:
        size, body = first_call_bytes(db, runtime, model)
        tools = len(json.dumps(body.get("tools") or []))
        system = len((body.get("messages") or [{}])[0].get("content") or "")
        print(f"Prompt cache and request size ({TURNS}-turn scripted conversation, scripted prefix cache)\n")
        figure("request bytes, first call of a session (empty memory)", size / 1024, "KB", target=15,
               better="lower", note=f"anchor 46 KB; tools {tools / 1024:.1f} KB, system prompt {system / 1024:.1f} KB")

        user = make_user(db)
        workspace_files(settings, user.id)
        converse(db, runtime, user.id, make_session(db, user.id).id, EARLIER)
        chat = make_session(db, user.id)
        start = len(model.requests)
        converse(db, runtime, user.id, chat.id, [next(ASKS) for _ in range(TURNS)])
        calls = [r for r in model.requests[start:] if r.body and not latest_user_text(r.body).startswith(REVIEW)]
        figure("request bytes per model call, 50-turn conversation (mean)",
               sum(int(r.headers.get("content-length") or 0) for r in calls) / max(1, len(calls)) / 1024, "KB",
               note=f"{len(calls)} turn calls; anchor 46 KB")

        carried = turn_usages(db, chat.id)
        overall, prompt = share([u for _, u in carried])
        blocks, block_prompt = share([u for tags, u in carried if tags])
        with_context = sum("<memory-context>" in tags for tags, _ in carried)
        with_update = sum("<memory-update>" in tags for tags, _ in carried)
        figure(f"prompt tokens cached over {len(carried)} turns", overall * 100, "%", target=90, better="higher",
               note=f"{prompt:,} prompt tokens")
        figure("prompt tokens cached, turns carrying a memory block", blocks * 100, "%", target=90, better="higher",
               note=f"{with_context} with <memory-context>, {with_update} with <memory-update>; "
                    f"{block_prompt:,} prompt tokens")

        firsts = review_first_requests(model)
        figure("review's first request: prompt tokens cached (lowest)", min(firsts, default=0) * 100, "%",
               target=95, better="higher", note=f"{len(firsts)} reviews; mean {sum(firsts) / max(1, len(firsts)):.1%}")
        summary("prompt cache")
        return 0
    finally:
        runtime.leases.stop()
        model.stop()
        ENV.close()


if __name__ == "__main__":
    raise SystemExit(main())
