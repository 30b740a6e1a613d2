"""Images named by a problem file or a data row are fetched only from public addresses (each
redirect re-checked), unless --allow-private-urls; a URL typed on the command line is fetched."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from maps_autogen._util._errors import ProblemError
from maps_autogen.problem._fetch import fetch_url, is_public_address, private_urls_allowed
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply
from tests.helpers.private_urls import ImageServer


@pytest.fixture
def image_server(tmp_path: Path):
    with ImageServer(make_png(tmp_path / "served.png").read_bytes()) as server:
        yield server


def _script(request) -> Reply:  # type: ignore[no-untyped-def]
    return Reply(solver_json("42")) if request.role == "solver" else Reply("notes")


def test_problem_file_urls_are_refused_unless_allowed_and_typed_urls_are_fetched(tmp_path: Path, image_server: ImageServer) -> None:
    problem = tmp_path / "problem.yaml"
    problem.write_text(f"question: What is shown?\nimages: ['{image_server.url('from-file.png')}']\n")
    runs = ["--runs-dir", str(tmp_path / "runs"), "--quiet"]
    with FakeOpenAI(_script) as model:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=model.base_url)
        refused = run_maps(["solve", "--problem", str(problem), *runs], env=env, cwd=tmp_path)
        assert image_server.paths == [] and model.received == []  # nothing fetched, nothing sent
        allowed = run_maps(["solve", "--problem", str(problem), "--allow-private-urls", *runs], env=env, cwd=tmp_path)
        typed = run_maps(["solve", image_server.url("typed.png"), "-q", "What is shown?", *runs], env=env, cwd=tmp_path)
        images_sent = [request.image_urls() for request in model.received if request.method == "POST"]
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("error: image http://127.0.0.1:") and "non-public address (127.0.0.1)" in line and "--allow-private-urls" in line
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    assert typed.returncode == 0, typed.stderr[-2000:]
    assert image_server.paths == ["/from-file.png", "/typed.png"]
    assert any(urls and urls[0].startswith("data:image/png;base64,") for urls in images_sent)


def test_data_row_urls_are_refused_unless_allowed(tmp_path: Path, image_server: ImageServer) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 1)
    row = {**rows["1"], "image": image_server.url("row.png")}
    data.write_text(json.dumps(row) + "\n")
    runs = tmp_path / "runs"
    with FakeOpenAI(ProblemScript({"1": row["answer"]})) as model:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=model.base_url)
        refused = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--quiet"], env=env, cwd=tmp_path)
        assert image_server.paths == []
        allowed = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs / "allowed"), "--quiet", "--allow-private-urls"],
                           env=env, cwd=tmp_path)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    [failed] = [json.loads(line) for line in next(runs.glob("eval-*/results.jsonl")).read_text().splitlines()]
    assert failed["status"] == "failed" and "non-public address (127.0.0.1)" in failed["error"]
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    assert image_server.paths == ["/row.png"]


def _mock(routes: dict[str, httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return routes.get(str(request.url), httpx.Response(404))
    return httpx.MockTransport(handle)


RESOLVE = {"public.example": ["93.184.216.34"], "internal.example": ["10.0.0.5"], "mixed.example": ["93.184.216.35", "127.0.0.1"],
           "metadata.example": ["169.254.169.254"], "mapped.example": ["::ffff:127.0.0.1"]}


def _resolve(host: str, port: int) -> list[str]:
    return RESOLVE.get(host, [host])


def test_each_redirect_is_checked_and_the_checked_address_is_the_one_connected() -> None:
    png = b"\x89PNG..."
    seen: list[httpx.Request] = []
    routes = {
        "http://93.184.216.34/ok.png": httpx.Response(200, content=png),
        "http://93.184.216.34/to-loopback": httpx.Response(302, headers={"Location": "http://127.0.0.1:8080/secret"}),
        "http://93.184.216.34/to-internal": httpx.Response(301, headers={"Location": "http://internal.example/x"}),
        "http://93.184.216.34/to-public": httpx.Response(307, headers={"Location": "/ok.png"}),
    }
    transport = _mock(routes, seen)
    assert fetch_url("http://public.example/ok.png", limit=1000, resolve=_resolve, transport=transport) == png
    assert seen[-1].headers["host"] == "public.example"  # addressed to the host, connected to the checked address
    routes["https://93.184.216.34:8443/ok.png"] = httpx.Response(200, content=png)
    assert fetch_url("https://public.example:8443/ok.png", limit=1000, resolve=_resolve, transport=transport) == png
    assert seen[-1].headers["host"] == "public.example:8443" and seen[-1].extensions["sni_hostname"] == "public.example"
    assert fetch_url("http://public.example/to-public", limit=1000, resolve=_resolve, transport=transport) == png
    assert fetch_url("http://public.example/ok.png", limit=3, resolve=_resolve, transport=transport) is None  # over the limit
    for url, address in (("http://public.example/to-loopback", "127.0.0.1"), ("http://public.example/to-internal", "10.0.0.5"),
                         ("http://mixed.example/x", "127.0.0.1"), ("http://metadata.example/latest", "169.254.169.254"),
                         ("http://mapped.example/x", "::ffff:127.0.0.1"), ("http://[::1]/x", "::1")):
        before = len(seen)
        with pytest.raises(ProblemError, match=rf"non-public address \({address}\)"):
            fetch_url(url, limit=1000, resolve=_resolve, transport=transport)
        assert all(request.url.host == "93.184.216.34" for request in seen[before:])  # no request to a private address
    with private_urls_allowed(True):  # the user's own URL: fetched as given, redirects followed
        routes["http://internal.example/x"] = httpx.Response(200, content=png)
        assert fetch_url("http://internal.example/x", limit=1000, resolve=_resolve, transport=transport) == png


@pytest.mark.parametrize("address, public", [
    ("8.8.8.8", True), ("2606:4700::1111", True), ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False),
    ("192.168.1.1", False), ("169.254.169.254", False), ("100.64.0.1", False), ("0.0.0.0", False), ("224.0.0.1", False),
    ("255.255.255.255", False), ("::1", False), ("fe80::1%eth0", False), ("fd00::1", False), ("::ffff:10.0.0.1", False),
    ("2002:7f00:1::", False), ("ff02::1", False), ("not an address", False),
])
def test_public_addresses(address: str, public: bool) -> None:
    assert is_public_address(address) is public
