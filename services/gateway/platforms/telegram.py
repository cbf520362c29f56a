"""Telegram through python-telegram-bot, long polling, the Bot API base from TELEGRAM_API_URL.

Only bound users reach the agent; an unknown user gets a pairing code and nothing else. Each session key has
one ChatRunner; commands are answered at once, even while a turn runs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta

import httpx

from telegram import Update
from telegram.constants import ChatAction
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError
from telegram.ext import Application, CallbackQueryHandler, ContextTypes, MessageHandler, filters

from services.gateway import session_keys
from services.gateway.client import ApiError
from services.gateway.context import Gateway
from services.gateway.conversation import ChatRunner, Throttle
from services.gateway.delivery import DeliveryError
from services.gateway.platforms import telegram_media as media
from services.gateway.platforms import telegram_ui as ui
from services.gateway.text import TELEGRAM_LIMIT, split

log = logging.getLogger(__name__)

IDENTITY_TTL_SECONDS = 60.0
TRY_AGAIN = "Sorry, I could not take that message just now; please send it again in a minute."
# Text and every file kind; the kinds the agent cannot take are answered (media.UNSUPPORTED), not ignored.
TAKEN = (filters.TEXT | filters.PHOTO | filters.VOICE | filters.AUDIO | filters.Document.ALL | filters.VIDEO
         | filters.VIDEO_NOTE | filters.Sticker.ALL | filters.ANIMATION)


def create(gateway: Gateway) -> "TelegramPlatform | None":
    token = gateway.settings.telegram_bot_token
    if token is None or not token.get_secret_value().strip():
        return None
    return TelegramPlatform(gateway, token.get_secret_value().strip())


class TelegramPlatform:
    name = "telegram"

    def __init__(self, gateway: Gateway, token: str) -> None:
        self.gateway = gateway
        base = gateway.settings.telegram_api_url.rstrip("/")
        self.app = (Application.builder().token(token).base_url(f"{base}/bot").base_file_url(f"{base}/file/bot")
                    .concurrent_updates(True).build())
        self.app.add_handler(MessageHandler(TAKEN, self.on_message))
        self.app.add_handler(CallbackQueryHandler(self.on_callback))
        self.app.add_error_handler(self.on_error)
        self.runners: dict[str, ChatRunner] = {}
        self.identities: dict[str, tuple[float, str, str]] = {}
        self.throttle = Throttle(1.0)

    @property
    def bot(self):
        return self.app.bot

    async def start(self) -> None:
        await self.app.initialize()
        await self.bot.set_my_commands(ui.bot_commands())
        await self.app.start()
        await self.app.updater.start_polling(poll_interval=0.0, timeout=10)
        log.info("telegram: polling as @%s", self.bot.username)

    async def stop(self) -> None:
        if self.app.updater.running:
            await self.app.updater.stop()
        if self.app.running:
            await self.app.stop()
        await self.app.shutdown()

    # -- who is talking ----------------------------------------------------------------------------

    async def bound_user(self, tg_user, *, request_code: bool = True) -> tuple[str, str] | dict:
        """(user_id, name) of a bound Telegram user, else the api's pairing answer for them (a code only when
        `request_code`)."""
        pid = str(tg_user.id)
        cached = self.identities.get(pid)
        if cached and time.monotonic() - cached[0] < IDENTITY_TTL_SECONDS:
            return cached[1], cached[2]
        answer = await self.gateway.api.identify("telegram", pid, tg_user.full_name or tg_user.username or pid,
                                                 request_code=request_code)
        if answer["status"] != "bound":
            return answer
        self.identities[pid] = (time.monotonic(), answer["user_id"], answer["user_name"])
        return answer["user_id"], answer["user_name"]

    def runner_for(self, update: Update, user_id: str) -> ChatRunner:
        chat, message = update.effective_chat, update.effective_message
        thread = str(message.message_thread_id) if message and message.is_topic_message else None
        key = session_keys.build("telegram", chat.type, str(chat.id), str(update.effective_user.id), thread)
        runner = self.runners.get(key)
        if runner is None or runner.user_id != user_id:
            runner = ChatRunner(self.gateway.api, user_id, key, TelegramSurface(self, user_id, str(chat.id), thread))
            self.runners[key] = runner
        return runner

    # -- updates -------------------------------------------------------------------------------------------

    async def on_message(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        message, sender = update.effective_message, update.effective_user
        if message is None or sender is None or sender.is_bot:
            return
        item = media.incoming(message)
        if not message.text and item is None and not media.unsupported(message):
            return
        try:
            who = await self.bound_user(sender)
        except (ApiError, httpx.HTTPError) as exc:
            log.warning("telegram: could not tell who %s is (%s)", sender.id, exc)
            await message.reply_text(TRY_AGAIN)
            return
        if isinstance(who, dict):
            await message.reply_text(ui.pairing_text(who))
            return
        user_id, name = who
        runner = self.runner_for(update, user_id)
        text = (message.text or message.caption or "").strip()
        if message.text and text.startswith("/"):
            await self.command(runner, name, sender, text, message)
            return
        if item is None and media.unsupported(message):
            await message.reply_text(media.UNSUPPORTED)
            return
        if runner.full:  # said before a file is downloaded for nothing
            await message.reply_text(f"{len(runner.pending)} messages are already waiting; "
                                     "wait for the answer or /stop.")
            return
        # The upload starts now; the turn waits for it in its place in the chat's queue.
        runner.submit(text, asyncio.ensure_future(self.take_file(runner, item, message)) if item else None)

    async def take_file(self, runner: ChatRunner, item: media.Incoming, message) -> list[str] | None:
        """The message's file stored as an attachment of the chat's session (its id in a list); None when the
        sender was told why not (over Telegram's 20 MB bot limit — checked before downloading — or refused)."""
        taken = await media.take(self.bot, self.gateway.api, runner.user_id, runner.session, item)
        if isinstance(taken, str):
            await message.reply_text(taken)
            return None
        return taken

    async def command(self, runner: ChatRunner, name: str, sender, text: str, message) -> None:
        """Commands act at once, never queued behind a turn."""
        word, _, arg = text[1:].partition(" ")
        word = word.split("@", 1)[0].lower()
        try:
            reply = await self._command(runner, name, sender, word, arg.strip())
        except ApiError as exc:
            reply = f"That did not work ({exc.code})."
        await message.reply_text(reply)

    async def _command(self, runner: ChatRunner, name: str, sender, word: str, arg: str) -> str:
        api, uid = self.gateway.api, runner.user_id
        if word == "new":
            await runner.new_session()
            return "Started a fresh conversation."
        if word == "forget":
            return ui.forgotten_text(await runner.forget()) if arg.lower() == "yes" else ui.FORGET_ASK
        if word == "stop":
            return "Stopping." if await runner.stop() else "Nothing is running."
        if word == "status":
            state = f"working, {len(runner.pending)} waiting" if runner.busy else "idle"
            return f"Agent: {state}. Session: {await runner.session()}."
        if word == "whoami":
            return f"You are {name} (Telegram id {sender.id})."
        if word == "memory":
            return ui.memory_text(await api.call("GET", "/v1/memory", user_id=uid))
        if word == "skills":
            return ui.skills_text(await api.call("GET", "/v1/skills", user_id=uid))
        if word == "cron":
            return await self.cron(uid, arg)
        if word in ("approve", "deny"):
            if not runner.approvals:
                return "Nothing is waiting for approval."
            choice = "deny" if word == "deny" else ("session" if arg.lower() == "session" else "once")
            return f"Command {await self.decide(uid, runner.approvals[-1], choice, name)}."
        return ui.help_text()

    async def cron(self, user_id: str, arg: str) -> str:
        """`/cron` lists the user's scheduled jobs; `/cron pause|resume|run|remove <id>` acts on one."""
        action, _, job_id = arg.partition(" ")
        job_id = job_id.strip()
        if action not in ui.CRON_ACTIONS or not job_id:
            return ui.cron_text(await self.gateway.api.call("GET", "/v1/cron/jobs", user_id=user_id))
        path = f"/v1/cron/jobs/{job_id}"
        if action == "remove":
            await self.gateway.api.call("DELETE", path, user_id=user_id)
        elif action == "run":
            await self.gateway.api.call("POST", path + "/run", user_id=user_id)
        else:
            await self.gateway.api.call("PATCH", path, user_id=user_id, json_body=ui.CRON_ACTIONS[action])
        return f"Job {job_id}: {action} done."

    async def decide(self, user_id: str, approval_id: str, choice: str, name: str) -> str:
        """Record the decision; the approval leaves every runner only once it is decided (or found decided)."""
        decision, scope, said = ui.DECISIONS[choice]
        try:
            await self.gateway.api.decide(user_id, approval_id, decision, scope)
            outcome = f"{said} by {name}"
        except ApiError as exc:
            if exc.status != 409:
                raise
            outcome = "already decided or expired"
        for runner in self.runners.values():
            if approval_id in runner.approvals:
                runner.approvals.remove(approval_id)
        return outcome

    async def on_callback(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """A button press decides only for the approval's own user; anyone else's press changes nothing."""
        query = update.callback_query
        if (query.data or "").startswith("cq:"):
            await self.on_answer(query)
            return
        parsed = ui.parse_callback(query.data or "")
        who = await self.bound_user(query.from_user, request_code=False)
        if parsed is None or isinstance(who, dict):
            await query.answer("Not for you.")
            return
        (approval_id, choice), (user_id, name) = parsed, who
        try:
            outcome = await self.decide(user_id, approval_id, choice, name)
        except ApiError as exc:
            await query.answer("Not for you." if exc.status in (403, 404) else f"Not recorded ({exc.code}).")
            return
        await query.answer(outcome[:200])
        if query.message is not None:
            await query.edit_message_reply_markup(reply_markup=None)
            text = getattr(query.message, "text", "") or ""
            await query.edit_message_text(f"{text}\n\n→ {outcome}"[:TELEGRAM_LIMIT])

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """An update whose handling failed is never dropped silently: the sender is told to try again."""
        log.error("telegram: an update failed (%s)", type(context.error).__name__, exc_info=context.error)
        message = update.effective_message if isinstance(update, Update) else None
        if message is None:
            return
        try:
            await message.reply_text(TRY_AGAIN)
        except TelegramError as exc:
            log.warning("telegram: could not say so either (%s)", type(exc).__name__)

    async def on_answer(self, query) -> None:
        """A question's button, answered as the presser's user: anyone else's press leaves the buttons in place."""
        parsed = ui.parse_question_callback(query.data or "")
        who = await self.bound_user(query.from_user, request_code=False)
        choice = None if parsed is None or isinstance(who, dict) else await self._choice(who[0], *parsed)
        if choice is None:
            await query.answer("Not yours to answer, or already answered.")
            return
        try:
            await self.gateway.api.answer(who[0], parsed[0], choice)
        except ApiError as exc:
            await query.answer(f"Not recorded ({exc.code}).")
            return
        await query.answer(f"Answered: {choice}"[:200])
        if query.message is not None:
            await query.edit_message_reply_markup(reply_markup=None)
            text = getattr(query.message, "text", "") or ""
            await query.edit_message_text(f"{text}\n\n→ {choice} ({who[1]})"[:TELEGRAM_LIMIT])

    async def _choice(self, user_id: str, clarification_id: str, index: int) -> str | None:
        """The choice at `index` of this user's open question; None when the question is not theirs or settled."""
        pending = (await self.gateway.api.questions(user_id)).get("data") or []
        asked = next((q for q in pending if q.get("id") == clarification_id), None)
        choices = asked.get("choices") or [] if asked is not None else []
        return choices[index] if index < len(choices) else None

    # -- delivery --------------------------------------------------------------------------------------------

    async def send(self, dest: str, item: dict, ref: str | None = None) -> None:
        """A final reply: the streamed preview edited to the first part, the rest as new messages; or a file."""
        chunks = split(item["text"])
        try:
            if item.get("attachment_id"):
                await media.deliver(self.bot, self.gateway.api, item, dest)
                return
            if ref is not None:
                try:
                    await self.bot.edit_message_text(chunks[0], chat_id=dest, message_id=int(ref))
                except BadRequest as exc:
                    if "not modified" not in str(exc).lower():
                        raise
                chunks = chunks[1:]
            for chunk in chunks:
                await self.bot.send_message(dest, chunk)
        except RetryAfter as exc:
            wait = exc.retry_after
            raise DeliveryError("telegram asked to wait", wait.total_seconds() if isinstance(wait, timedelta)
                                else float(wait)) from exc
        except (NetworkError, TelegramError) as exc:
            raise DeliveryError(f"telegram: {type(exc).__name__}") from exc


class TelegramSurface:
    """One runner's view of its chat."""

    def __init__(self, platform: TelegramPlatform, user_id: str, chat_id: str, thread: str | None) -> None:
        self.platform, self.user_id, self.chat_id, self.thread = platform, user_id, chat_id, thread
        self.slots: dict[str, dict] = {}

    async def typing(self) -> None:
        await self.platform.bot.send_chat_action(self.chat_id, ChatAction.TYPING)

    async def preview(self, text: str, ref: str | None) -> str | None:
        if not text.strip() or not self.platform.throttle.allow(self.chat_id):
            return ref
        shown = text[:TELEGRAM_LIMIT]
        try:
            if ref is None:
                return str((await self.platform.bot.send_message(self.chat_id, shown)).message_id)
            await self.platform.bot.edit_message_text(shown, chat_id=self.chat_id, message_id=int(ref))
        except TelegramError as exc:
            log.debug("preview not shown (%s)", type(exc).__name__)
        return ref

    async def question(self, data: dict) -> None:
        await self.platform.bot.send_message(self.chat_id, str(data.get("question", ""))[:TELEGRAM_LIMIT],
                                             reply_markup=ui.question_keyboard(data))

    async def approval(self, data: dict) -> None:
        await self.platform.bot.send_message(self.chat_id, ui.approval_text(data),
                                             reply_markup=ui.approval_keyboard(str(data.get("approval_id", ""))))

    async def notice(self, text: str) -> None:
        await self.platform.bot.send_message(self.chat_id, text)

    async def expect(self, turn_id: str) -> None:
        delivery = self.platform.gateway.delivery
        self.slots[turn_id] = await delivery.expect(self.user_id, f"telegram:{self.chat_id}", self.chat_id, turn_id)

    async def final(self, text: str, ref: str | None, turn_id: str) -> None:
        await self.platform.gateway.delivery.complete(self.slots[turn_id], text, ref)

    def release(self, turn_id: str) -> None:
        if self.slots.pop(turn_id, None) is not None:
            self.platform.gateway.delivery.release(turn_id)
