"""Hostile content and inputs: a key echoed by the service never leaves the process, escape
sequences are printed escaped, parsers stay linear and depth-bounded, big or special files are
refused without being read, data set paths stay inside the data folder, files get one mode."""

from __future__ import annotations

import io
import json
import os
import stat
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest
import yaml
from PIL import Image

from maps_autogen._util._errors import ConfigError, DataError, ProblemError
from maps_autogen._util._redact import StreamRedactor, redact, register_secret, terminal_safe
from maps_autogen.eval import ResultsLog
from maps_autogen.orchestration._solving import assemble_team
from maps_autogen.orchestration._verdict import MAX_JSON_DEPTH, parse_critic_reply, parse_solver_reply
from maps_autogen.problem._images import ImageLimits, image_limits, load_image
from maps_autogen.problem._problem import load_problem_file
from maps_autogen.records._chat_records import AnswerParsed, ErrorEvent, MessageRecord
from maps_autogen.records._schema import CallUsage, ResultRow, dumped
from maps_autogen.report._live import LiveConsole
from maps_autogen.settings._config import load_config
from tests.helpers.common import REPO, TEST_KEY, clean_env, critic_json, run_maps, solver_json, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

OTHER_KEY = "gw-other-key-9876543210"  # configured for an endpoint this run does not use
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[6n\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\\x9b31m\u202e"


def _echo(request: Received) -> str:
    """What a leaky gateway or a model repeating its prompt would send back."""
    return f"echo {request.headers.get('authorization')} {TEST_KEY} {OTHER_KEY} {HOSTILE}"


class EchoScript(ProblemScript):
    """Every reply repeats the request's Authorization header, the keys and escape sequences."""

    def _reply(self, request: Received) -> Reply:
        if request.role == "solver":
            return Reply(solver_json(f"42 {_echo(request)}"))
        if request.role == "critic":
            return Reply(critic_json(feedback={"solution": _echo(request)}))
        return Reply(_echo(request))


def _config(folder: Path, **changes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_config(folder / "agents.yaml", **{"endpoints.gateway": {"kind": "openai", "api_key_env": "GATEWAY_KEY"}, **changes})


@pytest.fixture(scope="module")
def hostile_runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One solve per output mode (live view with streaming, --json, --quiet), an eval with the
    cache, the viewer pages and a report, all against a server that echoes the keys."""
    base = tmp_path_factory.mktemp("hostile")
    runs = base / "runs"
    data, _ = write_mathvista_jsonl(base / "mathvista", 2)
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    with FakeOpenAI(EchoScript({})) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, GATEWAY_KEY=OTHER_KEY)
        question = ["-q", f"What is 6*7? {HOSTILE}", "--runs-dir", str(runs)]
        streaming = _config(base / "streaming", **{"endpoints.openai.stream": True})
        outputs["live"] = run_maps(["solve", *question, "--config", str(streaming)], env=env, cwd=base)
        plain = _config(base)
        outputs["json"] = run_maps(["solve", *question, "--json"], env=env, cwd=base)
        outputs["quiet"] = run_maps(["solve", *question, "--quiet"], env=env, cwd=base)
        outputs["eval"] = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--quiet"], env=env, cwd=base)
    assert plain.is_file()
    eval_dir = next(runs.glob("eval-*"))
    solve_dir = next(runs.glob("solve-*"))
    outputs["view_eval"] = run_maps(["view", str(eval_dir)], env=env, cwd=base)
    outputs["view_solve"] = run_maps(["view", str(solve_dir)], env=env, cwd=base)
    outputs["report"] = run_maps(["report", str(eval_dir), "--out", str(runs / "report")], env=env, cwd=base)
    return {"runs": runs, "outputs": outputs, "eval_dir": eval_dir}


def test_every_run_succeeded(hostile_runs: dict) -> None:
    for name, result in hostile_runs["outputs"].items():
        assert result.returncode == 0, (name, result.stderr[-2000:])


def test_no_key_in_any_byte_written_or_printed(hostile_runs: dict) -> None:
    runs: Path = hostile_runs["runs"]
    files = [path for path in runs.rglob("*") if path.is_file()]
    names = {path.name for path in files}
    # Everything the issue lists was written: transcripts, results, cache, viewer, report.
    assert {"transcript.jsonl", "run.json", "results.jsonl", "responses.sqlite", "view.html", "report.md"} <= names
    for path in files:
        data = path.read_bytes()
        for key in (TEST_KEY, OTHER_KEY):
            assert key.encode() not in data, (key, path)
    for name, result in hostile_runs["outputs"].items():
        for key in (TEST_KEY, OTHER_KEY):
            assert key not in result.stdout + result.stderr, (key, name)
    # The reply itself got through, masked: the evidence that the echo really happened.
    transcript = (next(runs.glob("solve-*")) / "transcript.jsonl").read_text()
    assert "echo Bearer ***" in transcript


def test_escape_sequences_print_escaped_under_live_json_and_quiet(hostile_runs: dict) -> None:
    outputs = hostile_runs["outputs"]
    for name in ("live", "json", "quiet"):
        printed = outputs[name].stdout + outputs[name].stderr
        for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert raw not in printed, (name, repr(raw))
    assert "\\x1b[2J" in outputs["quiet"].stdout and "\\x1b]0;pwned\\x07" in outputs["quiet"].stdout
    assert "\\x1b[6n" in outputs["live"].stdout and "\\x9b31m" in outputs["live"].stdout
    summary = json.loads(outputs["json"].stdout)  # still valid JSON, the text intact inside it
    assert "\x1b[2J" in summary["final_answer"] and "\x9b31m" in summary["final_answer"]


def test_error_line_from_a_hostile_service_is_escaped_and_masked(tmp_path: Path) -> None:
    with FakeOpenAI(lambda request: Reply(f"bad model {HOSTILE} {_echo(request)}", status=400)) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        result = run_maps(["solve", "-q", "x", "--quiet", "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert result.returncode == 1
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert "bad model \\x1b]0;pwned\\x07\\x1b[2J" in line and "Bearer ***" in line
    for raw in ("\x1b", "\x07", "\x9b", TEST_KEY):
        assert raw not in result.stdout + result.stderr


def test_live_view_keeps_its_own_styling_but_escapes_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    live = LiveConsole(file=out)
    live.emit(MessageRecord(agent="Solver", role="solver", step="solution", round=1, content=f"the answer {HOSTILE}",
                            parsed=AnswerParsed(final_answer=f"42 {HOSTILE}"), usage=CallUsage(seconds=1.0)))
    live.emit(ErrorEvent(detail=f"gateway said {HOSTILE}"))
    printed = out.getvalue()
    assert "\x1b[1;35m" in printed  # our styling is real: the first speaker's header is bold magenta
    for sequence in ("\x1b[2J", "\x1b[6n", "\x1b]0;", "\x1b]8;", "\x07", "\x9b"):
        assert sequence not in printed
    assert printed.count("\\x1b[2J") == 3


def test_streamed_key_split_across_tokens_is_masked() -> None:
    register_secret(TEST_KEY)
    redactor = StreamRedactor()
    text = f"before {TEST_KEY} after " * 3
    shown = "".join(redactor.feed(text[i : i + 5]) for i in range(0, len(text), 5)) + redactor.flush()
    assert shown == redact(text) and TEST_KEY not in shown and shown.count("***") == 3


def test_streamed_bearer_token_longer_than_the_hold_is_masked_whole() -> None:
    # Once the first characters were masked, the token's later characters used to reach the terminal.
    token = "sk1" + "a" * 120
    text = f"Authorization: Bearer {token} done. " + "x" * 80
    redactor = StreamRedactor()
    shown = "".join(redactor.feed(character) for character in text) + redactor.flush()
    assert shown == redact(text) == "Authorization: Bearer *** done. " + "x" * 80


def test_bearer_and_authorization_values_are_masked_without_eating_prose() -> None:
    assert redact("Authorization: Bearer abcDEF123456789xyz") == "Authorization: Bearer ***"
    assert redact('{"authorization": "tok_live_1234567890"}') == '{"authorization": "***"}'
    assert redact("the bearer of the bond") == "the bearer of the bond"
    assert redact("Authorization: required here") == "Authorization: required here"
    assert terminal_safe("a\x1b[2Jb\tc\nd") == "a\\x1b[2Jb\tc\nd"


def test_files_we_write_have_one_mode(hostile_runs: dict) -> None:
    runs: Path = hostile_runs["runs"]
    for path in runs.rglob("*"):
        if path.is_file():
            expected = 0o600 if path.parent.name == ".cache" else 0o644
            assert stat.S_IMODE(path.stat().st_mode) == expected, path


# ----- linear-time, depth-bounded parsing --------------------------------------------------

MEGABYTE = 1 << 20


@pytest.mark.parametrize(("reply", "expected"), [
    ("final answer" + " " * MEGABYTE + ": 7", None),  # the pattern that took 26 s on 64k spaces
    ("final answer " * (MEGABYTE // 13), None),
    ("Final answer:" + " " * MEGABYTE + "7", "7"),
    ("```json" + " " * MEGABYTE, None),  # an unclosed fence after a long run of spaces
    ("{" * MEGABYTE, None),
    ("{a:}" * (MEGABYTE // 4) + '{"final_answer": "9"}', '9"}'),  # only the first spans are parsed
    ('{"final_answer": "5", "x": [' + "1," * (MEGABYTE // 2) + "]}", "5"),  # a trailing comma to repair
])
def test_megabyte_adversarial_replies_parse(reply: str, expected: str | None) -> None:
    """The answers (the times are printed by perf/adversarial.py)."""
    answer = parse_solver_reply(reply)
    assert answer.final_answer == (reply.strip() if expected is None else expected)
    assert parse_critic_reply(reply, (("solver", "solution"),)) is None


def test_scoring_helpers_are_linear_on_adversarial_answers() -> None:
    from maps_autogen.benchmarks.emma._scorer import extract_answer
    from maps_autogen.benchmarks.olympiadbench._task import answer_pieces

    # `\s*\n` around the separators split a long run of spaces in quadratic time.
    assert answer_pieces("x" + " " * MEGABYTE + "y; z", multiple=True) == ["x y", "z"]
    # `\\text{(.*?)}` rescanned the line for every unclosed \text{ (balanced by the next line).
    nested = "\\text{" * 100_000
    inside = nested + "\n" + "}" * 100_000
    assert extract_answer("\\boxed{" + inside + "}") == inside


def test_json_nested_beyond_the_limit_is_a_parse_failure() -> None:
    deep = '{"final_answer": ' + "[" * 600 + '"x"' + "]" * 600 + "}"
    answer = parse_solver_reply(deep)
    assert not answer.parsed
    shallow = '{"final_answer": ' + "[" * (MAX_JSON_DEPTH - 1) + '"x"' + "]" * (MAX_JSON_DEPTH - 1) + "}"
    assert parse_solver_reply(shallow).final_answer == "x"


def test_solver_nesting_600_lists_is_recorded_not_a_crash(tmp_path: Path) -> None:
    deep = '{"final_answer": ' + "[" * 600 + '"x"' + "]" * 600 + "}"
    script = lambda request: Reply(deep if request.role == "solver" else critic_json(None))  # noqa: E731
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        result = run_maps(["solve", "-q", "x", "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stdout + result.stderr
    notes = [line for line in result.stdout.splitlines() if line.startswith("! ")]
    assert "! the Solver's reply was not valid JSON; its final answer falls back to the reply's text" in notes
    transcript = (next((tmp_path / "runs").iterdir()) / "transcript.jsonl").read_text()
    assert '"solver_unparsed"' in transcript


# ----- images: special files, size, pixels ---------------------------------------------------

def _load_in_thread(source: str) -> BaseException | None:
    """load_image in a thread, so a regression that blocks (a FIFO) fails instead of hanging."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            load_image(source, max_side=1568)
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert outcome, f"loading {source} did not return"
    return outcome[0]


def test_dev_zero_and_fifo_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    for source in ("/dev/zero", str(fifo)):
        error = _load_in_thread(source)
        assert isinstance(error, ProblemError) and "not a regular file" in str(error), error


def test_dev_zero_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    result = run_maps(["solve", "/dev/zero", "-q", "x"], env=clean_env(OPENAI_API_KEY=TEST_KEY), cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: image path /dev/zero is not a regular file (pass an image file)"


def test_image_file_size_limit_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "photo.png"
    Image.new("RGB", (64, 64), "white").save(path)
    with image_limits(ImageLimits(file_bytes=100)), pytest.raises(ProblemError, match="limits.image_file_bytes"):
        load_image(str(path), max_side=1568)


def _huge_png(path: Path, side: int) -> Path:
    """A side x side grey PNG written row by row (a few hundred KB; 144 MB once decoded)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    compressor = zlib.compressobj(9)
    row = b"\x00" * (side + 1)
    idat = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return path


# VmHWM is this process's own peak (ru_maxrss would include the forking pytest's).
_PEAK = """
import re, sys
from maps_autogen.problem._images import load_image
from maps_autogen._util._errors import ProblemError
try:
    image = load_image(sys.argv[1], max_side=1568)
    outcome = f"{image.width}x{image.height}"
except ProblemError as error:
    outcome = f"error: {error}"
print(outcome)
print(int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) // 1024)
"""


def _peak_load(path: Path) -> tuple[str, int]:
    """Load the image in a fresh interpreter: (outcome, peak RSS in MB)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, env=env, timeout=120, check=True)
    outcome, peak = result.stdout.strip().splitlines()
    return outcome, int(peak)


def test_12000_square_png_is_refused_before_decoding(tmp_path: Path) -> None:
    outcome, peak_mb = _peak_load(_huge_png(tmp_path / "huge.png", 12000))
    assert outcome == "error: image " + str(tmp_path / "huge.png") + " has 12000x12000 = 144,000,000 pixels, over limits.image_pixels (50,000,000) (pass a smaller image or raise limits.image_pixels in agents.yaml)"
    assert peak_mb < 150, peak_mb  # decoding it would take 144 MB for the pixels alone


def test_12000_square_jpeg_is_reduced_while_decoding(tmp_path: Path) -> None:
    path = tmp_path / "huge.jpg"
    Image.new("L", (12000, 12000), 128).save(path, quality=50)
    outcome, peak_mb = _peak_load(path)
    assert outcome == "1568x1568"  # decoded at 1/4 scale (3000x3000), then downscaled
    assert peak_mb < 150, peak_mb


# ----- YAML, data set paths, limits --------------------------------------------------------

def test_yaml_alias_bomb_in_a_problem_file_is_refused(tmp_path: Path) -> None:
    levels = ['&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"&{chr(98 + n)} [" + ",".join([f"*{chr(97 + n)}"] * 9) + "]" for n in range(8)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("question: boom\ncontext: [" + ", ".join(levels) + "]\n")
    with pytest.raises(ProblemError, match="aliases"):
        load_problem_file(bomb, max_side=1568)
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"question": "q", "context": "c"}))
    assert load_problem_file(plain, max_side=1568).context == "c"


