"""vision_analyze: a configured vision model looks at an image in the workspace for a model that cannot.

Offered only when VISION_MODEL is set (and so absent from every first call otherwise). The file is read
beneath the workspace like every file tool reads, judged an image by its bytes, and sent once as a data URL
to VISION_MODEL at VISION_BASE_URL (default LLM_BASE_URL) with the question.
"""

from __future__ import annotations

from typing import Any

from services.worker.tools.registry import Tool, ToolContext
from services.worker.tools.workspace import open_regular, opened
from shared.errors import InvalidInput
from shared.llm import get_llm
from shared.llm.vision import IMAGE_MAX_BYTES, vision_configured, vision_settings
from shared.media import sniff

DEFAULT_QUESTION = "Describe this image in detail: what it shows, any text in it, anything notable."
MAX_QUESTION_CHARS = 2000


def vision_analyze(ctx: ToolContext, args: dict[str, Any]) -> str:
    """The vision model's answer about the image at `path`."""
    path = str(args.get("path") or "")
    question = str(args.get("question") or DEFAULT_QUESTION)[:MAX_QUESTION_CHARS]
    with opened(ctx) as ws, open_regular(ws, path) as fh:
        data = fh.read(IMAGE_MAX_BYTES + 1)
    if len(data) > IMAGE_MAX_BYTES:
        raise InvalidInput(f"{path} is larger than {IMAGE_MAX_BYTES} bytes; vision_analyze takes smaller images.")
    part = sniff.image_part(data)
    if part is None:
        raise InvalidInput(f"{path} is not a PNG, JPEG, GIF or WebP image.")
    messages = [{"role": "user", "content": [{"type": "text", "text": question}, part]}]
    answer = get_llm(vision_settings(ctx.settings)).complete(messages, stream=False, cancelled=ctx.cancelled,
                                                             kind="vision")
    return (answer.content or "").strip() or "[the vision model gave no answer]"


VISION_ANALYZE = Tool(
    name="vision_analyze",
    description="Ask a vision model about an image file in the workspace (path; optional question).",
    parameters={"type": "object", "properties": {"path": {"type": "string"}, "question": {"type": "string"}},
                "required": ["path"]},
    handler=vision_analyze,
    available=vision_configured,
)
