"""A turn's `clarify` calls: answered from a settled question, answered at once where nobody can answer, or
parked (`AskParked`) for the user to answer."""

from __future__ import annotations

from typing import Any

from shared.models.clarifications import Clarification, ClarificationStatus
from shared.models.turns import Turn
from shared.stores.clarifications import Question
from services.worker.tools.clarify import answer_result, asked, unattended_result


class AskParked(Exception):
    """A `clarify` call waits for the user: the turn parks on it (after the results before it were handed out)."""

    def __init__(self, question: Question) -> None:
        super().__init__(question.question)
        self.question = question


class TurnQuestions:
    """The questions of one foreground turn and the answers it resumed with."""

    def __init__(self, turn: Turn, answers: dict[str, Clarification] | None = None) -> None:
        self.turn = turn
        self.answers = answers or {}

    def check(self, call_id: str, args: dict[str, Any]) -> str | Question:
        """The call's result when it has one now, else the question to park on."""
        settled = self.answers.pop(call_id, None)
        if settled is not None:
            answered = settled.status == ClarificationStatus.answered.value
            return answer_result(settled.choice if answered else None)
        question, choices = asked(args)
        if not self.turn.interactive:
            return unattended_result()
        return Question(user_id=self.turn.user_id, session_id=self.turn.session_id, turn_id=self.turn.id,
                        tool_call_id=call_id, question=question, choices=choices)
