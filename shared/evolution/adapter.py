"""GEPA's adapter for one skill: a candidate is {description, body}; a task's score is the judged rubric.

Evaluations are remembered per (candidate text, task), so GEPA's re-evaluation of a text it has seen costs
no model call. Reflection (new texts) uses the same configured model, with feedback from the judge.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from gepa import EvaluationBatch

from shared.evolution.evidence import Example
from shared.evolution.metric import compose, judge, refusal
from shared.evolution.model import RunModel
from shared.files.skill_format import FrontMatter

COMPONENTS = ("body", "description")
NEW_TEXT = re.compile(r"<new_text>\s*(.*?)\s*</new_text>", re.S)
RECORDS_SHOWN = 6

REFLECT_SYSTEM = ("You improve one part of an agent skill (a SKILL.md) so that an agent following it solves its "
                  "tasks. You get the part's current text and how answers written with it were judged. Keep what "
                  "works, keep every section heading, add the missing steps the feedback names, stay concise and "
                  "general (never quote one task's specifics). Reply with the complete new text between <new_text> "
                  "and </new_text>.")
REFLECT_USER = ("[evolve:reflect] part={part} skill={name}\n<current>\n{current}\n</current>\n"
                "Judged examples (JSON):\n{records}")


class SkillAdapter:
    """Scores candidate texts of one skill on examples; proposes new texts from the judge's feedback."""

    def __init__(self, model: RunModel, name: str, current: str, front: FrontMatter, required: list[str],
                 max_chars: int) -> None:
        self.model, self.name, self.current, self.front = model, name, current, front
        self.required, self.max_chars = required, max_chars
        self._seen: dict[tuple[str, str], tuple[float, str, str]] = {}

    def text(self, candidate: dict[str, str]) -> str:
        return compose(self.current, self.front, candidate["description"], candidate["body"])

    def evaluate(self, batch: list[Example], candidate: dict[str, str], capture_traces: bool = False) -> EvaluationBatch:
        text = self.text(candidate)
        refused = refusal(text, self.name, self.required, self.max_chars)
        outputs, scores, traces = [], [], []
        for example in batch:
            score, feedback, answer = (0.0, f"Refused before any task ran: {refused}", "") if refused else \
                self._judged(text, example)
            outputs.append(answer)
            scores.append(score)
            traces.append({"task": example.task, "answer": answer, "score": score, "feedback": feedback})
            self.model.meter.metric_call()
        return EvaluationBatch(outputs=outputs, scores=scores, trajectories=traces if capture_traces else None)

    def _judged(self, text: str, example: Example) -> tuple[float, str, str]:
        key = (text, example.key)
        if key not in self._seen:
            verdict = judge(self.model, text, example)
            self._seen[key] = (verdict.score, verdict.feedback, verdict.answer)
        return self._seen[key]

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: EvaluationBatch,
                                components_to_update: list[str]) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        records = [{"Inputs": {"task": t["task"]}, "Generated Outputs": t["answer"][:1_500],
                    "Feedback": f"score {t['score']:.2f}: {t['feedback']}"} for t in eval_batch.trajectories or []]
        records.sort(key=lambda r: r["Feedback"])  # lowest scores first: what to fix
        return {part: records[:RECORDS_SHOWN] for part in components_to_update}

    def propose_new_texts(self, candidate: dict[str, str], reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
                          components_to_update: list[str]) -> dict[str, str]:
        """One reflection call per part; an answer without a readable new text keeps the part as it is."""
        proposed: dict[str, str] = {}
        for part in components_to_update:
            answer = self.model.ask(REFLECT_SYSTEM, REFLECT_USER.format(
                part=part, name=self.name, current=candidate[part],
                records=json.dumps(list(reflective_dataset.get(part, [])), ensure_ascii=False, indent=1)))
            match = NEW_TEXT.search(answer)
            text = match.group(1).strip() if match else ""
            if not text:
                proposed[part] = candidate[part]
            else:
                proposed[part] = "\n" + text + "\n" if part == "body" else text
        return proposed
