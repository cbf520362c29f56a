"""The gateway with the real api, worker and a fake Bot API: pairing, conversations, commands, restarts."""

from __future__ import annotations

import signal

import pytest


from tests.fakes.model import text, tool_call
from tests.fakes.telegram import FakeTelegram
from tests.support.gateway import gateway_env, start_gateway
from tests.support.processes import Stack
from tests.support.waiting import wait_until
from services.cli.main import main as hstack

pytestmark = [pytest.mark.e2e, pytest.mark.once]  # process behaviour: see tests/conftest.py


@pytest.fixture(scope="module")
def stack(fake_model, telegram):
    s = Stack(model_url=fake_model.base_url,
              env_overrides={**gateway_env(), "APPROVAL_MODE": "manual", "TERMINAL_SANDBOX": "none"})
    with s:
        s.start_api()
        s.start_worker()
        s.gateway, s.gateway_port = start_gateway(s, telegram=telegram)
        yield s


def approve(stack: Stack, code: str, user: str | None = None, capsys=None) -> int:
    args = ["--url", stack.base_url, "--admin-key", stack.admin_key, "pairing", "approve", "telegram", code]
    return hstack(args + (["--user", user] if user else []))


def code_in(message: str) -> str:
    return message.split("pairing code: ", 1)[1].split()[0]


def test_an_unknown_user_gets_only_a_code_then_the_owner_approves_and_the_agent_answers(stack, telegram, model):
    model.on("secret plans", text("Here are the plans."))
    telegram.user_says(5001, "tell me the secret plans", first_name="Mallory")
    reply = telegram.wait_text(5001, "pairing code")
    assert "hstack pairing approve telegram" in reply
    assert not any("secret plans" in str(c.body) for c in model.requests), "the agent never saw the message"
    assert approve(stack, code_in(reply).lower()) == 0
    telegram.user_says(5001, "now the secret plans please", first_name="Mallory")
    telegram.wait_text(5001, "Here are the plans.")


def paired(stack: Stack, telegram: FakeTelegram, user_id: int, name: str) -> None:
    """Pair a Telegram user through the real flow: a code in the chat, the owner's CLI approval."""
    telegram.user_says(user_id, "hello", first_name=name)
    reply = telegram.wait_text(user_id, "pairing code")
    assert approve(stack, code_in(reply)) == 0


def model_saw(model, needle: str) -> bool:
    return any(needle in str(r.body) for r in model.requests)


def test_a_message_sent_mid_turn_is_answered_after_the_first(stack, telegram, model):
    paired(stack, telegram, 5002, "Queue")
    model.on("first question", text("First answer.", latency=2.0))
    model.on("second question", text("Second answer."))
    telegram.user_says(5002, "first question")
    wait_until(lambda: model_saw(model, "first question"), timeout=30, what="the first turn at the model")
    telegram.user_says(5002, "second question")
    telegram.wait_text(5002, "Second answer.")
    shown = telegram.texts(5002)
    assert shown.index("First answer.") < shown.index("Second answer.")


def test_stop_cancels_the_running_turn_and_commands_answer_while_it_runs(stack, telegram, model):
    paired(stack, telegram, 5003, "Stopper")
    model.on("long story", text("Once upon a time.", latency=8.0))
    telegram.user_says(5003, "tell me a long story")
    wait_until(lambda: model_saw(model, "long story"), timeout=30, what="the turn at the model")
    telegram.user_says(5003, "/whoami")
    telegram.wait_text(5003, "You are Stopper")
    telegram.user_says(5003, "/stop")
    telegram.wait_text(5003, "Stopping.")
    telegram.wait_text(5003, "Stopped.")
    assert "Once upon a time." not in telegram.texts(5003)


def test_the_chat_continues_its_session_after_the_gateway_is_killed(stack, telegram, model):
    paired(stack, telegram, 5004, "Phoenix")
    model.on("my name is Rumpel", text("Nice to meet you, Rumpel."))
    telegram.user_says(5004, "my name is Rumpel")
    telegram.wait_text(5004, "Nice to meet you")
    stack.gateway.signal(signal.SIGKILL)
    stack.gateway.popen.wait(10)
    stack.gateway, stack.gateway_port = start_gateway(stack, telegram=telegram, port=stack.gateway_port)
    model.on("what is my name", text("You are Rumpel."))
    telegram.user_says(5004, "what is my name")
    telegram.wait_text(5004, "You are Rumpel.")
    last = [r for r in model.requests if "what is my name" in str(r.body)][-1]
    assert "my name is Rumpel" in str(last.body), "the same session: the earlier message is in the history"


