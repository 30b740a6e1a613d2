"""Settings from where the user is not looking. A `.env` in the working folder gives keys and
endpoints only, and the run's announcement says which it gave; it cannot lift a safety switch
(nor set any other MAPS_* setting): those it holds are named as ignored. A safety switch is
given on the command line only (the list is derived from the options' declarations), so an
exported variable naming one is ignored too, in one line. A variable's value is taken whole (a
value with spaces is one value), and a bad value is blamed on the variable, never on a flag the
user did not type."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click
import pytest

from maps_autogen.cli import cli
from maps_autogen.eval import EvalOptions
from maps_autogen.orchestration import SolveOptions
from maps_autogen.report.view import ServeOptions
from maps_autogen.settings import Options
from tests.helpers.common import TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply


def problem_outside(tmp_path: Path) -> Path:
    """A problem file naming an image outside its folder (refused unless --allow-outside-paths)."""
    make_png(tmp_path / "private.png", color="red")
    (tmp_path / "problems").mkdir()
    path = tmp_path / "problems" / "problem.yaml"
    path.write_text(f"question: Which bar is tallest?\nimages:\n  - {str(tmp_path / 'private.png')!r}\n")
    return path


def script(request: Received) -> Reply:
    if request.role == "critic":
        return Reply(critic_json())
    return Reply(solver_json("A") if request.role == "solver" else "notes")


def test_a_dotenv_gives_keys_and_endpoints_said_so_and_lifts_no_safety_switch(tmp_path: Path) -> None:
    problem = problem_outside(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    with FakeOpenAI(script) as server:
        (work / ".env").write_text(f"OPENAI_BASE_URL={server.base_url}\nOPENAI_API_KEY={TEST_KEY}\n"
                                   "MAPS_SOLVE_ALLOW_OUTSIDE_PATHS=1\nMAPS_SOLVE_ALLOW_PRIVATE_URLS=true\n"
                                   "MAPS_SOLVE_RUNS_DIR=elsewhere\nUNRELATED=1\n")
        refused = run_maps(["solve", "--problem", str(problem), "--quiet"], env=clean_env(), cwd=work)
        assert refused.returncode == 2, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert lines[0] == (f"note: {work / '.env'} sets MAPS_SOLVE_ALLOW_OUTSIDE_PATHS, MAPS_SOLVE_ALLOW_PRIVATE_URLS, "
                            "MAPS_SOLVE_RUNS_DIR: ignored (a .env gives keys and endpoints only; export the variable "
                            "or pass the option on the command line)")
        assert "outside the problem file's folder" in lines[-1] and not server.received
        # The key and the server it names are used, and the announcement says where they came from.
        solved = run_maps(["solve", "-q", "What is 6*7?"], env=clean_env(), cwd=work)
        assert solved.returncode == 0, solved.stderr
        assert server.received and server.received[0].headers["authorization"] == f"Bearer {TEST_KEY}"
        announced = [line for line in solved.stdout.splitlines() + solved.stderr.splitlines() if "using " in line]
        assert any(f"OPENAI_BASE_URL, OPENAI_API_KEY from {work / '.env'} (a .env gives keys and endpoints only)"
                   in line for line in announced), solved.stdout + solved.stderr
        assert (work / "runs").is_dir() and not (work / "elsewhere").exists()  # MAPS_SOLVE_RUNS_DIR ignored


def test_a_safety_switch_is_given_on_the_command_line_only(tmp_path: Path) -> None:
    problem = problem_outside(tmp_path)
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY, MAPS_SOLVE_ALLOW_OUTSIDE_PATHS="1")
        refused = run_maps(["solve", "--problem", str(problem), "--quiet"], env=env, cwd=tmp_path)
        assert refused.returncode == 2 and not server.received, refused.stderr
        assert refused.stderr.startswith("note: MAPS_SOLVE_ALLOW_OUTSIDE_PATHS is ignored: --allow-outside-paths lifts "
                                         "a safety bound and is given on the command line only\n"), refused.stderr
        allowed = run_maps(["solve", "--problem", str(problem), "--allow-outside-paths", "--quiet"], env=env,
                           cwd=tmp_path)
        assert allowed.returncode == 0, allowed.stderr


def test_the_safety_switches_are_derived_from_the_declarations() -> None:
    """Every declared option that lifts a safety bound (marked `safety`) is a command-line-only
    switch on every command, and every option whose help says it is for trusted input is one."""
    from maps_autogen.cli._shared import SafetySwitch

    declared = {one.name: one.spec for options in (SolveOptions, EvalOptions, ServeOptions)
                for one in options.declared()}
    assert {name for name, spec in declared.items() if spec.safety} == {"allow_private_urls", "allow_outside_paths",
                                                                         "host"}
    assert all(spec.safety for spec in declared.values() if "trusted" in spec.help)
    switches = {(name, param.name) for name, command in cli.commands.items() for param in command.params
                if isinstance(param, SafetySwitch)}
    assert switches == {("solve", "allow_private_urls"), ("solve", "allow_outside_paths"),
                        ("eval", "allow_private_urls"), ("eval", "allow_outside_paths"), ("view", "host")}
    assert all(not param.allow_from_autoenv for command in cli.commands.values() for param in command.params
               if isinstance(param, SafetySwitch))
    assert issubclass(SafetySwitch, click.Option) and issubclass(SolveOptions, Options)


def test_a_variable_s_value_is_taken_whole(tmp_path: Path) -> None:
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY, MAPS_SOLVE_OPTIONS="12 cm")
        result = run_maps(["solve", "-q", "How long is the bar?", "--quiet"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = server.received[0].user_text()
    assert "12 cm" in text and "(B)" not in text and "B." not in text, text  # one option, not "12" and "cm"


@pytest.mark.parametrize(("variable", "value", "flag", "args"), [
    ("MAPS_EVAL_SHARD", "5/4", "--shard", ["eval", "custom", "--data", "data.jsonl"]),
    ("MAPS_SOLVE_WITHOUT", "nosuchstep", "--without", ["solve", "-q", "x"]),
    ("MAPS_EVAL_WITHOUT", "no such step", "--without", ["eval", "custom", "--data", "data.jsonl"]),
])
def test_a_bad_value_from_a_variable_is_named_by_the_variable(tmp_path: Path, variable: str, value: str, flag: str,
                                                            args: list[str]) -> None:
    (tmp_path / "data.jsonl").write_text('{"id": "a", "question": "1+1?", "answer": "2"}\n')
    result = run_maps(args, env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1",
                                          **{variable: value}), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert variable in line and flag not in line and value in line, line  # the value whole, spaces and all
    assert "Traceback" not in result.stderr


def test_a_variable_given_before_a_resume_is_named_in_the_refusal(tmp_path: Path) -> None:
    """The refusal of a selection a resume cannot change names the variable that gave it."""
    run = tmp_path / "eval-x"
    result = run_maps(["eval", "custom", "--resume", str(run)], env=clean_env(MAPS_EVAL_LIMIT="3"), cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: MAPS_EVAL_LIMIT cannot change a resumed run"), line


def test_the_python_api_reads_no_dotenv(tmp_path: Path) -> None:
    """A `.env` is the command line's: importing maps_autogen reads none."""
    (tmp_path / ".env").write_text("OPENAI_API_KEY=from-dotenv-0000\n")
    code = "import os, maps_autogen; print(os.environ.get('OPENAI_API_KEY', 'unset'))"
    import sys

    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=clean_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "unset", out.stderr
