"""Which urls the service may call: ``callbackUrl``, webhook subscription ``url``, fetched urls.

A url must be HTTPS and resolve only to public addresses. Refused when the request is made:

* anything that is not ``https`` (``http`` too, unless the developer flag is on), urls with no
  host, with userinfo (``https://user:pass@host/``), longer than 2048 characters, or that are
  malformed (control characters, spaces, backslashes, ``%`` in the host, bad port, ...);
* ``localhost`` and every ``*.localhost`` name, whatever they resolve to;
* literal or resolved addresses that are loopback, private, link-local, carrier-grade NAT,
  multicast, unspecified or reserved, IPv6 included; IPv6 forms embedding an IPv4 address
  (mapped, compatible, translated, NAT64, 6to4) are judged by the embedded address;
* numeric host forms (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``0``) read the
  way ``inet_aton`` reads them; a host whose last label is numeric but is not a valid address is
  refused outright;
* host names of which ANY resolved address is refused.

The developer flag ``--allow-private-callbacks`` (``allow_private``) lets ``http``, ``localhost``
names, loopback, private and carrier-grade NAT addresses through. It never lets through
link-local (cloud metadata services live there), multicast, unspecified or reserved addresses.

Redirects are never followed (the delivery code's job). The check is made again at delivery:
:func:`pinned_request_args` makes the request go to the address that was checked, and
:func:`check_connected_address` judges the peer actually connected to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

FLAG = "--allow-private-callbacks"
MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_SECONDS = 5.0
DEFAULT_PORTS = {"https": 443, "http": 80}

# Reasons the developer flag lets through (besides plain http).
FLAG_ALLOWS = frozenset(
    {"loopback_address", "private_address", "shared_address_space", "localhost"}
)

_MESSAGES = {
    "not_https": "the url must use https",
    "no_host": "the url has no host",
    "userinfo": "the url must not carry a user name or password",
    "too_long": f"the url is longer than {MAX_URL_LENGTH} characters",
    "invalid_url": "the url is malformed",
    "localhost": "localhost names are not allowed",
    "loopback_address": "the host is a loopback address",
    "private_address": "the host is a private-network address",
    "link_local_address": "the host is a link-local address",
    "shared_address_space": "the host is a carrier-grade NAT (shared address space) address",
    "multicast_address": "the host is a multicast address",
    "unspecified_address": "the host is an unspecified address",
    "reserved_address": "the host is a reserved or non-public address",
    "unresolvable": "the host name could not be resolved",
}

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Checked in order; the first match names the reason.
_IPV4_TABLE: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/32"), "unspecified_address"),
    (_V4("0.0.0.0/8"), "reserved_address"),
    (_V4("127.0.0.0/8"), "loopback_address"),
    (_V4("10.0.0.0/8"), "private_address"),
    (_V4("172.16.0.0/12"), "private_address"),
    (_V4("192.168.0.0/16"), "private_address"),
    (_V4("169.254.0.0/16"), "link_local_address"),
    (_V4("100.64.0.0/10"), "shared_address_space"),
    (_V4("224.0.0.0/4"), "multicast_address"),
    (_V4("240.0.0.0/4"), "reserved_address"),  # includes 255.255.255.255
    (_V4("192.0.0.0/24"), "reserved_address"),  # IETF protocol assignments
    (_V4("192.0.2.0/24"), "reserved_address"),  # documentation
    (_V4("198.51.100.0/24"), "reserved_address"),  # documentation
    (_V4("203.0.113.0/24"), "reserved_address"),  # documentation
    (_V4("198.18.0.0/15"), "reserved_address"),  # benchmarking
    (_V4("192.88.99.0/24"), "reserved_address"),  # 6to4 relay anycast (deprecated)
)

_IPV6_TABLE: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified_address"),
    (_V6("::1/128"), "loopback_address"),
    (_V6("ff00::/8"), "multicast_address"),
    (_V6("fe80::/10"), "link_local_address"),
    (_V6("fec0::/10"), "private_address"),  # site-local (deprecated)
    (_V6("fc00::/7"), "private_address"),  # unique local
    (_V6("2001:db8::/32"), "reserved_address"),  # documentation
    (_V6("3fff::/20"), "reserved_address"),  # documentation (RFC 9637)
    (_V6("2001::/32"), "reserved_address"),  # Teredo
    (_V6("2001::/23"), "reserved_address"),  # IETF protocol assignments
    (_V6("100::/64"), "reserved_address"),  # discard only
    (_V6("64:ff9b:1::/48"), "reserved_address"),  # local-use NAT64
    (_V6("5f00::/16"), "reserved_address"),  # SRv6 SIDs
)

_GLOBAL_UNICAST = _V6("2000::/3")
_NAT64 = _V6("64:ff9b::/96")
_SIX_TO_FOUR = _V6("2002::/16")
_COMPATIBLE = _V6("::/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")

_NAME_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_DECIMAL = re.compile(r"[0-9]+")
_HEX = re.compile(r"0x[0-9a-f]*")
_FORBIDDEN_CHARS = re.compile(r"[\x00-\x20\x7f\\]")


class UrlRefused(ValueError):
    """A url the service must not call; ``reason`` is a stable slug, ``message`` is for people."""

    def __init__(self, url: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.url = url
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Target:
    """A syntactically acceptable url, taken apart. ``host`` is lowercase ASCII, unbracketed."""

    url: str
    scheme: str
    host: str
    port: int
    path_and_query: str
    literal_ip: IPAddress | None


@dataclass(frozen=True)
class ResolvedTarget:
    """A target with every address its host resolved to, all of them checked."""

    target: Target
    addresses: tuple[IPAddress, ...]


def refusal(url: str, reason: str, *, detail: str = "") -> UrlRefused:
    """A :class:`UrlRefused`; the message names the developer flag when the flag would help."""
    message = _MESSAGES[reason]
    if detail:
        message = f"{message} ({detail})"
    if reason in FLAG_ALLOWS:
        message += f"; start the mock server with {FLAG} to allow it during development"
    elif reason == "not_https" and detail == "http":
        message += f"; plain http is allowed only with {FLAG} (development)"
    return UrlRefused(url, reason, message)


# --------------------------------------------------------------------------------------------
# Addresses
# --------------------------------------------------------------------------------------------


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4)."""
    value = int(ip)
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _TRANSLATED or ip in _NAT64:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _COMPATIBLE and value > 1:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _SIX_TO_FOUR:
        return ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)
    return None


