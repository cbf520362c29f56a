"""The bench's scripted model in a process of its own: it answers over HTTP and reports what it received."""

from __future__ import annotations

import os
import time

import httpx

from bench.model_process import ModelProcess


def test_it_serves_from_another_process_and_records_each_request_on_the_shared_clock():
    with ModelProcess() as model:
        assert model.pid != os.getpid()
        before = time.monotonic()
        answer = httpx.post(f"{model.base_url}/chat/completions", timeout=30,
                            json={"model": "scripted", "messages": [{"role": "user", "content": "hello there"}]})
        assert answer.json()["choices"][0]["message"]["content"] == "You said: hello there"
        [seen] = model.requests
        assert seen.body["messages"][0]["content"] == "hello there" and before <= seen.at <= time.monotonic()
        assert model.request_count() == 1 and model.requests_since(1) == []
        model.latency = 0.5
        assert model.latency == 0.5
        model.reset()
        assert model.request_count() == 0 and model.latency == 0.0
    assert model.pid is None
