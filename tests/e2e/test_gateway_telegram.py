"""The gateway with the real api, worker and a fake Bot API: pairing, conversations, commands, restarts."""

from __future__ import annotations

import signal

import pytest

from tests.fakes.model import text
from tests.fakes.telegram import FakeTelegram
from tests.support.gateway import gateway_env, start_gateway
from tests.support.processes import Stack
from tests.support.waiting import wait_until
from services.cli.main import main as hstack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def telegram():
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def stack(fake_model, telegram):
    s = Stack(model_url=fake_model.base_url, env_overrides=gateway_env())
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
