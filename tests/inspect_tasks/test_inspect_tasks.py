"""MAPS inside Inspect: the real `inspect eval maps_autogen/<benchmark>` against the scripted
server (Inspect's openai-api provider reads FAKE_BASE_URL and FAKE_API_KEY), its log read back
with Inspect's own reader, and the verdicts compared with `maps eval` on the same data and
the same scripted replies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from maps_autogen.settings._config import load_config
from tests.helpers.common import REPO, TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply
from tests.helpers.image_notes import assert_notes_once_under_images, note_for

if os.environ.get("CI") == "true":  # CI installs the inspect extra (scripts/setup.sh): missing is a failure
    from inspect_ai.log import read_eval_log
else:
    read_eval_log = pytest.importorskip("inspect_ai.log").read_eval_log

INSPECT = Path(sys.executable).parent / "inspect"
MODEL = "openai-api/fake/fake-model"
#: The team's step names, read from the built-in team (never written out here).
STEPS = load_config(REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").team.config.names


def inspect_eval(task: str, args: list[str], server: FakeOpenAI, tmp_path: Path) -> Any:
    """Run `inspect eval maps_autogen/<task>` as a user does; its one JSON log, read back."""
    logs = tmp_path / "inspect-logs"
    env = clean_env(FAKE_BASE_URL=server.base_url, FAKE_API_KEY=TEST_KEY)
    env = {key: value for key, value in env.items() if not key.startswith("INSPECT_")}
    result = subprocess.run([str(INSPECT), "eval", f"maps_autogen/{task}", *args, "--model", MODEL,
                             "--log-dir", str(logs), "--log-format", "json", "--display", "none"],
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (log_file,) = logs.glob("*.json")
    assert TEST_KEY not in log_file.read_text()
    return read_eval_log(str(log_file), resolve_attachments=True)


def review_formats(received: list[Received]) -> list[dict[str, Any]]:
    """The distinct `response_format`s of the requests (the Solver's and the Critic's JSON schemas)."""
    distinct = {json.dumps(r.body["response_format"], sort_keys=True) for r in received if "response_format" in r.body}
    return [json.loads(form) for form in sorted(distinct)]


def model_roles(sample: Any) -> list[str]:
    """The step each model call of a sample was made for (the X-Maps-Role header it sent)."""
    return [event.config.extra_headers["X-Maps-Role"] for event in sample.events if event.event == "model"]


class CutSolver:
    """`script`, with the Solver's reply to problem `pid` cut at max_tokens."""

    def __init__(self, script: ProblemScript, pid: str):
        self.script, self.pid = script, pid

    def __call__(self, request: Received) -> Reply:
        reply = self.script(request)
        if request.role == "solver" and self.script._pid(request) == self.pid:
            reply.finish_reason = "length"
        return reply


