"""Render a console page: one Jinja2 environment, autoescape on for every template.

Every page's context has `user` (the signed-in User or None), `is_owner`, `csrf_token`, `active` (the nav
key, "" by default), `flash` (a session.Flash or None) and the `csrf_input()` global for forms. A route may
pass its own `flash=Flash(text, "alert")` to show a refusal on the page it re-renders. The `markdown`
filter renders CommonMark with raw HTML disabled (a `<script>` in a skill body stays text).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, pass_context
from markdown_it import MarkdownIt
from markupsafe import Markup

from services.api.console import session as cookies

TEMPLATES = Path(__file__).parent / "templates"
_markdown = MarkdownIt("commonmark", {"html": False})


def render_markdown(text: str) -> Markup:
    """CommonMark to HTML with raw HTML escaped and unsafe link schemes dropped."""
    return Markup(_markdown.render(text or ""))


@pass_context
def csrf_input(context) -> Markup:
    """The hidden field every console form carries."""
    return Markup('<input type="hidden" name="{}" value="{}">').format(cookies.CSRF_FIELD, context["csrf_token"])


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.globals["csrf_input"] = csrf_input
    env.filters["markdown"] = render_markdown
    return env


def render(request: Request, template: str, *, status_code: int = 200, **context) -> HTMLResponse:
    """The page, with the common context filled in and the CSRF nonce cookie set when it was minted here."""
    response = HTMLResponse("", status_code=status_code)
    flash = context.pop("flash", None) or cookies.take_flash(request, response)
    page = {
        "user": getattr(request.state, "console_user", None),
        "is_owner": bool(getattr(request.state, "console_is_owner", False)),
        "csrf_token": cookies.csrf_token(request),
        "active": "",
        "flash": flash,
    }
    page.update(context)
    response.body = response.render(environment().get_template(template).render(page))
    response.headers["content-length"] = str(len(response.body))
    cookies.keep_csrf_nonce(request, response)
    return response
