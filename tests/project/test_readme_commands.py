"""The README's commands work as written, and its links and the docs' links lead somewhere.

Which commands are run: every line of a fenced ```bash block in README.md and docs/*.md that
starts with `maps `, exactly as written (split as the shell splits it, the trailing comment
dropped), from a folder laid out as the repository's root (a copy of `examples/`, `agents.yaml`
and `prompts/`), with `source .venv/bin/activate` done (the test's own `maps`) and the scripted
OpenAI-compatible server (its Batch API too) as the model service (`OPENAI_BASE_URL`, `OPENAI_API_KEY`: the README's
`export OPENAI_API_KEY=...` line). The placeholders resolved are `runs/<run-id>` (the run folder the
latest `maps solve` above it wrote) and `runs/<eval-id>` (the latest `maps eval`'s). Every other line is left out only by a rule of EXCLUDED
below, each with its reason, and the test prints every command with what became of it: a new
`maps` command in the README is run unless a rule says why not.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps
from tests.helpers.fake_batches import BatchPlan, FakeBatches
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.readme_commands import fake_service

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_ID = "runs/<run-id>"
EVAL_ID = "runs/<eval-id>"

# (pattern searched in the line, why the line is not run). The first match wins.
EXCLUDED: list[tuple[str, str]] = [
    (r"^make ", "set-up: runs the whole installation (CI runs `make test` itself, .ci/run)"),
    (r"^source \.venv/bin/activate$", "set-up: the test runs the .venv's own `maps`"),
    (r"^export OPENAI_API_KEY=", "set-up: the test sets OPENAI_API_KEY (and OPENAI_BASE_URL) to the scripted server"),
    (r"\.\.\.|\[--|<(?!run-id>|eval-id>)[a-z0-9-]+>", "a syntax template (`...`, `[--option]` or a placeholder), not a command"),
    (r"\$\{", "needs a variable of a batch system (SLURM_ARRAY_TASK_ID)"),
    (r"^maps eval (?!custom)", "needs the benchmark's data set from the Hugging Face hub (network)"),
    (r"^maps merge ", "needs the shards of an eval run"),
    (r"^maps score \w+ outputs\.jsonl", "scores the reader's own outputs.jsonl"),
    (r"--serve", "serves pages until stopped (tests/report/test_view_server.py runs --serve)"),
    (r"^maps serve ", "serves the reader's own model file until stopped (tests/cli/test_serve_command.py runs maps serve "
                      "and the lines it prints)"),
]


@dataclass
class Command:
    document: str
    line: str

    def excluded(self) -> str | None:
        """Why this line is not run, or None when it is run."""
        for pattern, reason in EXCLUDED:
            if re.search(pattern, self.line):
                return reason
        return None if self.line.startswith("maps ") else "not a `maps` command"


def bash_lines(path: Path) -> list[Command]:
    """Every non-blank, non-comment line of the document's fenced bash blocks, in order."""
    commands = []
    inside = False
    for raw in path.read_text().splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            inside = (stripped == "```bash") if not inside else False
            continue
        if inside and stripped and not stripped.startswith("#"):
            commands.append(Command(str(path.relative_to(REPO)), stripped))
    return commands




