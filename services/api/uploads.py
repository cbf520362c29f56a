"""Which requests carry a raw file body: the body limit gives them MEDIA_MAX_BYTES, the text guard skips them.

An upload is streamed to disk by its route (shared/media/inbox.py), never buffered; the JSON body limit
and the text guard (which reads a body whole) must not stand in front of it. The OpenAI endpoint may carry
an image as a data URL, so its JSON body may be as large as one image of the cap, base64-encoded.
"""

from __future__ import annotations

import re

from starlette.types import Scope

from shared.config import Settings

_UPLOAD = re.compile(r"^(/v1/sessions/[^/]+/attachments|/chat/[^/]+/upload)/?$")  # the API's, the console's
CHAT_COMPLETIONS = "/v1/chat/completions"


def is_upload(scope: Scope) -> bool:
    """A POST of a file to a session: raw to the API, or the console's upload form."""
    return scope.get("method") == "POST" and bool(_UPLOAD.match(scope.get("path", "")))


def body_limit(settings: Settings, scope: Scope) -> int:
    """The most bytes this request's body may hold."""
    if is_upload(scope):
        return settings.media_max_bytes
    if scope.get("path") == CHAT_COMPLETIONS:
        return settings.max_input_bytes + (settings.media_max_bytes * 4 + 2) // 3 + 1024
    return settings.max_input_bytes
