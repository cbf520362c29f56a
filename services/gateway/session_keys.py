"""Session keys as Hermes Agent keys them: one session per DM chat; in groups one per user unless a thread is shared."""

from __future__ import annotations


def build(platform: str, chat_type: str, chat_id: str, user_id: str, thread_id: str | None = None) -> str:
    """`agent:main:<platform>:dm:<chat>[:<thread>]` or `agent:main:<platform>:<type>:<chat>[:<thread>|:<user>]`."""
    if chat_type in ("private", "dm"):
        return f"agent:main:{platform}:dm:{chat_id}" + (f":{thread_id}" if thread_id else "")
    key = f"agent:main:{platform}:{chat_type}:{chat_id}"
    return key + (f":{thread_id}" if thread_id else f":{user_id}")
