"""The whole MAPS chat against the real embedded model (no API key, no network): every role
speaks, the Critic's scores parse, one rollback runs, and the transcript is complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from maps_autogen.settings._roles import review_text_chars
from tests.helpers.common import REPO, clean_env, run_maps, write_config
from tests.helpers.image_notes import assert_notes_once_under_images, note_for

pytestmark = pytest.mark.local
LEVER_SIZE = Image.open(REPO / "examples/lever/lever.png").size


def test_full_chat_on_the_embedded_model(tmp_path: Path) -> None:
    # The one-rollback variant (the default loop reviews again after up to 3 rollbacks, which
    # is slow on a CPU). Threshold 5, the top of the 1-5 scale (a threshold above it is refused):
    # only four top scores pass, which the tiny model does not give, so the one allowed rollback runs.
    # The describing steps' replies capped at 160 tokens (the embedded endpoint's cap is 384, which
    # the tiny model fills by repeating itself: a minute of the suite's CPU), the Solver's and the
    # Critic's left as they are, so their JSON is whole.
    short = {f"team.steps.{index}.model.max_tokens": 160 for index in range(3)}
    config = write_config(tmp_path / "agents.yaml", **{"critic.max_rollbacks": 1, "critic.final_review": False, **short})
    result = run_maps(["solve", "--problem", str(REPO / "examples/lever/problem.yaml"), "--json", "--threshold", "5",
                       "--config", str(config), "--runs-dir", str(tmp_path / "runs")], env=clean_env(), cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    # --json keeps standard output for the JSON; standard error says how the run goes, from before the first call
    assert "using the embedded model" in result.stderr and "this takes about" in result.stderr
    assert "Interpreter replied in " in result.stderr and "stopped: " in result.stderr
    # Four top scores would pass the threshold (5 is the top of the scale; a threshold above it
    # is refused): then no rollback ran. Either way the run is checked, never left to chance.
    rolled_back = summary["stop_reason"] == "rollback_limit"
    assert summary["stop_reason"] in ("rollback_limit", "critic_passed")
    assert len(summary["rollbacks"]) == (1 if rolled_back else 0)
    assert summary["final_answer"] in ("A", "B", "C", "D")  # a real choice, never a copied placeholder
    run_dir = Path(summary["run_dir"])
    run = json.loads((run_dir / "run.json").read_text())
    assert run["models"]["solver"]["kind"] == "local" and run["status"] == "finished"
    records = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    messages = [r for r in records if r["type"] == "message"]
    roles = [m["role"] for m in messages]
    assert roles[:6] == ["user_proxy", "interpreter", "aligner", "scholar", "solver", "critic"]
    critic = next(m for m in messages if m["role"] == "critic")
    assert set(critic["parsed"]["scores"]) == {"caption", "alignment", "knowledge", "solution"}
    assert all(1 <= score <= 5 for score in critic["parsed"]["scores"].values())
    # each text of the review is bounded (the grammar enforces it) so that the scores fit in the reply cap
    texts = [*critic["parsed"]["evaluation"].values(), *critic["parsed"]["feedback"].values()]
    assert texts and max(map(len, texts)) <= review_text_chars(run["models"]["critic"]["max_tokens"], 4)
    assert rolled_back == (min(critic["parsed"]["scores"].values()) < 5)  # the rule, from the scores given
    steps = ["interpreter", "aligner", "scholar", "solver"]
    if rolled_back:
        rerun_from = summary["rollbacks"][0]
        assert roles[6:] == steps[steps.index(rerun_from):]  # the weak step and every later one re-ran
    else:
        assert roles[6:] == []
    assert all(m["usage"]["completion_tokens"] > 0 for m in messages[1:])
    # One model name end to end: the server answers under the name the requests sent.
    assert all(m["served_model"] is None for m in messages[1:]) and "served_model" not in run["models"]["solver"]
    events = [r["event"] for r in records if r["type"] == "event"]
    assert events.count("rollback") == (1 if rolled_back else 0) and events[-1] == "stop"
    # The model cannot see images, so the Interpreter got a note instead of the picture.
    interpreter = messages[1]["request"][1]["content"]
    assert isinstance(interpreter, str)
    assert_notes_once_under_images(interpreter, [note_for("<image_1>", "lever.png", *LEVER_SIZE)])


def test_an_eval_on_the_embedded_model_is_free_timed_and_counts_each_problems_own_seconds(tmp_path: Path) -> None:
    # The direct baseline (one call per problem), two problems in flight: the embedded server has
    # one slot, so one problem's call waits for the other's, and that wait is not its own time.
    runs = tmp_path / "runs"
    result = run_maps(["eval", "custom", "--data", str(REPO / "examples/bench.jsonl"), "--method", "direct",
                       "--concurrency", "2", "--runs-dir", str(runs)], env=clean_env(), cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "cost: free (the model runs on this machine)" in err and "cost: unknown" not in err
    assert "estimated time: " in err and "one call at a time" in err
    (eval_dir,) = runs.glob("eval-*")
    rows = [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(row["status"] == "ok" for row in rows)
    # the second problem's call waited for the first's, and that wait is recorded apart from its
    # own seconds (tests/model/test_one_slot_gate.py shows the call's own time leaves it out)
    assert max(row.get("waited_seconds") or 0.0 for row in rows) > 0
