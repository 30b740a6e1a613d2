"""Figures for the prompt layouts (`prompt_layout: paper | shared_prefix`, a script that prints,
not a test): both layouts measured in the same run, the paper's as the baseline.

    .venv/bin/python perf/prompt_layout.py            # a full solve's requests, both layouts
    .venv/bin/python perf/prompt_layout.py --short    # CI: two shortened requests on llama.cpp

The requests are those of one `maps solve` of examples/lever on an `openai` endpoint (vision off:
the served SmolLM2 is text-only), every step's reply scripted (the scripted server records the
bodies), with the Critic sending the Scholar back once, so re-runs are in it. Prints, per layout:

- the shared-prefix share of consecutive requests (the characters a request shares at its start
  with the one before, over the shorter one; mean over the solve's consecutive pairs), as the
  scripted server received them: what any prefix cache (OpenAI's, vLLM's, SGLang's) can reuse;
- on llama.cpp's own server (the xllamacpp wheel, started as tests/helpers/llama_server.py starts it),
  the same requests sent in order, each answered with one token: prompt tokens, those the server
  took from its cache (usage.prompt_tokens_details.cached_tokens) and its prompt time
  (timings.prompt_ms). Each layout starts after an unrelated request, so nothing of the problem
  is cached. The load average is printed with them: the machine is shared.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen.cli import main as maps_main  # noqa: E402
from tests.helpers.common import critic_json, solver_json  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI, RoleScript  # noqa: E402
from tests.helpers.real_servers import ALIAS, llama_server  # noqa: E402

# A step's notes as long as a small model writes them.
NOTES = ("Taking moments about the pivot: the 3 kg mass at 0.4 m gives 3 x 9.8 x 0.4 = 11.76 N m anticlockwise; "
         "the unknown mass m at 0.6 m must give the same moment clockwise, so m x 9.8 x 0.6 = 11.76 N m. ") * 4
LAYOUTS = ("paper", "shared_prefix")


def solve_requests(layout: str) -> list[dict[str, Any]]:
    """The request bodies of one solve of examples/lever in `layout`, as the scripted server got them."""
    script = RoleScript({"solver": [solver_json("B")], "critic": [critic_json(5, 5, 3, 5, worst="knowledge"),
                                                                  critic_json()]}, default=NOTES)
    defaults = yaml.safe_load((ROOT / "maps_autogen/settings/defaults/agents.yaml").read_text())
    defaults["endpoints"]["openai"].update(prompt_layout=layout, vision=False)
    with FakeOpenAI(script) as server, tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "agents.yaml"
        config.write_text(yaml.safe_dump(defaults))
        os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-perf-layout")
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                maps_main(["solve", "--problem", str(ROOT / "examples/lever/problem.yaml"), "--config", str(config),
                           "--quiet", "--runs-dir", str(Path(folder) / "runs")])
        except SystemExit as done:
            if done.code:
                raise RuntimeError(f"maps solve against the scripted server failed ({done.code})") from None
        return [request.body for request in server.received]


def rendered(body: dict[str, Any]) -> str:
    """A request's messages as one string in order (what a chat template turns into tokens)."""
    pieces = []
    for message in body["messages"]:
        content = message["content"]
        parts = [content] if isinstance(content, str) else [part.get("text", "") for part in content]
        pieces.append(f"<{message['role']}>" + "".join(parts))
    return "".join(pieces)


def prefix_share(bodies: list[dict[str, Any]]) -> float:
    """Mean share of each request's start it shares with the request before (over the shorter)."""
    texts = [rendered(body) for body in bodies]
    shares = []
    for first, second in zip(texts, texts[1:]):
        length = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
        shares.append(length / min(len(first), len(second)))
    return sum(shares) / len(shares)


def llama_pass(url: str, bodies: list[dict[str, Any]]) -> dict[str, float]:
    """After an unrelated request, send `bodies` in order (one token each): their prompt tokens,
    the ones the server took from its cache, and its prompt milliseconds."""
    totals = {"prompt": 0.0, "cached": 0.0, "ms": 0.0}
    unrelated = {"messages": [{"role": "user", "content": "What is the unit of force?"}]}
    with httpx.Client(timeout=600) as http:
        for number, body in enumerate([unrelated, *bodies]):
            reply = http.post(f"{url}/chat/completions",
                              json={"model": ALIAS, "messages": body["messages"], "max_tokens": 1, "temperature": 0})
            reply.raise_for_status()
            data = reply.json()
            if number:
                totals["prompt"] += data["usage"]["prompt_tokens"]
                totals["cached"] += (data["usage"].get("prompt_tokens_details") or {}).get("cached_tokens", 0)
                totals["ms"] += data["timings"]["prompt_ms"]
    return totals


def shortened(body: dict[str, Any], characters: int) -> dict[str, Any]:
    messages = [{**message, "content": message["content"][:characters]} if isinstance(message["content"], str)
                else message for message in body["messages"]]
    return {**body, "messages": messages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="two shortened requests per layout (CI)")
    args = parser.parse_args()
    requests = {layout: solve_requests(layout) for layout in LAYOUTS}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"{len(requests['paper'])} requests per solve (examples/lever, one rollback)")
    for layout in LAYOUTS:
        print(f"shared prefix of consecutive requests, {layout} layout (scripted server): "
              f"{prefix_share(requests[layout]):.1%}")
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder) / "llama.log") as url:
        for layout in LAYOUTS:
            bodies = [shortened(body, 400) for body in requests[layout][1:3]] if args.short else requests[layout]
            totals = llama_pass(url, bodies)
            print(f"llama.cpp server, {layout} layout: {len(bodies)} requests, {totals['prompt']:.0f} prompt tokens, "
                  f"{totals['cached']:.0f} from its cache ({totals['cached'] / totals['prompt']:.0%}), "
                  f"prompt time {totals['ms'] / 1000:.1f} s")


if __name__ == "__main__":
    main()
