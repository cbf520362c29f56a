"""GET /v1/curator/runs and POST /v1/curator/skills/{name}/restore: a user's own ledger, one change undone."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared import clock
from shared.curation.passes import run_pass
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.services.api.helpers import error_of
from tests.support.factories import SKILL, make_user

pytestmark = pytest.mark.usefixtures("real_time")  # the curator reads the clock: see tests/conftest.py


def test_a_user_sees_their_own_runs_and_can_undo_one_change(client, db, settings):
    alice, bob = make_user(db), make_user(db)
    store = SkillStore.for_user(db, settings, alice.id)
    SkillEditor(store, "review").create("old-notes", SKILL.format("old-notes"))
    clock.advance(timedelta(days=31))
    run_pass(db, settings, alice.id, clock.utcnow())

    body = client.get("/v1/curator/runs", headers=alice.headers).json()
    [run] = body["data"]
    assert (run["kind"], run["summary"]) == ("curation", "1 archived")
    assert run["backup_path"].startswith(f"users/{alice.id}/curator/backups/")
    assert [(t["skill"], t["from_state"], t["to_state"]) for t in run["transitions"]] == [
        ("old-notes", "active", "archived")]
    assert body["state"]["pass_count"] == 1 and body["state"]["next_pass_after"] > body["state"]["last_pass_at"]
    assert client.get("/v1/curator/runs", headers=bob.headers).json() == {"data": [], "state": None}

    refused = client.post("/v1/curator/skills/old-notes/restore", headers=bob.headers)
    assert refused.status_code == 404 and error_of(refused)["code"] == "skill_not_found"

    undone = client.post("/v1/curator/skills/old-notes/restore", headers=alice.headers)
    assert undone.status_code == 200 and undone.json()["kind"] == "restore"
    assert [(t["from_state"], t["to_state"]) for t in undone.json()["transitions"]] == [("archived", "active")]
    assert client.get("/v1/skills/old-notes", headers=alice.headers).json()["state"] == "active"
    assert [r["kind"] for r in client.get("/v1/curator/runs", headers=alice.headers).json()["data"]] == [
        "restore", "curation"]

    again = client.post("/v1/curator/skills/old-notes/restore", headers=alice.headers)
    assert again.status_code == 409 and error_of(again)["code"] == "nothing_to_restore"


def test_the_ledger_needs_a_key(client):
    assert client.get("/v1/curator/runs").status_code == 401
    assert client.get("/v1/curator/runs", headers={"Authorization": "Bearer nope"}).status_code == 401
