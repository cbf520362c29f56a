"""Files in Telegram messages: which file a message carries, the Bot API's 20 MB download limit checked before
any byte moves, and the download streamed from the Bot API's file URL straight into the api's attachments route
(never held whole here). The api types the file by its content; a name from Telegram is only a hint."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable

import httpx
from telegram.error import BadRequest, TelegramError

from shared.http import tls
from services.gateway.client import ApiClient, ApiError
from services.gateway.delivery import DeliveryError

log = logging.getLogger(__name__)

BOT_DOWNLOAD_LIMIT = 20 * 1024 * 1024  # what getFile serves a bot; larger files need a local Bot API server
CHUNK = 64 * 1024
TOO_BIG = ("That file is {size} — Telegram lets bots download files only up to 20 MB, so I cannot receive it. "
           "Send a smaller or compressed file, or a link to it.")
TRY_AGAIN = "Sorry, I could not take that file just now; please send it again in a minute."
UNSUPPORTED = "I can take text, photos, voice notes, audio files and documents; that kind of message I cannot read."


@dataclass(frozen=True)
class Incoming:
    """The one file a message carries."""

    file_id: str
    size: int | None
    filename: str
    label: str  # what the user is told about ("photo", "voice note", …)


def incoming(message) -> Incoming | None:
    """The message's file: the largest photo size, a voice note, an audio file or a document; None for text."""
    if message.photo:
        best = max(message.photo, key=lambda p: (p.file_size or 0, p.width * p.height))
        return Incoming(best.file_id, best.file_size, f"photo_{message.message_id}.jpg", "photo")
    if message.voice:
        return Incoming(message.voice.file_id, message.voice.file_size, f"voice_{message.message_id}.ogg", "voice note")
    if message.audio:
        audio = message.audio
        return Incoming(audio.file_id, audio.file_size, audio.file_name or f"audio_{message.message_id}.mp3", "audio")
    if message.document:
        doc = message.document
        return Incoming(doc.file_id, doc.file_size, doc.file_name or f"document_{message.message_id}", "document")
    return None


def unsupported(message) -> bool:
    """Media this gateway does not take (video, stickers, …): the sender is told, never silently ignored."""
    return any(getattr(message, kind, None) for kind in ("video", "video_note", "sticker", "animation"))


def too_big(size: int | None) -> str | None:
    """The user's message when Telegram would refuse the download, judged before downloading."""
    if size is not None and size > BOT_DOWNLOAD_LIMIT:
        return TOO_BIG.format(size=_megabytes(size))
    return None


async def take(bot, api: ApiClient, user_id: str, session: Callable[[], Awaitable[str]],
               item: Incoming) -> list[str] | str:
    """The file stored as an attachment of the chat's session (its id in a list), or what to tell the sender:
    over the 20 MB bot limit (judged before any download), refused by the api, or not fetched."""
    refused = too_big(item.size)
    if refused is not None:
        return refused
    try:
        return [(await receive(bot, api, user_id, await session(), item))["id"]]
    except MediaRefused as exc:
        return str(exc)
    except BadRequest as exc:  # getFile refuses what is over the limit even when no size was announced
        if "too big" in str(exc).lower():
            return TOO_BIG.format(size="over 20 MB")
        return f"Telegram would not hand me that {item.label}; please send it again."
    except (ApiError, httpx.HTTPError, TelegramError) as exc:
        log.warning("telegram: a %s was not stored (%s)", item.label, type(exc).__name__)
        return TRY_AGAIN


async def receive(bot, api: ApiClient, user_id: str, session_id: str, item: Incoming) -> dict:
    """Download the file from the Bot API and stream it into the session's attachments; the api's answer."""
    tg_file = await bot.get_file(item.file_id)
    too_large = too_big(tg_file.file_size)
    if too_large:
        raise MediaRefused(too_large)
    async with httpx.AsyncClient(verify=tls.verified(), timeout=httpx.Timeout(30.0, read=120.0)) as http:
        async with http.stream("GET", tg_file.file_path) as response:
            if response.status_code >= 400:
                raise MediaRefused(f"Telegram did not hand me that {item.label} (HTTP {response.status_code}); "
                                   "please send it again.")
            try:
                return await api.upload(user_id, session_id, item.filename, _bounded(response.aiter_bytes()))
            except ApiError as exc:
                raise MediaRefused(refusal_text(exc, item)) from exc


