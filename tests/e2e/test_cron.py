"""Scheduled jobs with the real processes (api, worker, curator's beat, gateway) and a fake Bot API; time moves
by restarting the processes with the clock offset every service reads (HSTACK_CLOCK_OFFSET_SECONDS).

One story, in order: the agent schedules "remind me in 20 minutes" from Telegram; the gateway is killed with
SIGKILL before the run; 21 minutes later the run happens, and once the gateway is back its answer arrives in
that chat exactly once. A run whose model call fails delivers "failed: why". A daily job across three days
of the whole stack being down runs once and says it ran late."""

from __future__ import annotations

import signal
from datetime import datetime, timedelta, timezone

import pytest

from tests.e2e.test_gateway_telegram import approve, code_in
from tests.fakes.model import fail, text, tool_call
from tests.fakes.telegram import FakeTelegram
from tests.support.gateway import gateway_env, start_gateway
from tests.support.processes import Stack
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.once]

CHAT = 6101


@pytest.fixture(scope="module")
def stack(fake_model, telegram):
    s = Stack(model_url=fake_model.base_url,
              env_overrides={**gateway_env(), "APPROVAL_MODE": "manual", "TERMINAL_SANDBOX": "none",
                             "CRON_TICK_SECONDS": "0.5", "OUTBOX_BACKOFF_BASE_SECONDS": "0.2"})
    with s:
        s.procs_by_name = {"api": s.start_api(), "worker": s.start_worker(), "curator": s.start_curator()}
        s.gateway, s.gateway_port = start_gateway(s, telegram=telegram)
        yield s


def restart(stack: Stack, telegram: FakeTelegram, offset: timedelta, *, gateway: bool = True) -> None:
    """Stop the api, worker and curator (and a live gateway), then start them living `offset` ahead."""
    for proc in [*stack.procs_by_name.values(), stack.gateway]:
        proc.stop(20)
    stack.env["HSTACK_CLOCK_OFFSET_SECONDS"] = str(int(offset.total_seconds()))
    stack.procs_by_name = {"api": stack.start_api(), "worker": stack.start_worker(),
                           "curator": stack.start_curator()}
    if gateway:
        start_gateway_again(stack, telegram)


def start_gateway_again(stack: Stack, telegram: FakeTelegram) -> None:
    stack.gateway, stack.gateway_port = start_gateway(stack, telegram=telegram, port=stack.gateway_port)


def runs(stack: Stack, key: str, job_id: str) -> list[dict]:
    with stack.client(key) as http:
        return http.get(f"/v1/cron/jobs/{job_id}/runs").raise_for_status().json()


def settled(stack: Stack, key: str, job_id: str, count: int = 1) -> list[dict]:
    """The job's runs once `count` of them have ended."""
    return wait_until(lambda: (r := runs(stack, key, job_id)) and sum(x["status"] != "running" for x in r) >= count
                      and r, timeout=60, what=f"{count} settled run(s) of {job_id}")


def sent_to_chat(stack: Stack, needle: str) -> list[dict]:
    with stack.client() as admin:
        return [i for status in ("pending", "sent", "failed")
                for i in admin.get("/v1/admin/outbox", params={"status": status}).json()
                if i["chat_id"] == str(CHAT) and needle in (i["text"] or "")]


