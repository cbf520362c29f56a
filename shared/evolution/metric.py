"""The metric: checks a candidate cannot game, then the task model's answer judged against a rubric.

The checks run on the SKILL.md a candidate would become, before any model call: it must parse with its
own name, stay under the size limit, pass the skill security scan and keep every section heading the
current text has. A candidate failing one scores 0 on every task, with the reason as its feedback. Only
then does the task model answer the task with the skill loaded, and the judge score that answer against
the steps the task needs (the rubric), 0..1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from shared.errors import HermesError
from shared.evolution.evidence import Example
from shared.evolution.model import RunModel, json_object
from shared.files.skill_format import FrontMatter, parse_skill_md, split_front_matter
from shared.security.skill_checks import check_skill_text

HEADING = re.compile(r"^#{1,6}\s+\S.*$", re.M)
ANSWER_CHARS = 6_000

TASK_SYSTEM = ("You are a capable assistant agent. The skill below was loaded for this task: follow it where it "
               "applies and answer with the concrete steps you would take.\n\n<skill>\n{skill}\n</skill>")
TASK_USER = "[evolve:task] {task}"
JUDGE_SYSTEM = ("You grade an agent's answer against a rubric. Be strict and consistent: credit a step only when "
                "the answer clearly includes it. Reply with JSON only: {\"score\": <0..1>, \"feedback\": \"<which "
                "steps are missing or wrong, in one or two sentences>\"}.")
JUDGE_USER = ("[evolve:judge]\nTask: {task}\nSteps a good answer needs:\n{needs}\nHow the real session went: "
              "{outcome}\n\n<answer>\n{answer}\n</answer>")


@dataclass(frozen=True)
class Judged:
    score: float
    feedback: str
    answer: str


def sections(body: str) -> list[str]:
    """The section headings of a SKILL.md body, as written."""
    return [line.strip() for line in HEADING.findall(body)]


def compose(current: str, front: FrontMatter, description: str, body: str) -> str:
    """SKILL.md with this description and body; the current front matter kept verbatim when the description is."""
    header, _ = split_front_matter(current)
    if description.strip() != front.description:
        data = yaml.safe_load(header) or {}
        data["description"] = " ".join(description.split())
        header = "\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000)
    body = body if body.startswith("\n") else "\n" + body
    return f"---{header.rstrip()}\n---{body}"


def refusal(text: str, name: str, required: list[str], max_chars: int) -> str | None:
    """Why this SKILL.md may not replace the current one, or None when every check passes."""
    if len(text) > max_chars:
        return f"SKILL.md is {len(text):,} characters; it must stay under {max_chars:,}."
    try:
        parsed = parse_skill_md(text, name)
    except HermesError as exc:
        return f"SKILL.md does not parse: {exc.message}"
    finding = check_skill_text(text)
    if finding is not None:
        return f"the skill security scan refused it: {finding.message}"
    kept = set(sections(parsed.body))
    missing = [heading for heading in required if heading not in kept]
    if missing:
        return f"it dropped required sections: {', '.join(missing)}"
    return None


def judge(model: RunModel, skill_text: str, example: Example) -> Judged:
    """The task model answers with the skill loaded; the judge scores the answer against the example's rubric."""
    answer = model.ask(TASK_SYSTEM.format(skill=skill_text), TASK_USER.format(task=example.task))[:ANSWER_CHARS]
    needs = "\n".join(f"- {step}" for step in example.needs) or "- (no steps listed: judge whether it solves the task)"
    verdict = json_object(model.ask(JUDGE_SYSTEM, JUDGE_USER.format(task=example.task, needs=needs,
                                                                      outcome=example.outcome, answer=answer)))
    if verdict is None:
        return Judged(0.0, "The judge's verdict could not be read.", answer)
    try:
        score = float(verdict.get("score", 0))
    except (TypeError, ValueError):
        score = 0.0
    score = 0.0 if score != score else min(1.0, max(0.0, score))
    return Judged(score, str(verdict.get("feedback") or "")[:1_000], answer)