def test_problem_file_size_limit_names_the_key(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("question: " + "x" * 5000 + "\n")
    with pytest.raises(ProblemError, match="limits.problem_file_bytes"):
        load_problem_file(big, max_side=1568, max_bytes=1024)


def test_limits_are_validated_with_the_key_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"limits\.reply_bytes"):
        load_config(write_config(tmp_path / "agents.yaml", **{"limits.reply_bytes": 10}))
    with pytest.raises(ConfigError, match=r"unknown key 'limits\.reply_size'"):
        load_config(write_config(tmp_path / "agents.yaml", **{"limits.reply_size": 10}))


def _mathvista_with_image(tmp_path: Path, image: str) -> Path:
    data, rows = write_mathvista_jsonl(tmp_path / "data", 2)
    rows["2"]["image"] = image
    data.write_text("".join(json.dumps(row) + "\n" for row in rows.values()))
    return data


def test_dotdot_data_set_path_is_refused_naming_the_row(tmp_path: Path) -> None:
    Image.new("RGB", (32, 32), "white").save(tmp_path / "secret.png")
    data = _mathvista_with_image(tmp_path, "../secret.png")
    with FakeOpenAI() as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: data set image 2 refers to '../secret.png', which is outside the data folder")
    assert "--allow-outside-paths" in line
    assert not server.received  # nothing was sent


