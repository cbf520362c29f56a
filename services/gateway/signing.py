"""Webhook signatures like Hermes Agent's generic V2: hex HMAC-SHA256 of "<timestamp>.<raw body>"."""

from __future__ import annotations

import hashlib
import hmac
import re
import time

TIMESTAMP_HEADER = "X-Webhook-Timestamp"
SIGNATURE_HEADER = "X-Webhook-Signature-V2"
GITHUB_HEADER = "X-Hub-Signature-256"
GITHUB_DELIVERY_HEADER = "X-GitHub-Delivery"
MAX_SKEW_SECONDS = 300
# A timestamped signature is refused once stale, so remembering it past the skew on either side is enough.
REPLAY_WINDOW_SECONDS = 2 * MAX_SKEW_SECONDS + 60
# GitHub's signature carries no time: it (and its delivery id) is remembered for a week.
GITHUB_REPLAY_SECONDS = 7 * 24 * 3600
TIMESTAMP = re.compile(r"[0-9]{1,12}")
HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


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
        timestamp = headers.get(TIMESTAMP_HEADER, "").strip()
        if not TIMESTAMP.fullmatch(timestamp):
            return False, "missing or malformed timestamp", ""
        if abs(int(now) - int(timestamp)) > MAX_SKEW_SECONDS:
            return False, "timestamp too far from now", ""
        expected = sign(secret, timestamp, body)
        return _same(expected, given), "bad signature", expected
    if github and github.startswith("sha256="):
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return _same(expected, github[7:]), "bad signature", expected
    return False, "missing signature", ""


def _same(expected: str, given: str) -> bool:
    """Constant-time comparison of hex digests; anything that is not one (any non-ASCII too) differs."""
    given = given.strip().lower()
    return bool(HEX_DIGEST.fullmatch(given)) and hmac.compare_digest(expected, given)


def replay_keys(headers, signature: str) -> tuple[list[str], int]:
    """What marks a verified request as seen, and for how many seconds: its signature, and for GitHub also its
    delivery id (a redelivery carries the same one)."""
    if headers.get(SIGNATURE_HEADER):
        return [f"sig:{signature}"], REPLAY_WINDOW_SECONDS
    delivery = (headers.get(GITHUB_DELIVERY_HEADER) or "").strip()[:100]
    return [f"sig:{signature}"] + ([f"delivery:{delivery}"] if delivery else []), GITHUB_REPLAY_SECONDS
