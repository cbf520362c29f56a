"""One way for a console POST to call a store action and answer with POST-redirect-GET.

A refusal the API answers 404 (another user's object, or none) stays a 404 page here too; any other refusal
(409 already decided, 422 not valid, 429 locked) goes back to the page with its message in `role="alert"`.
"""

from __future__ import annotations

from typing import Callable

from fastapi import Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ValidationError

from services.api.console.deps import redirect
from shared.errors import HermesError


def attempt(request: Request, back: str, action: Callable[[], object], done: str) -> RedirectResponse:
    """Run `action`; back to `back` with `done` as the status message, or with the store's refusal."""
    try:
        action()
    except HermesError as exc:
        return refused(request, back, exc)
    return redirect(request, back, done)


def refused(request: Request, back: str, exc: HermesError) -> RedirectResponse:
    """Back to `back` with the store's refusal as an alert; a 404 (none, or another user's) stays a 404."""
    if exc.status_code == 404:
        raise exc
    return redirect(request, back, exc.message, "alert")


def parsed(model: type[BaseModel], form: dict[str, str]) -> BaseModel:
    """The API's own body model built from a form (blank fields dropped): one set of validation rules."""
    data = {k: v for k, v in form.items() if v != "" and k in model.model_fields}
    return model.model_validate(data)


def invalid(exc: ValidationError) -> str:
    """A person-readable line for a form the API's body model refused."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "form"
    return f"{where}: {first.get('msg', 'not valid')}"
