"""Speech to text over the OpenAI-compatible `/audio/transcriptions` (OpenAI, Whisper servers).

The audio is streamed from the file as a multipart upload (`file`, `model`), never read whole; the answer
is the JSON `{"text": …}` both speak. A failure is one ModelError whose message names the status, never the key.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from shared.config import Settings
from shared.errors import ModelError
from shared.http import tls

MAX_TRANSCRIPT_CHARS = 100_000


class TranscriptionFailed(ModelError):
    """The speech-to-text service did not transcribe the audio."""

    code = "transcription_failed"


def stt_configured(settings: Settings) -> bool:
    return bool(settings.stt_base_url)


def transcribe(settings: Settings, path: Path, filename: str, mime: str, *, http: httpx.Client | None = None) -> str:
    """The text spoken in the audio file at `path`; TranscriptionFailed otherwise."""
    url = settings.stt_base_url.rstrip("/") + "/audio/transcriptions"
    headers = {"Authorization": f"Bearer {settings.stt_api_key.get_secret_value()}"} if settings.stt_api_key else {}
    client = http or httpx.Client(trust_env=False, verify=tls.verified(False), timeout=settings.stt_timeout_seconds)
    try:
        with open(path, "rb") as fh:
            response = client.post(url, headers=headers, data={"model": settings.stt_model},
                                   files={"file": (filename, fh, mime)})
    except httpx.HTTPError as exc:
        raise TranscriptionFailed(f"The speech-to-text service could not be reached ({type(exc).__name__}).") from None
    finally:
        if http is None:
            client.close()
    if response.status_code >= 400:
        raise TranscriptionFailed(f"The speech-to-text service answered HTTP {response.status_code}.")
    try:
        text = response.json().get("text")
    except (ValueError, AttributeError):
        text = None
    if not isinstance(text, str):
        raise TranscriptionFailed("The speech-to-text service's answer held no text.")
    return text.strip()[:MAX_TRANSCRIPT_CHARS]
