"""Keys that open nothing are charged to the client address: a flood of made-up keys gets 429 and no lookups."""

from __future__ import annotations

import secrets
import uuid
from contextlib import contextmanager

import httpx
import pytest

from services.api.main import create_app
from tests.services.api.helpers import error_of
from tests.support.env import free_port
from tests.support.factories import make_user
from tests.support.live import serve_api
from tests.support.statements import statements_of

LIMIT = 5
FLOOD = 60
FLOODER, NEIGHBOUR = "198.51.100.7", "198.51.100.8"  # documentation addresses, named in a header only


@contextmanager
def limited_api(settings, **update):
    """An api allowing LIMIT failed keys a minute per address; its own key prefix keeps its buckets apart."""
    custom = settings.model_copy(update={"auth_failures_per_minute": LIMIT, "rate_limit_per_minute": 10_000,
                                         "broker_key_prefix": f"af-{uuid.uuid4().hex[:8]}:", **update})
    app = create_app(custom)
    app.state.enqueue = lambda name, payload: None
    with serve_api(app) as base_url, httpx.Client(base_url=base_url, timeout=20) as http:
        yield http


def made_up() -> dict[str, str]:
    return {"Authorization": f"Bearer hsk_{secrets.token_urlsafe(32)}"}


def key_lookups(statements: list[str]) -> list[str]:
    return [s for s in statements if "api_keys" in s.lower()]


def test_rotating_made_up_keys_from_one_address_gets_429_and_costs_no_lookup_once_over(settings, db):
    """Reproduction: 1,500 requests from one address, each with a new random bearer key, got 1,500 x 401 and
    no 429, each a database lookup: the request limit counts per key, so every made-up key had a fresh bucket."""
    with limited_api(settings) as http:
        first = [http.get("/v1/sessions", headers=made_up()) for _ in range(LIMIT)]
        with statements_of(db) as statements:
            rest = [http.get("/v1/sessions", headers=made_up()) for _ in range(FLOOD)]

    assert [r.status_code for r in first] == [401] * LIMIT
    assert {r.status_code for r in rest} == {429}
    assert error_of(rest[-1])["code"] == "rate_limited" and int(rest[-1].headers["retry-after"]) >= 1
    assert key_lookups(statements) == []


def test_made_up_admin_keys_are_charged_to_the_address_too(settings):
    """Reproduction: a wrong key on an admin route was looked up (401 or 403?) on every request, without limit."""
    with limited_api(settings) as http:
        answers = [http.get("/v1/users", headers=made_up()).status_code for _ in range(LIMIT + 3)]
    assert answers[:LIMIT] == [401] * LIMIT and set(answers[LIMIT:]) == {429}


def test_a_flooding_address_locks_out_no_other_address_and_not_the_admin_key(settings, db):
    """Another address's valid key is served while one address floods; from the flooding address the admin key
    still works (no lookup needed), but a key this api has not just served gets 429 until the bucket refills:
    telling it from a made-up one would take the lookup the flood is refused."""
    neighbour, unlucky = make_user(db), make_user(db)
    admin = {"Authorization": f"Bearer {settings.admin_api_key.get_secret_value()}"}
    with limited_api(settings, trusted_proxies="127.0.0.1") as http:
        flood = [http.get("/v1/sessions", headers={**made_up(), "X-Forwarded-For": FLOODER}) for _ in range(FLOOD)]
        served = http.get("/v1/sessions", headers={**neighbour.headers, "X-Forwarded-For": NEIGHBOUR})
        owner = http.get("/v1/users", headers={**admin, "X-Forwarded-For": FLOODER})
        same_address = http.get("/v1/sessions", headers={**unlucky.headers, "X-Forwarded-For": FLOODER})

    assert [r.status_code for r in flood[:LIMIT]] == [401] * LIMIT and {r.status_code for r in flood[LIMIT:]} == {429}
    assert served.status_code == 200 and owner.status_code == 200
    assert same_address.status_code == 429 and int(same_address.headers["retry-after"]) >= 1


def test_x_forwarded_for_counts_only_from_a_trusted_proxy(settings):
    """Reproduction: uvicorn believed X-Forwarded-For from any loopback client, so a local flooder naming a new
    address in every request had a fresh bucket each time. With TRUSTED_PROXIES unset the socket peer counts."""
    with limited_api(settings) as http:
        answers = [http.get("/v1/sessions", headers={**made_up(), "X-Forwarded-For": f"198.51.100.{n}"}).status_code
                   for n in range(LIMIT + 3)]
    assert answers[:LIMIT] == [401] * LIMIT and set(answers[LIMIT:]) == {429}


def test_with_redis_unreachable_a_made_up_key_is_still_a_401(settings, db):
    """The failure limiter never takes the api down: without Redis it lets the lookup answer."""
    user = make_user(db)
    with limited_api(settings, redis_url=f"redis://127.0.0.1:{free_port()}/0") as http:
        answers = [http.get("/v1/sessions", headers=made_up()).status_code for _ in range(LIMIT + 2)]
        assert http.get("/v1/sessions", headers=user.headers).status_code == 200
    assert set(answers) == {401}


@pytest.mark.once
def test_an_ipv6_client_counts_by_its_64():
    from services.api.client_address import client_address

    assert client_address({"client": ("2001:db8:1:2::1", 1)}) == client_address({"client": ("2001:db8:1:2:ffff::9", 1)})
    assert client_address({"client": ("2001:db8:1:3::1", 1)}) == "2001:db8:1:3::/64"
    assert client_address({"client": ("::ffff:192.0.2.4", 1)}) == "192.0.2.4"
    assert client_address({"client": ("192.0.2.4", 1)}) == "192.0.2.4"


@pytest.mark.once
def test_every_launcher_of_the_api_leaves_x_forwarded_for_to_the_app(tmp_path, settings):
    """uvicorn's own proxy handling trusts loopback; every way the api is started turns it off."""
    from pathlib import Path

    import yaml

    from services.cli.stack import services

    root = Path(__file__).resolve().parents[3]
    compose = yaml.safe_load((root / "docker-compose.yml").read_text())["services"]["api"]["command"]
    dockerfile = next(line for line in (root / "Dockerfile").read_text().splitlines() if line.startswith("CMD"))
    stack = next(s for s in services(settings, tmp_path) if s.name == "api").argv
    for argv in (compose, dockerfile, stack):
        assert "--no-proxy-headers" in argv
