"""Hostile inputs: how long the parsers take on 1 MB adversarial replies, how long the MathVista
program reader takes on hostile answer programs (each used to run for seconds to hours inside
one C call), what an append to a 50k-line results.jsonl costs, the peak memory of loading a
12000x12000 image, and what a run's own files cost beside the same work done the expensive way
(masking a long text that names an "author", writing run.json, the version each run records).

Prints one line per figure; nothing is asserted (tests/e2e/test_untrusted_content.py asserts the results).

    .venv/bin/python perf/adversarial.py
    .venv/bin/python perf/adversarial.py --short    # seconds: 16 KB replies, 2,000 lines, 2000x2000 images
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen._util._redact import redact, register_secret, terminal_safe  # noqa: E402
from maps_autogen.benchmarks.mathvista._program_output import parse_program, program_reading  # noqa: E402
from maps_autogen.eval import ResultsLog  # noqa: E402
from maps_autogen.orchestration._verdict import parse_critic_reply, parse_solver_reply  # noqa: E402
from maps_autogen.records._run_files import parsed  # noqa: E402
from maps_autogen.records._schema import SCHEMA_VERSION, ResultRow  # noqa: E402

MEGABYTE = 1 << 20
OLD_FINAL_ANSWER = re.compile(r"final[ _]answer\s*[\"']?\s*[:：=]\s*(.+)", re.IGNORECASE)


def replies(size: int) -> dict[str, str]:
    """Hostile replies of about `size` bytes each (1 MB in full mode)."""
    return {
        "final answer + spaces": "final answer" + " " * size,
        "'final answer ' repeated": "final answer " * (size // 13),
        "unclosed fence + spaces": "```json" + " " * size,
        "'{' repeated": "{" * size,
        "'{a:}' spans": "{a:}" * (size // 4),
        "size/2-deep list": '{"final_answer": ' + "[" * (size // 2) + "]" * (size // 2) + "}",
        "600-deep list": '{"final_answer": ' + "[" * 600 + '"x"' + "]" * 600 + "}",
        "trailing commas": '{"final_answer": "5", "x": [' + "1," * (size // 2) + "]}",
    }

# Four levels of 2,000-element lists, each level one list repeated (cheap to build, 16·10^12
# elements to walk); `b3` is an equal, distinct copy.
NESTED = "".join(f"{n}0 = [0] * 2000\n{n}1 = [{n}0] * 2000\n{n}2 = [{n}1] * 2000\n{n}3 = [{n}2] * 2000\n"
                 for n in "ab")
PROGRAMS = {
    "a3 == b3": NESTED + "print(a3 == b3)",
    "sum(a2, [])": NESTED + "print(len(sum(a2, [])))",
    "max([a3, b3])": NESTED + "print(len(max([a3, b3])))",
    "sorted([a3, b3])": NESTED + "print(len(sorted([a3, b3])))",
    "str(a3)": NESTED + "print(len(str(a3)))",
    "b2 in a3": NESTED + "print(b2 in a3)",
    "{tuple key}": NESTED + "t = tuple(tuple(r) for r in a1)\nprint({t: 1}[t])",
    "'ab' * 10**9": "print(len('ab' * 10**9))",
    "2**10**8": "print(2**10**8)",
    "3000-deep list": "a = []\nfor i in range(3000):\n    a = [a]\nprint(a == a)",
}

PEAK = """
import re, sys, time
from maps_autogen._util._errors import ProblemError
from maps_autogen.problem._images import load_image
started = time.perf_counter()
try:
    image = load_image(sys.argv[1], max_side=1568)
    outcome = f"decoded to {image.width}x{image.height}"
