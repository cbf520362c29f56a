"""Which tools a turn may use: those the settings can serve (a backend configured), by where its session came from.

A chat, the OpenAI endpoint and the api get every offered tool. A signed webhook route acts for its owner on
text an outside system sent, so its turns get the read-only tools (files read, searches, skills read, the
web) and only the further toolsets WEBHOOK_TOOLSETS and the route's own `toolsets` name: no terminal and no
memory writes by default. The `chat` toolset (send_file) is offered only in sessions a chat continues: with
no chat to send to, the tool could only fail, and a plain API session's first call stays as small as before.

A child agent's session (`delegate_task`) gets every offered tool but those of CHILD_EXCLUDED_TOOLSETS: no
memory writes, no further delegation (depth 1), no questions to a user nobody watches, no files sent to the chat,
no scheduled jobs that would outlive it.
"""

from __future__ import annotations

from shared.config import Settings
from shared.db import Database
from shared.models.delegations import CHILD_SOURCE
from shared.models.sessions import ChatSession
from shared.stores import gateway_chats, webhook_routes
from services.worker.tools.registry import ToolRegistry

WEBHOOK_SOURCE = "webhook"
CHAT_TOOLSET = "chat"
CHILD_EXCLUDED_TOOLSETS = ("memory", "delegate", "clarify", CHAT_TOOLSET, "cronjob")


def toolset_names(raw: str) -> list[str]:
    return [name.strip() for name in raw.split(",") if name.strip()]


def tools_for_source(tools: ToolRegistry, source: str, settings: Settings, route_toolsets: str = "") -> ToolRegistry:
    """The tools a turn of a session from `source` may see and call (`route_toolsets`: its webhook route's)."""
    if source == WEBHOOK_SOURCE:
        return tools.narrowed(toolset_names(settings.webhook_toolsets) + toolset_names(route_toolsets))
    if source == CHILD_SOURCE:
        return tools.without(CHILD_EXCLUDED_TOOLSETS)
    return tools


def tools_for_session(tools: ToolRegistry, settings: Settings, db: Database, session: ChatSession) -> ToolRegistry:
    """What a turn of `session` (and its review, which offers the same list) is offered: the tools these settings
    can serve, narrowed by the session's source."""
    route = webhook_routes.toolsets_of_session(db, session.id) if session.source == WEBHOOK_SOURCE else ""
    offered = tools.offered(settings)
    if any(t.toolset == CHAT_TOOLSET for t in offered) and not _continues_a_chat(db, session):
        offered = ToolRegistry(t for t in offered if t.toolset != CHAT_TOOLSET)
    return tools_for_source(offered, session.source, settings, route)


def _continues_a_chat(db: Database, session: ChatSession) -> bool:
    """A chat continues this session (read only for a gateway session: no other kind is bound to a chat)."""
    return session.source == gateway_chats.GATEWAY_SOURCE and gateway_chats.chat_target(db, session.id) is not None