def test_new_starts_a_fresh_session(stack, telegram, model):
    paired(stack, telegram, 5005, "Fresh")
    model.on("remember kiwi", text("Noted kiwi."))
    telegram.user_says(5005, "remember kiwi")
    telegram.wait_text(5005, "Noted kiwi.")
    telegram.user_says(5005, "/new")
    telegram.wait_text(5005, "Started a fresh conversation.")
    model.on("which fruit", text("No idea."))
    telegram.user_says(5005, "which fruit")
    telegram.wait_text(5005, "No idea.")
    last = [r for r in model.requests if "which fruit" in str(r.body)][-1]
    assert "remember kiwi" not in str(last.body)


def test_an_approval_button_resumes_the_parked_turn_and_the_output_reaches_the_chat(stack, telegram, model):
    paired(stack, telegram, 5006, "Approver")
    model.on("clean the build", tool_call([("terminal", {"command": "rm -rf ./build"})]), text("Build cleaned."))
    telegram.user_says(5006, "clean the build")
    telegram.wait_text(5006, "Approval needed")
    asking = next(m for m in telegram.messages.values()
                  if str(m["chat"]["id"]) == "5006" and "Approval needed" in m["text"])
    buttons = asking["reply_markup"]["inline_keyboard"][0]
    assert [b["text"] for b in buttons] == ["Approve", "Approve for session", "Deny"]
    telegram.press(5006, asking["message_id"], buttons[0]["callback_data"])
    telegram.wait_text(5006, "approved once by Approver")
    telegram.wait_text(5006, "Build cleaned.")
    assert not telegram.messages[asking["message_id"]]["reply_markup"], "the buttons are removed"


def test_a_question_shows_buttons_another_users_press_is_refused_and_a_press_resumes_the_same_turn(
        stack, telegram, model):
    """Reproduction: the agent calls clarify in a Telegram chat; a stranger (paired as another user) presses first."""
    paired(stack, telegram, 5014, "Asker")
    paired(stack, telegram, 5015, "Stranger")
    asking = {"question": "Which theme should the site use?", "choices": ["Light", "Dark"]}
    model.on("theme my site", tool_call([("clarify", asking)]), text("Dark theme applied."))
    telegram.user_says(5014, "theme my site")
    telegram.wait_text(5014, "Which theme")
    shown = next(m for m in telegram.messages.values()
                 if str(m["chat"]["id"]) == "5014" and m["text"].startswith("Which theme"))
    buttons = [row[0] for row in shown["reply_markup"]["inline_keyboard"]]
    assert [b["text"] for b in buttons] == ["Light", "Dark"]

    telegram.press(5015, shown["message_id"], buttons[1]["callback_data"], first_name="Stranger")
    wait_until(lambda: any(c.method == "answerCallbackQuery" and "Not yours" in str(c.params.get("text"))
                           for c in telegram.sent(method="answerCallbackQuery")) or None, what="the refusal")
    assert telegram.messages[shown["message_id"]]["reply_markup"], "a stranger's press leaves the buttons"
    assert not model_saw(model, "Dark theme applied") and not model_saw(model, '{"answer": "Dark"}')

    telegram.press(5014, shown["message_id"], buttons[1]["callback_data"], first_name="Asker")
    telegram.wait_text(5014, "Dark theme applied.")
    assert model_saw(model, '{"answer": "Dark"}')
    assert not telegram.messages[shown["message_id"]]["reply_markup"], "the answered question's buttons are removed"


def test_a_telegram_429_is_retried_after_its_retry_after_and_the_reply_arrives(stack, telegram, model):
    paired(stack, telegram, 5007, "Patient")
    model.on("busy bot", text("Eventually delivered."))
    telegram.fail_next("sendMessage", 429, retry_after=1, times=2)
    telegram.user_says(5007, "are you a busy bot")
    telegram.wait_text(5007, "Eventually delivered.")
    assert [c for c in telegram.sent(method="sendMessage") if c.params.get("chat_id") == "5007"]
    with stack.client() as admin:
        sent = [i for i in admin.get("/v1/admin/outbox", params={"status": "sent"}).json()
                if i["chat_id"] == "5007" and i["text"] == "Eventually delivered."]
    assert sent and sent[0]["attempts"] >= 2, "recorded, failed with 429, sent on a later attempt"


