"""Untrusted text is made valid UTF-8 once, where it enters: a JSON \\udcff escape in a reply, an
emoji split across two streamed pieces (as JSON escapes or inside its UTF-8 bytes), a command
line argument or a problem file holding a lone surrogate. The run finishes, every file it writes
is valid UTF-8, and an eval resumes."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen._util._text import PieceJoiner, TooDeep, utf8_chunks, valid_text, valid_tree
from tests.helpers.common import TEST_KEY, clean_env, run_maps, solver_json, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

EMOJI = "\U0001F600"


def _sse(content: str, finish: str | None = None) -> bytes:
    chunk = {"id": "x", "object": "chat.completion.chunk", "model": "gpt-4o",
             "choices": [{"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n\n"


def split_utf8_stream(text: str) -> list[bytes]:
    """A streamed reply whose network chunks split the emoji's four UTF-8 bytes 2 + 2."""
    body = _sse(text) + _sse("", "stop") + b"data: [DONE]\n\n"
    cut = body.index(EMOJI.encode()) + 2
    return [body[:cut], body[cut:]]


class SurrogateScript(ProblemScript):
    """The interpreter's reply holds a JSON \\udcff escape; the aligner's emoji arrives split into
    its two JSON-escaped halves, one per streamed piece (the fake server splits every 8
    characters); the scholar's emoji arrives with its UTF-8 bytes split across two chunks."""

    def _reply(self, request: Received) -> Reply:
        if request.role == "interpreter":
            return Reply("lone \udcff here")
        if request.role == "aligner":
            return Reply("1234567\ud83d\ude00 split pair")
        if request.role == "scholar":
            return Reply(stream_bytes=split_utf8_stream(f"facts {EMOJI} here"))
        return super()._reply(request)


def _valid_utf8_jsonl(path: Path) -> str:
    text = path.read_bytes().decode("utf-8")  # strict: raises on anything that is not UTF-8
    for line in text.splitlines():
        json.loads(line)
    return text


def test_lone_and_split_surrogates_in_replies_finish_and_resume(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    config = write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True})
    runs = tmp_path / "runs"
    with FakeOpenAI(SurrogateScript({pid: row["answer"] for pid, row in rows.items()})) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        first = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--config", str(config), "--quiet"],
                         env=env, cwd=tmp_path)
        assert first.returncode == 0, first.stderr[-3000:]
        eval_dir = next(runs.glob("eval-*"))
        # A results file edited by hand: a lone surrogate escape in a finished problem's record.
        results = (eval_dir / "results.jsonl").read_text().splitlines()
        results[0] = results[0].replace('"response": "', '"response": "\\udcff', 1)
        (eval_dir / "results.jsonl").write_text("\n".join(results) + "\n")
        resumed = run_maps(["eval", "mathvista", "--resume", str(eval_dir), "--runs-dir", str(runs), "--config", str(config)],
                           env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Traceback" not in first.stderr + resumed.stderr
    transcripts = sorted(eval_dir.rglob("transcript.jsonl"))
    assert len(transcripts) == 2
    for transcript in transcripts:
        text = _valid_utf8_jsonl(transcript)
        assert "lone \ufffd here" in text  # the lone half became U+FFFD
        assert f"1234567{EMOJI} split pair" in text  # the two escaped halves joined into the emoji
        assert f"facts {EMOJI} here" in text  # the split UTF-8 bytes decoded whole
    _valid_utf8_jsonl(eval_dir / "results.jsonl")
    (eval_dir / "summary.json").read_bytes().decode("utf-8")
    viewed = run_maps(["view", str(eval_dir)], env=env, cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr[-2000:]


def test_lone_surrogates_from_the_command_line_and_a_problem_file(tmp_path: Path) -> None:
    problem = tmp_path / "problem.yaml"
    problem.write_text('question: "What is 6*7? \\udcff"\noptions: ["42 \\ud800", "41"]\n')
    runs = tmp_path / "runs"
    script = lambda request: Reply(solver_json("42")) if request.role == "solver" else Reply("notes \udcff")  # noqa: E731
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        from_file = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(runs), "--json"], env=env, cwd=tmp_path)
        # "\udcff" in an argument is the byte 0xFF on the command line (not UTF-8).
        from_args = run_maps(["solve", "-q", "What is 6*7? \udcff", "-c", "ctx \udcfe", "--runs-dir", str(runs), "--quiet"],
                             env=env, cwd=tmp_path)
        sent = [request.user_text() for request in server.received if request.method == "POST"]
    for result in (from_file, from_args):
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr
    assert json.loads(from_file.stdout)["final_answer"] == "42"
    for transcript in runs.glob("solve-*/transcript.jsonl"):
        _valid_utf8_jsonl(transcript)
    assert any("What is 6*7? \ufffd" in text for text in sent)


def test_valid_text_joins_pairs_and_replaces_lone_halves() -> None:
    assert valid_text("plain") == "plain"
    assert valid_text("a\ud83d\ude00b") == f"a{EMOJI}b"
    assert valid_text("\udcff\ud83d") == "\ufffd\ufffd"
    joiner = PieceJoiner()
    assert joiner.feed("ab\ud83d") == "ab"
    assert joiner.feed("\ude00c") == f"{EMOJI}c"
    assert joiner.feed("\ud83d") == "" and joiner.flush() == "\ufffd"
    encoded = "x€y".encode()
    assert "".join(utf8_chunks([encoded[:2], encoded[2:]])) == "x€y"
    assert "".join(utf8_chunks([b"a\xff", b"\xe2\x82"])) == "a\ufffd\ufffd"
    assert valid_tree({"k\udcff": ["v\ud800", 1]}) == {"k\ufffd": ["v\ufffd", 1]}
    nested: list = []
    for _ in range(100):
        nested = [nested]
    try:
        valid_tree(nested)
    except TooDeep:
        pass
    else:
        raise AssertionError("100 levels passed a limit of 64")


def test_streamed_chunks_of_the_wrong_shape_are_malformed_replies_and_retried(tmp_path: Path) -> None:
    """A `data:` line that is JSON but not a chunk object (a number, choices that are not a list
    of objects, a delta that is not an object, a model that is not a name) is a malformed reply:
    retried, never a crash; the name recorded is only ever a string."""
    bad = [b"data: 5\n\n", b'data: {"choices": "x"}\n\n', b'data: {"choices": [7]}\n\n',
           b'data: {"choices": [{"delta": "text"}]}\n\n']
    seen: list[str] = []

    def script(request: Received) -> Reply:
        seen.append(request.role)
        if request.role == "aligner" and seen.count("aligner") <= len(bad):
            return Reply(stream_bytes=[bad[seen.count("aligner") - 1]])
        if request.role == "solver":
            return Reply(stream_bytes=[_sse(solver_json("42")).replace(b'"gpt-4o"', b'{"not": "a name"}'), _sse("", "stop"),
                                       b"data: [DONE]\n\n"])
        return Reply("notes")

    config = write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True, "endpoints.openai.max_retries": 4})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        result = run_maps(["solve", "-q", "What is 6*7?", "--config", str(config), "--runs-dir", str(tmp_path / "runs"), "--json",
                           "--without", "critic"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert seen.count("aligner") == len(bad) + 1  # each wrong shape retried, then the good reply
    assert json.loads(result.stdout)["final_answer"] == "42"
    run = json.loads(next((tmp_path / "runs").glob("solve-*/run.json")).read_text())
    assert "not a name" not in json.dumps(run)
