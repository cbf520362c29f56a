"""`clarify`: the agent asks the user one multiple-choice question and waits for the answer.

The call parks its turn like an approval (status `awaiting_input`, no worker held; services/worker/agent/
questions.py), and the answer comes back as this call's result. Where nobody can answer (a webhook, the
OpenAI endpoint, background work) the call returns at once with "no answer". Never run beside other calls.
"""

from __future__ import annotations

import json
from typing import Any

from shared.errors import InvalidInput
from services.worker.tools.registry import Tool, ToolContext

MAX_CHOICES = 6
MAX_CHOICE_CHARS = 100
MAX_QUESTION_CHARS = 1000
NO_ANSWER = "Nobody answered. Go on with your best judgement and say what you assumed."
UNATTENDED = ("Nobody can answer questions in this conversation. Go on with your best judgement and say what you "
              "assumed.")


def asked(args: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The question and its choices, checked: 2 to MAX_CHOICES distinct short choices."""
    question = " ".join(str(args.get("question") or "").split())
    raw = args.get("choices")
    choices = tuple(dict.fromkeys(" ".join(str(c).split()) for c in raw)) if isinstance(raw, list) else ()
    if not question or len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"clarify needs a question of at most {MAX_QUESTION_CHARS} characters.")
    if not 2 <= len(choices) <= MAX_CHOICES or not all(0 < len(c) <= MAX_CHOICE_CHARS for c in choices):
        raise InvalidInput(f"clarify needs 2 to {MAX_CHOICES} distinct choices of at most {MAX_CHOICE_CHARS} "
                           "characters each.")
    return question, choices


def answer_result(choice: str | None) -> str:
    """What the model reads once the question is settled."""
    if choice is None:
        return json.dumps({"answer": None, "note": NO_ANSWER}, ensure_ascii=False)
    return json.dumps({"answer": choice}, ensure_ascii=False)


def unattended_result() -> str:
    return json.dumps({"answer": None, "note": UNATTENDED}, ensure_ascii=False)


def clarify(ctx: ToolContext, args: dict[str, Any]) -> str:
    """Run outside a foreground turn (nobody to ask): check the arguments and answer at once."""
    asked(args)
    return unattended_result()


CLARIFY = Tool(
    name="clarify",
    description=f"Ask the user a question with 2-{MAX_CHOICES} short choices; returns their choice or none.",
    parameters={"type": "object", "properties": {
        "question": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "string"}},
    }, "required": ["question", "choices"]},
    handler=clarify,
    asks_user=True,
)
