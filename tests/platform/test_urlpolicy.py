"""Callback and webhook url safety rules. Every resolution here goes through a fake resolver."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Awaitable, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockserver.platform.urlpolicy import (
    FLAG,
    ResolvedTarget,
    UrlRefused,
    check_connected_address,
    classify_address,
    is_public_address,
    parse_target,
    pinned_request_args,
    resolve_and_check,
)

FAKE_DNS: dict[str, list[str]] = {
    "hooks.example.com": ["93.184.216.34"],
    "v6.example.com": ["2606:4700:4700::1111"],
    "dual.example.com": ["93.184.216.34", "2606:4700:4700::1111"],
    "internal.example.com": ["10.1.2.3"],
    "rebind.example.com": ["93.184.216.34", "127.0.0.1"],
    "mixed6.example.com": ["2606:4700:4700::1111", "fd00::1"],
    "metadata.example.com": ["169.254.169.254"],
    "mapped.example.com": ["::ffff:192.168.1.1"],
    "cgnat.example.com": ["100.64.0.1"],
    "localhost": ["127.0.0.1", "::1"],
    "app.localhost": ["127.0.0.1"],
    "garbage.example.com": ["not-an-address"],
    "empty.example.com": [],
}


async def fake_resolver(host: str, port: int) -> list[str]:
    if host not in FAKE_DNS:
        raise OSError(f"fake resolver: unknown host {host}")
    return FAKE_DNS[host]


def never_resolve() -> Callable[[str, int], Awaitable[list[str]]]:
    async def resolver(host: str, port: int) -> list[str]:
        raise AssertionError(f"must not resolve {host}")

    return resolver


def check(url: str, *, allow_private: bool = False) -> ResolvedTarget:
    return asyncio.run(resolve_and_check(url, allow_private=allow_private, resolver=fake_resolver))


def reason_of(url: str, *, allow_private: bool = False) -> str:
    with pytest.raises(UrlRefused) as caught:
        check(url, allow_private=allow_private)
    assert caught.value.url == url
    return caught.value.reason


REFUSED: list[tuple[str, str]] = [
    # schemes
    ("http://hooks.example.com/", "not_https"),
    ("ftp://hooks.example.com/", "not_https"),
    ("file:///etc/passwd", "not_https"),
    ("gopher://hooks.example.com:70/", "not_https"),
    ("javascript:alert(1)", "not_https"),
    ("//hooks.example.com/", "not_https"),
    # syntax
    ("https:///path", "no_host"),
    ("https:hooks.example.com", "no_host"),
    ("https://:443/", "no_host"),
    ("https://user:pass@hooks.example.com/", "userinfo"),
    ("https://user@hooks.example.com/", "userinfo"),
    ("https://hooks.example.com@127.0.0.1/", "userinfo"),
    ("https://hooks.example.com/" + "a" * 2030, "too_long"),
    ("https://hooks example.com/", "invalid_url"),
    ("https://hooks.example.com\\@127.0.0.1/", "invalid_url"),
    ("https://hooks.example.com:0/", "invalid_url"),
    ("https://hooks.example.com:65536/", "invalid_url"),
    ("https://[::1/", "invalid_url"),
    ("https://::1/", "invalid_url"),
    ("https://[fe80::1%25eth0]/", "invalid_url"),
    ("https://%31%32%37.0.0.1/", "invalid_url"),
    ("https://1.2.3.4.5/", "invalid_url"),
    ("https://4294967296/", "invalid_url"),
    ("https://08.0.0.1/", "invalid_url"),
    ("https://hooks.example.123/", "invalid_url"),
    # localhost names
    ("https://localhost/", "localhost"),
    ("https://LOCALHOST./", "localhost"),
    ("https://app.localhost/", "localhost"),
    ("https://ＬＯＣＡＬＨＯＳＴ/", "localhost"),
    # IPv4 literals
    ("https://127.0.0.1/", "loopback_address"),
    ("https://127.255.255.254:8443/", "loopback_address"),
    ("https://10.0.0.1/", "private_address"),
    ("https://172.16.5.4/", "private_address"),
    ("https://192.168.0.1/", "private_address"),
    ("https://169.254.169.254/latest/meta-data/", "link_local_address"),
    ("https://100.64.0.1/", "shared_address_space"),
    ("https://100.127.255.255/", "shared_address_space"),
    ("https://224.0.0.1/", "multicast_address"),
    ("https://239.255.255.250/", "multicast_address"),
    ("https://0.0.0.0/", "unspecified_address"),
    ("https://0.1.2.3/", "reserved_address"),
    ("https://240.0.0.1/", "reserved_address"),
    ("https://255.255.255.255/", "reserved_address"),
    ("https://192.0.2.10/", "reserved_address"),
    ("https://198.18.0.1/", "reserved_address"),
    # numeric host forms
    ("https://2130706433/", "loopback_address"),
    ("https://0x7f000001/", "loopback_address"),
    ("https://0X7F.0.0.1/", "loopback_address"),
    ("https://0177.0.0.1/", "loopback_address"),
    ("https://017700000001/", "loopback_address"),
    ("https://127.1/", "loopback_address"),
    ("https://127.0.1/", "loopback_address"),
    ("https://127.0.0.1./", "loopback_address"),
    ("https://１２７．０．０．１/", "loopback_address"),
    ("https://167772161/", "private_address"),
    ("https://0/", "unspecified_address"),
    ("https://0x0/", "unspecified_address"),
    # IPv6 literals
    ("https://[::1]/", "loopback_address"),
    ("https://[0:0:0:0:0:0:0:1]:8443/", "loopback_address"),
    ("https://[::]/", "unspecified_address"),
    ("https://[fc00::1]/", "private_address"),
    ("https://[fd12:3456:789a::1]/", "private_address"),
    ("https://[fe80::1]/", "link_local_address"),
    ("https://[fec0::1]/", "private_address"),
    ("https://[ff02::1]/", "multicast_address"),
    ("https://[2001:db8::1]/", "reserved_address"),
    ("https://[2001::1]/", "reserved_address"),
    ("https://[100::1]/", "reserved_address"),
    ("https://[4000::1]/", "reserved_address"),
    # IPv6 forms embedding IPv4
    ("https://[::ffff:127.0.0.1]/", "loopback_address"),
    ("https://[::ffff:7f00:1]/", "loopback_address"),
    ("https://[::ffff:10.0.0.1]/", "private_address"),
    ("https://[::ffff:169.254.169.254]/", "link_local_address"),
    ("https://[::127.0.0.1]/", "loopback_address"),
    ("https://[::ffff:0:127.0.0.1]/", "loopback_address"),
    ("https://[64:ff9b::7f00:1]/", "loopback_address"),
    ("https://[64:ff9b::192.168.1.1]/", "private_address"),
    ("https://[2002:7f00:1::1]/", "loopback_address"),
    ("https://[2002:a9fe:a9fe::]/", "link_local_address"),
    # names resolving to refused addresses (fake resolver)
    ("https://internal.example.com/", "private_address"),
    ("https://rebind.example.com/", "loopback_address"),
    ("https://mixed6.example.com/", "private_address"),
    ("https://metadata.example.com/", "link_local_address"),
    ("https://mapped.example.com/", "private_address"),
    ("https://cgnat.example.com/", "shared_address_space"),
    ("https://nowhere.example.com/", "unresolvable"),
    ("https://garbage.example.com/", "unresolvable"),
    ("https://empty.example.com/", "unresolvable"),
]

ACCEPTED: list[tuple[str, str, int, str, tuple[str, ...]]] = [
    ("https://93.184.216.34/hook", "93.184.216.34", 443, "/hook", ("93.184.216.34",)),
    ("https://8.8.8.8:8443/a?b=1#frag", "8.8.8.8", 8443, "/a?b=1", ("8.8.8.8",)),
    ("https://134744072/", "8.8.8.8", 443, "/", ("8.8.8.8",)),
    (
        "https://[2606:4700:4700::1111]/",
        "2606:4700:4700::1111",
        443,
        "/",
        ("2606:4700:4700::1111",),
    ),
    ("https://[::ffff:8.8.8.8]/", "::ffff:808:808", 443, "/", ("::ffff:808:808",)),
    ("https://[2002:808:808::1]/", "2002:808:808::1", 443, "/", ("2002:808:808::1",)),
    ("https://[64:ff9b::8.8.8.8]/", "64:ff9b::808:808", 443, "/", ("64:ff9b::808:808",)),
    ("https://hooks.example.com/cb?x=1", "hooks.example.com", 443, "/cb?x=1", ("93.184.216.34",)),
    ("HTTPS://Hooks.Example.COM.", "hooks.example.com", 443, "/", ("93.184.216.34",)),
    ("https://v6.example.com:444/", "v6.example.com", 444, "/", ("2606:4700:4700::1111",)),
    (
        "https://dual.example.com/",
        "dual.example.com",
        443,
        "/",
        ("93.184.216.34", "2606:4700:4700::1111"),
    ),
]


def test_refused_table_is_large_and_covers_every_reason() -> None:
    assert len(REFUSED) >= 25
    reasons = {reason for _, reason in REFUSED}
    assert reasons == {
        "not_https", "no_host", "userinfo", "too_long", "invalid_url", "localhost",
        "loopback_address", "private_address", "link_local_address", "shared_address_space",
        "multicast_address", "unspecified_address", "reserved_address", "unresolvable",
    }  # fmt: skip


@pytest.mark.parametrize(("url", "reason"), REFUSED, ids=[url[:60] for url, _ in REFUSED])
def test_refused(url: str, reason: str) -> None:
    assert reason_of(url) == reason


@pytest.mark.parametrize(("url", "host", "port", "path", "addresses"), ACCEPTED)
def test_accepted(url: str, host: str, port: int, path: str, addresses: tuple[str, ...]) -> None:
    resolved = check(url)
    assert resolved.target.host == host
    assert resolved.target.port == port
    assert resolved.target.path_and_query == path
    assert resolved.addresses == tuple(ipaddress.ip_address(a) for a in addresses)


def test_too_long_boundary() -> None:
    base = "https://hooks.example.com/"
    assert check(base + "a" * (2048 - len(base))).target.host == "hooks.example.com"
    assert reason_of(base + "a" * (2049 - len(base))) == "too_long"


def test_literal_addresses_are_not_resolved() -> None:
    resolved = asyncio.run(
        resolve_and_check("https://8.8.8.8/", allow_private=False, resolver=never_resolve())
    )
    assert resolved.addresses == (ipaddress.IPv4Address("8.8.8.8"),)
    with pytest.raises(UrlRefused):
        asyncio.run(
            resolve_and_check("https://0x7f.1/", allow_private=False, resolver=never_resolve())
        )


def test_resolver_timeout_is_unresolvable() -> None:
    async def slow(host: str, port: int) -> list[str]:
        raise TimeoutError

    with pytest.raises(UrlRefused) as caught:
        asyncio.run(
            resolve_and_check("https://slow.example.com/", allow_private=False, resolver=slow)
        )
    assert caught.value.reason == "unresolvable"


def test_resolver_is_given_host_and_port() -> None:
    seen: list[tuple[str, int]] = []

    async def recording(host: str, port: int) -> list[str]:
        seen.append((host, port))
        return ["93.184.216.34"]

    asyncio.run(
        resolve_and_check("https://Café.example:8443/", allow_private=False, resolver=recording)
    )
    assert seen == [("xn--caf-dma.example", 8443)]


# --------------------------------------------------------------------------------------------
# The developer flag
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost:9000/",
        "https://localhost/",
        "https://app.localhost/",
        "https://internal.example.com/",
        "https://cgnat.example.com/",
        "http://[::1]:8000/",
        "https://[fd00::1]/",
        "https://2130706433/",
        "http://hooks.example.com/",
    ],
)
def test_flag_lets_private_and_http_through(url: str) -> None:
    assert check(url, allow_private=True).addresses


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://127.0.0.1/", "not_https"),
        ("file:///etc/passwd", "not_https"),
        ("http://user:pass@127.0.0.1:8000/", "userinfo"),
        ("https://user@localhost/", "userinfo"),
        ("https://169.254.169.254/", "link_local_address"),
        ("https://metadata.example.com/", "link_local_address"),
        ("https://224.0.0.1/", "multicast_address"),
        ("https://0.0.0.0/", "unspecified_address"),
        ("https://[2001:db8::1]/", "reserved_address"),
        ("https://nowhere.example.com/", "unresolvable"),
        ("https://hooks.example.com/" + "a" * 2048, "too_long"),
    ],
)
def test_flag_still_refuses(url: str, reason: str) -> None:
    assert reason_of(url, allow_private=True) == reason


@pytest.mark.parametrize(
    "url",
    [
        "http://hooks.example.com/",
        "https://localhost/",
        "https://127.0.0.1/",
        "https://[::1]/",
        "https://10.0.0.1/",
        "https://100.64.0.1/",
        "https://internal.example.com/",
        "https://[::ffff:192.168.0.1]/",
    ],
)
def test_refusals_the_flag_lifts_name_the_flag(url: str) -> None:
    with pytest.raises(UrlRefused) as caught:
        check(url)
    assert FLAG == "--allow-private-callbacks"
    assert FLAG in caught.value.message
    assert FLAG in str(caught.value)
    check(url, allow_private=True)


@pytest.mark.parametrize(
    "url", ["ftp://hooks.example.com/", "https://169.254.169.254/", "https://[ff02::1]/"]
)
def test_refusals_the_flag_cannot_lift_do_not_name_it(url: str) -> None:
    with pytest.raises(UrlRefused) as caught:
        check(url)
    assert FLAG not in caught.value.message


# --------------------------------------------------------------------------------------------
# Addresses
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("127.0.0.1", "loopback_address"),
        ("::1", "loopback_address"),
        ("::ffff:7f00:1", "loopback_address"),
        ("64:ff9b::a00:1", "private_address"),
        ("2002:c0a8:101::", "private_address"),
        ("2002:6440:1::", "shared_address_space"),
        ("fe80::1%eth0", "link_local_address"),
        ("ff05::2", "multicast_address"),
        ("0.0.0.0", "unspecified_address"),
        ("3fff::1", "reserved_address"),
        ("64:ff9b:1::1", "reserved_address"),
    ],
)
def test_classify_address(text: str, reason: str | None) -> None:
    ip = ipaddress.ip_address(text)
    assert classify_address(ip) == reason
    assert is_public_address(ip) is (reason is None)


def test_check_connected_address() -> None:
    check_connected_address("93.184.216.34", allow_private=False)
    check_connected_address("127.0.0.1", allow_private=True)
    for text, reason in [("127.0.0.1", "loopback_address"), ("::ffff:10.0.0.1", "private_address")]:
        with pytest.raises(UrlRefused) as caught:
            check_connected_address(text, allow_private=False)
        assert caught.value.reason == reason
    with pytest.raises(UrlRefused) as caught:
        check_connected_address("169.254.169.254", allow_private=True)
    assert caught.value.reason == "link_local_address"
    with pytest.raises(UrlRefused):
        check_connected_address("not an address", allow_private=True)


# --------------------------------------------------------------------------------------------
# Pinning
# --------------------------------------------------------------------------------------------


def test_pinned_request_args_ipv4() -> None:
    url, headers, extensions = pinned_request_args(check("https://hooks.example.com/cb?x=1#f"))
    assert url == "https://93.184.216.34/cb?x=1"
    assert headers == {"Host": "hooks.example.com"}
    assert extensions == {"sni_hostname": "hooks.example.com"}


def test_pinned_request_args_ipv6_and_port() -> None:
    url, headers, extensions = pinned_request_args(check("https://v6.example.com:444/h"))
    assert url == "https://[2606:4700:4700::1111]:444/h"
    assert headers == {"Host": "v6.example.com:444"}
    assert extensions == {"sni_hostname": "v6.example.com"}


def test_pinned_request_args_uses_first_checked_address() -> None:
    url, _, _ = pinned_request_args(check("https://dual.example.com/"))
    assert url == "https://93.184.216.34/"


def test_pinned_request_args_literal_and_http() -> None:
    url, headers, extensions = pinned_request_args(check("https://[2606:4700:4700::1111]:8443/"))
    assert url == "https://[2606:4700:4700::1111]:8443/"
    assert headers == {"Host": "[2606:4700:4700::1111]:8443"}
    assert extensions == {"sni_hostname": "2606:4700:4700::1111"}
    url, headers, extensions = pinned_request_args(
        check("http://localhost:9000/hook", allow_private=True)
    )
    assert url == "http://127.0.0.1:9000/hook"
    assert headers == {"Host": "localhost:9000"}
    assert extensions == {}


def test_pinned_request_builds_an_httpx_request() -> None:
    httpx = pytest.importorskip("httpx")
    url, headers, extensions = pinned_request_args(check("https://hooks.example.com/cb"))
    request = httpx.Request("POST", url, headers=headers, extensions=extensions, content=b"{}")
    assert request.url.host == "93.184.216.34"
    assert request.headers["host"] == "hooks.example.com"
    assert request.extensions["sni_hostname"] == "hooks.example.com"


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


def judgement(url: str, *, allow_private: bool) -> tuple[str, object]:
    try:
        target = parse_target(url, allow_private=allow_private)
    except UrlRefused as refused:
        return ("refused", refused.reason)
    return ("accepted", target.literal_ip)


@given(value=st.integers(0, 2**32 - 1), allow_private=st.booleans())
def test_decimal_integer_host_is_judged_like_dotted_quad(value: int, allow_private: bool) -> None:
    dotted = str(ipaddress.IPv4Address(value))
    assert judgement(f"https://{value}/", allow_private=allow_private) == judgement(
        f"https://{dotted}/", allow_private=allow_private
    )


@given(value=st.integers(0, 2**32 - 1))
def test_hex_octal_and_short_forms_are_judged_like_dotted_quad(value: int) -> None:
    ip = ipaddress.IPv4Address(value)
    a, b, c, d = ip.packed
    expected = judgement(f"https://{ip}/", allow_private=False)
    forms = [
        f"0x{value:x}",
        f"0{value:o}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}",
        f"0x{a:x}.0{b:o}.{c}.0x{d:X}",
    ]
    for form in forms:
        assert judgement(f"https://{form}/", allow_private=False) == expected, form


@given(ip=st.ip_addresses(v=4))
def test_ipv4_mapped_is_judged_like_ipv4(ip: ipaddress.IPv4Address) -> None:
    mapped = ipaddress.IPv6Address(f"::ffff:{ip}")
    assert classify_address(mapped) == classify_address(ip)
