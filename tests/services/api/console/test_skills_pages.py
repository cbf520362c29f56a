"""/skills and /skills/{name}: the list, a skill rendered safely, pin / unpin / archive / restore, staged writes."""

from __future__ import annotations

import httpx
import pytest

from shared.models.skills import SkillInstall
from shared.stores.skills import SkillStore
from services.worker.tools.registry import ToolContext
from services.worker.tools.skills import skill_manage
from tests.services.api.console.conftest import Browser
from tests.support.factories import make_user

HOSTILE = "Steps.\n\n<script>document.title='pwned'</script>\n\n<img src=x onerror=alert(1)>\n\n# Step one\n"


def skill_md(name: str, body: str = "1. Boil water.\n") -> str:
    return f"---\nname: {name}\ndescription: Brew a <b>good</b> cup of tea.\n---\n{body}"


@pytest.fixture
def store(db, settings, user) -> SkillStore:
    return SkillStore.for_user(db, settings, user.id)


@pytest.fixture
def tea(store):
    store.install(SkillInstall(name="brew-tea", content=skill_md("brew-tea", HOSTILE),
                               files={"references/teas.md": "Green: 80C."}))
    return "brew-tea"


def test_the_list_shows_origin_state_pin_and_uses(signed_in: Browser, tea):
    page = signed_in.get("/skills")
    assert page.status_code == 200 and "<h1>Skills</h1>" in page.text
    assert '<a href="/skills/brew-tea">brew-tea</a>' in page.text
    assert "Brew a &lt;b&gt;good&lt;/b&gt; cup of tea." in page.text  # a description is text, not markup
    assert '<a href="/skills/tidy-memory">tidy-memory</a>' in page.text  # bundled skills are listed too
    assert "bundled" in page.text and "active" in page.text


def test_a_skill_renders_its_markdown_with_raw_html_as_text(signed_in: Browser, tea):
    page = signed_in.get("/skills/brew-tea")
    assert page.status_code == 200
    assert "<h1>Step one</h1>" in page.text and "references/teas.md" in page.text
    assert "<script>document.title" not in page.text and "&lt;script&gt;document.title" in page.text
    assert "<img src=x" not in page.text and "onerror=alert" not in page.text.replace("&lt;img src=x onerror=alert", "")
    assert page.headers["content-security-policy"].startswith("default-src 'self'")


def test_pin_unpin_archive_restore_change_the_store(signed_in: Browser, tea, store):
    for action, check in (("pin", lambda s: s.pinned), ("unpin", lambda s: not s.pinned),
                          ("archive", lambda s: s.state.value == "archived"),
                          ("restore", lambda s: s.state.value == "active")):
        response = signed_in.post_form("/skills/brew-tea", f"/skills/brew-tea/{action}", {})
        assert response.status_code == 303 and response.headers["location"] == "/skills/brew-tea"
        assert check(store.summary(store.get("brew-tea"))), action
    shown = signed_in.get("/skills/brew-tea").text
    assert 'role="status"' in shown and "Restored brew-tea." in shown


def test_another_users_skill_answers_404_and_is_left_alone(browser: Browser, db, tea, store):
    stranger = make_user(db)
    browser.sign_in(stranger.key)
    assert browser.get("/skills/brew-tea").status_code == 404
    for action in ("pin", "archive"):
        assert browser.post_form("/skills", f"/skills/brew-tea/{action}", {}).status_code == 404
    assert "brew-tea" not in browser.get("/skills").text
    summary = store.summary(store.get("brew-tea"))
    assert not summary.pinned and summary.state.value == "active"


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(signed_in: Browser, tea, store):
    response = signed_in.http.post("/skills/brew-tea/archive", data={})
    assert response.status_code == 403
    assert store.get("brew-tea").state.value == "active"


def test_a_staged_write_shows_its_diff_and_is_approved_from_the_page(signed_in: Browser, db, settings, user, store):
    ctx = ToolContext(user_id=user.id, session_id="ses_x", turn_id="turn_x",
                      settings=settings.model_copy(update={"skill_write_approval": True}))
    staged = skill_manage(ctx, {"action": "create", "name": "staged-tea",
                                "content": skill_md("staged-tea", "<script>alert(1)</script>\n")})
    page = signed_in.get("/skills").text
    assert "Waiting for your decision" in page and "+++ b/staged-tea/SKILL.md" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page

    with httpx.Client(base_url=signed_in.http.base_url, follow_redirects=False) as http:
        other = Browser(http)
        other.sign_in(make_user(db).key)
        refused = other.post_form("/skills", f"/skills/pending/{staged['pending_id']}", {"decision": "approve"})
    assert refused.status_code == 404 and store.locate("staged-tea") is None

    approved = signed_in.post_form("/skills", f"/skills/pending/{staged['pending_id']}", {"decision": "approve"})
    assert approved.status_code == 303 and store.get("staged-tea").state.value == "active"
    again = signed_in.post_form("/skills", f"/skills/pending/{staged['pending_id']}", {"decision": "deny"})
    assert again.status_code == 303
    assert "already approved" in signed_in.get("/skills").text.split('role="alert"')[1][:200]


def test_an_unknown_action_is_not_a_page(signed_in: Browser, tea, store):
    assert signed_in.post_form("/skills", "/skills/brew-tea/delete", {}).status_code == 404
    assert store.get("brew-tea").state.value == "active"
