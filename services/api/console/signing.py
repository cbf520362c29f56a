"""Signed cookie values: base64url(JSON payload) "." base64url(HMAC-SHA256), checked in constant time.

The payload carries its own expiry (`exp`, unix seconds) and a purpose (`p`), so a value signed for one
cookie (say, a flash message) is never accepted as another (the session).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, body: str) -> str:
    return _b64(hmac.new(secret, body.encode(), hashlib.sha256).digest())


def sign(secret: bytes, purpose: str, payload: dict[str, Any], ttl_seconds: float) -> str:
    """A value only `unsign` with the same secret and purpose accepts, until it expires."""
    data = dict(payload, p=purpose, exp=int(time.time() + ttl_seconds))
    body = _b64(json.dumps(data, separators=(",", ":")).encode())
    return f"{body}.{_mac(secret, body)}"


def unsign(secret: bytes, purpose: str, value: str | None) -> dict[str, Any] | None:
    """The payload, or None when the value is missing, tampered with, for another purpose or expired."""
    if not value or value.count(".") != 1:
        return None
    body, mac = value.split(".")
    if not hmac.compare_digest(mac.encode(), _mac(secret, body).encode()):
        return None
    try:
        data = json.loads(_unb64(body))
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("p") != purpose:
        return None
    if not isinstance(data.get("exp"), int) or data["exp"] < time.time():
        return None
    return data


def mac(secret: bytes, purpose: str, text: str) -> str:
    """A keyed digest of `text` for `purpose` (the CSRF token of a nonce)."""
    return _mac(secret, f"{purpose}:{text}")
