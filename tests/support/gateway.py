"""The gateway as a real process beside a test Stack, talking to a fake Bot API."""

from __future__ import annotations


from tests.support.env import free_port, reachable
from tests.support.processes import Proc, Stack
from tests.support.waiting import wait_until

GATEWAY_KEY = "e2e-gateway-key-0123456789abcdef"


def gateway_env() -> dict[str, str]:
    """What the api of a Stack needs to know the gateway's key."""
    return {"GATEWAY_API_KEY": GATEWAY_KEY}


def start_gateway(stack: Stack, *, telegram=None, port: int | None = None, **env: str) -> tuple[Proc, int]:
    """Spawn `python -m services.gateway`; ready once its webhook port accepts connections."""
    port = port or free_port()
    extra = {"GATEWAY_API_KEY": GATEWAY_KEY, "GATEWAY_PORT": str(port), "GATEWAY_HOST": "127.0.0.1",
             "GATEWAY_API_URL": stack.base_url, **env}
    if telegram is not None:
        extra.update(TELEGRAM_BOT_TOKEN=telegram.token, TELEGRAM_API_URL=telegram.url)
    else:
        extra["TELEGRAM_BOT_TOKEN"] = ""
    proc = stack.spawn("gateway", ["-m", "services.gateway"], **extra)

    def ready() -> bool:
        if not proc.alive():
            raise RuntimeError(f"the gateway exited:\n{proc.log()[-3000:]}")
        return reachable("127.0.0.1", port) and (telegram is None or bool(telegram.sent(method="getUpdates")))

    wait_until(ready, timeout=30, interval=0.05, what="the gateway to be ready")
    return proc, port
