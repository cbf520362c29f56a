"""Small helpers shared by the api tests."""

from __future__ import annotations

import json
from typing import Iterable

import httpx

from shared.stores import turns


class EnqueueRecorder:
    """Stands in for the broker; reads each turn back from the database inside the call."""

    def __init__(self, db) -> None:
        self.db = db
        self.calls: list[tuple[str, dict, str]] = []

    def __call__(self, name: str, payload) -> None:
        turn_id = getattr(payload, "turn_id", None)  # tasks about a session (end_session) name no turn
        status_at_send = turns.get_turn(self.db, None, turn_id).status if turn_id else None
        self.calls.append((name, payload.model_dump(), status_at_send))


def frames_of(lines: Iterable[str]) -> list[dict]:
    """SSE frames ({"id", "event", "data"}) from the lines of a response, comments left out."""
    frames, frame = [], {}
    for line in lines:
        if not line:
            if frame:
                frames.append(frame)
            frame = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            frame[key] = json.loads(value) if key == "data" else value
    if frame:
        frames.append(frame)
    return frames


def error_of(response: httpx.Response) -> dict:
    """Our error body's inner object, after checking its shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return body["error"]


def openai_error_of(response: httpx.Response) -> dict:
    """OpenAI's error body's inner object, after checking its shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    return body["error"]