def test_inspect_eval_runs_the_team_through_inspect_and_agrees_with_maps_eval(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    # right answers but problem 4's; the Critic scores problem 2's solution low once; problem 3's Solver reply is cut
    answers = {pid: "999" if pid == "4" else ("B" if row["question_type"] == "multi_choice" else row["answer"])
               for pid, row in rows.items()}

    def script() -> CutSolver:
        return CutSolver(ProblemScript(answers, critic_low={"2"}), "3")

    with FakeOpenAI(script()) as server:
        log = inspect_eval("mathvista", ["-T", f"data={data}"], server, tmp_path)
        through_inspect = len(server.received)
        server.script = script()  # the same replies again, the Critic's "first review" anew
        maps = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--no-cache"],
                        env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
        received = list(server.received)
    assert maps.returncode == 0, maps.stderr
    # every reply schema Inspect sent is the one maps sends itself, the reviewer's score bounds included
    # (Inspect's openai-api provider alone would drop `minimum` and `maximum`)
    assert review_formats(received[:through_inspect]) == review_formats(received[through_inspect:])
    (critic_schema,) = [form["json_schema"]["schema"] for form in review_formats(received[:through_inspect])
                        if form["json_schema"]["name"] == "critic_verdict"]
    assert {(s["minimum"], s["maximum"]) for s in critic_schema["properties"]["scores"]["properties"].values()} == {(1, 5)}
    assert log.status == "success" and log.eval.task == "maps_autogen/mathvista"
    samples = {str(sample.id): sample for sample in log.samples or []}
    assert sorted(samples) == ["1", "2", "3", "4"]  # the benchmark's own ids
    for pid, sample in samples.items():
        # the problem as the sample's first message (read when it ran): its text and its image as a
        # data URL; the row's metadata
        content = sample.messages[0].content
        assert any(part.type == "text" and f"[q:{pid}]" in part.text for part in content)
        assert any(part.type == "image" and part.image.startswith("data:image/png;base64,") for part in content)
        assert sample.metadata["subset"] in ("general", "math") and sample.target == rows[pid]["answer"]
        # every step's call went through Inspect's model API, each turn a span named for its step
        assert model_roles(sample)[:5] == list(STEPS)
        spans = [event.name for event in sample.events if event.event == "span_begin" and event.type == "maps-step"]
        assert spans == model_roles(sample)
        assert set(sample.scores) == {"official"}
    # the rollback is an info event with its step and the scores that caused it; the replayed turns follow
    rollbacks = [e.data for e in samples["2"].events if e.event == "info" and e.data.get("event") == "rollback"]
    assert [(r["step"], r["scores"]["solution"]) for r in rollbacks] == [("solver", 2)]
    assert model_roles(samples["2"])[5:] == ["solver", "critic"]
    assert not any(e.event == "info" and e.data.get("event") == "rollback" for e in samples["1"].events)
    # a reply cut at max_tokens is told, as the chat tells it, and recorded with the verdict
    assert any(e.event == "info" and e.data.get("event") == "max_tokens_reached" for e in samples["3"].events)
    assert samples["3"].scores["official"].metadata["max_tokens_reached"] == ["solver"]
    # the verdicts are maps eval's: the same extraction and correctness for every problem
    eval_dir = next((tmp_path / "runs").glob("eval-*"))
    results = {r["pid"]: r for r in map(json.loads, (eval_dir / "results.jsonl").read_text().splitlines())}
    for pid, sample in samples.items():
        score = sample.scores["official"]
        assert (score.value == "C") is results[pid]["correct"], pid
        assert score.metadata["extraction"] == results[pid]["extraction"]
        assert score.metadata["rollbacks"] == results[pid]["rollbacks"]
        assert score.metadata["max_tokens_reached"] == results[pid]["max_tokens_reached"]
    assert [samples[pid].scores["official"].value for pid in "1234"] == ["C", "C", "C", "I"]
    assert log.results is not None and log.results.scores[0].metrics["accuracy"].value == 0.75


def test_inspect_eval_direct_baseline_makes_one_call_and_agrees_with_maps_eval(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    answers = {"1": "2", "2": "5"}  # problem 1 right (gold 2), problem 2 wrong (gold 4)
    with FakeOpenAI(ProblemScript(answers)) as server:
        log = inspect_eval("mathvista", ["-T", f"data={data}", "-T", "method=direct"], server, tmp_path)
        maps = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--no-cache",
                         "--method", "direct"],
                        env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert maps.returncode == 0, maps.stderr
    eval_dir = next((tmp_path / "runs").glob("eval-*"))
    results = {r["pid"]: r for r in map(json.loads, (eval_dir / "results.jsonl").read_text().splitlines())}
    for sample in log.samples or []:
        assert model_roles(sample) == ["direct"]
        score = sample.scores["official"]
        assert (score.value == "C") is results[str(sample.id)]["correct"]
        assert score.metadata["extraction"] == results[str(sample.id)]["extraction"]
    assert {str(s.id): s.scores["official"].value for s in log.samples or []} == {"1": "C", "2": "I"}


def test_inspect_eval_custom_benchmark_from_the_examples(tmp_path: Path) -> None:
    def script(request: Received) -> Reply:
        if request.role == "solver":  # the lever right (B), the circuit wrong (gold 4)
            return Reply(solver_json("B" if "lever" in request.user_text() else "5"))
        if request.role == "critic":
            return Reply(critic_json(5, 5, 5, 5))
        return Reply(f"{request.role} notes")

    with FakeOpenAI(script) as server:
        # one step left out, as maps eval --without does
        log = inspect_eval("custom", ["-T", f"data={REPO / 'examples' / 'bench.jsonl'}", "-T", f"without={STEPS[2]}"],
                           server, tmp_path)
    samples = {str(sample.id): sample for sample in log.samples or []}
    assert {pid: s.scores["official"].value for pid, s in samples.items()} == {"lever": "C", "circuit": "I"}
    assert all(model_roles(sample) == [step for step in STEPS if step != STEPS[2]] for sample in samples.values())
    assert samples["lever"].metadata["subset"] == "mechanics"
    # Inspect's steps are told what maps solve's are (tests/orchestration/test_paper_defaults.py): the Critic asks
    # a Socratic question per dimension, no step before the Solver is asked for a result, every preamble grounds.
    texts = {request.role: " ".join((str(request.messages[0]["content"]) + request.user_text()).split())
             for request in server.received}  # its system message (the preamble) and its user message
    assert "ask the single Socratic question that would lead its author to re-examine the work" in texts[STEPS[-1]]
    assert all("preliminary" not in texts[step].lower() for step in STEPS[:2])
    assert all("Do not invent measurements that are not given." in text for text in texts.values())


def test_a_failed_request_or_a_broken_image_fails_its_own_sample_never_scored(tmp_path: Path) -> None:
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 3)
    (data.parent / "images" / "3.png").write_bytes(b"not a png")  # problem 3's image cannot be read
    answers = ProblemScript({"1": "2", "2": "4"})

    def script(request: Received) -> Reply:  # problem 2's review is refused (not retried)
        if request.role == "critic" and answers._pid(request) == "2":
            return Reply('{"error": {"message": "scripted refusal"}}', status=400)
        return answers(request)

    with FakeOpenAI(script) as server:
        log = inspect_eval("mathvista", ["-T", f"data={data}", "--no-fail-on-error"], server, tmp_path)
    samples = {str(sample.id): sample for sample in log.samples or []}
    assert samples["1"].error is None and samples["1"].scores["official"].value == "C"
    # Inspect's own error, raised as Inspect raised it; no verdict
    assert samples["2"].error is not None and "scripted refusal" in samples["2"].error.message
    assert not samples["2"].scores
    assert model_roles(samples["2"]) == list(STEPS)
    # a problem whose image cannot be read fails alone, before any call, as in maps eval
    assert samples["3"].error is not None and "3.png" in samples["3"].error.message
    assert not samples["3"].scores and model_roles(samples["3"]) == []


