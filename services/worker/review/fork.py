"""One review run: the parent's conversation, exactly as its last model call sent it, then one instruction.

What the review's model is sent, in order:
1. the system prompt the parent's last call sent (snapshotted on the review when it was made due);
2. the session's history through the triggering turn's last tool result, built as the turn loop
   builds it (user messages as first sent, with their context blocks; the compaction in effect);
   together with 1. this is the parent's last request, message for message, so the provider's
   prompt cache is reused;
3. the answer that last call produced (the turn's final assistant message);
4. the review instruction (prompt.py).
Then the review's own messages, which are kept on the review row and never enter the transcript.
Tools: the parent's whole tool list, byte for byte (tools come first in the cached prefix, so a shorter
list would miss the cache entirely); only memory and skill calls run, any other is refused with a tool
error (calls.py). The same model; REVIEW_MAX_ITERATIONS model calls.
"""

from __future__ import annotations

import logging
from typing import Any

from shared.errors import ModelError
from shared.llm import Cancelled
from shared.models.reviews import Review, ReviewStatus, ReviewTrigger
from shared.stores import reviews
from shared.stores.reviews import LeaseLost
from services.worker.agent.compress import assemble
from services.worker.agent.outcome import INTERNAL_ERROR_MESSAGE, TRANSIENT_ERRORS
from services.worker.review.calls import ReviewCalls, pending_calls
from services.worker.review.lease import ReviewLease
from services.worker.review.notice import announce
from services.worker.review.prompt import instruction
from services.worker.runtime import Runtime
from services.worker.tools.memory import FAILURES

log = logging.getLogger(__name__)


def budget_note(calls: int) -> str:
    return f"[The review stopped after {calls} model calls, its iteration budget (REVIEW_MAX_ITERATIONS).]"


def conversation(runtime: Runtime, review: Review) -> list[dict[str, Any]]:
    """System prompt, history through the triggering turn's answer, and the review instruction."""
    stored = [m for m in runtime.transcripts.load(runtime.db, review.session_id) if m.id <= review.through_message_id]
    history = assemble(stored, reviews.compaction_of(runtime.db, review))
    return [{"role": "system", "content": review.system_prompt}, *history,
            {"role": "user", "content": instruction(ReviewTrigger(review.trigger))}]


class ReviewRun:
    """One attempt at one claimed review."""

    def __init__(self, runtime: Runtime, review: Review, lease: ReviewLease) -> None:
        self.rt = runtime
        self.review = review
        self.lease = lease
        self.calls = ReviewCalls(runtime, review, lease.lost)

    def run(self) -> None:
        """Review, then record how it ended; a worker that lost the review stops without a word."""
        try:
            self.finish(ReviewStatus.completed, summary=self.converse())
        except (LeaseLost, Cancelled):
            log.warning("review %s was taken over by another worker; this attempt stops", self.review.id)
        except ModelError as err:
            log.warning("review %s failed: %s (%s)", self.review.id, err.message, err.code)
            self.finish(ReviewStatus.failed, error_code=err.code, error_message=err.message)
        except TRANSIENT_ERRORS:
            raise
        except Exception:
            log.exception("review %s stopped by an internal error", self.review.id)
            self.finish(ReviewStatus.failed, error_code="internal_error", error_message=INTERNAL_ERROR_MESSAGE)
        finally:
            FAILURES.forget(self.review.id)

    def converse(self) -> str | None:
        """The review loop, resumed from whatever an earlier attempt recorded; returns the final text."""
        sent = conversation(self.rt, self.review)
        own = list(self.review.messages)
        used = sum(1 for m in own if m["role"] == "assistant")
        limit = self.rt.settings.review_max_iterations
        while True:
            pending = pending_calls(own)
            if pending:
                own += self.calls.run(pending)
            elif own and own[-1]["role"] == "assistant":
                return own[-1].get("content")
            if used >= limit:
                return budget_note(used)
            completion = self.rt.llm.complete(sent + own, tools=self.calls.schemas(), cancelled=self.lease.lost,
                                              kind="review")
            used += 1
            message = completion.to_message()
            reviews.record_model_call(self.rt.db, self.review.id, self.rt.worker_id, message,
                                      completion.usage.prompt_tokens, completion.usage.completion_tokens,
                                      completion.usage.cached_tokens)
            own.append(message)

    def finish(self, status: ReviewStatus, **outcome: Any) -> None:
        if not reviews.finish_review(self.rt.db, self.review.id, self.rt.worker_id, status, **outcome):
            log.warning("review %s finished elsewhere: this worker lost its lease", self.review.id)
            return
        log.info("review %s %s", self.review.id, status.value)
        announce(self.rt, self.review)
