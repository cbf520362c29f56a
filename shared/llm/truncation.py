"""Answers cut by the output limit (`finish_reason=length`), recovered as Hermes Agent does.

A cut text answer is continued: the partial answer and a short user note asking to go on are sent,
with a raised max_tokens, up to three times; the pieces are joined into one answer. A cut tool call
(its arguments are half-formed JSON) is never returned for execution: the same request is asked
again with the raised cap, and if every try is cut the answer says so without any tool call.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from shared.backoff import exponential
from shared.llm.types import Completion, Usage

MAX_CONTINUATIONS = 3
BOOST_CAP = 32_768
DEFAULT_BASE = 4096
CONTINUE_PROMPT = ("[System: Your previous response was truncated by the output length limit. Continue exactly "
                   "where you left off, without repeating anything or starting over.]")
STILL_CUT = "[The answer was cut by the model's output limit {n} times; this is as far as it got.]"
TOOL_CALL_CUT = "Response truncated due to output length limit: the tool call was not run."


@dataclass(frozen=True)
class Request:
    """The next call to make: its messages and raised output cap, and why."""

    messages: list[dict]
    max_tokens: int
    why: str
    continues: bool  # True: its text follows what was already streamed; False: the same answer asked again


@dataclass
class Continuation:
    """Follows one answer through its continuations; `next` says what to ask, `joined` gives the answer."""

    messages: list[dict]
    max_tokens: int
    pieces: list[str] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    tries: int = 0

    def boosted(self) -> int:
        base = self.max_tokens if self.max_tokens and self.max_tokens > 0 else DEFAULT_BASE
        return int(exponential(self.tries + 1, base, max(BOOST_CAP, base)))

    def next(self, completion: Completion) -> Request | None:
        """The request that carries on after `completion`, or None when it is whole (or the tries ran out)."""
        if completion.finish_reason != "length" or self.tries >= MAX_CONTINUATIONS:
            return None
        self.tries += 1
        self.usage.append(completion.usage)
        if completion.tool_calls:  # half-formed arguments: ask the same again, append nothing
            return Request(self.resent(), self.boosted(), f"a cut tool call: asking again ({self.tries})", False)
        self.pieces.append(completion.content or "")
        return Request(self.resent(), self.boosted(), f"continuing ({self.tries}/{MAX_CONTINUATIONS})", True)

    def resent(self) -> list[dict]:
        if not self.pieces:
            return self.messages
        return [*self.messages, {"role": "assistant", "content": "".join(self.pieces)},
                {"role": "user", "content": CONTINUE_PROMPT}]

    def joined(self, last: Completion) -> Completion:
        """The whole answer: every piece joined, usage summed; a still-cut tool call becomes a plain notice."""
        if not self.usage and last.finish_reason != "length":
            return last
        total = sum(self.usage, Usage()) + last.usage
        if last.finish_reason == "length" and last.tool_calls:
            text = "".join(self.pieces) or None
            return replace(last, content=(text + "\n\n" if text else "") + TOOL_CALL_CUT, tool_calls=[], usage=total)
        text = "".join(self.pieces) + (last.content or "")
        if last.finish_reason == "length":
            text += "\n\n" + STILL_CUT.format(n=self.tries + 1)
        return replace(last, content=text, usage=total)
