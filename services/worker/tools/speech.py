"""`text_to_speech`: the agent speaks a reply into an audio file of its workspace, through an OpenAI-compatible
`/audio/speech` (TTS_BASE_URL, TTS_MODEL, TTS_VOICE, TTS_API_KEY). Offered only when TTS_BASE_URL is set.

The file is OGG/Opus, what Telegram plays as a voice note, so `send_file` delivers it as one. The answer is
read with a size bound: a misbehaving speech server cannot fill the workspace or the worker's memory.
"""

from __future__ import annotations

from typing import Any

import httpx

from shared import clock
from shared.config import Settings
from shared.errors import InvalidInput, Unavailable
from shared.http import tls
from shared.security.paths import relative_parts
from services.worker.sandbox import quota
from services.worker.tools.beneath import explained
from services.worker.tools.registry import Tool, ToolContext
from services.worker.tools.workspace import opened, shown

MAX_INPUT_CHARS = 4096  # what OpenAI's /audio/speech takes in one request
MAX_AUDIO_BYTES = 20 * 1024 * 1024
TIMEOUT_SECONDS = 60.0
OGG_MAGIC = b"OggS"


def text_to_speech(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    text = str(args["text"]).strip()
    if not text:
        raise InvalidInput("text_to_speech: text is empty.")
    if len(text) > MAX_INPUT_CHARS:
        raise InvalidInput(f"text_to_speech: at most {MAX_INPUT_CHARS} characters per call; split the text.")
    path = str(args.get("path") or f"speech/speech-{clock.utcnow():%Y%m%d-%H%M%S}.ogg")
    parts = relative_parts(path)
    audio = speak(ctx.settings, text)
    quota.ensure_room(ctx.workspace, len(audio), ctx.settings.terminal_workspace_quota_mb)
    with opened(ctx) as ws, explained(path):
        ws.replace_file(parts, audio)
    return {"path": shown(parts), "bytes": len(audio), "format": "ogg/opus",
            "next": "send it with send_file to deliver it as a voice note"}


def speak(settings: Settings, text: str) -> bytes:
    """The speech server's OGG/Opus rendering of `text`; Unavailable with the reason when it fails."""
    url = f"{str(settings.tts_base_url).rstrip('/')}/audio/speech"
    key = settings.tts_api_key.get_secret_value() if settings.tts_api_key else ""
    body = {"model": settings.tts_model, "voice": settings.tts_voice, "input": text, "response_format": "opus"}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with httpx.Client(verify=tls.verified(), timeout=TIMEOUT_SECONDS) as http, \
                http.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code >= 400:
                raise Unavailable(f"text_to_speech: the speech server answered HTTP {response.status_code}.")
            audio = bytearray()
            for chunk in response.iter_bytes():
                audio += chunk
                if len(audio) > MAX_AUDIO_BYTES:
                    raise Unavailable(f"text_to_speech: the audio is larger than {MAX_AUDIO_BYTES} bytes.")
    except httpx.HTTPError as exc:
        raise Unavailable(f"text_to_speech: the speech server could not be reached ({type(exc).__name__}).") \
            from None
    if not audio.startswith(OGG_MAGIC):
        raise Unavailable("text_to_speech: the speech server did not answer with OGG/Opus audio.")
    return bytes(audio)


TEXT_TO_SPEECH = Tool(
    name="text_to_speech",
    description="Speak text into an .ogg voice file in the workspace (then send_file it). Only when asked.",
    parameters={
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "path": {"type": "string", "description": "Where to save it; default speech/<time>.ogg."},
        },
        "required": ["text"],
    },
    handler=text_to_speech,
    available=lambda settings: bool(settings.tts_base_url),
)
