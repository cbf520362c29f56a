"""Webhook signatures like the anchor's generic V2: hex HMAC-SHA256 of "<timestamp>.<raw body>"."""

from __future__ import annotations

import hashlib
import hmac
import time

TIMESTAMP_HEADER = "X-Webhook-Timestamp"
SIGNATURE_HEADER = "X-Webhook-Signature-V2"
GITHUB_HEADER = "X-Hub-Signature-256"
MAX_SKEW_SECONDS = 300


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def signed_headers(secret: str, body: bytes, now: float | None = None) -> dict[str, str]:
    """The headers of an outbound (callback) request signed with the route's secret."""
    timestamp = str(int(now if now is not None else time.time()))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body),
            "Content-Type": "application/json"}


def verify(secret: str, headers, body: bytes, now: float) -> tuple[bool, str, str]:
    """(ok, reason, the signature to remember for replays). GitHub's sha256= form carries no timestamp."""
    github = headers.get(GITHUB_HEADER)
    given = headers.get(SIGNATURE_HEADER)
    if given:
        timestamp = headers.get(TIMESTAMP_HEADER, "")
        if not timestamp.isdigit():
            return False, "missing or malformed timestamp", ""
        if abs(now - int(timestamp)) > MAX_SKEW_SECONDS:
            return False, "timestamp too far from now", ""
        expected = sign(secret, timestamp, body)
        return hmac.compare_digest(expected, given.strip().lower()), "bad signature", expected
    if github and github.startswith("sha256="):
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, github[7:].strip().lower()), "bad signature", expected
    return False, "missing signature", ""
