"""The Python API (`maps_autogen.Problem`, `solve`, `evaluate`) against the scripted server: the
run folders it writes are those of `maps solve` and `maps eval`, its results are read from them,
turns stream to the caller as they happen, and bad input is the one-line domain error."""

from __future__ import annotations

import base64
import io
import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

import maps_autogen
from maps_autogen._util._errors import ConfigError, MapsError, ProblemError, UsageError
from maps_autogen.records._chat_records import EventRecord, MessageRecord, TurnStartRecord
from maps_autogen.records._run_files import read_run, read_summary, read_transcript
from tests.helpers.common import REPO, make_png, write_config
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.private_urls import ImageServer
from tests.helpers.python_api import service  # noqa: F401 - the scripted server fixture

STEPS = ["interpreter", "aligner", "scholar", "solver", "critic"]




def one_line(error: MapsError) -> str:
    text = str(error)
    assert "\n" not in text and error.fix, text  # the problem and its fix, on one line
    return text


def test_import_is_cheap_and_problem_needs_no_agent_framework() -> None:
    """`import maps_autogen` loads none of the heavy packages; `maps_autogen.Problem` loads the
    problem's own (images, HTTP) but not AG2."""
    code = ("import sys, maps_autogen\n"
            "heavy = ('autogen', 'httpx', 'pydantic', 'PIL', 'click', 'rich', 'yaml')\n"
            "loaded = lambda: sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in heavy})\n"
            "print(loaded(), sorted(m for m in sys.modules if m.startswith('maps_autogen')))\n"
            "maps_autogen.Problem\n"
            "print('autogen' in sys.modules)\n"
            # the orchestration module (maps_autogen/orchestration/_solving.py), imported first, leaves the function as it is
            "from maps_autogen.orchestration._solving import Team\n"
            "print(maps_autogen.solve.__module__, maps_autogen.solve.__name__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    first, second, third = result.stdout.splitlines()
    assert first == "[] ['maps_autogen', 'maps_autogen._util', 'maps_autogen._util._lazy']"  # the lazy hook only
    assert second == "False"
    assert third == "maps_autogen.api._api solve"
    assert {"solve", "evaluate", "Problem", "SolveResult", "EvalOutcome"} <= set(dir(maps_autogen))


def test_problem_images_from_a_path_bytes_and_pil(tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png", size=(320, 200))
    from_path = maps_autogen.Problem("Which mass?", options=["2 kg", "4 kg"], images=[png])
    from_text_path = maps_autogen.Problem("Which mass?", images=str(png))  # one image given bare
    from_bytes = maps_autogen.Problem("Which mass?", images=[png.read_bytes()])
    from_pil = maps_autogen.Problem("Which mass?", images=[Image.new("RGB", (3000, 100), "white")])
    assert from_path.options == ("2 kg", "4 kg") and from_path.context == "" and from_path.answer_format == ""
    assert [image.name for image in from_path.images] == ["lever.png"]
    assert from_path.images[0].data == png.read_bytes() == from_bytes.images[0].data == from_text_path.images[0].data
    assert (from_bytes.images[0].mime, from_bytes.images[0].name) == ("image/png", "image-1")
    # Downscaled as `maps solve` does with the built-in images.max_side (1568).
    assert from_pil.images[0].width == 1568 and from_pil.images[0].height in (52, 53)
    assert from_pil.fitted(500).images[0].width == 500 and from_path.fitted(500) is from_path
    assert maps_autogen.Problem("q\udcff?").question == "q\ufffd?"  # text made valid Unicode, as a problem file's


def test_problem_image_urls_at_private_addresses_need_the_opt_in(tmp_path: Path) -> None:
    with ImageServer(make_png(tmp_path / "served.png").read_bytes()) as server:
        with pytest.raises(ProblemError) as refused:
            maps_autogen.Problem("What is shown?", images=[server.url("refused.png")])
        assert server.paths == []  # refused before any request
        allowed = maps_autogen.Problem("What is shown?", images=[server.url("allowed.png")], allow_private_urls=True)
    assert server.paths == ["/allowed.png"]
    assert allowed.images[0].name == "allowed.png" and allowed.images[0].width == 320
    line = one_line(refused.value)
    assert "non-public address (127.0.0.1)" in line and "allow_private_urls=True" in line


@pytest.mark.parametrize(("make", "expected"), [
    (lambda tmp: maps_autogen.Problem("   "), "the question is empty"),
    (lambda tmp: maps_autogen.Problem("q", images=[tmp / "missing.png"]), "missing.png does not exist"),
    (lambda tmp: maps_autogen.Problem("q", images=[b"not an image"]), "bytes #1 is not a readable image"),
    (lambda tmp: maps_autogen.Problem("q", images=[3.5]), "image #1 is a float"),
    (lambda tmp: maps_autogen.Problem("q", options="A or B"), "options must be a list"),
])
def test_bad_problem_parts_raise_one_line_problem_errors(tmp_path: Path, make, expected: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProblemError) as caught:
        make(tmp_path)
    assert expected in one_line(caught.value)


def test_solve_streams_each_turn_in_order_and_returns_what_run_json_holds(service: FakeOpenAI, tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png")
    problem = maps_autogen.Problem("Which mass balances the lever?", options=["2 kg", "4 kg"], images=[png])
    turns: list[tuple[str, int]] = []  # (role, model requests the server had received by then)
    kinds: list[str] = []

    def on_turn(turn: MessageRecord) -> None:
        assert isinstance(turn, MessageRecord)
        turns.append((turn.role, len(service.received)))

    def on_event(record: object) -> None:
        assert isinstance(record, (MessageRecord, EventRecord, TurnStartRecord))
        kinds.append(record.event if isinstance(record, EventRecord) else record.type)  # type: ignore[union-attr]

    result = maps_autogen.solve(problem, runs_dir=tmp_path / "runs", on_turn=on_turn, on_event=on_event)
    # Each turn reached the caller as it happened: before the next step's request was sent.
    roles = ["user_proxy", *STEPS, "scholar", "solver", "critic"]
    assert turns == [(role, number) for number, role in enumerate(roles)]
    starts = [index for index, kind in enumerate(kinds) if kind == "turn_start"]
    assert len(starts) == 8 and kinds[-1] == "stop"
    assert kinds.index("rollback") < starts[5]  # told before the Scholar's revision began

    assert result.run_dir.parent == tmp_path / "runs" and result.run_dir.name.startswith("solve-")
    run = read_run(result.run_dir)
    assert result.run == run
    assert (result.final_answer, result.final_answer_text, result.stop_reason) == ("B", "B. 4 kg", "critic_passed")
    assert result.final_answer == run.final_answer and result.stop_reason == run.stop_reason
    assert result.rollbacks == run.rollbacks and [r.step for r in result.rollbacks] == ["scholar"]
    assert result.verdicts == run.critic_verdicts and len(result.verdicts) == 2
    assert result.usage == run.usage and result.usage is not None and result.usage.calls == 8
    assert result.error is None and run.status == "finished"
    assert [line.role for line in read_transcript(result.run_dir) if isinstance(line, MessageRecord)] == roles
    assert (result.run_dir / "images" / "image-1.png").read_bytes() == png.read_bytes()


def test_solve_reads_a_problem_file_and_scores_its_gold_answer(service: FakeOpenAI, tmp_path: Path) -> None:
    result = maps_autogen.solve(REPO / "examples" / "lever" / "problem.yaml", runs_dir="runs", model="gpt-4o-mini")
    assert result.run_dir.parent == Path("runs") and (tmp_path / result.run_dir / "run.json").is_file()
    assert result.run.gold == "B" and result.run.correct is True  # the script's final answer is B
    assert {request.body["model"] for request in service.received} == {"gpt-4o-mini"}  # model= for every step
    assert result.run.problem.id == "lever" and result.run.problem.image_files == ["images/image-1.png"]


def test_solve_sends_images_at_the_configs_max_side(service: FakeOpenAI, tmp_path: Path) -> None:
    """A Problem's images are loaded at the built-in images.max_side; a config with a smaller one
    downscales them before anything is sent or stored."""
    config = write_config(tmp_path / "small.yaml", **{"images.max_side": 100})
    problem = maps_autogen.Problem("Which mass?", images=[make_png(tmp_path / "wide.png", size=(400, 200))])
    result = maps_autogen.solve(problem, config=config, runs_dir=tmp_path / "runs")
    [sent] = [request.image_urls() for request in service.received if request.role == "interpreter"]
    stored = Image.open(result.run_dir / "images" / "image-1.png")
    assert stored.size == (100, 50) and len(sent) == 1
    assert Image.open(io.BytesIO(base64.b64decode(sent[0].split(",", 1)[1]))).size == (100, 50)
    assert (result.run.problem.images[0].width, result.run.problem.images[0].height) == (100, 50)


def test_a_callback_that_raises_stops_the_run_and_is_raised_after_the_folder_is_written(
        service: FakeOpenAI, tmp_path: Path) -> None:
    class Stop(Exception):
        pass

    def on_turn(turn: MessageRecord) -> None:
        if turn.role == "aligner":
            raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        maps_autogen.solve(maps_autogen.Problem("Which mass?"), runs_dir=tmp_path / "runs", on_turn=on_turn)
    assert service.roles() == ["aligner"]  # no image: no Interpreter; no request after the failing callback
    [run_dir] = (tmp_path / "runs").iterdir()
    run = read_run(run_dir)
    assert run.status == "finished" and run.stop_reason == "interrupted"


def test_bad_input_to_solve_is_the_domain_error_before_any_call(service: FakeOpenAI, tmp_path: Path) -> None:
    problem = maps_autogen.Problem("Which mass?", options=["2 kg", "4 kg"])
    cases: list[tuple[dict[str, object], type[MapsError], str]] = [
        ({"without": ["nobody"]}, UsageError, "has no step 'nobody'"),
        ({"config": tmp_path / "missing.yaml"}, ConfigError, "missing.yaml"),
        ({"threshold": 9}, UsageError, "--threshold"),
    ]
    for options, kind, expected in cases:
        with pytest.raises(kind) as caught:
            maps_autogen.solve(problem, runs_dir=tmp_path / "runs", **options)  # type: ignore[arg-type]
        assert expected in one_line(caught.value), options
    png = make_png(tmp_path / "lever.png")
    with pytest.raises(ProblemError) as image:
        maps_autogen.solve(png, runs_dir=tmp_path / "runs")
    assert "is an image, not a problem file" in one_line(image.value) and "Problem(question, images=" in image.value.fix
    with pytest.raises(ProblemError) as gold:
        maps_autogen.solve(maps_autogen.Problem("Which?", options=["a", "b"], answer="Z"), runs_dir=tmp_path / "runs")
    assert "the problem: 'answer' must be an option letter A-B" in one_line(gold.value)
    assert service.received == [] and not (tmp_path / "runs").exists()


def test_evaluate_returns_the_summary_it_wrote(service: FakeOpenAI, tmp_path: Path) -> None:
    announced: list[str] = []
    outcome = maps_autogen.evaluate("custom", data=REPO / "examples" / "bench.jsonl", limit=1,
                                    runs_dir=tmp_path / "runs", announce=announced.append)
    assert outcome.eval_dir.parent == tmp_path / "runs" and outcome.eval_dir.name.startswith("eval-custom-")
    summary = read_summary(outcome.eval_dir)
    assert outcome.summary == summary
    assert (summary.benchmark, summary.method, summary.average.scored, summary.failed) == ("custom", "maps", 1, 0)
    assert summary.usage.calls == len(service.received) > 0
    assert json.loads((outcome.eval_dir / "summary.json").read_text())["eval_id"] == outcome.eval_dir.name
    assert announced  # what maps eval prints before its first call
    assert outcome.fatal is None and not outcome.interrupted and outcome.table


def test_bad_input_to_evaluate_is_the_domain_error(service: FakeOpenAI, tmp_path: Path) -> None:
    data = REPO / "examples" / "bench.jsonl"
    cases: list[tuple[dict[str, object], str]] = [
        ({"benchmark": "nope"}, "unknown benchmark 'nope'"),
        ({"benchmark": "custom", "data": data, "method": "cot", "without": ["scholar"]}, "--without applies to"),
        ({"benchmark": "custom", "data": data, "rules": "newest"}, "unknown rules 'newest'"),
        ({"benchmark": "custom", "data": data, "shard": "3/2"}, "--shard '3/2'"),
    ]
    for options, expected in cases:
        with pytest.raises(UsageError) as caught:
            maps_autogen.evaluate(runs_dir=tmp_path / "runs", **options)  # type: ignore[arg-type]
        assert expected in one_line(caught.value), options
    assert service.received == [] and not (tmp_path / "runs").exists()


def readme_python_blocks() -> list[str]:
    """The fenced ```python blocks of the Python API's page (docs/python-api.md), which the README links."""
    return re.findall(r"^```python\n(.*?)^```", (REPO / "docs" / "python-api.md").read_text(), flags=re.S | re.M)


def test_the_readme_python_example_runs_as_written(service: FakeOpenAI, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The Python API page's ```python blocks, run one after the other (as a notebook's cells) in a folder
    laid out as the repository's root (its examples/), against the scripted server."""
    blocks = readme_python_blocks()
    assert len(blocks) >= 2, "docs/python-api.md shows the Python API in ```python blocks"
    root = tmp_path / "repo"
    shutil.copytree(REPO / "examples", root / "examples")
    monkeypatch.chdir(root)
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks))
    runpy.run_path(str(script), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    for step in ("Interpreter", "Aligner", "Scholar", "Solver", "Critic"):
        assert any(line.startswith(f"{step}: ") for line in lines), step  # each turn streamed as it happened
    solved = next(line for line in lines if line.startswith("B. 4 kg critic_passed runs/solve-"))
    evaluated, correct = lines[-2:]
    accuracy, eval_dir = evaluated.split()
    assert read_summary(Path(eval_dir)).average.accuracy == float(accuracy)
    assert correct == "True"  # examples/lever's gold answer is B, the script's final answer
    assert (root / solved.split()[-1] / "run.json").is_file()