def _classify_ipv4(ip: ipaddress.IPv4Address) -> str | None:
    for network, reason in _IPV4_TABLE:
        if ip in network:
            return reason
    return None if ip.is_global else "reserved_address"


def _classify_ipv6(ip: ipaddress.IPv6Address) -> str | None:
    if ip.scope_id:
        return "link_local_address"
    embedded = embedded_ipv4(ip)
    if embedded is not None:
        return _classify_ipv4(embedded)
    for network, reason in _IPV6_TABLE:
        if ip in network:
            return reason
    if ip not in _GLOBAL_UNICAST or not ip.is_global:
        return "reserved_address"
    return None


def classify_address(ip: IPAddress) -> str | None:
    """None for a public address, else the reason slug it is refused with."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _classify_ipv4(ip)
    return _classify_ipv6(ip)


def is_public_address(ip: IPAddress) -> bool:
    """Whether ``ip`` (embedded IPv4 addresses unwrapped) is a public unicast address."""
    return classify_address(ip) is None


def _judge_address(url: str, ip: IPAddress, *, allow_private: bool) -> None:
    reason = classify_address(ip)
    if reason is None or (allow_private and reason in FLAG_ALLOWS):
        return
    raise refusal(url, reason, detail=str(ip))


def check_connected_address(ip_text: str, *, allow_private: bool, url: str = "") -> None:
    """Refuse the peer address a delivery actually connected to, if it is not allowed.

    With httpx the peer is ``response.extensions["network_stream"].get_extra_info("server_addr")``
    (its first item). ``url`` is only used to fill in the refusal.
    """
    try:
        ip = ipaddress.ip_address(ip_text)
    except ValueError:
        raise refusal(url or ip_text, "invalid_url", detail="unreadable peer address") from None
    _judge_address(url or ip_text, ip, allow_private=allow_private)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _parse_number(part: str) -> int | None:
    """One part of a numeric IPv4 host read as ``inet_aton`` reads it (0x hex, 0 octal)."""
    if _HEX.fullmatch(part):
        return int(part[2:] or "0", 16)
    if not _DECIMAL.fullmatch(part):
        return None
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8) if set(part) <= set("01234567") else None
    return int(part)


def parse_numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``host`` read as an ``inet_aton`` numeric form (``a``, ``a.b``, ``a.b.c``, ``a.b.c.d``).

    None if it is not one (including when a part overflows).
    """
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_parse_number(part) for part in parts]
    if any(number is None for number in numbers):
        return None
    *head, last = [int(number) for number in numbers if number is not None]
    if any(number > 0xFF for number in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    value = last
    for index, number in enumerate(head):
        value |= number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _looks_numeric(label: str) -> bool:
    return bool(_DECIMAL.fullmatch(label) or _HEX.fullmatch(label))


def _split_netloc(url: str, netloc: str) -> tuple[str, str]:
    """``(host, port text)`` of a netloc without userinfo; the host keeps its brackets."""
    if netloc.startswith("["):
        end = netloc.find("]")
        rest = netloc[end + 1 :] if end != -1 else "x"
        if rest and not rest.startswith(":"):
            raise refusal(url, "invalid_url", detail="bad IPv6 literal")
        return netloc[: end + 1], rest[1:]
    host, _, port = netloc.partition(":")
    if ":" in port:
        raise refusal(url, "invalid_url", detail="IPv6 literals must be in brackets")
    return host, port


def _parse_port(url: str, scheme: str, text: str) -> int:
    if not text:
        return DEFAULT_PORTS[scheme]
    if not _DECIMAL.fullmatch(text) or not 1 <= int(text) <= 65535:
        raise refusal(url, "invalid_url", detail="bad port")
    return int(text)


def _parse_ipv6_literal(url: str, bracketed: str) -> ipaddress.IPv6Address:
    inner = bracketed[1:-1]
    if "%" in inner:
        raise refusal(url, "invalid_url", detail="IPv6 zone identifiers are not allowed")
    try:
        return ipaddress.IPv6Address(inner)
    except ValueError:
        raise refusal(url, "invalid_url", detail="bad IPv6 literal") from None


def _ascii_host(url: str, host: str) -> str:
    """The host as lowercase ASCII: IDNA for non-ASCII names, one trailing dot dropped."""
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise refusal(url, "invalid_url", detail="bad international host name") from None
    host = host.lower()
    return host[:-1] if host.endswith(".") else host


def _parse_name(url: str, raw_host: str) -> tuple[str, IPAddress | None]:
    """``(host, literal IPv4 or None)`` of an unbracketed host."""
    host = _ascii_host(url, raw_host)
    if not host:
        raise refusal(url, "no_host")
    labels = host.split(".")
    if _looks_numeric(labels[-1]):
        ip = parse_numeric_ipv4(host)
        if ip is None:
            raise refusal(url, "invalid_url", detail="host ends in a number but is no address")
        return str(ip), ip
    if len(host) > 253 or not all(_NAME_LABEL.fullmatch(label) for label in labels):
        raise refusal(url, "invalid_url", detail="bad host name")
    return host, None


def _check_scheme(url: str, scheme: str, *, allow_private: bool) -> None:
    if scheme == "https" or (scheme == "http" and allow_private):
        return
    raise refusal(url, "not_https", detail=scheme or "no scheme")


def parse_target(url: str, *, allow_private: bool) -> Target:
    """Syntax checks, numeric host forms normalised, a literal address judged. No resolution."""
    if len(url) > MAX_URL_LENGTH:
        raise refusal(url, "too_long")
    if _FORBIDDEN_CHARS.search(url):
        raise refusal(url, "invalid_url", detail="control character, space or backslash")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise refusal(url, "invalid_url") from None
    scheme = parts.scheme.lower()
    _check_scheme(url, scheme, allow_private=allow_private)
    netloc = parts.netloc
    if not netloc:
        raise refusal(url, "no_host")
    if "@" in netloc:
        raise refusal(url, "userinfo")
    raw_host, port_text = _split_netloc(url, netloc)
    port = _parse_port(url, scheme, port_text)
    if not raw_host:
        raise refusal(url, "no_host")
    if "%" in raw_host:
        raise refusal(url, "invalid_url", detail="percent-encoded host")
    literal: IPAddress | None
    if raw_host.startswith("["):
        literal = _parse_ipv6_literal(url, raw_host)
        host = str(literal)
    else:
        host, literal = _parse_name(url, raw_host)
    if literal is not None:
        _judge_address(url, literal, allow_private=allow_private)
    elif (host == "localhost" or host.endswith(".localhost")) and not allow_private:
        raise refusal(url, "localhost")
    path_and_query = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(url, scheme, host, port, path_and_query, literal)


# --------------------------------------------------------------------------------------------
# Resolution and pinning
# --------------------------------------------------------------------------------------------


async def system_resolver(host: str, port: int) -> list[str]:
    """Addresses of ``host`` from the system resolver (``getaddrinfo``), with a timeout."""
    loop = asyncio.get_running_loop()
    infos = await asyncio.wait_for(
        loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT_SECONDS
    )
    return [str(info[4][0]) for info in infos]


def _read_resolved(url: str, texts: list[str]) -> tuple[IPAddress, ...]:
    addresses: list[IPAddress] = []
    for text in texts:
        try:
            ip = ipaddress.ip_address(text)
        except ValueError:
            raise refusal(url, "unresolvable", detail=f"resolver gave {text!r}") from None
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise refusal(url, "unresolvable", detail="no addresses")
    return tuple(addresses)


async def resolve_and_check(
    url: str, *, allow_private: bool, resolver: Resolver | None = None
) -> ResolvedTarget:
    """Parse ``url``, resolve its host and check EVERY address; one refused address refuses all.

    ``resolver(host, port)`` returns address strings; the default asks the system resolver.
    """
    target = parse_target(url, allow_private=allow_private)
    if target.literal_ip is not None:
        return ResolvedTarget(target, (target.literal_ip,))
    try:
        texts = await (resolver or system_resolver)(target.host, target.port)
    except (OSError, TimeoutError, UnicodeError) as exc:
        raise refusal(url, "unresolvable", detail=type(exc).__name__) from None
    addresses = _read_resolved(url, texts)
    for ip in addresses:
        _judge_address(url, ip, allow_private=allow_private)
    return ResolvedTarget(target, addresses)


def _netloc(host_text: str, scheme: str, port: int) -> str:
    return host_text if port == DEFAULT_PORTS[scheme] else f"{host_text}:{port}"


def _host_text(host: str, literal: IPAddress | None) -> str:
    return f"[{host}]" if isinstance(literal, ipaddress.IPv6Address) else host


def pinned_request_args(resolved: ResolvedTarget) -> tuple[str, dict[str, str], dict[str, Any]]:
    """``(url, headers, extensions)`` for an httpx request pinned to the first checked address.

    Why: between the check and the connection, DNS may answer differently (DNS rebinding: a
    name that resolved to a public address at check time resolves to 127.0.0.1 or a metadata
    service when the client connects). Requesting the checked IP literal means no second lookup
    happens; the ``Host`` header keeps the original name for the receiver, and for https the
    ``sni_hostname`` extension makes TLS send and verify the original name, so the certificate
    is still checked against the real host. Connection pools are keyed by the IP, so use a
    client per delivery (or per host) to avoid reusing a TLS session made for another name.
    Redirects must not be followed.
    """
    target = resolved.target
    ip = resolved.addresses[0]
    url = (
        f"{target.scheme}://{_netloc(_host_text(str(ip), ip), target.scheme, target.port)}"
        f"{target.path_and_query}"
    )
    host_header = _netloc(_host_text(target.host, target.literal_ip), target.scheme, target.port)
    extensions: dict[str, Any] = {}
    if target.scheme == "https":
        extensions["sni_hostname"] = target.host
    return url, {"Host": host_header}, extensions
