"""JSON for an SSE `data:` line, readable by any client however it splits lines.

UTF-8 goes out as is, except U+2028, U+2029 and U+0085. JSON allows them unescaped inside a string, but a
client that splits lines as `str.splitlines` does ends a line there and cuts the event in two: httpx's
`iter_lines`, which this project's own CLI and gateway read the api with, does. Escaped (`\\u2028`, …) they
are the same JSON value, and nothing else in a JSON document can hold them.
"""

from __future__ import annotations

import json
from typing import Any

_SEPARATORS = ("\u2028", "\u2029", "\u0085")
_ESCAPED = str.maketrans({c: f"\\u{ord(c):04x}" for c in _SEPARATORS})


def sse_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if any(c in text for c in _SEPARATORS):
        return text.translate(_ESCAPED)
    return text
