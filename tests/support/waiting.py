"""Wait on a real signal, with a bound: the one polling helper every test uses."""

from __future__ import annotations

import time
from typing import Any, Callable


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, *, interval: float = 0.02,
               what: str = "the condition") -> Any:
    """Poll until `predicate()` is truthy and return its value; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
