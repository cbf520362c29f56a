"""The configured model as a run's task model, judge and reflection model: one bounded, metered call each."""

from __future__ import annotations

import json
import re
from typing import Any

from shared.evolution.meter import Meter, Stopped
from shared.llm.client import LLMClient
from shared.llm.types import Cancelled

JSON_OBJECT = re.compile(r"\{.*\}", re.S)


class RunModel:
    """Asks the model for text; every call is counted on the run's meter and refused past its budget."""

    def __init__(self, llm: LLMClient, meter: Meter) -> None:
        self.llm = llm
        self.meter = meter

    def ask(self, system: str, user: str) -> str:
        self.meter.check()
        try:
            completion = self.llm.complete([{"role": "system", "content": system}, {"role": "user", "content": user}],
                                           cancelled=self.meter.cancelled, stream=False, kind="evolution")
        except Cancelled:
            raise Stopped.by_owner() from None
        self.meter.spent(completion.usage)
        return completion.content or ""


def json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model's answer (models wrap JSON in prose or fences), or None."""
    match = JSON_OBJECT.search(text or "")
    if match is None:
        return None
    try:
        value = json.loads(match.group(0))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