def test_task_arguments_are_checked_before_any_sample() -> None:
    from maps_autogen._util._errors import UsageError
    from maps_autogen.inspect_tasks import maps_task

    data = str(REPO / "examples" / "bench.jsonl")
    with pytest.raises(UsageError, match="has no step 'nosuch'"):
        maps_task("custom", data=data, without="nosuch")
    with pytest.raises(UsageError, match="unknown method 'tot'"):
        maps_task("custom", data=data, method="tot")
    with pytest.raises(UsageError, match="without applies to the maps method"):
        maps_task("custom", data=data, method="direct", without=STEPS[0])


def test_maps_does_not_load_inspect() -> None:
    """`import maps_autogen` and the CLI start without Inspect (only Inspect loads the tasks)."""
    code = "import sys, maps_autogen, maps_autogen.cli; assert 'inspect_ai' not in sys.modules, 'inspect_ai loaded'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_served_model_is_recorded_only_when_it_differs_and_a_cut_reply_is_length() -> None:
    from inspect_ai.model import ModelOutput

    from maps_autogen.inspect_tasks._backend import completion_of
    from maps_autogen.records._schema import SentSettings

    def served(answered: str, requested: str, stop: Any = "stop") -> Any:
        output = ModelOutput.from_content(answered, "text", stop_reason=stop)
        return completion_of(output, model=f"openai-api/{requested}", requested=requested, seconds=0.0, attempts=1,
                             sent=SentSettings(), rejected=None)

    assert served("fake-model", "fake/fake-model").served_model is None  # openai-api sends the last part
    assert served("gpt-4o", "gpt-4o").served_model is None
    assert served("gpt-4o-2024-08-06", "gpt-4o").served_model == "gpt-4o-2024-08-06"
    assert served("gpt-4o", "gpt-4o", "max_tokens").finish_reason == "length"
    assert served("gpt-4o", "gpt-4o", "model_length").finish_reason == "length"


def test_a_text_only_server_with_its_config_and_an_unusable_review_sent_once(tmp_path: Path) -> None:
    """docs/inspect.md's recipe for a server of one's own: `-T config=` with `vision: false` (and the
    sampling settings for every step); a review that cannot be used is not sent again unchanged
    at temperature 0, and the sample stops as `critic_unparseable`."""
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    config = tmp_path / "text-only.yaml"
    config.write_text("endpoints:\n  openai: {vision: false}\nevery_step: {top_p: 0.9, seed: 7}\n")
    script = ProblemScript({"1": "2", "2": "4"}, critic_low={"1"})

    def replies(request: Received) -> Reply:  # problem 2's reviews score off the 1-5 scale: unusable
        if request.role == "critic" and script._pid(request) == "2":
            return Reply(critic_json(389746, 5, 5, 5))
        return script(request)

    with FakeOpenAI(replies) as server:
        log = inspect_eval("mathvista", ["-T", f"data={data}", "-T", f"config={config}"], server, tmp_path)
    samples = {str(sample.id): sample for sample in log.samples or []}
    assert all(not request.image_urls() for request in server.received)  # a note stands in for each image
    for request in server.received:  # each step that is shown the images is told of each one once
        if request.role == STEPS[0]:
            pid = script._pid(request)
            assert_notes_once_under_images(request.user_text(), [note_for("<image_1>", f"{pid}.png", 320, 200)])
    assert {(request.body["top_p"], request.body["seed"]) for request in server.received} == {(0.9, 7)}
    critic_requests = [request for request in server.received if request.role == STEPS[-1]]
    assert all(request.body["response_format"]["json_schema"]["schema"]["properties"]["scores"]["properties"]
               ["caption"]["maximum"] == 5 for request in critic_requests)
    assert len([request for request in critic_requests if script._pid(request) == "2"]) == 1  # never re-sent
    assert samples["2"].scores["official"].metadata["stop_reason"] == "critic_unparseable"
    rollbacks = [e.data for e in samples["1"].events if e.event == "info" and e.data.get("event") == "rollback"]
    assert [r["step"] for r in rollbacks] == ["solver"]
