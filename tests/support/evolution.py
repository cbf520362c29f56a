"""The scripted model as task model, judge and reflection model of a skill evolution: a deterministic rubric.

- tasks: a session's user message says `TASK: <what> STEPS: a | b`; the task writer returns that task and steps.
- task model: answers with the lines of the skill it was given (an agent that follows its skill to the letter).
- judge: the share of the task's steps the answer contains; its feedback names the missing ones.
- reflection: appends the steps the feedback names as missing to the body (never to the description).
So a skill scores higher exactly when it contains the steps the tasks need.
"""

from __future__ import annotations

import json
import re

from services.demo_model.replies import Reply, latest_user_text, text
from shared.models.sessions import Message

MARKER = "[evolve:"
WEAK = "---\nname: {0}\ndescription: Deploy the billing app.\n---\n## Steps\n\n1. Build the image.\n"
NEEDED = ["run the migrations", "drain the queue"]  # the steps WEAK lacks
TASK_LINE = re.compile(r"TASK: (.*?) STEPS: (.*?)(?:$|\n|\[)", re.S)


def _system(body: dict) -> str:
    return next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"), "")


def _tasks(user: str) -> Reply:
    found = TASK_LINE.search(user)
    if found is None:
        return text("{\"tasks\": []}")
    steps = [step.strip() for step in found.group(2).split("|") if step.strip()]
    return text(json.dumps({"tasks": [{"task": found.group(1).strip(), "needs": steps}]}))


def _task(body: dict) -> Reply:
    skill = _system(body).split("<skill>", 1)[-1].split("</skill>", 1)[0]
    return text("I will follow the skill:\n" + skill.split("\n---", 1)[-1].strip())


def _judge(user: str) -> Reply:
    needs_part = user.split("Steps a good answer needs:\n", 1)[1].split("\nHow the real session went:", 1)[0]
    needs = [line[2:].strip() for line in needs_part.splitlines() if line.startswith("- ")]
    answer = user.split("<answer>", 1)[1].split("</answer>", 1)[0].lower()
    missing = [step for step in needs if step.lower() not in answer]
    score = (len(needs) - len(missing)) / len(needs) if needs else 0.0
    return text(json.dumps({"score": score, "feedback": "missing: " + "; ".join(missing) if missing else "complete"}))


def _reflect(user: str) -> Reply:
    current = user.split("<current>\n", 1)[1].split("\n</current>", 1)[0]
    if "part=description" in user:
        return text(f"<new_text>{current}</new_text>")
    missing: list[str] = []
    for found in re.findall(r"missing: ([^\"]*)", user):
        for step in found.split(";"):
            step = step.strip()
            if step and step not in missing and step.lower() not in current.lower():
                missing.append(step)
    added = "".join(f"\n- {step}" for step in missing)
    return text(f"<new_text>{current.rstrip()}{added}\n</new_text>")


def rubric(body: dict) -> Reply:
    """One answer of the deterministic rubric, by the kind of request."""
    user = latest_user_text(body)
    if user.startswith("[evolve:tasks]"):
        return _tasks(user)
    if user.startswith("[evolve:task]"):
        return _task(body)
    if user.startswith("[evolve:judge]"):
        return _judge(user)
    if user.startswith("[evolve:reflect]"):
        return _reflect(user)
    return text("?")


def script_rubric(model, calls: int = 2_000) -> None:
    """Answer every evolution request with the rubric (a finite queue: `on` replies are consumed)."""
    model.on(MARKER, *([rubric] * calls))


def weak_skill(db, settings, user_id: str, name: str = "deploy-billing") -> str:
    """An agent-made skill with one step of the three its tasks need; returns its name."""
    from shared.stores.skill_writes import SkillEditor
    from shared.stores.skills import SkillStore

    SkillEditor(SkillStore.for_user(db, settings, user_id), "review").create(name, WEAK.format(name))
    return name


def new_session(db, user_id: str) -> str:
    from shared.stores import sessions

    return sessions.create_session(db, user_id).id


def load_skill_in(db, session_id: str, skill: str, task: str, steps: list[str], after: str = "that worked, thanks"):
    """Messages of a session where the agent loaded `skill` for a task."""
    from shared.stores import sessions

    sessions.append_messages(db, session_id, [
        {"role": "user", "content": f"TASK: {task} STEPS: {' | '.join(steps)}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "skill_view", "arguments": json.dumps({"name": skill})}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "skill_view", "content": "{\"success\": true}"},
        {"role": "assistant", "content": "Done as the skill says."},
        {"role": "user", "content": after},
    ])


def session_that_loaded(db, user_id: str, skill: str, task: str, steps: list[str], after: str = "that worked, thanks"):
    """A new session where the agent loaded `skill` for a task; returns its id."""
    session_id = new_session(db, user_id)
    load_skill_in(db, session_id, skill, task, steps, after)
    return session_id


__all__ = ["NEEDED", "WEAK", "Message", "load_skill_in", "new_session", "rubric", "script_rubric",
           "session_that_loaded", "weak_skill"]
