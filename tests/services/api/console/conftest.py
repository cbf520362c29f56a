"""A browser-like client of the console: cookies kept, forms posted with their CSRF token."""

from __future__ import annotations

import re

import httpx
import pytest

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    assert match, "the page has no form with a csrf_token"
    return match.group(1)


class Browser:
    """An httpx client that follows no redirects and posts forms the way a page would."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def get(self, path: str, **kwargs) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def post_form(self, page: str, action: str, data: dict[str, str]) -> httpx.Response:
        """Open `page`, then post `data` to `action` with the page's csrf_token."""
        token = csrf_of(self.http.get(page).text)
        return self.http.post(action, data={"csrf_token": token, **data})

    def sign_in(self, key: str, admin_key: str = "") -> httpx.Response:
        response = self.post_form("/signin", "/signin", {"api_key": key, "admin_key": admin_key, "next": "/"})
        assert response.status_code == 303, response.text
        return response


@pytest.fixture
def browser(api):
    with httpx.Client(base_url=api, timeout=20, follow_redirects=False) as http:
        yield Browser(http)


@pytest.fixture
def signed_in(browser, user):
    browser.sign_in(user.key)
    return browser