def repository_root_copy(tmp_path: Path) -> Path:
    """A folder laid out as the repository's root, for what the README's commands read and write."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(REPO / "examples", root / "examples")
    shutil.copytree(REPO / "prompts", root / "prompts")
    shutil.copy(REPO / "agents.yaml", root / "agents.yaml")
    return root


def newest_run(root: Path, evals: bool) -> str:
    """The newest solve run folder (or eval run folder) under root/runs, relative to root."""
    runs = [p for p in (root / "runs").iterdir() if (p / "manifest.json" if evals else p / "transcript.jsonl").is_file()]
    assert runs, f"no {'eval' if evals else 'solve'} run before a command that names one"
    return str(max(runs, key=lambda p: p.stat().st_mtime_ns).relative_to(root))


def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    commands = [command for path in DOCUMENTS for command in bash_lines(path)]
    root = repository_root_copy(tmp_path)
    ran: list[str] = []
    report: list[str] = []
    # The scripted server speaks the Batch API too (docs/batch.md's `maps eval ... --batch`): each batch
    # ends at its first look.
    with FakeOpenAI(fake_service(), batches=FakeBatches([BatchPlan(states=[])])) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        for command in commands:
            reason = command.excluded()
            if reason:
                report.append(f"not run ({reason}): {command.document}: {command.line}")
                continue
            line = command.line
            for placeholder, evals in ((RUN_ID, False), (EVAL_ID, True)):
                if placeholder in line:
                    line = line.replace(placeholder, newest_run(root, evals))
            args = shlex.split(line, comments=True)
            assert args[0] == "maps"
            result = run_maps(args[1:], env=env, cwd=root, timeout=120)
            assert result.returncode == 0, f"{command.document}: `{command.line}` exited {result.returncode}:\n{result.stderr}"
            assert "Traceback" not in result.stderr, result.stderr
            ran.append(command.line)
            report.append(f"ran: {command.document}: {command.line}")
    print("\n".join(report))
    # The README's own solve, view and config commands are among those run.
    readme = "\n".join(ran)
    assert 'maps solve examples/lever/lever.png -q "Which mass balances the lever?"' in readme
    assert "maps solve --problem examples/circuit/problem.yaml" in readme
    assert f"maps view {RUN_ID}" in readme and "maps config" in readme
    assert (root / "page.html").is_file()  # `maps view runs/<run-id> --out page.html`
    assert "maps eval custom --data examples/bench.jsonl" in readme and f"maps report {EVAL_ID}" in readme


def test_exclusion_rules_keep_runnable_commands_in() -> None:
    """The rules leave out only what they say: a plain solve, view or config line is run."""
    for line in ["maps solve examples/lever/lever.png -q \"x\"", f"maps view {RUN_ID}", "maps config",
                 "maps eval custom --data examples/bench.jsonl"]:
        assert Command("README.md", line).excluded() is None, line
    assert Command("README.md", "maps eval mathvista --limit 100").excluded()
    assert Command("README.md", "maps view runs/<maps-run>").excluded()
    assert Command("README.md", f"maps report {EVAL_ID}").excluded() is None


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the document's headings."""
    found = set()
    fenced = False
    for line in path.read_text().splitlines():
        fenced ^= line.startswith("```")
        match = None if fenced else re.match(r"#{1,6} (.+)", line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    broken = []
    for path in DOCUMENTS:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.relative_to(REPO)}: {target} (no such file)")
            elif anchor and anchor not in anchors(linked):
                broken.append(f"{path.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_setup_and_demo_print_the_line_that_puts_maps_on_the_path() -> None:
    """The README's commands use a bare `maps`: `make setup` and `make demo` end by printing how."""
    recipes: dict[str, list[str]] = {}
    target = ""
    for line in (REPO / "Makefile").read_text().splitlines():
        match = re.match(r"([a-z]+):", line)
        if match:
            target = match.group(1)
        elif line.startswith("\t"):
            recipes.setdefault(target, []).append(line)
    readme = (REPO / "README.md").read_text()
    assert "source .venv/bin/activate" in readme
    for name in ("setup", "demo"):
        assert "source .venv/bin/activate" in recipes[name][-1], (name, recipes[name])


def test_the_readme_is_a_short_path_that_starts_with_the_two_commands() -> None:
    """The README leads: the two commands first (as CI runs them), then a path of at most 300
    lines; reference material lives in docs/, each page linked from it."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in first_block.splitlines() if line.startswith("make ")] == [
        ["make", "demo"], ["make", "test"]]
    assert readme.index("```bash") < readme.index("\n## ")  # before anything else is said
    for page in ("setup", "own-server", "embedded-model", "solving", "viewer", "team", "evaluating", "reproduce",
                 "reporting", "inspect", "python-api"):
        assert f"](docs/{page}.md)" in readme, page
