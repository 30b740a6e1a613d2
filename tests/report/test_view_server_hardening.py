"""The viewer's server answers every hostile request with a status, never a crashed handler: a
file name longer than the file system allows, offsets past any file's size or Python's integer
limits, a name that is not what it is; and a page reached under another site's name (DNS
rebinding: a name made to point at 127.0.0.1) is refused whatever its token."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from maps_autogen.report.view import ViewServer
from tests.helpers.view_fixtures import write_synthetic_eval


def request(server: ViewServer, path: str, host: str | None = None, headers: dict[str, str] | None = None,
            first_line_only: bool = False) -> tuple[int, str]:
    """GET `path` exactly as written, with the Host header given (default: the server's own)."""
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            connection.putheader("Host", host)
        for key, value in (headers or {}).items():
            connection.putheader(key, value)
        connection.endheaders()
        response = connection.getresponse()
        body = response.readline() if first_line_only else response.read()
        return response.status, body.decode("utf-8", "replace")
    finally:
        connection.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ViewServer]:
    eval_dir = tmp_path / "eval-x"
    write_synthetic_eval(eval_dir, 3)
    with ViewServer(eval_dir) as server:
        yield server


def test_a_name_too_long_for_the_file_system_is_not_found(served: ViewServer) -> None:
    token = served.token
    for name in ("a" * 300 + ".png", "problems/" + "b" * 5000 + "/image-1.png", "c" * 255 + "/" + "d" * 255 + ".png"):
        status, body = request(served, f"/{token}/files/{name}")
        assert status == 404, (name[:20], body)
    assert request(served, f"/{token}/")[0] == 200  # the server still answers


@pytest.mark.parametrize("offset", ["9" * 30, "1" + "0" * 5000, "18446744073709551616", "-5", "1e999", "0x10"])
def test_a_feed_from_any_offset_starts_or_reloads_instead_of_crashing(served: ViewServer, offset: str) -> None:
    status, first = request(served, f"/{served.token}/events/results?offset={offset}", first_line_only=True)
    assert status == 200 and first.startswith("retry:")
    status, first = request(served, f"/{served.token}/events/results", headers={"Last-Event-ID": offset},
                            first_line_only=True)
    assert status == 200 and first.startswith("retry:")


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8080", "127.0.0.1.nip.io", "localhost.evil.com",
                                  "[::1]evil", "xn--80ak6aa92e.com"])
def test_a_page_under_another_sites_name_is_refused_with_the_right_token(served: ViewServer, host: str) -> None:
    status, body = request(served, f"/{served.token}/", host=host)
    assert status == 403 and "Host header" in body


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:{port}", "localhost:{port}", "LOCALHOST.", "[::1]:{port}",
                                  "view.localhost:{port}", "{hostname}:{port}", "192.168.1.20:{port}"])
def test_a_page_under_this_servers_own_names_is_served(served: ViewServer, host: str) -> None:
    port = urlsplit(served.url).port
    status, _ = request(served, f"/{served.token}/", host=host.format(port=port, hostname=socket.gethostname()))
    assert status == 200
