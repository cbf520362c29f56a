"""The OpenAI-compatible endpoint: a chat completion is one turn of a stored session, waited for."""

from __future__ import annotations

import logging
import time
from contextlib import aclosing
from dataclasses import asdict
from typing import Annotated, AsyncIterator

from fastapi import APIRouter, Header, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from services.api.accept import accept_turn, announce_turn, check_input_size, request_hash
from services.api.deps import CurrentUser, DbDep, Enqueue, EnqueueDep, SettingsDep
from services.api.errors import error_response
from services.api.openai_models import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionRequest,
    Choice,
    ChunkMaker,
    CompletionUsage,
    ModelCard,
    ModelList,
    openai_errors,
)
from services.api.image_parts import discard, save_images
from services.api.openai_models import image_urls
from services.api.routes.events import SSE_HEADERS
from services.api.streams import KEEPALIVE, SYNTHETIC_ID, Event, follow_or_poll, turn_loader, within
from shared.config import Settings
from shared.db import Database
from shared.errors import IdempotencyConflict
from shared.models.turns import Turn
from shared.stores import attachments, conversations, sessions, turns

log = logging.getLogger(__name__)

DEFAULT_MODEL = "hermes-stack"
CLIENT_LEFT = Event(SYNTHETIC_ID, "client.left", {})  # not a turn event: the waiting request's own end
STREAM_DOC = {"content": {"text/event-stream": {"schema": {"type": "string"}}}}

router = APIRouter(tags=["openai"])


def model_name(settings: Settings, requested: str | None = None) -> str:
    return requested or settings.llm_model or DEFAULT_MODEL


def _start_turn(
    db: Database,
    enqueue: Enqueue,
    settings: Settings,
    user_id: str,
    body: ChatCompletionRequest,
    session_id: str | None,
    idempotency_key: str | None = None,
) -> Turn:
    """Continue the session named by X-Session-Id, else the conversation's own session (found, created or forked).

    A retry with the same Idempotency-Key and body waits on the first request's turn instead of
    running it again; the same key with another body is 409 idempotency_key_reused.
    """
    text = body.messages[-1].text or ""
    check_input_size(settings, text)
    digest = request_hash(body.model_dump(), session_id or "") if idempotency_key else None
    if idempotency_key:
        existing = turns.find_by_idempotency_key(db, user_id, idempotency_key)
        if existing is not None:
            if existing.request_hash != digest:
                raise IdempotencyConflict()
            return existing
    if session_id:
        sessions.get_session(db, user_id, session_id)
    saved = save_images(settings, user_id, image_urls(body.messages[-1].content))
    try:
        return _accept(db, enqueue, settings, user_id, body, session_id, text, saved, idempotency_key, digest)
    except BaseException:
        discard(settings, user_id, saved)
        raise


def _accept(db: Database, enqueue: Enqueue, settings: Settings, user_id: str, body: ChatCompletionRequest,
            session_id: str | None, text: str, saved: list, idempotency_key: str | None, digest: str | None) -> Turn:
    """Accept the turn in the named session or the conversation's own, its images (already saved) recorded with it."""
    files = [asdict(f) for f in saved]
    if session_id:
        ids = [attachments.add_attachment(db, user_id=user_id, session_id=session_id, **f).id for f in files]
        return accept_turn(db, enqueue, settings, user_id=user_id, session_id=session_id, text=text,
                           attachment_ids=ids, idempotency_key=idempotency_key, body_hash=digest, interactive=False)
    key = conversations.conversation_key(user_id, body.instructions, body.first_user_text)
    turn, sent = conversations.accept_conversation_turn(
        db, user_id, instructions=body.instructions, history=body.history, text=text, key=key,
        idempotency_key=idempotency_key, request_hash=digest, max_running=settings.max_running_turns_per_user,
        files=files)
    announce_turn(enqueue, turn, sent)
    return turn


