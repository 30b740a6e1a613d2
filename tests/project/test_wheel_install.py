"""The wheel installs and works anywhere: built from the package's own files, installed into a
fresh virtual environment (no system site-packages, nothing of the checkout on its path), its
`maps solve` and the Python API's `solve()` run from empty folders against the scripted server
with only what the wheel carries (the built-in agents.yaml, teams, prompts), and a user's mypy
reads its types (py.typed: the API's signatures check each call).

The dependencies are not downloaded: the fresh environment sees this environment's
site-packages through a .pth file (a path only: the .pth files there, such as the editable
install of the checkout, are not run), so the test works offline and in seconds. Nothing here
skips: in CI a wheel that cannot be built or installed fails the test."""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

from tests.helpers.common import REPO, TEST_KEY, build_wheel, clean_env, make_png, run_checked
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.readme_commands import fake_service  # every step answers; the Critic passes at once
from tests.helpers.typed_calls import check_calls


def fresh_environment(tmp_path: Path, wheel: Path) -> Path:
    """A new virtual environment with the wheel installed (this environment's pip installs it
    there) and this environment's dependencies visible; its python."""
    venv = tmp_path / "venv"
    run_checked([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    run_checked([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    site = Path(run_checked([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


API_SCRIPT = """
import json, sys
import maps_autogen
turns = []
problem = maps_autogen.Problem("Which mass balances the lever?", options=["2 kg", "4 kg"], images=[sys.argv[1]])
result = maps_autogen.solve(problem, on_turn=lambda turn: turns.append(turn.role))
print(json.dumps({"module": maps_autogen.__file__, "answer": result.final_answer_text, "turns": turns,
                  "run_dir": str(result.run_dir), "config": result.run.config_path}))
"""


def test_the_wheel_solves_from_an_empty_folder_in_a_fresh_environment(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    python = fresh_environment(tmp_path, wheel)
    venv = python.parent.parent
    installed = venv / "lib"
    (tmp_path / "inputs").mkdir()
    png = make_png(tmp_path / "inputs" / "lever.png")  # outside the folders the commands run in
    empty, empty_too = tmp_path / "empty", tmp_path / "empty-too"
    empty.mkdir()
    empty_too.mkdir()
    with FakeOpenAI(fake_service()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY, PATH=f"{venv / 'bin'}:/usr/bin:/bin")
        env.pop("PYTHONPATH", None)
        env.pop("VIRTUAL_ENV", None)
        solved = run_checked([str(venv / "bin" / "maps"), "solve", str(png), "-q", "Which mass balances the lever?",
                      "-o", "2 kg", "-o", "4 kg", "--json"], cwd=empty, env=env)
        cli_roles = server.roles()
        api = run_checked([str(python), "-c", API_SCRIPT, str(png)], cwd=empty_too, env=env)
    summary = json.loads(solved.stdout)
    assert summary["final_answer_text"] == "A. 2 kg" and summary["stop_reason"] == "critic_passed"
    assert cli_roles == ["interpreter", "aligner", "scholar", "solver", "critic"]
    run_dir = empty / summary["run_dir"]
    assert Path(summary["run_dir"]).parts[0] == "runs" and (run_dir / "transcript.jsonl").is_file()
    record = json.loads((run_dir / "run.json").read_text())
    assert record["maps_version"] == "0.1.0" and record["final_answer"] == "A"
    # The built-in configuration came from the installed package, not from the checkout.
    assert Path(record["config_path"]).is_relative_to(installed), record["config_path"]
    assert record["config_path"].endswith("maps_autogen/settings/defaults/agents.yaml")
    assert sorted(path.name for path in empty.iterdir()) == ["runs"]  # nothing else written or needed there

    answer = json.loads(api.stdout.strip().splitlines()[-1])
    assert Path(answer["module"]).is_relative_to(installed) and not Path(answer["module"]).is_relative_to(REPO)
    assert answer["answer"] == "A. 2 kg" and Path(answer["config"]).is_relative_to(installed)
    assert answer["turns"] == ["user_proxy", "interpreter", "aligner", "scholar", "solver", "critic"]
    assert (empty_too / answer["run_dir"] / "run.json").is_file()


def test_a_users_mypy_reads_the_installed_wheels_types(tmp_path: Path) -> None:
    """mypy, given the fresh environment's python as a user's project gives it, finds the
    installed package typed (py.typed) and flags a misspelt keyword of solve and evaluate."""
    python = fresh_environment(tmp_path, build_wheel(tmp_path))
    (tmp_path / "project").mkdir()
    check_calls(tmp_path / "project", python=python)
