"""The images of an OpenAI request's last message, stored as attachments of the turn it starts.

A data URL is decoded (its size bounded by the body limit and MEDIA_MAX_BYTES); an http(s) URL is fetched by
the guarded fetcher under the web-fetch rules (shared/media/remote.py). Either way the bytes go through the
same inbox as an upload, so they are typed by content and land in `inbox/<date>/` of the user's workspace.
Whatever is wrong with a part is one clear 400 naming it.
"""

from __future__ import annotations

import base64
import binascii
import os

from shared.config import Settings
from shared.errors import BadRequest, HermesError
from shared.media.inbox import Saved, save_bytes, workspace_of
from shared.media.remote import fetch_image
from shared.security.paths import resolve_inside


class InvalidImage(BadRequest):
    """An image_url part could not be used."""

    code = "invalid_image"


def save_images(settings: Settings, user_id: str, urls: list[str]) -> list[Saved]:
    """Each URL's image in the user's inbox; InvalidImage (and nothing kept) when any part fails."""
    saved: list[Saved] = []
    try:
        for index, url in enumerate(urls):
            saved.append(_save(settings, user_id, url, index))
    except BaseException:
        discard(settings, user_id, saved)
        raise
    return saved


def discard(settings: Settings, user_id: str, saved: list[Saved]) -> None:
    """Remove files saved for a request that was not accepted after all."""
    for item in saved:
        try:
            os.unlink(resolve_inside(workspace_of(settings, user_id), item.path))
        except (OSError, HermesError):
            pass


def _save(settings: Settings, user_id: str, url: str, index: int) -> Saved:
    where = f"image {index + 1} of the last message"
    try:
        data = _decoded(url) if url.startswith("data:") else fetch_image(settings, url)
        saved = save_bytes(settings, user_id, f"image-{index + 1}", data)
    except HermesError as exc:
        raise InvalidImage(f"{where}: {exc.message}") from None
    if saved.kind != "image":
        discard(settings, user_id, [saved])
        raise InvalidImage(f"{where}: the content is {saved.mime}, not an image.")
    return saved


def _decoded(url: str) -> bytes:
    header, comma, payload = url.partition(",")
    if not comma or not header.endswith(";base64"):
        raise InvalidImage("a data URL must be base64-encoded (data:image/png;base64,…).")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidImage("the data URL's base64 is malformed.") from None
