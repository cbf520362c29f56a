"""Console chat pages."""

from __future__ import annotations

from fastapi import APIRouter, Request

from services.api.console.deps import ConsoleUser
from services.api.console.render import render

router = APIRouter(include_in_schema=False)


@router.get("/chat")
def chat_home(request: Request, user: ConsoleUser):
    return render(request, "chat.html", active="chat")
