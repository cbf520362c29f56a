"""Session titles: after a session's first exchange, the model names an untitled session in a few words.

It runs after the turn has finished and been announced (off the answer's path), makes one short call
and ignores any failure; a title set meanwhile (PATCH /v1/sessions/{id}) is never overwritten.
"""

from __future__ import annotations

import logging

from shared.llm import get_llm
from shared.stores import sessions
from services.worker.agent.context import TurnContext

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 60
EXCERPT_CHARS = 1000  # of the question and of the answer, enough to name the topic
PROMPT = ("Write a short title (at most 6 words) for a conversation that starts like this. Answer with the title "
          "only: no quotes, no trailing period.\n\nUser: {question}\n\nAssistant: {answer}")


def clean(text: str | None) -> str:
    """The model's answer as a title: one line, no quotes or label, at most MAX_TITLE_CHARS."""
    line = next((ln for ln in (text or "").splitlines() if ln.strip()), "").strip("\"'`*# ")
    if line.lower().startswith("title:"):
        line = line[6:]
    line = " ".join(line.strip("\"'`*# ").rstrip(".").strip("\"'`*# ").split())
    if len(line) > MAX_TITLE_CHARS:
        line = line[:MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:-") + "…"
    return line


def title_after_first_exchange(ctx: TurnContext, status: str, output: str | None) -> None:
    """Name the session after its first completed turn, when it has no title."""
    if not ctx.settings.session_titles or status != "completed" or ctx.turn.seq != 1 or ctx.session.title:
        return
    question = next((m.content for m in sessions.turn_messages(ctx.db, ctx.turn.id) if m.role == "user"), "") or ""
    prompt = PROMPT.format(question=question[:EXCERPT_CHARS], answer=(output or "")[:EXCERPT_CHARS])
    try:
        title = clean(get_llm(ctx.settings, ctx.redis).complete([{"role": "user", "content": prompt}], stream=False).content)
    except Exception as exc:  # a title is a nicety: the turn already succeeded
        log.warning("no session title: the model call failed (%s)", type(exc).__name__)
        return
    if title:
        sessions.set_title_if_unset(ctx.db, ctx.session.id, title)
