"""Fetching an image URL without letting a data row or a problem file reach a private address.

An image URL the user types on the command line is theirs to fetch. One named by a problem file
or a data set row is untrusted: it is fetched only from a public address. The host is resolved,
every address it resolves to must be public (not loopback, private, link-local, multicast,
reserved, shared or unspecified, IPv4-mapped forms included), the connection goes to the
address that was checked (so a second DNS answer cannot swap it), and each redirect is checked
the same way before it is followed. `--allow-private-urls` lifts the rule for trusted files.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar

import httpx

from maps_autogen._util import ProblemError, read_capped, scoped

MAX_REDIRECTS = 5
TIMEOUT_S = 30.0
ALLOW_FLAG = "--allow-private-urls"

# host, port -> the addresses it resolves to (injected by tests; the system resolver otherwise)
Resolver = Callable[[str, int], list[str]]

_private_allowed: ContextVar[bool] = ContextVar("private_urls_allowed", default=False)


def private_urls_allowed(allowed: bool) -> AbstractContextManager[None]:
    """Within the block, image URLs may point at private addresses when `allowed` (a URL the
    user typed, or --allow-private-urls)."""
    return scoped(_private_allowed, allowed)


def system_resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def is_public_address(address: str) -> bool:
    """Whether an IP address is on the public internet: not loopback, private, link-local,
    multicast, reserved, shared (100.64/10) or unspecified; an IPv4 address embedded in IPv6
    (mapped, 6to4, Teredo) is judged as itself."""
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            ip = embedded
    return ip.is_global and not (ip.is_multicast or ip.is_private or ip.is_loopback or ip.is_link_local
                                 or ip.is_reserved or ip.is_unspecified)


def _refused(url: str, address: str) -> ProblemError:
    return ProblemError(
        f"image {url} is at a non-public address ({address}); images named by a problem file or a data set are "
        "fetched only from public addresses",
        fix=f"pass {ALLOW_FLAG} (in Python: allow_private_urls=True) if you trust the file, or save the image "
        "and name the file",
    )


def _pinned(url: httpx.URL, resolve: Resolver) -> tuple[httpx.URL, dict[str, str], dict[str, str]]:
    """The URL to connect to (the checked address in place of the host), the Host header and
    the TLS server name that keep the request addressed to the host; ProblemError when the host
    resolves to any address that is not public."""
    host, port = url.host, url.port or (443 if url.scheme == "https" else 80)
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as error:
        raise ProblemError(f"cannot download image {url}: cannot resolve {host} ({error})",
                           fix="check the URL or save the image and pass the file") from None
    if not addresses:
        raise ProblemError(f"cannot download image {url}: {host} has no address", fix="check the URL")
    for address in addresses:
        if not is_public_address(address):
            raise _refused(str(url), address)
    address = addresses[0].split("%", 1)[0]
    if address == host:  # an address already: nothing to pin
        return url, {}, {}
    name = url.raw_host.decode("ascii")  # the IDNA form a header and TLS need
    extensions = {"sni_hostname": name} if url.scheme == "https" else {}
    return url.copy_with(host=address), {"Host": name if url.port is None else f"{name}:{url.port}"}, extensions


def fetch_url(
    url: str, *, limit: int, resolve: Resolver = system_resolve, transport: httpx.BaseTransport | None = None
) -> bytes | None:
    """The body of an http(s) URL, or None as soon as it is over `limit` bytes (the caller names
    the limit), following up to MAX_REDIRECTS redirects, each checked like the first URL unless
    private URLs are allowed in this context."""
    check = not _private_allowed.get()
    current = httpx.URL(url)
    # Checked requests go straight to the checked address: no proxy from the environment.
    with httpx.Client(transport=transport, timeout=TIMEOUT_S, trust_env=not check, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            if current.scheme not in ("http", "https"):
                raise ProblemError(
                    f"image {url} redirects to {current.scheme}: URLs, which are not fetched",
                    fix="pass an http(s) URL or a file",
                )
            target, headers, extensions = _pinned(current, resolve) if check else (current, {}, {})
            request = client.build_request(
                "GET", target, headers={"User-Agent": "maps-autogen", **headers}, extensions=extensions
            )
            try:
                response = client.send(request, stream=True)
            except httpx.HTTPError as error:
                raise ProblemError(f"cannot download image {url}: {error.__class__.__name__}",
                                   fix="check the URL or save the image and pass the file") from None
            try:
                if response.is_redirect and "location" in response.headers:
                    current = current.join(response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise ProblemError(f"cannot download image {url}: HTTP {response.status_code}",
                                       fix="check the URL or save the image and pass the file")
                try:
                    return read_capped(response.iter_bytes(), limit)
                except httpx.HTTPError as error:
                    raise ProblemError(
                        f"cannot download image {url}: {error.__class__.__name__}", fix="try again"
                    ) from None
            finally:
                response.close()
    raise ProblemError(
        f"cannot download image {url}: more than {MAX_REDIRECTS} redirects", fix="pass the final URL or save the image"
    )
