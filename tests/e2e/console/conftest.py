"""The web console in a real browser: one live stack and one headless Chromium per test module.

Debian's Chromium (`/usr/bin/chromium`) driven by Playwright; nothing is downloaded at run time. Outside CI a
missing browser skips these tests with the command that installs it; in CI (`CI` set) it fails them.
Every test here is marked `e2e`, `sqlite_only` and `once`, so `make test` runs them once (its `once` pass).

Fixtures: `console_stack` (api + worker + the scripted model), `console_url`, `stack_db` / `stack_settings`
(to seed the stack's own database and DATA_DIR through the stores), `browser`, `page_for(key)` (a page
signed in with that key; `admin_key=` adds the owner's), `shot(page, name)` (desktop and phone screenshots
into tests/e2e/screenshots/).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.processes import Stack

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "apt-get install -y chromium"
SCREENSHOTS = Path(__file__).resolve().parents[1] / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
TIMEOUT_MS = 15_000
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Mark this folder's tests e2e + sqlite_only + once; skip them (outside CI) when the browser is missing."""
    missing = not CHROMIUM.exists() and not os.environ.get("CI")
    skip = pytest.mark.skip(reason=f"Chromium is not installed at {CHROMIUM}: {INSTALL}")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.sqlite_only)
            item.add_marker(pytest.mark.once)
            if missing:
                item.add_marker(skip)


@pytest.fixture(scope="module")
def console_stack(fake_model):
    """A private deployment for this module: api and one turn worker over the scripted model."""
    overrides = {"RATE_LIMIT_PER_MINUTE": "0", "TURN_RATE_LIMIT_PER_MINUTE": "0"}
    with Stack(model_url=fake_model.base_url, env_overrides=overrides) as stack:
        stack.start_api()
        stack.start_worker(concurrency=4)
        yield stack


@pytest.fixture(scope="module")
def console_url(console_stack) -> str:
    return console_stack.base_url


@pytest.fixture(scope="module")
def stack_settings(settings, console_stack):
    """The test settings pointed at the stack's DATA_DIR, for stores that read or write files there."""
    return settings.model_copy(update={"data_dir": console_stack.data_dir})


@pytest.fixture(scope="module")
def stack_db(console_stack):
    from shared.db import get_database

    return get_database(console_stack.database_url)


@pytest.fixture(scope="module")
def browser():
    """One headless Debian Chromium for the module; never a downloaded browser.

    Playwright's launch() gives Chromium a fresh temporary profile of its own (it refuses --user-data-dir).
    """
    if not CHROMIUM.exists():
        pytest.fail(f"CI is set and Chromium is missing at {CHROMIUM}: {INSTALL}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page_for(browser, console_url):
    """`page_for(key, admin_key=None)`: a desktop-sized page signed in to the console (its own cookies)."""
    contexts = []

    def open_page(key: str, *, admin_key: str | None = None):
        context = browser.new_context(viewport=DESKTOP, base_url=console_url)
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        sign_in(page, key, admin_key)
        return page

    yield open_page
    for context in contexts:
        context.close()


def sign_in(page, key: str, admin_key: str | None = None) -> None:
    """Fill the sign-in form by its labels, as a person would, and wait to leave /signin."""
    page.goto("/signin")
    page.get_by_label("API key", exact=True).fill(key)
    if admin_key is not None:
        page.get_by_label("Admin key").fill(admin_key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/signin" not in url)


@pytest.fixture(scope="session")
def shot():
    """`shot(page, name)`: save the page at desktop (1280×800) and phone (390×844) widths, full length."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page, name: str) -> list[Path]:
        paths = []
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size(size)
            path = SCREENSHOTS / f"{name}-{label}.png"
            page.screenshot(path=str(path), full_page=True)
            paths.append(path)
        page.set_viewport_size(DESKTOP)
        return paths

    return save