def _failure(event: Event) -> tuple[str, str]:
    """(code, message) of a failed or cancelled turn."""
    if event.type == "turn.cancelled":
        return "turn_cancelled", "The turn was cancelled."
    error = event.data.get("error") or {}
    return error.get("code") or "turn_failed", error.get("message") or "The turn failed."


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletion,
    responses={200: STREAM_DOC, **openai_errors(400, 401, 404, 409, 413, 502, 504)},
)
async def chat_completions(
    body: ChatCompletionRequest,
    request: Request,
    response: Response,
    db: DbDep,
    settings: SettingsDep,
    enqueue: EnqueueDep,
    user: CurrentUser,
    x_session_id: Annotated[str | None, Header(max_length=64)] = None,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> ChatCompletion | Response:
    """Run the last user message as a turn and answer in OpenAI's format, streamed or not.

    Once the turn is accepted every answer names it (X-Turn-Id, X-Session-Id); waiting survives Redis
    trouble by polling the turn's row, and Idempotency-Key makes a retry wait on the same turn.
    """
    key = (idempotency_key or "").strip() or None
    turn = await run_in_threadpool(_start_turn, db, enqueue, settings, user.id, body, x_session_id, key)
    ids = {"X-Session-Id": turn.session_id, "X-Turn-Id": turn.id}
    model = model_name(settings, body.model)
    followed = follow_or_poll(request.app.state.hub, turn.id, turn_loader(db, user.id, turn.id),
                              idle_seconds=settings.sse_keepalive_seconds)
    events = within(followed, settings.chat_completion_timeout_seconds)
    chunks = ChunkMaker(f"chatcmpl-{turn.id}", model, int(time.time()))
    if body.stream:
        frames = _stream(events, chunks, body.include_usage)
        return StreamingResponse(frames, media_type="text/event-stream", headers={**SSE_HEADERS, **ids})
    try:
        final = await _terminal(events, request)
    except Exception:  # anything unforeseen: still name the accepted turn so the client can find it
        log.exception("waiting for turn %s failed", turn.id)
        message = f"The turn was accepted and keeps running; read it at GET /v1/turns/{turn.id}."
        return error_response(request.url.path, 500, "internal_error", message, headers=ids)
    if final is CLIENT_LEFT:
        log.info("the client waiting for turn %s left; the turn keeps running", turn.id)
        return Response(status_code=499, headers=ids)  # nobody reads it: the connection is gone
    if final is None:
        message = f"The turn did not finish in time; it keeps running: GET /v1/turns/{turn.id}."
        return error_response(request.url.path, 504, "timeout", message, headers=ids)
    if final.type != "turn.completed":
        return error_response(request.url.path, 502, *_failure(final), headers=ids)
    response.headers.update(ids)
    return ChatCompletion(
        id=chunks.base["id"],
        created=chunks.base["created"],
        model=model,
        choices=[Choice(message=AssistantMessage(content=final.data.get("output") or ""))],
        usage=CompletionUsage.of(final.data.get("usage")),
    )


async def _terminal(events: AsyncIterator[Event | None], request: Request) -> Event | None:
    """The turn's terminal event; None when it did not come in time; CLIENT_LEFT when the client closed its
    connection first (checked at each quiet interval: a client that gave up no longer holds a subscription
    and a waiting request for the whole CHAT_COMPLETION_TIMEOUT_SECONDS)."""
    try:
        async with aclosing(events):
            async for event in events:
                if event is None:
                    if await request.is_disconnected():
                        return CLIENT_LEFT
                elif event.terminal:
                    return event
    except TimeoutError:
        pass
    return None


async def _stream(events: AsyncIterator[Event | None], chunks: ChunkMaker, include_usage: bool) -> AsyncIterator[str]:
    """Role chunk, content deltas, tool activity as SSE comments, the stop chunk (and usage), then [DONE]."""
    yield chunks.delta({"role": "assistant", "content": ""})
    sent = ""
    try:
        async with aclosing(events):
            async for event in events:
                if event is not None and event.type == "message.delta":
                    sent += event.data.get("delta") or ""
                rest = _unsent_output(event, sent)
                if rest:
                    yield chunks.delta({"content": rest})
                for frame in _frames_for(event, chunks, include_usage):
                    yield frame
    except TimeoutError:
        yield _error_line(chunks, "timeout", "The turn did not finish in time.")
    yield "data: [DONE]\n\n"


def _unsent_output(event: Event | None, sent: str) -> str:
    """The end of the output that a completion rebuilt from the turn's row has not streamed yet."""
    if event is None or event.id != SYNTHETIC_ID or event.type != "turn.completed":
        return ""
    output = event.data.get("output") or ""
    return output[len(sent):] if output.startswith(sent) else ""


def _error_line(chunks: ChunkMaker, code: str, message: str) -> str:
    return chunks.line({"error": {"message": message, "type": "server_error", "param": None, "code": code}})


def _frames_for(event: Event | None, chunks: ChunkMaker, include_usage: bool) -> list[str]:
    if event is None:
        return [KEEPALIVE]
    if event.type == "message.delta" and event.data.get("delta"):
        return [chunks.delta({"content": event.data["delta"]})]
    if event.type == "tool.started":
        return [f": tool {event.data.get('name', '?')} started\n\n"]
    if event.type == "tool.completed":
        outcome = "completed" if event.data.get("ok", True) else "failed"
        return [f": tool {event.data.get('name', '?')} {outcome}\n\n"]
    if event.type == "turn.completed":
        frames = [chunks.delta({}, finish_reason="stop")]
        if include_usage:
            frames.append(chunks.usage(CompletionUsage.of(event.data.get("usage"))))
        return frames
    if event.type in ("turn.failed", "turn.cancelled"):
        return [_error_line(chunks, *_failure(event))]
    return []


@router.get("/v1/models", response_model=ModelList, responses=openai_errors(401))
def list_models(request: Request, settings: SettingsDep, _user: CurrentUser) -> ModelList:
    """The one model this stack serves."""
    return ModelList(data=[ModelCard(id=model_name(settings), created=request.app.state.started_at)])