@pytest.mark.parametrize("kind", ["absolute", "symlink"])
def test_absolute_and_symlinked_paths_are_refused_unless_allowed(tmp_path: Path, kind: str) -> None:
    from maps_autogen.benchmarks import get_benchmark
    from maps_autogen.eval._runner import load_items
    from maps_autogen.records._safe_paths import outside_paths_allowed

    outside = tmp_path / "secret.png"
    Image.new("RGB", (32, 32), "white").save(outside)
    reference = str(outside) if kind == "absolute" else "images/link.png"
    data = _mathvista_with_image(tmp_path, reference)
    if kind == "symlink":
        (data.parent / "images" / "link.png").symlink_to(outside)
    task = get_benchmark("mathvista").task
    loaded = load_config(cwd=tmp_path)
    with pytest.raises(DataError, match="outside the data folder"):
        load_items(task, task.subsets, data, loaded)
    with outside_paths_allowed(True):
        assert len(load_items(task, task.subsets, data, loaded)) == 2


# ----- reply size cap ----------------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_long_reply_is_truncated_flagged_and_not_cached(tmp_path: Path, stream: bool) -> None:
    from maps_autogen.model._cache import ResponseCache

    loaded = load_config(write_config(tmp_path / "agents.yaml", **{"limits.reply_bytes": 2048, "endpoints.openai.stream": stream}))
    cache = ResponseCache(tmp_path / "cache.sqlite")
    long_reply = "é" * 5000  # 10,000 bytes of two-byte characters
    with FakeOpenAI(lambda request: Reply(long_reply)) as server:
        team = assemble_team(loaded, env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY}, cache=cache)
        backend = team.backends["scholar"]
        first = backend.complete([{"role": "user", "content": "q"}], role="scholar")
        second = backend.complete([{"role": "user", "content": "q"}], role="scholar")
    assert first.text == "é" * 1024 and first.truncated and first.usage().truncated is True
    assert not second.cached and len(server.received) == 2  # a cut reply is never served from the cache
    cache.close()


