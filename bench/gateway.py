"""`make bench`: the gateway's added latency, its memory, and messages per second across 50 chats.

Real api, worker and gateway processes; a fake Telegram Bot API over real HTTP; the scripted model answering
at once. Prints figures, asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import time

import psutil

os.environ.setdefault("TEST_DATABASE", "sqlite")
from tests.support import env as test_env  # noqa: E402  (fixes the environment before Settings are read)

ENV = test_env.prepare()

from tests.fakes.model import FakeModel  # noqa: E402
from tests.fakes.telegram import FakeTelegram  # noqa: E402
from tests.support.gateway import gateway_env, start_gateway  # noqa: E402
from tests.support.processes import Stack, wait_for_turn  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402

CHATS = 50
MESSAGES_PER_CHAT = 4
LATENCY_SAMPLES = 40
FIRST_CHAT = 900_000


def first_send_after(telegram: FakeTelegram, chat: int, after: float) -> float | None:
    times = [c.at for c in telegram.sent(chat, "sendMessage") if c.at >= after]
    return min(times) if times else None


def bench_latency(telegram: FakeTelegram) -> list[float]:
    """Update injected → the bot's first sendMessage in that chat, one message at a time, ms."""
    samples = []
    for i in range(LATENCY_SAMPLES + 5):
        start = time.monotonic()
        telegram.user_says(FIRST_CHAT, f"ping {i}")
        sent = wait_until(lambda: first_send_after(telegram, FIRST_CHAT, start), timeout=30, interval=0.002,
                          what="the first sendMessage")
        wait_until(lambda: any(f"ping {i}" in t for t in telegram.texts(FIRST_CHAT)), timeout=30, interval=0.005)
        time.sleep(0.05)  # let the final edit land before the next sample
        if i >= 5:
            samples.append((sent - start) * 1000)
    return samples


def bench_api_only(stack: Stack, key: str) -> list[float]:
    """The same turn without the gateway: POST → its first message.delta over SSE, ms (what the gateway's
    first sendMessage waits for)."""
    samples = []
    with stack.client(key) as c:
        sid = c.post("/v1/sessions", json={}).json()["id"]
        for i in range(LATENCY_SAMPLES + 5):
            start = time.perf_counter()
            turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": f"direct {i}"}).json()
            with c.stream("GET", f"/v1/turns/{turn['id']}/events") as response:
                for line in response.iter_lines():
                    if line.startswith("event: message.delta"):
                        break
            elapsed = (time.perf_counter() - start) * 1000
            wait_for_turn(c, turn["id"], timeout=30)
            if i >= 5:
                samples.append(elapsed)
    return samples


def bench_throughput(telegram: FakeTelegram) -> tuple[float, float]:
    """CHATS chats each send MESSAGES_PER_CHAT messages at once; (seconds until every reply shows, msgs/s)."""
    chats = [FIRST_CHAT + 1 + n for n in range(CHATS)]
    start = time.monotonic()
    for m in range(MESSAGES_PER_CHAT):
        for chat in chats:
            telegram.user_says(chat, f"load {m} from {chat}")

    def all_answered() -> bool:
        return all(sum("You said: load" in t for t in telegram.texts(chat)) >= MESSAGES_PER_CHAT for chat in chats)

    wait_until(all_answered, timeout=600, interval=0.1, what="every chat's replies")
    seconds = time.monotonic() - start
    return seconds, CHATS * MESSAGES_PER_CHAT / seconds


def main() -> int:
    model = FakeModel(port=ENV.model_port).start()
    telegram = FakeTelegram().start()
    allowed = ",".join(str(FIRST_CHAT + n) for n in range(CHATS + 1))
    try:
        with Stack(model_url=model.base_url, env_overrides={**gateway_env(), "TELEGRAM_ALLOWED_USERS": allowed}) as stack:
            stack.start_api()
            stack.start_worker()
            gateway, _port = start_gateway(stack, telegram=telegram)
            print("Hermes Stack gateway benchmark (real api + worker + gateway, fake Bot API, instant model)\n")
            through_gateway = bench_latency(telegram)
            direct = bench_api_only(stack, stack.create_user("bench-direct"))
            g50, d50 = statistics.median(through_gateway), statistics.median(direct)
            print(f"Telegram update → first sendMessage, p50 {g50:.1f} ms ({LATENCY_SAMPLES} messages, one chat)")
            print(f"  the same turn straight through the api (POST → first message.delta), p50 {d50:.1f} ms")
            print(f"  gateway added latency, p50 ≈ {g50 - d50:.1f} ms")
            seconds, rate = bench_throughput(telegram)
            print(f"\n{CHATS} chats × {MESSAGES_PER_CHAT} messages: every reply shown in {seconds:.1f} s "
                  f"= {rate:.1f} messages/s through one gateway (one worker process)")
            rss = psutil.Process(gateway.popen.pid).memory_info().rss / 2**20
            print(f"gateway RSS after load: {rss:.1f} MB")
    finally:
        telegram.stop()
        model.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
