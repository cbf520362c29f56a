"""The one place platforms plug in: `register()` fills the registry at start-up; a new platform is one module
with a `Platform` class and one line in `register()`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from services.gateway.context import Gateway

log = logging.getLogger(__name__)


class Platform(Protocol):
    """A running adapter: started and stopped by the gateway, able to send a reply to one of its chats."""

    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, chat_id: str, text: str, ref: str | None = None) -> None:
        """Deliver one reply; raise DeliveryError (with a retry hint) when it could not be sent."""


# A factory gets the gateway and answers its platform, or None when it is not configured.
Factory = Callable[["Gateway"], "Platform | None"]


@dataclass
class Registry:
    factories: dict[str, Factory] = field(default_factory=dict)

    def add(self, name: str, factory: Factory) -> None:
        if name in self.factories:
            raise ValueError(f"platform {name!r} is registered twice")
        self.factories[name] = factory

    def build(self, gateway: "Gateway") -> dict[str, "Platform"]:
        """The configured platforms, by name."""
        built = {}
        for name, factory in self.factories.items():
            platform = factory(gateway)
            if platform is None:
                log.info("platform %s is not configured", name)
                continue
            built[name] = platform
        return built


def register(registry: Registry) -> Registry:
    """Every platform the gateway knows: the webhook platform always serves, Telegram when a token is set."""
    from services.gateway.platforms import telegram, webhook

    registry.add("webhook", webhook.create)
    registry.add("telegram", telegram.create)
    return registry
