"""What a fresh `maps solve` process imports: none of the heavy packages a solve never uses.

`import autogen` imports the `openai` SDK and `matplotlib.pyplot` whenever they are installed
(the dev and report extras install them, so they are installed here); that was ~1.6 s of every
solve's start-up. Structural, not timed: the modules a whole `maps solve` run (in its own process, against the
scripted server) holds in `sys.modules` when it exits are checked.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.helpers.common import clean_env, critic_json, make_png, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript

# Packages a solve never uses. sympy and antlr are the scorers' (a problem without a gold answer
# is not scored); datasets reads hub data sets (maps eval only); pandas and PIL's plugins as well.
NEVER_IMPORTED = ("openai", "matplotlib", "networkx", "sympy", "antlr4", "datasets", "pandas")


# `maps` as its console script runs it, writing the names of the modules it imported (not those
# marked unimportable) to a file when it exits.
MAPS_LISTING_MODULES = """
import atexit, json, runpy, sys
listing_file = sys.argv[1]
def listing():
    with open(listing_file, "w") as handle:
        json.dump(sorted(name for name, module in sys.modules.items() if module is not None), handle)
atexit.register(listing)
sys.argv = ["maps", *sys.argv[2:]]
runpy.run_module("maps_autogen.cli", run_name="__main__", alter_sys=True)
"""


def test_a_solve_imports_no_package_it_does_not_use(tmp_path: Path) -> None:
    # They are installed (dev extras): the test shows our import avoids them, not their absence.
    assert importlib.util.find_spec("openai") is not None
    assert importlib.util.find_spec("matplotlib") is not None
    make_png(tmp_path / "lever.png")
    problem = tmp_path / "problem.yaml"
    problem.write_text(yaml.safe_dump({"id": "p1", "question": "What is m?", "options": ["1 kg", "2 kg"],
                                       "images": ["lever.png"]}))  # no gold answer: nothing is scored
    script = RoleScript({"solver": [solver_json("B")], "critic": [critic_json()]}, default="notes")
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY="sk-test-imports", OPENAI_BASE_URL=server.base_url)
        result = subprocess.run(
            [sys.executable, "-c", MAPS_LISTING_MODULES, str(tmp_path / "modules.json"), "solve", "--problem",
             str(problem), "--json", "--runs-dir", str(tmp_path / "runs")],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        requests = len(server.received)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["final_answer"] == "B"
    assert requests >= 4  # the whole chat ran in that process
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert "autogen" in modules and "maps_autogen.orchestration._chat" in modules  # the listing is real
    heavy = sorted(name for name in modules if name.split(".")[0] in NEVER_IMPORTED)
    assert heavy == [], f"maps solve imported {heavy[:10]}"


# `maps` on an install without openai and matplotlib (no dev or report extras): both unimportable.
MAPS_WITHOUT_EXTRAS = """
import runpy, sys
sys.modules["openai"] = sys.modules["matplotlib"] = None
sys.argv = ["maps", *sys.argv[1:]]
runpy.run_module("maps_autogen.cli", run_name="__main__", alter_sys=True)
"""


def test_a_solve_runs_without_openai_and_matplotlib_installed(tmp_path: Path) -> None:
    problem = tmp_path / "problem.yaml"
    problem.write_text(yaml.safe_dump({"id": "p1", "question": "What is m?", "options": ["1 kg", "2 kg"]}))
    script = RoleScript({"solver": [solver_json("A")], "critic": [critic_json(None)]}, default="notes")
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY="sk-test-imports", OPENAI_BASE_URL=server.base_url)
        result = subprocess.run([sys.executable, "-c", MAPS_WITHOUT_EXTRAS, "solve", "--problem", str(problem),
                                 "--json", "--runs-dir", str(tmp_path / "runs")],
                                env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["final_answer"] == "A" and summary["stop_reason"] == "critic_passed"
