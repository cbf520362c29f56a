"""Request headers several routes read, parsed once: Annotated aliases the routes declare."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header

MAX_IDEMPOTENCY_KEY_CHARS = 255


async def idempotency_key(
    idempotency_key: Annotated[str | None, Header(
        max_length=MAX_IDEMPOTENCY_KEY_CHARS,
        description="Retries with the same key and body return the same turn; an empty value counts as absent.",
    )] = None,
) -> str | None:
    """The Idempotency-Key header; empty or blank means absent, so no value is ever stored as a key."""
    key = (idempotency_key or "").strip()
    return key or None


IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]


def wants_event_stream(accept: str | None) -> bool:
    """True when the Accept header asks for `text/event-stream` (with a q above 0), not merely allows `*/*`."""
    for item in (accept or "").split(","):
        media, *params = (part.strip().lower() for part in item.split(";"))
        if media != "text/event-stream":
            continue
        q = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            return float(q) > 0
        except ValueError:
            return False
    return False
