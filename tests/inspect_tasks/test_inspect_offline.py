"""Inspect without a key: `--model maps/local` runs the benchmarks on maps' embedded offline model
(inspect_tasks/_local_model.py: llama.cpp's server from the xllamacpp wheel, started as `maps solve`
starts it), with the local endpoint's settings on every request; and `inspect eval maps_autogen/...`
without any model says so in one line naming the fix, not in Inspect's traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import REPO, clean_env

if os.environ.get("CI") == "true":  # CI installs the inspect extra (scripts/setup.sh): missing is a failure
    from inspect_ai.log import read_eval_log
else:
    read_eval_log = pytest.importorskip("inspect_ai.log").read_eval_log

INSPECT = Path(sys.executable).parent / "inspect"
BENCH = REPO / "examples" / "bench.jsonl"


def inspect(args: list[str], folder: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in clean_env(COLUMNS="400").items() if not key.startswith("INSPECT_")}
    return subprocess.run([str(INSPECT), "eval", *args, "--log-dir", str(folder / "logs"), "--log-format", "json",
                           "--display", "plain"], env=env, cwd=folder, capture_output=True, text=True, timeout=timeout)


def test_without_a_model_one_line_names_maps_local(tmp_path: Path) -> None:
    result = inspect(["maps_autogen/custom", "-T", f"data={BENCH}", "--limit", "1"], tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Traceback" not in output and "╭" not in output, output  # no traceback panel either
    # Inspect's own banner (its version and the hooks it enabled: ours masks secrets in its logs) aside, one line
    banner = ("inspect_ai v", "- hooks enabled:", "  maps_autogen/maps_secrets:")
    (line,) = [line for line in output.splitlines() if line.strip() and not line.startswith(banner)]
    assert line == ("error: maps_autogen/custom needs a model: pass --model maps/local (the embedded offline model, "
                    "no key), or a service's, e.g. --model openai/gpt-4o (docs/inspect.md)")
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").iterdir())  # nothing half-written


def model_requests(log: Any) -> list[dict[str, Any]]:
    return [event.call.request for sample in log.samples for event in sample.events if event.event == "model"]


@pytest.mark.local
def test_maps_local_runs_a_task_on_the_embedded_model_without_a_key(tmp_path: Path) -> None:
    # the direct baseline: one call per problem (the embedded model takes seconds per call on 2 cores)
    result = inspect(["maps_autogen/custom", "-T", f"data={BENCH}", "-T", "method=direct", "--limit", "1",
                      "--model", "maps/local"], tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (log_file,) = (tmp_path / "logs").glob("*.json")
    log = read_eval_log(str(log_file), resolve_attachments=True)
    assert log.status == "success" and log.eval.model == "maps/local"
    (request,) = model_requests(log)
    # the local endpoint's settings, as `maps solve` sends them: its reply cap and repeat penalty
    assert request["max_tokens"] == 384 and request["extra_body"]["repeat_penalty"] == 1.15
    # a text-only model: each image is a note, never an image part
    parts = [part for message in request["messages"] if isinstance(message["content"], list)
             for part in message["content"]]
    assert all(part.get("type") == "text" for part in parts)
    assert "The model in use cannot see images, so this note stands in for it." in str(request["messages"])
    (sample,) = log.samples
    assert sample.output.completion.strip()  # the embedded model answered


def test_a_reply_cut_on_inspect_names_the_key_its_step_uses(tmp_path: Path) -> None:
    from maps_autogen.inspect_tasks._solver import step_models
    from maps_autogen.model._context import cut_off_detail
    from maps_autogen.settings._config import load_config

    loaded = load_config(None, tmp_path)
    models = step_models(loaded, "openai-api/vllm/Qwen2-VL-7B")
    solver = models["solver"]
    # the default team's Solver sets its own budget: that key, never the top-level model.max_tokens
    assert solver.max_tokens == 8192 and "steps[3].model.max_tokens" in solver.max_tokens_key
    said = cut_off_detail("the Solver's", solver, 8192, 900, 8192, "Torque balance gives the mass")
    assert "raise team.steps[3].model.max_tokens" in said
    # a reply Inspect stopped at the model's context (stop_reason model_length) before its cap
    assert "context was full" in cut_off_detail("the Solver's", solver, 8192, 3900, 196, "Torque")
    # on maps' own local model the local endpoint caps every reply, and names itself
    local = step_models(loaded, "maps/local")["solver"]
    assert local.max_tokens == 384 and local.max_tokens_key.startswith("endpoints.local.max_tokens")
    assert not local.vision and local.extra_body == {"repeat_penalty": 1.15}
