"""Webhook routes as the api last described them, so outside traffic does not turn into api calls.

A found route is kept `ttl` seconds (a deleted route or a new secret takes that long to reach the gateway);
an unknown name is remembered as unknown for `miss_ttl` seconds, in a table of its own so that made-up names
never push real routes out; concurrent lookups of one name share one api call. At most `per_minute` lookups
reach the api a minute, whatever the number of senders: past that, a route seen before is served as last
seen and any other name is refused as busy.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

from services.gateway.client import ApiClient, ApiError
from services.gateway.windows import Windows

HIT_TTL_SECONDS = 30.0
MISS_TTL_SECONDS = 10.0
MAX_NAMES = 4096
LOOKUPS_PER_MINUTE = 600


class LookupsExhausted(Exception):
    """The api was asked about too many names this minute; this one was not known before."""


class RouteCache:
    def __init__(self, api: ApiClient, *, ttl: float = HIT_TTL_SECONDS, miss_ttl: float = MISS_TTL_SECONDS,
                 max_names: int = MAX_NAMES, per_minute: int = LOOKUPS_PER_MINUTE) -> None:
        self.api, self.ttl, self.miss_ttl, self.max_names = api, ttl, miss_ttl, max_names
        self.found: OrderedDict[str, tuple[float, dict]] = OrderedDict()
        self.missing: OrderedDict[str, float] = OrderedDict()
        self.lookups = Windows(per_minute, max_keys=1)
        self.asking: dict[str, asyncio.Future] = {}

    async def get(self, name: str) -> dict | None:
        """The route, or None when the api has no route of that name; LookupsExhausted, or the api's other
        errors, when it cannot be told."""
        now = time.monotonic()
        found = self.found.get(name)
        if found is not None and found[0] > now:
            return found[1]
        if self.missing.get(name, 0.0) > now:
            return None
        pending = self.asking.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        if not self.lookups.take("api"):
            if found is not None:
                return found[1]
            raise LookupsExhausted(name)
        return await self._ask_once(name)

    async def _ask_once(self, name: str) -> dict | None:
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

    async def _ask(self, name: str) -> dict | None:
        try:
            route = await self.api.webhook_route(name)
        except ApiError as exc:
            if exc.status != 404:
                raise
            _remember(self.missing, name, time.monotonic() + self.miss_ttl, self.max_names)
            self.found.pop(name, None)
            return None
        _remember(self.found, name, (time.monotonic() + self.ttl, route), self.max_names)
        self.missing.pop(name, None)
        return route


def _remember(table: OrderedDict, name: str, value, limit: int) -> None:
    table[name] = value
    table.move_to_end(name)
    while len(table) > limit:
        table.popitem(last=False)
