"""Two real processes writing one skill at the same moment: every patch lands, one create wins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared.stores import skill_records
from shared.stores.skills import SkillStore
from shared.stores.skill_writes import SkillEditor
from tests.support.factories import make_user

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PATCHES_PER_PROCESS = 40

# A writer process: announce readiness, wait for "go" on stdin, run the tool calls, print each outcome.
CHILD = r"""
import json, sys
from shared.config import load_settings
from shared.errors import HermesError
from services.worker.tools.registry import ToolContext
from services.worker.tools.skills import skill_manage

user_id, calls = sys.argv[1], json.loads(sys.argv[2])
ctx = ToolContext(user_id=user_id, session_id="ses_e2e", turn_id="turn_e2e", settings=load_settings())
print("ready", flush=True)
sys.stdin.readline()
outcomes = []
for call in calls:
    try:
        outcomes.append(skill_manage(ctx, call)["message"])
    except HermesError as exc:
        outcomes.append(exc.code)
print(json.dumps(outcomes), flush=True)
"""


def run_together(user_id: str, *call_lists: list[dict]) -> list[list[str]]:
    """Start one process per call list, release them at once, and return each one's outcomes."""
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, user_id, json.dumps(calls)], cwd=ROOT, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for calls in call_lists]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def checklist(tags: str) -> str:
    lines = [f"- {tag}{i:03d}: todo" for tag in tags for i in range(PATCHES_PER_PROCESS)]
    return "---\nname: shared-notes\ndescription: A checklist two writers tick off.\n---\n" + "\n".join(lines) + "\n"


def test_concurrent_patches_from_two_processes_lose_no_update(db, settings):
    user = make_user(db)
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "agent").create("shared-notes", checklist("ab"))

    def ticks(tag: str) -> list[dict]:
        return [{"action": "patch", "name": "shared-notes", "old_string": f"- {tag}{i:03d}: todo",
                 "new_string": f"- {tag}{i:03d}: done"} for i in range(PATCHES_PER_PROCESS)]

    first, second = run_together(user.id, ticks("a"), ticks("b"))

    assert all(o.startswith("Patched SKILL.md") for o in first + second), first + second
    content = store.detail("shared-notes").content
    assert content.count(": done") == 2 * PATCHES_PER_PROCESS and ": todo" not in content
    assert skill_records.record(db, user.id, "shared-notes").patch_count == 2 * PATCHES_PER_PROCESS


def test_two_processes_creating_one_name_get_one_skill(db, settings):
    user = make_user(db)
    create = [{"action": "create", "name": "race",
               "content": f"---\nname: race\ndescription: Written by {who}.\n---\nBody.\n"} for who in ("a", "b")]

    outcomes = sorted(o for result in run_together(user.id, [create[0]], [create[1]]) for o in result)

    assert outcomes == ["Skill 'race' created.", "skill_exists"]
    skill = SkillStore.for_user(db, settings, user.id).detail("race")
    assert skill.description in {"Written by a.", "Written by b."} and skill.created_by == "agent"
