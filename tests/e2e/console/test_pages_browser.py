"""The skills, learning and owner pages in headless Chromium: pin and archive a skill, a `<script>` in a skill
does not run, the owner approves a pairing code, and screenshots of every page at desktop and phone widths."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared import clock
from shared.curation.passes import run_pass
from shared.models.reviews import CallOutcome
from shared.models.skills import SkillInstall
from shared.stores import pairing, users
from shared.stores.skill_writes import SkillEditor
from shared.stores.skills import SkillStore
from tests.support.factories import make_session
from tests.support.reviews import completed_review

HOSTILE = ("Make tea safely.\n\n<script>window.__pwned = 'script'; document.title = 'pwned'</script>\n\n"
           "<img src=x onerror=\"window.__pwned = 'img'\">\n\n[click me](javascript:window.__pwned='link')\n\n"
           "## Steps\n\n1. Boil water.\n2. Pour.\n")
SKILL = "---\nname: {0}\ndescription: {1}\n---\n{2}"


@pytest.fixture(scope="module")
def person(console_stack, stack_db, stack_settings):
    """A user with an installed skill (its body hostile), a review that wrote memory, and a curator archive."""
    key = console_stack.create_user("browser-pages")
    user = users.find_user(stack_db, "browser-pages")
    store = SkillStore.for_user(stack_db, stack_settings, user.id)
    store.install(SkillInstall(name="brew-tea", content=SKILL.format("brew-tea", "Brew a good cup of tea.", HOSTILE),
                               files={"references/teas.md": "Green: 80C."}))
    SkillEditor(store, "review").create("old-notes", SKILL.format("old-notes", "Notes nobody reads.", "1. Read.\n"))
    run_pass(stack_db, stack_settings, user.id, clock.utcnow() + timedelta(days=31))
    chat = make_session(stack_db, user.id)
    completed_review(stack_db, user.id, chat.id, [
        ("memory", {"action": "add", "target": "user", "content": "Prefers green tea."}, CallOutcome.applied,
         {"success": True, "message": "Entry added."})], summary="Saved the tea preference.")
    return key, user, store


def test_pin_and_archive_a_skill_from_its_page(page_for, person, shot):
    key, _, store = person
    page = page_for(key)
    page.goto("/skills")
    page.get_by_role("link", name="brew-tea").click()
    page.get_by_role("heading", level=1, name="brew-tea").wait_for()

    page.get_by_role("button", name="Pin").click()
    page.get_by_role("status").filter(has_text="Pinned brew-tea.").wait_for()
    assert page.get_by_role("button", name="Unpin").is_visible()
    assert store.summary(store.get("brew-tea")).pinned

    page.get_by_role("button", name="Archive").click()
    page.get_by_role("status").filter(has_text="Archived brew-tea.").wait_for()
    assert page.get_by_role("button", name="Restore").is_visible()
    assert store.get("brew-tea").state.value == "archived"
    page.goto("/skills")
    assert "archived" in page.get_by_role("row").filter(has_text="brew-tea").inner_text()

    page.goto("/skills/brew-tea")
    page.get_by_role("button", name="Restore").click()
    page.get_by_role("status").filter(has_text="Restored brew-tea.").wait_for()
    page.get_by_role("button", name="Unpin").click()
    page.get_by_role("status").filter(has_text="Unpinned brew-tea.").wait_for()
    assert store.get("brew-tea").state.value == "active" and not store.summary(store.get("brew-tea")).pinned


def test_a_script_in_a_skill_is_shown_as_text_and_never_runs(page_for, person):
    key, _, _ = person
    page = page_for(key)
    page.goto("/skills/brew-tea")
    body = page.locator("article.markdown")
    body.get_by_role("heading", name="Steps").wait_for()

    assert "<script>window.__pwned = 'script'" in body.inner_text()  # visible, as text
    assert page.evaluate("window.__pwned") is None and page.title() != "pwned"
    assert page.locator("main script").count() == 0 and page.locator("main img").count() == 0
    assert body.get_by_role("link", name="click me").count() == 0  # a javascript: link is not made a link


def test_the_owner_approves_a_pairing_code(page_for, console_stack, stack_db, person):
    _, user, _ = person
    issued = pairing.request_code(stack_db, "telegram", "8123", "Robin")
    page = page_for(console_stack.admin_key)
    page.goto("/owner/pairing")
    request = page.get_by_role("listitem").filter(has_text="Robin")
    request.get_by_label("Code").fill(issued.code)
    request.get_by_label("Bind to user").fill(user.name)
    request.get_by_role("button", name="Approve").click()

    page.get_by_role("status").filter(has_text="Paired Robin (telegram) with user browser-pages.").wait_for()
    assert page.get_by_role("row").filter(has_text="Robin").filter(has_text="browser-pages").is_visible()
    assert pairing.find_identity(stack_db, "telegram", "8123")[1].id == user.id


PAGES = [("signin", None), ("chat", "/chat"), ("search", "/search"), ("memory", "/memory"), ("skills", "/skills"),
         ("skill", "/skills/brew-tea"), ("learning", "/learning"), ("owner-users", "/owner/users"),
         ("owner-pairing", "/owner/pairing"), ("owner-webhooks", "/owner/webhooks"),
         ("owner-status", "/owner/status"), ("owner-deliveries", "/owner/deliveries")]


def test_screenshots_of_every_page_at_desktop_and_phone_widths(browser, console_url, page_for, console_stack, person,
                                                               shot):
    key, _, _ = person
    context = browser.new_context(base_url=console_url)
    signin = context.new_page()
    signin.goto("/signin")
    shot(signin, "signin")
    context.close()

    page = page_for(key, admin_key=console_stack.admin_key)
    for name, path in PAGES[1:]:
        response = page.goto(path)
        assert response.status == 200, path
        assert page.locator("h1").count() == 1, path
        saved = shot(page, name)
        assert all(p.stat().st_size > 0 for p in saved)
