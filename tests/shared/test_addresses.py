"""The one rule for outbound connections: internal addresses refused unless the operator allows them.

Nothing here connects anywhere: names are resolved by a stub resolver, and literals are judged directly."""

from __future__ import annotations

import pytest

from shared.security.addresses import AddressRefused, Allowlist, as_address, internal_reason, resolve

pytestmark = pytest.mark.once

INTERNAL = ["127.0.0.1", "127.8.9.1", "::1", "10.0.0.5", "172.16.3.4", "192.168.1.10", "169.254.169.254",
            "fe80::1", "fc00::5", "0.0.0.0", "::", "224.0.0.1", "100.64.1.1", "::ffff:127.0.0.1",
            "2002:7f00:1::", "198.18.0.9", "240.0.0.1"]
PUBLIC = ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"]


def stub(answers: dict[str, list[str]]):
    def resolver(host: str, port: int) -> list[str]:
        if host not in answers:
            raise OSError("Name or service not known")
        return answers[host]
    return resolver


@pytest.mark.parametrize("literal", INTERNAL)
def test_every_internal_literal_is_refused(literal):
    assert internal_reason(as_address(literal)) is not None
    with pytest.raises(AddressRefused):
        resolve(literal, 80, Allowlist())


@pytest.mark.parametrize("literal", PUBLIC)
def test_public_literals_pass(literal):
    assert resolve(literal, 443, Allowlist()) == [as_address(literal)]


def test_a_name_is_judged_by_every_address_it_resolves_to():
    resolver = stub({"mixed.example": ["93.184.216.34", "127.0.0.1"], "good.example": ["93.184.216.34"]})
    with pytest.raises(AddressRefused, match="loopback"):
        resolve("mixed.example", 80, Allowlist(), resolver=resolver)
    assert [str(a) for a in resolve("good.example", 80, Allowlist(), resolver=resolver)] == ["93.184.216.34"]


def test_the_operator_allows_by_host_or_cidr():
    resolver = stub({"nas.lan": ["192.168.1.20"]})
    assert resolve("nas.lan", 80, Allowlist.parse("NAS.lan."), resolver=resolver)
    assert resolve("nas.lan", 80, Allowlist.parse("192.168.1.0/24"), resolver=resolver)
    with pytest.raises(AddressRefused):
        resolve("nas.lan", 80, Allowlist.parse("192.168.2.0/24, other.lan"), resolver=resolver)


def test_the_stack_s_own_hosts_are_refused_even_when_public():
    resolver = stub({"redis": ["93.184.216.34"]})
    with pytest.raises(AddressRefused, match="stack's own"):
        resolve("redis", 6379, Allowlist(), stack_hosts=["redis"], resolver=resolver)


def test_unresolvable_names_and_bad_allow_entries_are_said_plainly():
    with pytest.raises(AddressRefused, match="could not be resolved"):
        resolve("nowhere.invalid", 80, Allowlist(), resolver=stub({}))
    with pytest.raises(ValueError, match="not a host name or CIDR"):
        Allowlist.parse("good.lan, bad host!")
