"""What the sandbox's proxy lets through, judged on the classifier with a stub resolver: nothing connects."""

from __future__ import annotations

import pytest

from services.worker.sandbox.reach import Reach
from shared.config import load_settings
from shared.security.addresses import AddressRefused, Allowlist
from shared.security.stack_hosts import stack_endpoints, stack_hosts

pytestmark = pytest.mark.once

PUBLIC = "93.184.215.14"
ANSWERS = {"example.test": [PUBLIC], "nas.lan": ["192.168.1.20"], "rebind.test": [PUBLIC, "127.0.0.1"],
           "redis": ["172.18.0.3"], "postgres": ["172.18.0.4"], "api": [PUBLIC], "worker": [PUBLIC]}


def stub(host: str, port: int) -> list[str]:
    return ANSWERS[host]


def compose_like(**update):
    base = {"redis_url": "redis://:pw@redis:6379/0", "database_url": "postgresql+psycopg://u:p@postgres/hstack",
            "api_host": "0.0.0.0", "api_port": 8642, "terminal_network_allow": ""}
    return Reach.from_settings(load_settings().model_copy(update={**base, **update}))


@pytest.mark.parametrize("host", ["10.0.0.5", "172.16.3.4", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                                  "fd00::1", "fe80::1", "224.0.0.1", "::", "nas.lan", "rebind.test"])
def test_private_link_local_and_rebinding_destinations_are_refused(host):
    with pytest.raises(AddressRefused):
        Reach().addresses(host, 443, resolver=stub)


def test_a_public_name_goes_to_the_address_that_was_judged():
    assert [str(a) for a in Reach().addresses("example.test", 443, resolver=stub)] == [PUBLIC]


@pytest.mark.parametrize("host,port", [("redis", 6379), ("postgres", 5432), ("api", 8642), ("worker", 80),
                                       ("172.18.0.3", 6379)])
def test_the_stacks_own_services_are_refused(host, port):
    with pytest.raises(AddressRefused):
        compose_like().addresses(host, port, resolver=stub)


def test_allowing_the_services_network_still_refuses_the_services():
    """An operator who opens 172.16.0.0/12 for a LAN host does not open Redis or Postgres by address."""
    reach = compose_like(terminal_network_allow="172.16.0.0/12")
    with pytest.raises(AddressRefused, match="stack's own service at redis:6379"):
        reach.addresses("172.18.0.3", 6379, resolver=stub)
    with pytest.raises(AddressRefused, match="postgres"):
        reach.addresses("172.18.0.4", 5432, resolver=stub)
    assert reach.addresses("172.18.0.9", 443, resolver=stub)


def test_an_api_bound_to_every_address_is_refused_on_every_internal_address():
    reach = compose_like(terminal_network_allow="127.0.0.1,10.0.0.0/8")
    for host in ("127.0.0.1", "10.1.2.3"):
        with pytest.raises(AddressRefused, match="8642"):
            reach.addresses(host, 8642, resolver=stub)
    assert reach.addresses("10.1.2.3", 8080, resolver=stub)


def test_naming_a_stack_host_is_the_only_way_to_allow_it():
    assert compose_like(terminal_network_allow="redis").addresses("redis", 6379, resolver=stub)


def test_the_stack_hosts_come_from_the_settings():
    settings = load_settings().model_copy(update={"redis_url": "redis://:pw@cache.internal:6380/0",
                                                  "database_url": None, "api_host": "127.0.0.1"})
    assert ("cache.internal", 6380) in stack_endpoints(settings) and ("127.0.0.1", settings.api_port) in \
        stack_endpoints(settings)
    assert "cache.internal" in stack_hosts(settings) and "127.0.0.1" not in stack_hosts(settings)


def test_a_bad_allow_entry_refuses_to_start():
    with pytest.raises(ValueError, match="TERMINAL_NETWORK_ALLOW|not a host name"):
        load_settings(TERMINAL_NETWORK_ALLOW="10.0.0.0/8, not a host!")
    assert Allowlist.parse("nas.lan, 10.0.0.0/8").allows_host("nas.lan")
