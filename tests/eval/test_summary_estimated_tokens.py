"""summary.json says when some of its tokens are our own count (a server that reported no usage
for some call), as each problem's row and run.json already do: `usage.tokens_estimated`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply


class NoUsageFor(ProblemScript):
    """The script's replies, without a usage block for the problems named."""

    def __init__(self, answers: dict[str, str], silent: set[str]):
        super().__init__(answers)
        self.silent = silent

    def __call__(self, request: Received) -> Reply:
        reply = super().__call__(request)
        reply.usage = self._pid(request) not in self.silent
        return reply


def summary_after(tmp_path: Path, silent: set[str]) -> dict:
    tmp_path.mkdir()
    data = tmp_path / "bench.jsonl"
    data.write_text("".join(json.dumps({"id": pid, "question": f"[q:{pid}] How many?", "answer": "3"}) + "\n"
                            for pid in ("e1", "e2")))
    with FakeOpenAI(NoUsageFor({"e1": "3", "e2": "3"}, silent)) as server:
        result = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs")],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run = next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("eval-"))
    return json.loads((run / "summary.json").read_text())


def test_the_summary_says_when_some_tokens_are_estimated(tmp_path: Path) -> None:
    assert summary_after(tmp_path / "one-silent", {"e2"})["usage"]["tokens_estimated"] is True
    counted = summary_after(tmp_path / "all-counted", set())["usage"]
    assert counted["tokens_estimated"] is False and counted["prompt_tokens"] > 0
