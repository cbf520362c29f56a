"""The system prompt, built once when a session starts and then frozen on the session row.

Parts, joined by a blank line: identity, tool guidance (only for tools that exist), the parts
of the installed hooks (memory snapshot, skill index, provider blocks) by order,
the caller's own instructions, and the date the conversation started (date only, so the text
is the same all day and the provider's prompt cache keeps hitting).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Callable

from shared.config import Settings
from shared.db import Database
from shared.models.sessions import ChatSession
from services.worker.hooks import current
from services.worker.tools.registry import ToolRegistry

IDENTITY = (
    "You are the Hermes Stack agent, a helpful assistant that remembers what it learns and uses tools to get "
    "real work done. Be honest: say what you did and did not do, say when you are unsure, and never invent "
    "tool results, files or facts. Be direct and concise."
)
TOOL_INTRO = "You can call tools. Call them when they help, and use their results rather than guessing."


@dataclass(frozen=True)
class PromptContext:
    """What a prompt part may look at; `known` collects the memory entries the parts show, per target."""

    session: ChatSession
    tools: ToolRegistry
    settings: Settings
    today: date
    db: Database | None = None
    known: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class SystemPrompt:
    """A built system prompt and the memory entries it shows (stored with it as what the session knows)."""

    text: str
    known: dict[str, list[str]]


PromptPart = Callable[[PromptContext], "str | None"]

# Where each feature's part goes (DESIGN.md): memory, user profile, skill index, external provider.
ORDER_MEMORY, ORDER_USER, ORDER_SKILLS, ORDER_PROVIDER = 10, 20, 30, 40


def tool_guidance(tools: ToolRegistry) -> str | None:
    """How to use the tools that exist, each sentence said once."""
    if not len(tools):
        return None
    sentences: list[str] = [TOOL_INTRO]
    for tool in tools:
        sentences += [s for s in tool.guidance if s not in sentences]
    return " ".join(sentences)


def started_line(today: date) -> str:
    return f"Conversation started: {today.strftime('%A, %B %d, %Y')}"


def compose_system_prompt(session: ChatSession, tools: ToolRegistry, settings: Settings, today: date,
                          db: Database | None = None) -> SystemPrompt:
    """The full system prompt for a session that has none yet, with the memory entries it shows."""
    context = PromptContext(session=session, tools=tools, settings=settings, today=today, db=db)
    parts = [IDENTITY, tool_guidance(tools)]
    parts += [part(context) for _, part in current().prompt_parts]
    parts += [session.instructions, started_line(today)]
    return SystemPrompt("\n\n".join(p.strip() for p in parts if p and p.strip()), context.known)
