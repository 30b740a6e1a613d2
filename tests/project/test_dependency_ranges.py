"""Our dependency ranges beside a lab's stack, in fresh environments against the package registry
(pip's own resolver; the pip cache makes a second run quick; each step is bounded in time).

- The wheel resolves beside `lm-eval[math]` (which pins ANTLR's runtime to 4.11.0) and
  `math-verify[antlr4_11_0]`: the newest lm-eval with its math extra, not the 0.3.0 fallback pip
  takes when our ANTLR range excludes lm-eval's pin. The suite's own environment runs the scoring
  stack at its lower bounds (ANTLR 4.11.0 included), so the conformance tests prove them.
- `make lint`'s commands are clean in an environment holding the wheel with `[dev]` alone, at the
  newest versions its ranges allow (sympy 1.14, which ships no type information, where the suite
  runs 1.12, which does): no optional extra, no lower-bound pin is needed for a clean lint."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from zipfile import ZipFile

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.helpers.common import REPO, build_wheel, run_checked

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
LAB = ("lm-eval[math]", "math-verify[antlr4_11_0]")


def fresh_venv(folder: Path) -> Path:
    """A new virtual environment without pip (this environment's pip installs into it); its python."""
    run_checked([sys.executable, "-m", "venv", "--without-pip", str(folder)])
    return folder / "bin" / "python"


def requirement_of(wheel: Path, name: str) -> Requirement:
    with ZipFile(wheel) as archive:
        (metadata,) = [entry for entry in archive.namelist() if entry.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    found = [Requirement(line.split(":", 1)[1].strip()) for line in lines if line.startswith("Requires-Dist:")]
    return next(req for req in found if canonicalize_name(req.name) == canonicalize_name(name) and not req.marker)


def test_the_wheel_resolves_beside_lm_eval_math_and_math_verify(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    python = fresh_venv(tmp_path / "venv")
    report = tmp_path / "report.json"
    run_checked([*PIP, "--python", str(python), "install", "--dry-run", "--quiet", "--prefer-binary",
                 "--report", str(report), str(wheel), *LAB])
    chosen = {canonicalize_name(item["metadata"]["name"]): item for item in json.loads(report.read_text())["install"]}
    lm_eval = chosen["lm-eval"]["metadata"]
    # lm-eval 0.3.0 has no math extra: pip warns and takes it when the math extra's pins cannot be met
    assert Version(lm_eval["version"]) >= Version("0.4.9"), lm_eval["version"]
    assert "math" in lm_eval["provides_extra"]
    pins = [Requirement(text) for text in lm_eval["requires_dist"]]
    antlr_pin = next(req for req in pins if req.name == "antlr4-python3-runtime" and req.marker
                     and req.marker.evaluate({"extra": "math"}))
    antlr = chosen["antlr4-python3-runtime"]["metadata"]["version"]
    assert antlr_pin.specifier.contains(antlr) and requirement_of(wheel, "antlr4-python3-runtime").specifier.contains(antlr)
    assert chosen["maps-autogen"]["download_info"]["url"].endswith(wheel.name)
    verify = chosen["math-verify"]["metadata"]
    assert "antlr4-11-0" in verify["provides_extra"], verify["version"]  # not a release without the extra
    # the scoring stack's lower bounds (the suite's own environment) sit inside lm-eval's pin
    lower = dict(line.split("==") for line in (REPO / "scripts" / "scoring-lower-bounds.txt").read_text().splitlines()
                 if "==" in line)
    assert antlr_pin.specifier.contains(lower["antlr4-python3-runtime"])


def lint_commands() -> list[list[str]]:
    """The Makefile's `lint` recipe, command by command (`.venv/bin/TOOL ARGS`)."""
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), flags=re.MULTILINE)
    assert recipe is not None
    commands = [line.strip().split() for line in recipe.group(1).splitlines()]
    assert commands and all(command[0].startswith(".venv/bin/") for command in commands), commands
    return commands


def test_make_lint_is_clean_with_dev_alone_at_the_newest_versions(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    python = fresh_venv(tmp_path / "venv")
    # --no-compile: the linters read sources and import little of what they check
    run_checked([*PIP, "--python", str(python), "install", "--quiet", "--prefer-binary", "--no-compile", f"{wheel}[dev]"])
    versions = json.loads(run_checked([str(python), "-c", (
        "import json; from importlib.metadata import version, PackageNotFoundError\n"
        "def v(n):\n    try: return version(n)\n    except PackageNotFoundError: return None\n"
        "print(json.dumps({n: v(n) for n in ('sympy', 'inspect_ai', 'matplotlib', 'datasets', 'wandb', 'lm_eval')}))"
    )]).stdout)
    # [dev] alone: no optional extra's library; the newest sympy the range allows (no type information)
    assert {name: version for name, version in versions.items() if name != "sympy" and version} == {}
    assert Version(versions["sympy"]) >= Version("1.14"), versions
    bin_dir = python.parent
    for tool, *args in lint_commands():
        command = [str(bin_dir / Path(tool).name), *args]
        if command[0].endswith("mypy"):
            # mypy's own cache from `make lint` (which `make test` runs first), copied: mypy checks
            # again every module whose source or whose dependencies' interfaces differ here
            cache = tmp_path / "mypy-cache"
            if (REPO / ".mypy_cache").is_dir():
                shutil.copytree(REPO / ".mypy_cache", cache)
            command += ["--cache-dir", str(cache)]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
