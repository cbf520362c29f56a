"""Tasks the model writes from a session that used the skill: what was asked, and what a good answer needs.

These are the examples a run scores candidates on. Each session gives at most MAX_TASKS tasks, each with
at most MAX_NEEDS steps, so one long session cannot outweigh the others.
"""

from __future__ import annotations

from shared.evolution.evidence import Example, excerpt, outcome
from shared.evolution.model import RunModel, json_object
from shared.stores.evolution_evidence import SkillSession

MAX_TASKS = 3
MAX_NEEDS = 8
TASK_CHARS = 1_000
STEP_CHARS = 200

SYSTEM = ("You turn a past conversation into test tasks for a skill. The conversation loaded the skill {name!r}. "
          "Write the task the user really needed done (and at most two close variants), each with the concrete "
          "steps a correct answer must contain, judged by how the conversation went (corrections and retries show "
          "what was missing). Reply with JSON only: {{\"tasks\": [{{\"task\": \"...\", \"needs\": [\"step\", ...]}}]}}.")
USER = "[evolve:tasks] skill={name}\nOutcome: {outcome}\n<conversation>\n{conversation}\n</conversation>"


def write_tasks(model: RunModel, name: str, session: SkillSession) -> list[Example]:
    """The session's tasks; none when the model's answer holds no readable task."""
    how = outcome(session)
    answer = json_object(model.ask(SYSTEM.format(name=name),
                                   USER.format(name=name, outcome=how, conversation=excerpt(session))))
    found = answer.get("tasks") if answer else None
    examples: list[Example] = []
    for index, item in enumerate(found if isinstance(found, list) else []):
        if len(examples) >= MAX_TASKS or not isinstance(item, dict):
            break
        task = item.get("task")
        if not isinstance(task, str) or not task.strip():
            continue
        needs = item.get("needs") if isinstance(item.get("needs"), list) else []
        steps = tuple(str(step).strip()[:STEP_CHARS] for step in needs if str(step).strip())[:MAX_NEEDS]
        examples.append(Example(key=f"{session.session_id}:{index}", session_id=session.session_id,
                                task=task.strip()[:TASK_CHARS], needs=steps, outcome=how))
    return examples