except ProblemError as error:
    outcome = f"refused ({str(error)[:60]}...)"
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) // 1024
print(f"{outcome}; {time.perf_counter() - started:.2f} s; peak RSS {peak} MB")
"""


# The default team's scored steps (step, dimension).
SCORED = (("interpreter", "caption"), ("aligner", "alignment"), ("scholar", "knowledge"), ("solver", "solution"))


def seconds(function, *args) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


def parsers(size: int) -> None:
    for name, reply in replies(size).items():
        took = seconds(lambda text: (parse_solver_reply(text), parse_critic_reply(text, SCORED)), reply)
        print(f"parse Solver + Critic, {name} ({len(reply) // 1024:,} KB): {took:.3f} s")
    for spaces in (8_000, 16_000, 32_000) if size == MEGABYTE else (2_000, 4_000):
        took = seconds(OLD_FINAL_ANSWER.findall, "final answer" + " " * spaces)
        print(f"old fallback pattern, {spaces:,} spaces: {took:.2f} s (quadratic)")
    register_secret("sk-benchmark-0123456789")
    text = ("some reply text with \x1b[2J escapes and sk-benchmark-0123456789 " * 20000)[:size]
    megabytes = f"{size / MEGABYTE:.2g} MB"
    print(f"redact {megabytes}: {seconds(redact, text):.3f} s; "
          f"terminal_safe {megabytes}: {seconds(terminal_safe, text):.3f} s")


def least_cpu_ms(work, times: int = 20, rounds: int = 7) -> float:
    """The least CPU time of this thread for one run of `work`, over `rounds` rounds of `times`."""
    spent = []
    for _ in range(rounds):
        started = time.thread_time()
        for _ in range(times):
            work()
        spent.append((time.thread_time() - started) / times)
    return min(spent) * 1000


def run_file_costs() -> None:
    """A run's own files beside the same work done the expensive way (CPU of this thread)."""
    import importlib.metadata

    from maps_autogen._util._artifacts import json_text
    from maps_autogen._util._redact import _CREDENTIALS, MASK
    from maps_autogen._util._version import package_version

    none = "Check each step of the solution against the figure and say which one is weakest. " * 800
    author = none[:30000] + "Ask the question that would lead its author to the weakness. " + none[30000:]
    whole = least_cpu_ms(lambda: _CREDENTIALS.sub(lambda match: match.group("lead") + MASK, author))
    print(f"redact {len(author) // 1024} KB naming an author: {least_cpu_ms(lambda: redact(author)):.2f} ms; "
          f"naming none: {least_cpu_ms(lambda: redact(none)):.2f} ms; the credential pattern over it whole: "
          f"{whole:.2f} ms")
    run = json.loads((ROOT / "tests/fixtures/runs/eval-schema-v1/problems/2/run.json").read_text())
    text = json.dumps(run, ensure_ascii=False)
    print(f"run.json ({len(text) // 1024} KB) as text: ours {least_cpu_ms(lambda: json_text(run)):.3f} ms; "
          f"the C encoder {least_cpu_ms(lambda: json.dumps(run, ensure_ascii=False)):.3f} ms; "
          f"an indented dump {least_cpu_ms(lambda: json.dumps(run, ensure_ascii=False, indent=2)):.3f} ms")
    package_version()
    thousand = least_cpu_ms(lambda: [package_version() for _ in range(1000)], times=1)
    print(f"the version a run records, 1,000 problems' worth: {thousand:.3f} ms; one read of the installed "
          f"metadata: {least_cpu_ms(lambda: importlib.metadata.version('maps-autogen'), times=1):.3f} ms")


def programs() -> None:
    for name, program in PROGRAMS.items():
        started = time.perf_counter()
        output, work = program_reading(parse_program(program))
        took = time.perf_counter() - started
        print(f"program reader, {name}: {took * 1000:.1f} ms, {work:,} work units, output {output!r}")


def long_answers() -> None:
    """A 1 KB answer parsed as LaTeX: sympy's official (LL) parse against the SLL parse the
    symbolic scorers try first (same expression, or the official parse runs)."""
    from sympy.parsing.latex import parse_latex as official

    from maps_autogen.benchmarks import _latex_parse

    prose = ("First we compute the area of the triangle using the formula for the height and the base "
             "then we divide by two and obtain the value that we need for the next step where x is ") * 5
    official("1")  # load the parser
    print(f"1 KB prose as LaTeX: official parse {seconds(official, prose):.2f} s; "
          f"SLL parse {seconds(_latex_parse._parse_fast, prose):.2f} s")


def results_log(lines: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.jsonl"
        record = {"schema_version": SCHEMA_VERSION, "pid": "0", "status": "ok", "scoring": {}, "response": "x" * 200,
                  "usage": {"cost": 0.001}}
        path.write_text("".join(json.dumps({**record, "pid": str(n)}) + "\n" for n in range(lines)))
        started = time.perf_counter()
        path.read_bytes()  # what every append used to do (its torn-tail check read the whole file)
        reread = time.perf_counter() - started
        started = time.perf_counter()
        log = ResultsLog(path)
        log.finished_ids()  # the one-time torn-tail repair and the ids, at the start of a run
        opened = time.perf_counter() - started
        appends = 200
        rows = [parsed(ResultRow, {**record, "pid": f"new-{n}"}, source="benchmark") for n in range(appends)]
        started = time.perf_counter()
        for row in rows:
            log.append(row)
        per_append = (time.perf_counter() - started) / appends
        print(f"results.jsonl with {lines:,} lines: start (torn-tail repair + ids) {opened * 1000:.0f} ms once; "
              f"append {per_append * 1000:.2f} ms each (includes fsync); re-reading the file, as each append "
              f"used to: {reread * 1000:.1f} ms")


def images(side: int) -> None:
    from PIL import Image

    with tempfile.TemporaryDirectory() as folder:
        jpeg = Path(folder) / "huge.jpg"
        Image.new("L", (side, side), 128).save(jpeg, quality=50)
        png = Path(folder) / "huge.png"
        Image.new("1", (side, side), 1).save(png)
        for path in (png, jpeg):
            result = subprocess.run([sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True,
                                    env={"PYTHONPATH": str(ROOT)}, check=True)
            kilobytes = path.stat().st_size // 1024
            print(f"{side}x{side} {path.suffix[1:].upper()} ({kilobytes} KB): {result.stdout.strip()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true", help="seconds: small inputs, figures not meaningful")
    short = parser.parse_args().short
    parsers(MEGABYTE // 64 if short else MEGABYTE)
    programs()
    long_answers()
    results_log(2_000 if short else 50_000)
    images(2000 if short else 12000)
    run_file_costs()
