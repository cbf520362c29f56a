"""/learning: what background reviews decided and wrote (linked to the session), the curator's ledger, Restore."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared import clock
from shared.curation.passes import run_pass
from shared.models.reviews import CallOutcome
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.services.api.console.conftest import Browser
from tests.support.factories import SKILL, make_session, make_user
from tests.support.reviews import completed_review

REMEMBER = {"action": "add", "target": "user", "content": "Prefers <script>alert('x')</script> tea."}
SAVED = {"success": True, "message": "Entry added."}
pytestmark = pytest.mark.usefixtures("real_time")  # the curator reads the clock: see tests/conftest.py


def test_a_review_shows_what_it_wrote_linked_to_its_session(signed_in: Browser, db, user):
    chat = make_session(db, user.id)
    completed_review(db, user.id, chat.id, [("memory", REMEMBER, CallOutcome.applied, SAVED)],
                     summary="Kept the <b>tea</b> preference.")
    page = signed_in.get("/learning")
    assert page.status_code == 200 and "<h1>Learning</h1>" in page.text
    assert f'<a href="/chat/{chat.id}">open the session</a>' in page.text
    assert "Kept the &lt;b&gt;tea&lt;/b&gt; preference." in page.text and "applied" in page.text
    assert "<script>alert" not in page.text and "Prefers \\u003cscript\\u003e" in page.text  # JSON-escaped, then HTML

    stranger = make_user(db)
    signed_in.sign_in(stranger.key)
    assert chat.id not in signed_in.get("/learning").text


def test_the_curators_archive_is_listed_and_restored_from_the_page(signed_in: Browser, db, settings, user):
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "review").create("old-notes", SKILL.format("old-notes"))
    clock.advance(timedelta(days=31))
    run_pass(db, settings, user.id, clock.utcnow())

    page = signed_in.get("/learning").text
    assert "old-notes</a>: active → archived" in page and 'action="/learning/skills/old-notes/restore"' in page
    done = signed_in.post_form("/learning", "/learning/skills/old-notes/restore", {})
    assert done.status_code == 303 and store.get("old-notes").state.value == "active"
    page = signed_in.get("/learning").text
    assert "Restored old-notes" in page and 'action="/learning/skills/old-notes/restore"' not in page

    again = signed_in.http.post("/learning/skills/old-notes/restore", data={"csrf_token": "forged"})
    assert again.status_code == 403


def test_another_user_cannot_restore_a_skill_that_is_not_theirs(browser: Browser, db, settings, user):
    store = SkillStore.for_user(db, settings, user.id)
    SkillEditor(store, "review").create("their-notes", SKILL.format("their-notes"))
    clock.advance(timedelta(days=31))
    run_pass(db, settings, user.id, clock.utcnow())
    browser.sign_in(make_user(db).key)
    assert browser.post_form("/learning", "/learning/skills/their-notes/restore", {}).status_code == 404
    assert store.get("their-notes").state.value == "archived"
