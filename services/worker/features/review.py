"""Background review in the worker: after every turn, count it and send the review it makes due (queue `review`)."""

from __future__ import annotations

from services.worker.agent.context import register_after_turn
from services.worker.review.trigger import on_turn_finished

register_after_turn(on_turn_finished)