def test_a_reply_to_a_turn_running_when_the_gateway_is_killed_arrives_once_after_the_restart(stack, telegram, model):
    paired(stack, telegram, 5008, "Survivor")
    model.on("slow question", text("The slow answer.", latency=6.0))
    telegram.user_says(5008, "a slow question")
    wait_until(lambda: model_saw(model, "slow question"), timeout=30, what="the turn at the model")
    with stack.client() as admin:
        wait_until(lambda: any(i["chat_id"] == "5008" and i["text"] is None
                               for i in admin.get("/v1/admin/outbox", params={"status": "pending"}).json()),
                   timeout=30, what="the reply recorded as the turn started")
    stack.gateway.signal(signal.SIGKILL)
    stack.gateway.popen.wait(10)
    stack.gateway, stack.gateway_port = start_gateway(stack, telegram=telegram, port=stack.gateway_port)
    telegram.wait_text(5008, "The slow answer.", timeout=60)
    with stack.client() as admin:
        wait_until(lambda: [i for i in admin.get("/v1/admin/outbox", params={"status": "sent"}).json()
                            if i["chat_id"] == "5008" and i["text"] == "The slow answer."],
                   timeout=30, what="the reply marked sent")
        mine = [i for s in ("pending", "sent", "failed")
                for i in admin.get("/v1/admin/outbox", params={"status": s}).json() if i["chat_id"] == "5008"]
    assert len(mine) == 1, "one outbox item for the turn, filled in after the restart"
    assert telegram.texts(5008).count("The slow answer.") == 1, "delivered exactly once"


def answered_callbacks(telegram: FakeTelegram) -> list[str]:
    return [str(c.params.get("text", "")) for c in telegram.sent(method="answerCallbackQuery")]


def test_another_users_press_changes_nothing_and_the_owner_still_decides(stack, telegram, model):
    """Reproduction: another user pressing the owner's approval button removed the owner's buttons and the
    runner's pending approval, so the owner's /approve then said nothing was waiting."""
    paired(stack, telegram, 5009, "Keeper")
    paired(stack, telegram, 5010, "Meddler")
    model.on("prune the cache", tool_call([("terminal", {"command": "rm -rf ./cache"})]), text("Cache pruned."))
    telegram.user_says(5009, "prune the cache")
    telegram.wait_text(5009, "Approval needed")
    asking = next(m for m in telegram.messages.values()
                  if str(m["chat"]["id"]) == "5009" and "Approval needed" in m["text"])
    before = len(answered_callbacks(telegram))
    telegram.press(5010, asking["message_id"], asking["reply_markup"]["inline_keyboard"][0][0]["callback_data"],
                   first_name="Meddler")
    wait_until(lambda: answered_callbacks(telegram)[before:], timeout=30, what="the press answered")
    assert answered_callbacks(telegram)[before:] == ["Not for you."]
    assert telegram.messages[asking["message_id"]]["reply_markup"], "the owner's buttons stay"
    telegram.user_says(5009, "/approve")
    telegram.wait_text(5009, "approved once by Keeper")
    telegram.wait_text(5009, "Cache pruned.")


def test_a_strangers_button_press_creates_no_pairing_request(stack, telegram):
    """Reproduction: an unpaired user pressing an approval button was identified like a new message, which
    silently created a pending pairing request for them (and used one of the platform's three slots)."""
    telegram.user_says(5012, "hello", first_name="Stranger")
    reply = telegram.wait_text(5012, "pairing code")
    shown = next(m for m in telegram.messages.values() if m["text"] == reply)
    with stack.client() as admin:
        admin.post("/v1/admin/pairing/deny", json={"platform": "telegram", "platform_user_id": "5012"})
        before = len(answered_callbacks(telegram))
        telegram.press(5012, shown["message_id"], "ap:apr_made_up:once", first_name="Stranger")
        wait_until(lambda: answered_callbacks(telegram)[before:], timeout=30, what="the press answered")
        assert answered_callbacks(telegram)[before:] == ["Not for you."]
        pending = admin.get("/v1/admin/pairing").json()["pending"]
    assert not [p for p in pending if p["platform_user_id"] == "5012"], "no request from a button press"


def test_forget_asks_first_then_deletes_the_chats_conversation(stack, telegram, model):
    """Reproduction: Telegram had no way to delete a conversation; /forget answered with the help text."""
    paired(stack, telegram, 5013, "Forgetful")
    model.on("my locker code is 4417", text("Noted the locker code."))
    telegram.user_says(5013, "my locker code is 4417")
    telegram.wait_text(5013, "Noted the locker code.")
    telegram.user_says(5013, "/forget")
    telegram.wait_text(5013, "Send /forget yes to confirm.")
    telegram.user_says(5013, "/forget yes")
    telegram.wait_text(5013, "Deleted this conversation (2 messages).")
    model.on("what is my locker code", text("I do not know."))
    telegram.user_says(5013, "what is my locker code")
    telegram.wait_text(5013, "I do not know.")
    last = [r for r in model.requests if "what is my locker code" in str(r.body)][-1]
    assert "4417" not in str(last.body), "a new session: the forgotten messages are gone from the history"
