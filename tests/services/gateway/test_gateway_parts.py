"""The gateway's pure parts: reply splitting, session keys, the edit throttle, signatures, the queue cap."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.gateway import session_keys, signing
from services.gateway.conversation import MAX_QUEUED, ChatRunner, Throttle
from services.gateway.platforms.telegram_ui import parse_callback
from services.gateway.registry import Registry, register
from services.gateway.text import split

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py


def test_long_replies_split_at_paragraphs_then_lines_within_the_limit():
    paragraphs = ["para %d " % i + "word " * 300 for i in range(6)]
    chunks = split("\n\n".join(paragraphs), 4096)
    assert all(len(c) <= 4096 for c in chunks) and len(chunks) > 1
    assert all(c.startswith("para") for c in chunks), "each chunk starts at a paragraph"
    one_line = "x" * 10_000
    assert [len(c) for c in split(one_line, 4096)] == [4096, 4096, 1808]
    assert split("short") == ["short"]


def test_session_keys_follow_the_anchor():
    assert session_keys.build("telegram", "private", "42", "42") == "agent:main:telegram:dm:42"
    alice = session_keys.build("telegram", "group", "-100", "1")
    bob = session_keys.build("telegram", "group", "-100", "2")
    assert alice != bob and alice == "agent:main:telegram:group:-100:1", "groups: one session per user"
    thread_a = session_keys.build("telegram", "supergroup", "-100", "1", "7")
    thread_b = session_keys.build("telegram", "supergroup", "-100", "2", "7")
    assert thread_a == thread_b, "a thread is shared by its participants"


def test_edits_are_throttled_to_one_a_second_per_chat():
    throttle = Throttle(1.0)
    assert throttle.allow("a") and not throttle.allow("a") and throttle.allow("b")
    throttle.last["a"] = time.monotonic() - 1.01
    assert throttle.allow("a")


def test_v2_and_github_signatures_verify_and_stale_ones_do_not():
    body, now = b'{"text":"hi"}', time.time()
    headers = signing.signed_headers("s3cret", body, now)
    assert signing.verify("s3cret", headers, body, now)[0]
    assert not signing.verify("other", headers, body, now)[0]
    assert not signing.verify("s3cret", headers, body, now + 301)[0]
    import hashlib
    import hmac
    github = {"X-Hub-Signature-256": "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()}
    assert signing.verify("s3cret", github, body, now)[0]
    assert not signing.verify("s3cret", {}, body, now)[0]


def test_callback_data_parses_only_our_buttons():
    assert parse_callback("ap:apr_123:session") == ("apr_123", "session")
    assert parse_callback("ap:apr_123:always") is None and parse_callback("xx") is None


def test_every_platform_is_registered_in_one_place():
    assert set(register(Registry()).factories) == {"webhook", "telegram"}


def test_at_most_32_messages_wait_behind_a_turn():
    class Stuck:
        def __init__(self) -> None:
            self.running = asyncio.Event()

        async def chat_session(self, *_a, **_k):
            self.running.set()
            await asyncio.Event().wait()  # the turn never gets its session: it stays running

    async def scenario():
        api = Stuck()
        runner = ChatRunner(api, "usr", "key", surface=None)
        assert runner.submit("running")
        await asyncio.wait_for(api.running.wait(), 10)  # the first has become the running turn
        accepted = [runner.submit(f"m{i}") for i in range(MAX_QUEUED + 1)]
        runner.task.cancel()
        return accepted

    accepted = asyncio.run(scenario())
    assert accepted == [True] * MAX_QUEUED + [False]


def test_a_review_notice_reaches_the_chat_as_one_line_before_the_answer():
    """What a background review saved is shown in the conversation; on a chat platform it is one
    short message ahead of the next answer."""
    from types import SimpleNamespace

    class Api:
        async def chat_session(self, *_a, **_k):
            return "ses_1"

        async def stream_turn(self, _user, _session, _text, accepted, _attachments=None):
            await accepted("turn_1")
            for kind, data in (("turn.started", {}),
                               ("review.completed", {"summary": "Self-improvement review: saved to memory"}),
                               ("message.delta", {"delta": "Hi"}), ("turn.completed", {"output": "Hi"})):
                yield SimpleNamespace(type=kind, data=data)

        async def turn(self, *_a):
            return {"status": "completed", "output": "Hi"}

    said: list[str] = []

    class Surface:
        async def typing(self):
            pass

        async def preview(self, text, ref):
            return ref

        async def approval(self, data):
            pass

        async def notice(self, text):
            said.append(text)

        async def expect(self, turn_id):
            pass

        async def final(self, text, ref, turn_id):
            said.append(text)

        def release(self, turn_id):
            pass

    asyncio.run(ChatRunner(Api(), "usr", "key", Surface())._run("hello"))
    assert said == ["💾 Self-improvement review: saved to memory", "Hi"]
