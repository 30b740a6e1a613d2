"""The helpers every test module uses (moved from conftest.py). Shared test helpers: the scripted server, images, running the real `maps` command."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, Script
from tests.helpers.inprocess import _process_state, needs_process, run_in_process

REPO = Path(__file__).resolve().parents[2]


_SCRIPT = Path(sys.executable).parent / "maps"


MAPS = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "maps_autogen.cli"]


TEST_KEY = "sk-test-0123456789-secret"


def make_png(path: Path, size: tuple[int, int] = (320, 200), color: str = "white", mark: int = 0) -> Path:
    image = Image.new("RGB", size, color)
    for x in range(0, size[0], 7):  # a little structure so the file is not trivially small
        image.putpixel((x, size[1] // 2), (0, 0, 0))
    for n in range(mark):  # `mark` makes images of different problems differ
        image.putpixel((n % size[0], n // size[0]), (255, 0, 0))
    image.save(path)
    return path


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without anything that would pick a real model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MAPS_"))}
    env.update(extra)
    return env


def run_maps(args: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 120, stdin: str | None = None,
             process: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real `maps` command (no terminal input unless `stdin`): in this process, as a fresh
    process would run it (tests/helpers/inprocess.py), unless `process` or the environment needs a real one.
    A call from another thread (two commands at once) runs in a subprocess: the environment, the
    directory and signal handlers belong to the whole process. MAPS_TESTS_IN_SUBPROCESS=1 in
    pytest's environment runs every call in a subprocess (to tell a difference of the in-process
    run from a real failure)."""
    if (process or needs_process(env) or threading.current_thread() is not threading.main_thread()
            or os.environ.get("MAPS_TESTS_IN_SUBPROCESS") == "1"):
        return run_maps_process(args, env=env, cwd=cwd, timeout=timeout, stdin=stdin)
    return run_in_process(args, env=env, cwd=cwd, timeout=timeout, stdin=stdin)


def run_maps_process(args: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 120,
                     stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `maps` console script in a subprocess: for tests where the process
    boundary is what is tested (signals, exit on kill, locks held by another process, the
    console script itself, closed stdout, what a fresh interpreter imports)."""
    return subprocess.run([*MAPS, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


@contextlib.contextmanager
def api_service(monkeypatch: pytest.MonkeyPatch, folder: Path, script: Script,
                batches: Any = None) -> Iterator[FakeOpenAI]:
    """The scripted server as the model service of the Python API called in this process, from
    the empty working folder `folder` (no ./agents.yaml); what a solve leaves in this process
    (registered keys, connection pools) is undone after. `batches`: its Batch API
    (tests/helpers/fake_batches.py)."""
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "MAPS_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(folder)
    with _process_state(), FakeOpenAI(script, batches=batches) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        yield server


def write_config(path: Path, **changes: Any) -> Path:
    """The default agents.yaml with nested `changes` applied (dotted keys: critic.threshold;
    a number indexes a list: team.steps.3.model)."""
    data = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").read_text())
    for dotted, value in changes.items():
        target = data
        *parents, leaf = dotted.split(".")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        if isinstance(target, list):
            target[int(leaf)] = value
        else:
            target[leaf] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def critic_json(caption: int | None = 5, alignment: int = 5, knowledge: int = 5, solution: int = 5, worst: str = "solution", feedback: dict[str, str] | None = None) -> str:
    feedback = feedback or {}
    scores = {"alignment": alignment, "knowledge": knowledge, "solution": solution}
    if caption is not None:
        scores = {"caption": caption, **scores}
    return json.dumps({
        "scores": scores,
        "need_feedback": min(scores.values()) < 5,
        "worst_step": worst,
        "feedback": {dim: feedback.get(dim, f"question about {dim}?") for dim in scores},
    })


def solver_json(answer: str) -> str:
    return json.dumps({"process": {"Phase 1": "frame", "Phase 2": "evidence", "Phase 3": "reason", "Phase 4": "check"}, "final_answer": answer})


def echoing(said: Callable[[Received], str]) -> Script:
    """A script for a gateway (or a model) that repeats what it received: every step's reply holds
    `said(request)`, the Solver's as its answer after 42, the Critic's as its feedback."""
    def reply(request: Received) -> Reply:
        if request.role == "solver":
            return Reply(solver_json(f"42 {said(request)}"))
        if request.role == "critic":
            return Reply(critic_json(feedback={"solution": said(request)}))
        return Reply(said(request))

    return reply


def all_text_in(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl"))


BUILD_INPUTS = ("pyproject.toml", "README.md")


def run_checked(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    """Run `command`; a non-zero exit fails the test with its output."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **options)
    assert result.returncode == 0, f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


def build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the checkout's build inputs (a build writes build/ and egg-info
    next to its sources; the copy keeps the checkout clean and parallel builds apart)."""
    import shutil

    source = tmp_path / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "maps_autogen", source / "maps_autogen", ignore=shutil.ignore_patterns("__pycache__"))
    # Without isolation: setuptools and wheel come from the dev extra, so no download is needed.
    run_checked([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q",
                 "-w", str(tmp_path / "dist")])
    [wheel] = (tmp_path / "dist").glob("maps_autogen-*.whl")
    return wheel