def test_reminder_gateway_kill_failure_and_three_days_down(stack, telegram, fake_model):
    model = fake_model
    model.reset()
    key = stack.create_user("cron-ann")
    telegram.user_says(CHAT, "hello", first_name="Ann")
    assert approve(stack, code_in(telegram.wait_text(CHAT, "pairing code")), user="cron-ann") == 0

    # The agent schedules the reminder from the chat.
    model.on("remind me in 20 minutes", tool_call([("cronjob", {"action": "create", "schedule": "in 20 minutes",
                                                                "prompt": "Remind the user to call mum."}, "c1")]),
             text("I will remind you in 20 minutes."))
    telegram.user_says(CHAT, "remind me in 20 minutes to call mum")
    telegram.wait_text(CHAT, "I will remind you in 20 minutes.")
    with stack.client(key) as http:
        [reminder] = http.get("/v1/cron/jobs").json()
    assert reminder["deliver"] == f"telegram:{CHAT}"

    # The model fails a run: "failed: why" reaches the chat, and the run says failed.
    with stack.client(key) as http:
        broken = http.post("/v1/cron/jobs", json={"schedule": "in 30 days", "prompt": "Summarise the weather.",
                                                   "name": "weather", "deliver": f"telegram:{CHAT}"}).json()
        model.on("Summarise the weather.", fail(400, "bad request from the provider"))
        http.post(f"/v1/cron/jobs/{broken['id']}/run").raise_for_status()
    [failed] = settled(stack, key, broken["id"])
    assert failed["status"] == "failed" and failed["error"]
    assert "[weather] failed:" in telegram.wait_text(CHAT, "[weather] failed:")

    # A daily job, due next about twelve hours from now: never inside the reminder's 21-minute jump, where its
    # run's recalled context would quote the reminder's prompt.
    daily_at = f"0 {(datetime.now(timezone.utc) + timedelta(hours=12)).hour} * * *"
    with stack.client(key) as http:
        daily = http.post("/v1/cron/jobs", json={"schedule": daily_at, "prompt": "Morning briefing please.",
                                                  "name": "briefing", "timezone": "UTC",
                                                  "deliver": f"telegram:{CHAT}"}).json()

    # The gateway dies just before the reminder's run; the run happens 21 minutes later without it.
    stack.gateway.signal(signal.SIGKILL)
    stack.gateway.popen.wait(10)
    model.on("Remind the user to call mum.", text("Time to call mum!"))
    restart(stack, telegram, timedelta(minutes=21), gateway=False)
    [done] = settled(stack, key, reminder["id"])
    assert done["status"] == "completed" and done["output"] == "Time to call mum!"
    start_gateway_again(stack, telegram)
    telegram.wait_text(CHAT, "Time to call mum!", timeout=60)
    wait_until(lambda: [i for i in sent_to_chat(stack, "Time to call mum!") if i["status"] == "sent"],
               timeout=30, what="the reminder marked sent")
    assert len(sent_to_chat(stack, "Time to call mum!")) == 1
    assert sum("Time to call mum!" in t for t in telegram.texts(CHAT)) == 1, "delivered exactly once"

    # The whole stack is down for three days past the daily job's time: one run, said to be late.
    due = datetime.fromisoformat(daily["next_run_at"])
    model.on("Morning briefing please.", text("Here is your briefing."))
    restart(stack, telegram, due - datetime.now(timezone.utc) + timedelta(days=3, hours=1))
    [late] = settled(stack, key, daily["id"])
    assert late["status"] == "completed" and late["late_by_seconds"] >= 3 * 86400
    said = telegram.wait_text(CHAT, "Here is your briefing.", timeout=60)
    assert "ran late by 3 days" in said
    with stack.client(key) as http:
        job = http.get(f"/v1/cron/jobs/{daily['id']}").json()
    assert job["last_status"] == "completed" and len(runs(stack, key, daily["id"])) == 1
    assert sum("Time to call mum!" in t for t in telegram.texts(CHAT)) == 1
    telegram.user_says(CHAT, "/cron")
    listing = telegram.wait_text(CHAT, "Scheduled jobs:")
    assert f"briefing — {daily_at} (active)" in listing and "last completed" in listing
    telegram.user_says(CHAT, f"/cron pause {daily['id']}")
    telegram.wait_text(CHAT, f"Job {daily['id']}: pause done.")
    with stack.client(key) as http:
        assert http.get(f"/v1/cron/jobs/{daily['id']}").json()["status"] == "paused"
