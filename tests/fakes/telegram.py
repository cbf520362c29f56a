"""A fake Telegram Bot API over real HTTP, in the real wire format: `{base}/bot{token}/{method}`, form or JSON
parameters in, `{"ok": true, "result": …}` out. It records every call and lets a test inject user messages
(text, photos, voice notes, audio, documents: served by getFile and `{base}/file/bot{token}/<path>` like the real
API, which refuses files over 20 MB to bots) and button presses, and make the next sends fail (429 with
retry_after, 5xx). Files the bot sends (sendPhoto, sendVoice, sendAudio, sendDocument) are kept with their bytes."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

from tests.support import loopback
from tests.support.env import free_port
from tests.support.waiting import wait_until

BOT_DOWNLOAD_LIMIT = 20 * 1024 * 1024
BOT = {"id": 777000, "is_bot": True, "first_name": "Hermes", "username": "hermes_test_bot",
       "can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class FakeTelegram:
    def __init__(self, token: str = "123456:TEST-token") -> None:
        self.token = token
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.calls: list[Call] = []
        self.updates: list[dict] = []
        self.next_update = 1
        self.next_message = 1000
        self.messages: dict[int, dict] = {}  # message_id -> what the bot shows now
        self.failures: list[tuple[str, int, int | None]] = []  # (method, status, retry_after)
        self.files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, bytes) users sent
        self.received: list[dict] = []  # files the bot sent: method, chat_id, filename, data, caption
        self.cond = threading.Condition()
        self.server: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> "FakeTelegram":
        fake = self

        class Handler(loopback.QuietHandler):
            def do_POST(self) -> None:
                fake._handle(self)

            do_GET = do_POST

        self.server = loopback.serve(Handler, self.port)
        return self

    def stop(self) -> None:
        if self.server is not None:
            with self.cond:
                self.cond.notify_all()
            loopback.stop(self.server)

    # -- what a test does ----------------------------------------------------------------------------

    def user_says(self, user_id: int, text: str, chat_id: int | None = None, *, first_name: str = "Ann",
                  chat_type: str = "private") -> int:
        """A user sends a text message; commands carry their bot_command entity like the real API."""
        chat_id = chat_id if chat_id is not None else user_id
        chat = {"id": chat_id, "type": chat_type, **({"first_name": first_name} if chat_type == "private"
                                                      else {"title": "Group"})}
        message = {"message_id": self._message_id(), "date": int(time.time()), "chat": chat, "text": text,
                   "from": {"id": user_id, "is_bot": False, "first_name": first_name}}
        if text.startswith("/"):
            message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
        return self._push({"message": message})

    def press(self, user_id: int, message_id: int, data: str, *, first_name: str = "Ann") -> int:
        """A user presses an inline button under one of the bot's messages."""
        shown = self.messages[message_id]
        message = {"message_id": message_id, "date": int(time.time()), "chat": shown["chat"], "text": shown["text"],
                   "from": BOT}
        query = {"id": f"cbq{self.next_update}", "from": {"id": user_id, "is_bot": False, "first_name": first_name},
                 "message": message, "chat_instance": "ci", "data": data}
        return self._push({"callback_query": query})

    def user_sends(self, user_id: int, kind: str, data: bytes, *, caption: str | None = None,
                   file_name: str | None = None, announced_size: int | None = None, mime: str | None = None,
                   first_name: str = "Ann") -> str:
        """A user sends a file: `kind` photo, voice, audio or document (`announced_size` as Telegram reports it,
        default the real size; a file over 20 MB is announced but never stored, as the real API will not serve it).
        The file's id (a photo's largest size)."""
        n = self._message_id()
        file_id, size = f"file{n}", len(data) if announced_size is None else announced_size
        if size <= BOT_DOWNLOAD_LIMIT:
            with self.cond:
                self.files[file_id] = (f"{kind}s/file_{n}", data)
        entry = {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": size}
        if kind == "photo":
            media: Any = [{**entry, "file_id": f"{file_id}s", "file_size": min(size, 100), "width": 90, "height": 90},
                          {**entry, "width": 1280, "height": 960}]
        elif kind == "voice":
            media = {**entry, "duration": 3, "mime_type": mime or "audio/ogg"}
        elif kind == "audio":
            media = {**entry, "duration": 30, "mime_type": mime or "audio/mpeg", **({"file_name": file_name} if file_name else {})}
        else:
            media = {**entry, "mime_type": mime or "application/octet-stream", **({"file_name": file_name} if file_name else {})}
        chat = {"id": user_id, "type": "private", "first_name": first_name}
        message = {"message_id": n, "date": int(time.time()), "chat": chat, kind: media,
                   "from": {"id": user_id, "is_bot": False, "first_name": first_name},
                   **({"caption": caption} if caption else {})}
        self._push({"message": message})
        return file_id

    def fetched(self, file_id: str) -> bool:
        """Whether the bot asked for this file (getFile) or downloaded it."""
        with self.cond:
            path = self.files.get(file_id, ("\0", b""))[0]
            return any((c.method == "getFile" and c.params.get("file_id") == file_id)
                       or (c.method == "download" and c.params.get("file_path") == path) for c in self.calls)

    def files_sent(self, chat_id: int) -> list[dict]:
        with self.cond:
            return [f for f in self.received if str(f["chat_id"]) == str(chat_id)]

    def fail_next(self, method: str, status: int, retry_after: int | None = None, times: int = 1) -> None:
        with self.cond:
            self.failures.extend([(method, status, retry_after)] * times)

    def sent(self, chat_id: int | None = None, method: str | None = None) -> list[Call]:
        with self.cond:
            return [c for c in self.calls if (method is None or c.method == method)
                    and (chat_id is None or str(c.params.get("chat_id")) == str(chat_id))]

    def texts(self, chat_id: int) -> list[str]:
        """What the chat shows now, oldest first (edits applied)."""
        with self.cond:
            return [m["text"] for m in self.messages.values() if str(m["chat"]["id"]) == str(chat_id)]

    def wait_text(self, chat_id: int, needle: str, timeout: float = 30) -> str:
        return wait_until(lambda: next((t for t in self.texts(chat_id) if needle in t), None), timeout=timeout,
                          interval=0.05, what=f"{needle!r} in chat {chat_id}")

    def confirmed(self) -> int:
        """The highest update id the bot confirmed (by asking for a later offset)."""
        with self.cond:
            return max([int(c.params.get("offset", 0)) - 1 for c in self.calls if c.method == "getUpdates"] or [0])

    # -- the wire ---------------------------------------------------------------------------------------

    def _message_id(self) -> int:
        with self.cond:
            self.next_message += 1
            return self.next_message

    def _push(self, update: dict) -> int:
        with self.cond:
            update_id = self.next_update
            self.next_update += 1
            self.updates.append({"update_id": update_id, **update})
            self.cond.notify_all()
        return update_id

    def _handle(self, handler: loopback.QuietHandler) -> None:
        if handler.path.startswith(f"/file/bot{self.token}/"):
            return self._download(handler, handler.path[len(f"/file/bot{self.token}/"):])
        prefix = f"/bot{self.token}/"
        if not handler.path.startswith(prefix):
            return self._reply(handler, 401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
        method = handler.path[len(prefix):].split("?")[0]
        params = _params(handler)
        with self.cond:
            self.calls.append(Call(method, params))
            failure = next((f for f in self.failures if f[0] == method), None)
            if failure:
                self.failures.remove(failure)
        if failure:
            _m, status, retry = failure
            body = {"ok": False, "error_code": status, "description": "Too Many Requests" if status == 429 else "Bad"}
            if retry is not None:
                body["parameters"] = {"retry_after": retry}
            return self._reply(handler, status, body)
        answer = getattr(self, f"_m_{method}", None)
        if answer is None:
            return self._reply(handler, 404, {"ok": False, "error_code": 404, "description": "Not Found"})
        try:
            result = answer(params)
        except _Refused as exc:
            return self._reply(handler, exc.status, {"ok": False, "error_code": exc.status, "description": str(exc)})
        return self._reply(handler, 200, {"ok": True, "result": result})

    def _download(self, handler: loopback.QuietHandler, file_path: str) -> None:
        with self.cond:
            self.calls.append(Call("download", {"file_path": file_path}))
            data = next((d for p, d in self.files.values() if p == file_path), None)
        if data is None:
            return self._reply(handler, 404, {"ok": False, "error_code": 404, "description": "Not Found"})
        handler.answer(200, data, "application/octet-stream")

    @staticmethod
    def _reply(handler: loopback.QuietHandler, status: int, body: dict) -> None:
        try:
            handler.answer(status, json.dumps(body).encode(), "application/json")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the bot hung up on a long poll (it is stopping)

    def _m_getMe(self, _p):
        return BOT

    def _m_deleteWebhook(self, _p):
        return True

    def _m_setMyCommands(self, _p):
        return True

    def _m_sendChatAction(self, _p):
        return True

    def _m_answerCallbackQuery(self, _p):
        return True

    def _m_getUpdates(self, p):
        offset, timeout = int(p.get("offset") or 0), float(p.get("timeout") or 0)
        deadline = time.monotonic() + min(timeout, 30)
        with self.cond:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            while not self.updates and time.monotonic() < deadline:
                self.cond.wait(max(0.0, deadline - time.monotonic()))
            return list(self.updates[: int(p.get("limit") or 100)])

    def _m_getFile(self, p):
        with self.cond:
            stored = self.files.get(p["file_id"])
        if stored is None:  # the real API: "Bad Request: file is too big" past 20 MB
            raise _Refused(400, "Bad Request: file is too big")
        return {"file_id": p["file_id"], "file_unique_id": f"u{p['file_id']}", "file_size": len(stored[1]),
                "file_path": stored[0]}

    def _file_sent(self, method: str, field_name: str, p: dict) -> dict:
        data = p.get(field_name)
        data = data.encode() if isinstance(data, str) else data
        chat_id = int(p["chat_id"])
        message = {"message_id": self._message_id(), "date": int(time.time()),
                   "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"}, "from": BOT}
        with self.cond:
            self.received.append({"method": method, "chat_id": chat_id, "data": data, "caption": p.get("caption"),
                                  "filename": p.get(f"{field_name}__filename")})
        entry = {"file_id": f"sent{message['message_id']}", "file_unique_id": f"us{message['message_id']}",
                 "file_size": len(data or b"")}
        media: Any = [{**entry, "width": 1, "height": 1}] if field_name == "photo" else {**entry, "duration": 1} \
            if field_name in ("voice", "audio") else entry
        return {**message, field_name: media, **({"caption": p["caption"]} if p.get("caption") else {})}

    def _m_sendPhoto(self, p):
        return self._file_sent("sendPhoto", "photo", p)

    def _m_sendVoice(self, p):
        return self._file_sent("sendVoice", "voice", p)

    def _m_sendAudio(self, p):
        return self._file_sent("sendAudio", "audio", p)

    def _m_sendDocument(self, p):
        return self._file_sent("sendDocument", "document", p)

    def _m_sendMessage(self, p):
        chat_id = int(p["chat_id"])
        message = {"message_id": self._message_id(), "date": int(time.time()),
                   "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                   "from": BOT, "text": p.get("text", "")}
        markup = _json(p.get("reply_markup"))
        with self.cond:
            self.messages[message["message_id"]] = {**message, "reply_markup": markup}
        return {**message, **({"reply_markup": markup} if markup else {})}

    def _m_editMessageText(self, p):
        with self.cond:
            shown = self.messages[int(p["message_id"])]
            shown["text"] = p.get("text", "")
            if "reply_markup" in p:
                shown["reply_markup"] = _json(p.get("reply_markup"))
            return {k: v for k, v in shown.items() if k != "reply_markup" or v}

    def _m_editMessageReplyMarkup(self, p):
        with self.cond:
            shown = self.messages[int(p["message_id"])]
            shown["reply_markup"] = _json(p.get("reply_markup"))
            return {k: v for k, v in shown.items() if k != "reply_markup" or v}


class _Refused(Exception):
    def __init__(self, status: int, description: str) -> None:
        super().__init__(description)
        self.status = status


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _params(handler: BaseHTTPRequestHandler) -> dict[str, Any]:
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length) if length else b""
    kind = handler.headers.get("Content-Type", "")
    if "application/json" in kind:
        return json.loads(raw or b"{}")
    if "multipart/form-data" in kind:
        message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {kind}\r\n\r\n".encode() + raw)
        params: dict[str, Any] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            params[name] = part.get_content()
            if part.get_filename():
                params[f"{name}__filename"] = part.get_filename()
        return params
    return dict(parse_qsl(raw.decode()))
