"""Chat: the user's sessions newest first, a transcript, sending a message, the answer streamed, approvals and
the agent's questions (one button per choice).

Everything goes through the API's own code: sessions and messages from the sessions store (another user's
session is 404), a message through `accept_turn` (the same size rule, slots and enqueue), the live answer
through the API's SSE stream (`open_event_stream`, this session's key taking the stream slot), and an
approval through `decide_and_resume`. With JavaScript the send form posts with `Accept: text/event-stream`
and reads the answer from the same response, as the API's streaming POST does (`stream_turn`); without it
the form redirects and a running turn's page refreshes itself (a `<noscript>` meta refresh) until the answer
is stored.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Header, Query, Request, Response

from services.api.accept import accept_turn
from services.api.errors import error_response
from services.api.headers import wants_event_stream
from services.api.console import session as cookies
from services.api.console.actions import refused
from services.api.console.deps import ConsoleForm, ConsoleUser, redirect
from services.api.console.render import render
from services.api.console.transcript import Transcript
from services.api.routes.approvals import decide_and_resume
from shared.queue.turns import send_turn
from services.api.routes.events import open_event_stream, stream_turn, take_slot
from shared.errors import HermesError, InvalidInput
from shared.models.approvals import ApprovalScope
from shared.stores import approvals, attachments, clarifications, sessions, todos, turns

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 30
DECISIONS = {"approve": (True, ApprovalScope.once.value), "session": (True, ApprovalScope.session.value),
             "deny": (False, ApprovalScope.once.value)}
DECIDED_TEXT = {"approve": "Approved once.", "session": "Approved for the rest of this session.", "deny": "Denied."}


@router.get("/chat")
def chat_home(request: Request, user: ConsoleUser, cursor: Annotated[str | None, Query(max_length=64)] = None):
    rows, next_cursor = sessions.list_sessions(request.app.state.db, user.id, cursor=cursor, limit=PAGE_SIZE)
    return render(request, "chat.html", active="chat", sessions=rows, next_cursor=next_cursor)


@router.get("/chat/{session_id}")
def chat_session(request: Request, session_id: str, user: ConsoleUser):
    db = request.app.state.db
    chat = sessions.get_session(db, user.id, session_id)
    running = turns.open_turn(db, chat.id)
    rows = sessions.list_messages(db, chat.id)
    files = attachments.for_messages(db, [m.id for m in rows if m.role == "user"])
    transcript = Transcript.of(rows, hide_turn=running.id if running else None, files=files)
    mine = approvals.for_turn(db, user.id, running.id) if running is not None else []
    asked = [q for q in clarifications.list_pending(db, user.id) if running is not None and q.turn_id == running.id]
    return render(request, "chat_session.html", active="chat", chat=chat, transcript=transcript, running=running,
                  pending=[a for a in mine if a.status == "pending"], questions=asked, plan=todos.items(db, chat.id),
                  settled=" ".join(a.id for a in mine if a.status != "pending"))


@router.post("/chat/new")
def new_chat(request: Request, user: ConsoleUser, form: ConsoleForm):
    text = form.get("message", "")
    if not text.strip():
        return redirect(request, "/chat", "Write a message first.", "alert")
    chat = sessions.create_session(request.app.state.db, user.id)
    return _send(request, user, chat.id, text)


@router.post("/chat/{session_id}/send")
def send_message(request: Request, session_id: str, user: ConsoleUser, form: ConsoleForm):
    """Send a message: a redirect to the chat, or with `Accept: text/event-stream` (the page's script) the turn's
    events in this same response."""
    chat = sessions.get_session(request.app.state.db, user.id, session_id)
    text = form.get("message", "")
    if not text.strip():
        if wants_event_stream(request.headers.get("accept")):
            return error_response(request.url.path, 422, "empty_message", "Write a message first.")
        return redirect(request, f"/chat/{chat.id}", "Write a message first.", "alert")
    return _send(request, user, chat.id, text)


def _send(request: Request, user, session_id: str, text: str):
    """Accept the turn; then redirect to its chat, or stream its events when the request asked for them (the
    key's stream slot is taken first, so a 429 too_many_streams queued nothing)."""
    state = request.app.state
    slot = take_slot(request, cookies.current(request).key_digest) \
        if wants_event_stream(request.headers.get("accept")) else None
    if isinstance(slot, Response):  # 429 too_many_streams
        return slot
    try:
        turn = accept_turn(state.db, state.enqueue, state.settings, user_id=user.id, session_id=session_id,
                           text=text)
    except HermesError as exc:
        if slot is None:
            return refused(request, f"/chat/{session_id}", exc)
        slot.release()
        return error_response(request.url.path, exc.status_code, exc.code, exc.message)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    if slot is not None:
        return stream_turn(request, state.db, user, turn, slot, None, headers={"X-Turn-Id": turn.id})
    return redirect(request, f"/chat/{session_id}#live")


@router.post("/chat/approvals/{approval_id}")
def decide(request: Request, approval_id: str, user: ConsoleUser, form: ConsoleForm):
    state = request.app.state
    choice = form.get("decision", "")
    if choice not in DECISIONS:
        raise InvalidInput("Choose Approve, Approve for session or Deny.")
    approve, scope = DECISIONS[choice]
    try:
        approval = decide_and_resume(state.db, state.enqueue, user.id, approval_id, approve=approve, scope=scope)
    except HermesError as exc:
        back = quote(form.get("session_id", ""), safe="")
        return refused(request, f"/chat/{back}#live" if back else "/chat", exc)
    return redirect(request, f"/chat/{approval.session_id}#live", DECIDED_TEXT[choice])


@router.post("/chat/clarifications/{clarification_id}")
def answer(request: Request, clarification_id: str, user: ConsoleUser, form: ConsoleForm):
    """The agent's question answered with the pressed choice; its turn goes on."""
    state = request.app.state
    try:
        answered = clarifications.answer(state.db, user.id, clarification_id, form.get("choice", ""))
        if answered.resume is not None:
            send_turn(state.enqueue, answered.resume.id, answered.resume.session_id,
                      approval_id=answered.clarification.id)
        answered.raise_conflict()
    except HermesError as exc:
        back = quote(form.get("session_id", ""), safe="")
        return refused(request, f"/chat/{back}#live" if back else "/chat", exc)
    row = answered.clarification
    return redirect(request, f"/chat/{row.session_id}#live", f"Answered: {row.choice}")


@router.get("/chat/turns/{turn_id}/events")
async def turn_events(request: Request, turn_id: str, user: ConsoleUser,
                      last_event_id: Annotated[str | None, Header(max_length=64)] = None):
    """The turn's SSE stream for the signed-in user (EventSource sends the cookie, and Last-Event-ID on resume)."""
    state = request.app.state
    slot_owner = cookies.current(request).key_digest  # the slots the same key takes on the API
    return await open_event_stream(request, state.db, user, slot_owner, turn_id, last_event_id)
