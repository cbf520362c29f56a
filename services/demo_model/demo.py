"""The offline demo assistant `make run` uses when no LLM is configured."""

from __future__ import annotations

import json
import re

from services.demo_model.replies import Reply, latest_user_text, message_text, own_words, text, tool_call

CHUNK_DELAY = 0.02
FILES_WORD = re.compile(r"\bfiles\b", re.IGNORECASE)


def _offers(body: dict, tool: str) -> bool:
    return any((t.get("function") or {}).get("name") == tool for t in body.get("tools") or [])


def _names(result: object) -> list[str] | None:
    """File names found in a list_files result, whatever shape the tool returned."""
    if isinstance(result, list):
        return [item if isinstance(item, str) else str(item.get("name") or item.get("path") or item)
                for item in result]
    if isinstance(result, dict):
        for value in result.values():
            if isinstance(value, list):
                return _names(value)
    return None


def _is_entry(line: str) -> bool:
    """A listed path, not a sentence such as "The directory is empty." or a "[Listing cut …]" notice."""
    return bool(line) and not line.startswith("[") and not (" " in line and line.endswith("."))


def summarise_listing(content: str) -> str:
    """One sentence about a list_files result."""
    if not content.strip():
        return "Your workspace is empty: list_files found no files."
    try:
        names = _names(json.loads(content))
    except ValueError:
        names = [line.strip() for line in content.splitlines() if _is_entry(line.strip())]
    if not names:
        return f"The list_files tool answered: {content.strip()[:160]}"
    shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
    return f"The list_files tool found {len(names)} entr{'y' if len(names) == 1 else 'ies'} in your workspace: {shown}."


def demo_reply(body: dict) -> Reply:
    """Acknowledge the user; list the workspace when asked about files, then summarise what came back."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return text(summarise_listing(message_text(last)), chunk_delay=CHUNK_DELAY)
    said = own_words(latest_user_text(body))  # a recalled block may quote this demo's own "ask me about your files"
    if FILES_WORD.search(said) and _offers(body, "list_files"):
        return tool_call([("list_files", {"path": "."})], chunk_delay=CHUNK_DELAY)
    answer = (
        "Hello! I am the scripted demo model: no real LLM is configured, so I can only acknowledge what you "
        f"write. You said: “{said.strip()}”. Set LLM_BASE_URL, LLM_API_KEY and LLM_MODEL to talk to a real "
        "model, or ask me about your files to see a tool call."
    )
    return text(answer, chunk_delay=CHUNK_DELAY)
