"""Calls of the Python API as a user's script writes them, and mypy run on them in seconds: the
package, the API's modules and the modules declaring the options are read (their own findings
left out), every other module is Any to mypy (`follow_imports = skip`), which leaves what a call is
checked against whole: the API functions' Protocols (maps_autogen/api/_signatures.py), each
option's name and type, and the options classes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from maps_autogen.api import _api
from maps_autogen.settings import Options

#: A user's script: a line ending `# wrong: TEXT` is one mypy must flag (TEXT in its message); every other line must pass.
CALLS = '''\
from pathlib import Path

import maps_autogen
from maps_autogen import EvalOptions, Problem, ScoreOptions, SolveOptions, api

problem = Problem("Which mass balances the lever?", options=["2 kg", "4 kg"])
maps_autogen.solve("problem.yaml", threshold=3, without=["scholar"], runs_dir=Path("runs"), on_turn=lambda turn: None)
maps_autogen.solve(problem, SolveOptions(model="gpt-4o"), max_tokens=200, temperature=0.2)
api.solve(problem, options=SolveOptions(), seed=1, on_event=print)
maps_autogen.evaluate("custom", data="bench.jsonl", limit=3, shard="1/2", without=("scholar",), progress=True)
maps_autogen.evaluate(EvalOptions(benchmark="custom"), limit=3)
api.evaluate(options=EvalOptions(benchmark="custom"), max_cost=2, announce=print)
maps_autogen.score("mathvista", "outputs.jsonl", rules="legacy", llm_extract=True, model="gpt-4o")
maps_autogen.score(ScoreOptions(benchmark="emma", file=Path("outputs.jsonl")), out="scored.jsonl")
maps_autogen.merge(["runs/a", "runs/b"], allow_incomplete=True, out=Path("runs/merged"))
maps_autogen.write_report(["runs/a"], paper=True)
maps_autogen.write_view("runs/a", out="page.html")
maps_autogen.serve_view("runs/a", port=0, host="127.0.0.1")
maps_autogen.effective_config("agents.yaml", model="gpt-4o", threshold=4.5)
maps_autogen.serve_model("model.gguf", ctx_size=4096, parallel=2)
maps_autogen.load_settings(SolveOptions(), without=["critic"])

maps_autogen.solve("problem.yaml", threshhold=3)  # wrong: Unexpected keyword argument "threshhold"
api.solve(problem, max_token=200)  # wrong: Unexpected keyword argument "max_token"
maps_autogen.evaluate("custom", limt=3)  # wrong: Unexpected keyword argument "limt"
api.evaluate(benchmark="custom", progres=True)  # wrong: Unexpected keyword argument "progres"
maps_autogen.evaluate(limit=3)  # wrong: No overload variant
maps_autogen.evaluate(SolveOptions())  # wrong: matches argument type "SolveOptions"
maps_autogen.solve("problem.yaml", threshold="high")  # wrong: matches argument types "str", "str"
maps_autogen.score("mathvista", "outputs.jsonl", llm_extrat=True)  # wrong: Unexpected keyword argument "llm_extrat"
maps_autogen.merge(["runs/a"], allow_incomplet=True)  # wrong: Unexpected keyword argument "allow_incomplet"
maps_autogen.write_report(["runs/a"], papers=True)  # wrong: Unexpected keyword argument "papers"
maps_autogen.write_view("runs/a", output="page.html")  # wrong: Unexpected keyword argument "output"
maps_autogen.serve_view("runs/a", prot=0)  # wrong: Unexpected keyword argument "prot"
maps_autogen.effective_config(modle="gpt-4o")  # wrong: Unexpected keyword argument "modle"
maps_autogen.serve_model("model.gguf", ctx=4096)  # wrong: Unexpected keyword argument "ctx"
maps_autogen.load_settings(config_lists="models.json")  # wrong: Unexpected keyword argument "config_lists"
'''


def followed_modules() -> list[str]:
    """The modules mypy reads: the package, the API's, and those declaring the options the API
    takes (with their packages)."""
    modules = {"maps_autogen", "maps_autogen.api", "maps_autogen.api.*"}
    for name in _api.__all__:
        value = getattr(_api, name)
        if isinstance(value, type) and issubclass(value, Options):
            parts = value.__module__.split(".")
            modules.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
    return sorted(modules)


def mypy_errors(script: Path, *, search: Path | None = None, python: Path | None = None,
                also: tuple[str, ...] = ()) -> dict[int, list[str]]:
    """mypy's errors on `script` by line, maps_autogen found under `search` (a checkout) or, with
    `python`, installed in that interpreter's environment (as a user's mypy finds it); `also`:
    more modules to read (beside the script)."""
    config = script.parent / "mypy.ini"
    config.write_text("[mypy]\nfollow_imports = skip\n" + (f"mypy_path = {search}\n" if search else "")
                      + f"[mypy-{','.join([*followed_modules(), *also])}]\nfollow_imports = silent\n")
    where = ["--python-executable", str(python)] if python is not None else []
    command = [sys.executable, "-m", "mypy", *where, "--config-file", str(config), "--cache-dir",
               str(script.parent / "cache"), "--no-error-summary", "--hide-error-context", str(script)]
    done = subprocess.run(command, cwd=script.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1) and not done.stderr, f"mypy failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    errors: dict[int, list[str]] = {}
    for line in done.stdout.splitlines():
        found = re.match(rf"{re.escape(script.name)}:(\d+): error: (.*)", line)
        if found:
            errors.setdefault(int(found[1]), []).append(found[2])
        else:
            assert ": note: " in line, line  # an error elsewhere than the script: the package was not read
    return errors


def expected_errors(text: str) -> dict[int, str]:
    """{line: the text mypy's message holds} for each line of `text` marked `# wrong: ...`."""
    return {number: line.split("# wrong: ", 1)[1] for number, line in enumerate(text.splitlines(), 1)
            if "# wrong: " in line}


def check_calls(folder: Path, *, search: Path | None = None, python: Path | None = None) -> None:
    """mypy flags exactly the wrong calls of CALLS, each for its reason, and passes the others."""
    script = folder / "calls.py"
    script.write_text(CALLS)
    errors = mypy_errors(script, search=search, python=python)
    expected = expected_errors(CALLS)
    assert sorted(errors) == sorted(expected), {line: errors.get(line) for line in set(errors) ^ set(expected)}
    for line, text in expected.items():
        assert any(text in message for message in errors[line]), (line, text, errors[line])
