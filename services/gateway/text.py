"""Reply text for chat platforms: split long replies at paragraph, then line, then word boundaries."""

from __future__ import annotations

TELEGRAM_LIMIT = 4096


def split(text: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Chunks of at most `limit` characters, cut at the last paragraph, line or space break that fits."""
    chunks, rest = [], text.strip() or "…"
    while len(rest) > limit:
        window = rest[:limit]
        cut = next((i for sep in ("\n\n", "\n", " ") if (i := window.rfind(sep)) > limit // 4), limit)
        chunks.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    chunks.append(rest)
    return [c for c in chunks if c]