async def _bounded(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The download, cut off past the bot limit whatever the file's announced size said."""
    seen = 0
    async for chunk in chunks:
        seen += len(chunk)
        if seen > BOT_DOWNLOAD_LIMIT:
            raise MediaRefused(TOO_BIG.format(size=f"over {_megabytes(BOT_DOWNLOAD_LIMIT)}"))
        yield chunk


def refusal_text(exc: ApiError, item: Incoming) -> str:
    """What the api's refusal of an upload means to the sender, in one line."""
    if exc.status == 413:
        return f"That {item.label} is larger than this server accepts; send a smaller file."
    if exc.status == 415:
        return f"I cannot accept that {item.label}: its content is not a type I take (or it is disguised)."
    if exc.status == 422:
        return f"That {item.label} was refused: {exc}"[:300]
    return f"I could not store that {item.label} just now ({exc.code}); please send it again."


class MediaRefused(Exception):
    """A file the sender is told about, in their words: too big, refused, or not fetched."""


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


# -- out: a file the agent sends ---------------------------------------------------------------------------

BOT_UPLOAD_LIMIT = 50 * 1024 * 1024  # what sendDocument takes from a bot
PHOTO_LIMIT = 10 * 1024 * 1024  # sendPhoto's own limit; a larger image goes as a document
PHOTO_TYPES = frozenset({"image/jpeg", "image/png", "image/webp", "image/gif"})
VOICE_TYPES = frozenset({"audio/ogg", "audio/opus"})  # a voice note is OGG/Opus; other audio is a music file
CAPTION_LIMIT = 1024


def method_for(meta: dict) -> str:
    """The Bot API method a file goes out with: images as photos, OGG/Opus as a voice note, other audio as
    audio, the rest as documents."""
    mime, kind, size = str(meta.get("mime") or ""), meta.get("kind"), int(meta.get("size") or 0)
    if kind == "image" and mime in PHOTO_TYPES and size <= PHOTO_LIMIT:
        return "photo"
    if kind == "audio":
        return "voice" if mime.split(";")[0] in VOICE_TYPES else "audio"
    return "document"


async def deliver(bot, api: ApiClient, item: dict, dest: str) -> None:
    """Send a file item; one that is gone or too large for a bot fails for good (no retry would help)."""
    try:
        method = await send_file(bot, api, item, dest)
    except ApiError as exc:
        if exc.status in (404, 413):
            raise DeliveryError(f"the file cannot be sent ({exc.code})", final=True) from exc
        raise DeliveryError(f"the file could not be read ({exc.code})") from exc
    except httpx.HTTPError as exc:
        raise DeliveryError(f"the file could not be read ({type(exc).__name__})") from exc
    log.info("telegram: delivery %s sent as %s", item["id"], method)


async def send_file(bot, api: ApiClient, item: dict, dest: str) -> str:
    """Send the item's attachment to chat `dest` (the caption is the item's text); the method used. A photo
    Telegram refuses as a photo (its dimensions, its format) goes as a document instead."""
    meta = await api.attachment(item["user_id"], item["attachment_id"])
    data = await api.attachment_bytes(item["user_id"], item["attachment_id"], BOT_UPLOAD_LIMIT)
    method = method_for(meta)
    caption = (item.get("text") or "")[:CAPTION_LIMIT] or None
    name = str(meta.get("filename") or "file")
    if method == "photo":
        try:
            await bot.send_photo(dest, data, caption=caption, filename=name)
            return method
        except BadRequest as exc:
            log.info("telegram: a photo was refused as a photo (%s); sending it as a document", exc)
            method = "document"
    if method == "voice":
        await bot.send_voice(dest, data, caption=caption, filename=name)
    elif method == "audio":
        await bot.send_audio(dest, data, caption=caption, filename=name)
    else:
        await bot.send_document(dest, data, caption=caption, filename=name)
    return method
