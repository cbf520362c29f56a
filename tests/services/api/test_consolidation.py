"""A curator consolidation through the api: listed with its diff, approved, seen in the ledger, restored."""

from __future__ import annotations

import json

import pytest

from shared import clock
from shared.curation.consolidation import consolidate
from shared.llm import get_llm
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.fakes.model import text
from tests.services.api.helpers import error_of
from tests.support.factories import make_user

pytestmark = pytest.mark.usefixtures("real_time")

NOTE = "---\nname: {0}\ndescription: Take meeting notes in the user's format.\n---\n1. Date and attendees first.\n" \
       "2. Decisions as bullets.\n3. Action items with owners last.\n"


def staged_umbrella(db, settings, model, user_id: str) -> None:
    store = SkillStore.for_user(db, settings, user_id)
    for name in ("meeting-notes", "meeting-minutes"):
        SkillEditor(store, "review").create(name, NOTE.format(name))
    model.script(text(json.dumps({"merge": True, "name": "meetings", "merged": ["meeting-minutes", "meeting-notes"],
                                  "content": NOTE.format("meetings"), "reason": "two names for one habit"})))
    consolidate(db, settings, user_id, get_llm(settings), clock.utcnow())


def test_the_owner_approves_a_consolidation_and_restores_it_another_user_sees_nothing(client, db, settings, model):
    alice, bob = make_user(db), make_user(db)
    staged_umbrella(db, settings, model, alice.id)

    [pending] = client.get("/v1/skills/pending", headers=alice.headers).json()["data"]
    assert (pending["action"], pending["name"], pending["writer"]) == ("consolidate", "meetings", "review")
    assert "+++ b/meetings/SKILL.md" in pending["diff"] and "--- a/meeting-notes/SKILL.md" in pending["diff"]
    assert client.get("/v1/skills/pending", headers=bob.headers).json()["data"] == []
    stolen = client.post(f"/v1/skills/pending/{pending['id']}", json={"decision": "approve"}, headers=bob.headers)
    assert stolen.status_code == 404

    approved = client.post(f"/v1/skills/pending/{pending['id']}", json={"decision": "approve"}, headers=alice.headers)
    assert approved.status_code == 200 and approved.json()["result"]["archived"] == ["meeting-minutes", "meeting-notes"]
    states = {s["name"]: s["state"] for s in client.get("/v1/skills", headers=alice.headers).json()["data"]}
    assert (states["meetings"], states["meeting-notes"], states["meeting-minutes"]) == ("active", "archived", "archived")
    again = client.post(f"/v1/skills/pending/{pending['id']}", json={"decision": "approve"}, headers=alice.headers)
    assert again.status_code == 409

    [merge, consolidation] = client.get("/v1/curator/runs", headers=alice.headers).json()["data"][:2]
    assert (merge["kind"], consolidation["kind"]) == ("merge", "consolidation")
    assert [(t["skill"], t["from_state"], t["to_state"]) for t in merge["transitions"]] == [
        ("meeting-minutes", "active", "archived"), ("meeting-notes", "active", "archived"), ("meetings", "new", "active")]

    assert client.post("/v1/curator/skills/meetings/restore", headers=bob.headers).status_code == 404
    undone = client.post("/v1/curator/skills/meetings/restore", headers=alice.headers)
    assert undone.status_code == 200 and undone.json()["kind"] == "restore"
    states = {s["name"]: s["state"] for s in client.get("/v1/skills", headers=alice.headers).json()["data"]}
    assert (states["meetings"], states["meeting-notes"], states["meeting-minutes"]) == ("archived", "active", "active")
    nothing = client.post("/v1/curator/skills/meeting-notes/restore", headers=alice.headers)
    assert nothing.status_code == 409 and error_of(nothing)["code"] == "nothing_to_restore"
    twice = client.post("/v1/curator/skills/meetings/restore", headers=alice.headers)  # undoes the last change only:
    assert twice.status_code == 200  # the umbrella comes back, the restored skills stay
    states = {s["name"]: s["state"] for s in client.get("/v1/skills", headers=alice.headers).json()["data"]}
    assert (states["meetings"], states["meeting-notes"]) == ("active", "active")
