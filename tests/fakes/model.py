"""The scripted model tests run against: the product's demo model server (services/demo_model/)."""

from __future__ import annotations

from services.demo_model.replies import Reply, fail, text, tool_call
from services.demo_model.server import Recorded, echo
from services.demo_model.server import ScriptedModel as FakeModel

__all__ = ["FakeModel", "Recorded", "Reply", "echo", "text", "tool_call", "fail"]
