"""Every perf script still runs: each in its `--short` mode (seconds, small sizes) as a subprocess,
exiting 0 and printing each of its figure lines. No figure is asserted: on a shared machine they
mean nothing at these sizes; the point is that the scripts cannot rot unnoticed.

perf/local_model.py and perf/cpu_per_problem.py are tested with the embedded model's tests.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import clean_env
from tests.helpers.conformance import MATHVISTA, full_or_bundled

pytestmark = pytest.mark.perf  # minutes in all: left out of `make test-fast`

PERF = Path(__file__).resolve().parents[2] / "perf"
TESTED_ELSEWHERE = {"local_model.py", "cpu_per_problem.py"}
NUMBER = r"[\d.]+"
FIGURE = r"[\d.]+%?(?: \([\d.]+%?-[\d.]+%?\))?"  # a value, or median (min-max) over rounds

# Each script and the lines it must print (regular expressions, each matching a whole line).
EXPECTED: dict[str, list[str]] = {
    "throughput.py": [
        rf"problems/s at concurrency \d+: maps {FIGURE}, bare client {FIGURE}, ideal {NUMBER}; "
        rf"maps = {FIGURE} of the ideal, {FIGURE} of the bare client .*",
        rf"CPU per problem at concurrency 1 \(whole process\): maps {FIGURE} ms, bare client {FIGURE} ms = {FIGURE}x .*",
        rf"CPU per problem at concurrency 1 \(after the first request\): maps {FIGURE} ms, bare client {FIGURE} ms .*",
        rf"time to the first request: maps {FIGURE} s, bare client {FIGURE} s .*",
        r"prompt tokens per problem over \d+ problems: MAPS \d+ vs naive broadcasting group chat \d+ .*",
    ],
    "client_vs_sdk.py": [
        rf"{name} \(\d+ KB\): CPU per call, ours {FIGURE} ms, openai SDK {FIGURE} ms = {NUMBER}x .*"
        for name in ("text request", "200 KB image", "Aligner request")
    ],
    "pool.py": [
        rf"replica at \d+ ms x \d+ slots alone: {NUMBER} requests/s \(nominal capacity {NUMBER}\)",
        rf"saturated pool of both .*: {NUMBER} requests/s = {NUMBER}% of the sum of their measured capacities .*"
        r"replica 2 .* served \d+ = \d+% \(capacity share \d+%\)",
        rf"unsaturated pool .*: {NUMBER} requests/s = \d+% of the best placement .*capacity share.*",
        rf"failover, one of 3 replicas dies halfway .*: {NUMBER} successful calls/s .*calls failed after their "
        r"retries: \d+; retries \d+; .*dies halfway\) served \d+ .*replica 3 .*capacity share \d+%\)",
        r"failover, one of 3 replicas answers 503 halfway .*answers 503 halfway\) served \d+ .*capacity share \d+%\)",
    ],
    "viewer_load.py": [
        rf"  served index, first request \(renders\): first byte {NUMBER} s, whole {NUMBER} s, {NUMBER} MB",
        rf"  served index, again \(cached\): first byte {NUMBER} s median of \d+",
        rf"  served index after results.jsonl grew \(renders once\): first byte {NUMBER} s, then {NUMBER} s; renders \d+",
        rf"  static index.html \(the export, a plain file server\): first byte {NUMBER} s median of \d+",
    ],
    "adversarial.py": [
        rf"parse Solver \+ Critic, '\{{' repeated \(\d+ KB\): {NUMBER} s",
        rf"old fallback pattern, [\d,]+ spaces: {NUMBER} s \(quadratic\)",
        rf"redact {NUMBER} MB: {NUMBER} s; terminal_safe {NUMBER} MB: {NUMBER} s",
        rf"program reader, a3 == b3: {NUMBER} ms, [\d,]+ work units, output .*",
        rf"1 KB prose as LaTeX: official parse {NUMBER} s; SLL parse {NUMBER} s",
        rf"results.jsonl with [\d,]+ lines: start .* {NUMBER} ms once; append {NUMBER} ms each .*",
        r"\d+x\d+ PNG \(\d+ KB\): .*peak RSS \d+ MB",
        r"\d+x\d+ JPG \(\d+ KB\): .*peak RSS \d+ MB",
        rf"redact \d+ KB naming an author: {NUMBER} ms; naming none: {NUMBER} ms; the credential pattern over it "
        rf"whole: {NUMBER} ms",
        rf"run.json \(\d+ KB\) as text: ours {NUMBER} ms; the C encoder {NUMBER} ms; an indented dump {NUMBER} ms",
        rf"the version a run records, 1,000 problems' worth: {NUMBER} ms; one read of the installed metadata: "
        rf"{NUMBER} ms",
    ],
    "offline_eval.py": [
        rf"{re.escape(case)} +median {NUMBER} s, worst {NUMBER} s, stderr lines \[\d+\], exit \d+"
        for case in ("connection refused", "name does not resolve", "HF_HUB_OFFLINE=1")
    ],
    "scorer_bounds.py": [
        rf"number of 4,000 digits: {NUMBER} s, work asked number digits 4,000/4,000; judged wrong",
        rf"number 2e123456789: {NUMBER} s, work asked .*; unjudged \(the number 2e123456789 has a power of ten .*",
        rf"OlympiadBench boxes nested [\d,]+ deep \(\d+ KB\): {NUMBER} s, work asked boxed chars [\d,]+/1,000,000; unjudged .*",
        rf"OlympiadBench font commands never closed \(\d+ KB\): {NUMBER} s, .*",
        rf"EMMA extraction, nested boxes \(\d+ KB\): {NUMBER} s, .*",
        rf"MathVista nearest option, [\d,]+-character answer and options \(at the bound\): {NUMBER} s, .*judged right",
        rf"maps score, a line with a 100,000-digit integer: {NUMBER} s, .*",
    ],
    "prompt_layout.py": [
        rf"load average {NUMBER} on \d+ cores; \d+ requests per solve .*",
        *(rf"shared prefix of consecutive requests, {layout} layout \(scripted server\): {NUMBER}%"
          for layout in ("paper", "shared_prefix")),
        *(rf"llama.cpp server, {layout} layout: \d+ requests, \d+ prompt tokens, \d+ from its cache \(\d+%\), "
          rf"prompt time {NUMBER} s" for layout in ("paper", "shared_prefix")),
    ],
    "answer_cost.py": [
        r"examples/bench.jsonl, the scripted server:",
        *(rf"{method} \(gpt-4o\): accuracy 100% \(2/2\); per {per}: prompt tokens {NUMBER} \(cached {NUMBER}\), "
          rf"completion tokens {NUMBER}, calls {NUMBER}, cost {NUMBER}"
          for method in ("maps", "cot") for per in ("problem", "correct answer")),
    ],
    "batch_cost.py": [
        r"custom benchmark, 6 text problems, the scripted server \(gpt-4o prices; by batch: its batch prices\):",
        *(rf"{label}: accuracy {NUMBER}% \(\d+/\d+\); calls \d+; cost per problem \${NUMBER}, per correct answer "
          rf"\${NUMBER}; wall {NUMBER} s, CPU {NUMBER} s, peak RSS \d+ MB"
          for label in (r"live \(--concurrency 32\)", "by batch")),
        rf"by batch: \d+ rounds, \d+ batches, requests per round median \d+ \(\d+-\d+\), first rounds \[[\d, ]+\]; "
        rf"cost {NUMBER}% below live",
    ],
    "inspect_task_creation.py": [
        rf"50 rows, task made with lazy samples: {NUMBER} s, 0 images read",
        rf"50 rows, baseline \(every sample read when the task is made\): {NUMBER} s, 50 images read",
        r"--limit 20: 20 images read when the samples run \(each once\)",
    ],
    "mathvista_extraction_agreement.py": [
        rf"mathvista_testmini_verdicts\.(?:dev|subset)\.jsonl\.gz: \d+ records, scored from `response` in {NUMBER} s",
        rf"agreement with the official verdicts: \d+ / \d+ = {NUMBER}%",
        r"adversarial responses of 1 MB .*",
    ],
}


def test_every_perf_script_is_run_here() -> None:
    scripts = {path.name for path in PERF.glob("*.py") if not path.name.startswith("_")}  # _service.py: shared code
    assert scripts - TESTED_ELSEWHERE == set(EXPECTED), "a perf script without a --short run here"


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_perf_script_runs_short(script: str, tmp_path: Path) -> None:
    extra = ["--data", str(full_or_bundled(MATHVISTA))] if script == "mathvista_extraction_agreement.py" else []
    done = subprocess.run([sys.executable, str(PERF / script), "--short", *extra], env=clean_env(), cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    lines = done.stdout.splitlines()
    for pattern in EXPECTED[script]:
        assert any(re.fullmatch(pattern, line) for line in lines), f"{script} printed no line like {pattern!r}:\n{done.stdout}"
