"""Every worker extension point filled in one place: the built-in tools and every hook of a turn.

Nothing registers itself on import: tool and feature modules only define what they offer, and this file
is the call list that puts it in place at start-up (Runtime.build and the hooks' first use). A reader finds
every tool, with its toolset and parallel rules, and every prompt part and hook here, in the order they run.
A test builds its own `ToolRegistry` or `Hooks` instead of patching a module's list.
"""

from __future__ import annotations

import atexit

from shared.config import Settings
from services.worker.agent.prompt import ORDER_MEMORY, ORDER_PROVIDER, ORDER_SKILLS, ORDER_USER
from services.worker.features import memory, providers, skills, titles
from services.worker.hooks import Hooks
from services.worker.review import embed
from services.worker.review.trigger import on_turn_finished
from services.worker.tools import (
    clarify, cronjob, delegate, files, mcp_loader, patch, send_file, session_search, speech, terminal, todo, vision,
    web,
)
from services.worker.tools import memory as memory_tool
from services.worker.tools import skills as skill_tools
from services.worker.tools.registry import ToolRegistry


def register_tools(tools: ToolRegistry | None = None) -> ToolRegistry:
    """The built-in tools: read-only ones run in parallel, `path_arg` ones beside calls on other paths."""
    tools = ToolRegistry() if tools is None else tools
    tools.add(files.READ_FILE, toolset="files", read_only=True, path_arg="path")
    tools.add(files.LIST_FILES, toolset="files", read_only=True)
    tools.add(files.SEARCH_FILES, toolset="files", read_only=True)
    tools.add(files.WRITE_FILE, toolset="files", path_arg="path")
    tools.add(patch.PATCH, toolset="files", path_arg="path")
    tools.add(session_search.SESSION_SEARCH, toolset="session_search", read_only=True)
    tools.add(memory_tool.MEMORY, toolset="memory")
    tools.add(skill_tools.SKILLS_LIST, toolset="skills", read_only=True)
    tools.add(skill_tools.SKILL_VIEW, toolset="skills", read_only=True)
    tools.add(skill_tools.SKILL_MANAGE, toolset="skills")
    tools.add(terminal.TERMINAL, toolset="terminal", exclusive=True)
    tools.add(terminal.PROCESS, toolset="terminal")
    tools.add(web.WEB_SEARCH, toolset="web", read_only=True)
    tools.add(web.WEB_EXTRACT, toolset="web", read_only=True)
    tools.add(clarify.CLARIFY, toolset="clarify")
    tools.add(todo.TODO, toolset="todo")
    tools.add(cronjob.CRONJOB, toolset="cronjob")
    tools.add(delegate.DELEGATE_TASK, toolset="delegate")
    # Offered only to a user with MCP servers; their tools join the turn when loaded (mcp_client/tools.py).
    tools.add(mcp_loader.MCP_TOOLS, toolset="mcp", read_only=True)
    tools.add(vision.VISION_ANALYZE, toolset="vision", read_only=True)
    tools.add(send_file.SEND_FILE, toolset="chat")  # offered only where a chat continues the session (toolsets.py)
    tools.add(speech.TEXT_TO_SPEECH, toolset="speech")  # offered only when TTS_BASE_URL is set
    return tools


def register_hooks(hooks: Hooks) -> Hooks:
    """Every feature's prompt parts and per-turn hooks."""
    hooks.add_prompt_part(memory.snapshot_part("memory"), ORDER_MEMORY)
    hooks.add_prompt_part(memory.snapshot_part("user"), ORDER_USER)
    hooks.add_prompt_part(skills.skills_index, ORDER_SKILLS)
    hooks.add_prompt_part(providers.provider_prompt_block, ORDER_PROVIDER)
    hooks.add_turn_start(providers.start_recall)
    hooks.add_turn_context(memory.memory_update)
    hooks.add_turn_context(providers.recalled_context)
    hooks.add_after_turn(memory.forget_failures)
    hooks.add_after_turn(providers.sync_after_turn)
    hooks.add_after_turn(on_turn_finished)
    hooks.add_after_turn(embed.after_turn)
    hooks.add_after_turn(titles.title_after_first_exchange)
    hooks.add_pre_compress(providers.provider_pre_compress)
    return hooks


def built_in_tools(settings: Settings) -> ToolRegistry:
    """The built-in tools, then the configured memory provider's (none may shadow a built-in)."""
    tools = register_tools()
    providers.install_tools(tools, providers.manager_for(settings))
    return tools


def built_in_hooks() -> Hooks:
    """The built-in hooks; the provider managers they start are shut down when the process exits."""
    atexit.unregister(providers.shutdown_managers)
    atexit.register(providers.shutdown_managers)
    return register_hooks(Hooks())