def test_reply_body_far_over_the_limit_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    from maps_autogen._util._errors import ServiceError

    loaded = load_config(write_config(tmp_path / "agents.yaml", **{"limits.reply_bytes": 1024}))
    huge = json.dumps({"choices": [{"message": {"content": "x" * 200_000}}]}).encode()
    with FakeOpenAI(lambda request: Reply(raw_body=huge)) as server:
        team = assemble_team(loaded, env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY})
        with pytest.raises(ServiceError, match="reply body over"):
            team.backends["scholar"].complete([{"role": "user", "content": "q"}], role="scholar")


# ----- results.jsonl -----------------------------------------------------------------------

def test_results_log_repairs_a_torn_tail_once_and_appends_without_rereading(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    whole = [json.dumps(dumped(ResultRow(pid=pid, status=status, scoring={}))) for pid, status in (("1", "ok"), ("2", "failed"))]
    path.write_text("\n".join(whole) + "\n" + '{"pid": "3", "sta')
    assert set(ResultsLog(path).read()) == {"1", "2"} and path.read_text().endswith("sta")  # readers change nothing
    log = ResultsLog(path)
    assert log.finished_ids() == {"1"}
    assert path.read_text().count("\n") == 2 and not path.read_text().endswith("sta")  # the writer cut it once
    with open(path, "a") as handle:  # another torn tail after opening is not looked for again
        handle.write("torn")
    log.append(ResultRow(pid="2", status="ok", scoring={}))
    assert path.read_text().count("torn") == 1
    assert log.finished_ids() == {"1", "2"}


def test_maps_score_skips_a_line_nested_too_deeply(tmp_path: Path) -> None:
    from maps_autogen.scoring._score import score_file

    source = tmp_path / "results.jsonl"
    source.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    report = score_file("mathvista", source)
    assert [(skipped.line_no, skipped.reason) for skipped in report.skipped] == [(1, "JSON nested too deeply")]
    assert stat.S_IMODE(report.out_path.stat().st_mode) == 0o644
