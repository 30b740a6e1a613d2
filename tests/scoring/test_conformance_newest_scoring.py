"""The scoring stack's ranges hold at their newest end: the wheel installed into a fresh
environment beside the newest sympy, mpmath and ANTLR runtime its own requirements allow (pip
resolves them, through the pip cache), where the conformance tests then pass. The suite itself
runs on the lower bounds (scripts/scoring-lower-bounds.txt), so both ends are proven.

The conformance tests run there are those whose scorers use that stack (OlympiadBench's and
EMMA's). Only the three ranged packages are installed there; everything else (pytest, pydantic, ...) is
seen from this environment through a .pth file listed after the fresh environment's own
site-packages, so the newest versions win. The checkout is on the path only for `tests` (the
conformance tests and their helpers): `maps_autogen` is imported from the wheel first.
Without the conformance data the test skips saying how to get it (fails in CI)."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path
from zipfile import ZipFile

from packaging.requirements import Requirement

from tests.helpers.common import CONFORMANCE_VARIABLE, REPO, build_wheel, clean_env, conformance_file, run_checked

RANGED = ("sympy", "mpmath", "antlr4-python3-runtime")
# The conformance tests whose scorers run on that stack (sympy's LaTeX parser, through
# scoring/benchmarks/_symbolic.py); MathVista's scorer imports none of it, so its verdicts cannot change here.
CONFORMANCE_TESTS = [str(REPO / "tests" / "scoring" / f"test_conformance_{name}.py") for name in ("olympiadbench", "emma")]
LOWER_BOUNDS = REPO / "scripts" / "scoring-lower-bounds.txt"

VERSIONS = """
import json, sys
from importlib import metadata
import maps_autogen
print(json.dumps({"maps_autogen": maps_autogen.__file__,
                  "versions": {name: metadata.version(name) for name in sys.argv[1:]}}))
"""
RUN = """
import sys
import maps_autogen, sympy  # the wheel's package and the newest stack, imported before pytest adds the checkout
import pytest
sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", "--import-mode=append", *sys.argv[1:]]))
"""


def wheel_requirements(wheel: Path) -> dict[str, Requirement]:
    """The wheel's own requirements of the ranged packages (its METADATA's Requires-Dist)."""
    with ZipFile(wheel) as archive:
        (name,) = [entry for entry in archive.namelist() if entry.endswith(".dist-info/METADATA")]
        lines = archive.read(name).decode().splitlines()
    requirements = [Requirement(line.split(":", 1)[1].strip()) for line in lines if line.startswith("Requires-Dist:")]
    return {req.name: req for req in requirements if req.name in RANGED and not req.marker}


def test_the_conformance_tests_pass_beside_the_newest_scoring_stack_the_ranges_allow(tmp_path: Path) -> None:
    data = conformance_file("olympiadbench_judged.dev.jsonl").parent
    wheel = build_wheel(tmp_path)
    wanted = wheel_requirements(wheel)
    assert sorted(wanted) == sorted(RANGED)
    # the suite's own environment holds the lower bounds: this test proves the other end
    pinned = dict(line.split("==") for line in LOWER_BOUNDS.read_text().splitlines() if "==" in line)
    assert {name: metadata.version(name) for name in RANGED} == pinned
    assert all(wanted[name].specifier.contains(version) for name, version in pinned.items())

    venv = tmp_path / "venv"
    run_checked([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check"]
    run_checked([*pip, "--no-deps", "--no-index", str(wheel)])
    run_checked([*pip, "--only-binary", ":all:", *(str(requirement) for requirement in wanted.values())])
    site = Path(run_checked([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "zz-dependencies.pth").write_text("\n".join([*ours, str(REPO)]) + "\n")

    env = clean_env(**{CONFORMANCE_VARIABLE: str(data)})
    env.pop("PYTHONPATH", None)
    report = json.loads(run_checked([str(python), "-c", VERSIONS, *RANGED], cwd=tmp_path, env=env).stdout)
    assert Path(report["maps_autogen"]).is_relative_to(site), report  # the wheel's, not the checkout's
    newest = report["versions"]
    assert all(wanted[name].specifier.contains(version) for name, version in newest.items()), newest
    assert newest["sympy"] != pinned["sympy"], f"the ranges allow nothing newer than the lower bounds: {newest}"
    done = subprocess.run([str(python), "-c", RUN, *CONFORMANCE_TESTS], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"conformance failed beside {newest}:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary and "failed" not in summary, done.stdout[-3000:]
