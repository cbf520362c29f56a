"""Webhook routes as the api last described them, so outside traffic does not turn into api calls.

A found route is kept `ttl` seconds (a deleted route or a new secret takes that long to reach the gateway);
an unknown name is remembered as unknown for `miss_ttl` seconds; concurrent lookups of one name share one
api call; the table holds at most `max_names` names.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

from services.gateway.client import ApiClient, ApiError

HIT_TTL_SECONDS = 30.0
MISS_TTL_SECONDS = 10.0
MAX_NAMES = 4096


class RouteCache:
    def __init__(self, api: ApiClient, *, ttl: float = HIT_TTL_SECONDS, miss_ttl: float = MISS_TTL_SECONDS,
                 max_names: int = MAX_NAMES) -> None:
        self.api, self.ttl, self.miss_ttl, self.max_names = api, ttl, miss_ttl, max_names
        self.known: OrderedDict[str, tuple[float, dict | None]] = OrderedDict()
        self.asking: dict[str, asyncio.Future] = {}

    async def get(self, name: str) -> dict | None:
        """The route, or None when the api has no route of that name; other api errors propagate."""
        found = self.known.get(name)
        if found is not None and found[0] > time.monotonic():
            self.known.move_to_end(name)
            return found[1]
        pending = self.asking.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        pending = self.asking[name] = asyncio.get_running_loop().create_future()
        try:
            route = await self._ask(name)
        except BaseException as exc:
            pending.set_exception(exc)
            pending.exception()  # retrieved here: a lookup nobody else waited for must not warn
            raise
        else:
            pending.set_result(route)
            return route
        finally:
            del self.asking[name]

    def forget(self, name: str) -> None:
        self.known.pop(name, None)

    async def _ask(self, name: str) -> dict | None:
        try:
            route = await self.api.webhook_route(name)
        except ApiError as exc:
            if exc.status != 404:
                raise
            route = None
        self.known[name] = (time.monotonic() + (self.ttl if route else self.miss_ttl), route)
        self.known.move_to_end(name)
        while len(self.known) > self.max_names:
            self.known.popitem(last=False)
        return route
