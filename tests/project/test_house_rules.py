"""The house's load-bearing rules: one benchmark registry, one JSONL reading rule, typed run
files read back through one guarded reader, and a core that needs neither the openai SDK nor
the optional extras."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from maps_autogen._util._artifacts import read_jsonl_from
from maps_autogen._util._errors import DataError, UsageError
from maps_autogen.benchmarks import NAMES, get_benchmark
from maps_autogen.cli import cli
from maps_autogen.orchestration._transcript import RunWriter
from maps_autogen.records._chat_records import EventRecord, StopEvent, TranscriptLineModel
from maps_autogen.records._run_files import read_manifest
from maps_autogen.records._schema import SCHEMA_VERSION
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.solve_cli import rollback_script, solve_args

REPO = Path(__file__).resolve().parents[2]


def test_one_registry_feeds_every_command() -> None:
    for command in ("eval", "score"):
        choices = next(p for p in cli.commands[command].params if p.name == "benchmark").type.choices
        assert tuple(choices) == NAMES
    for name in NAMES:
        benchmark = get_benchmark(name)
        assert benchmark.name == benchmark.task.name == name
    with pytest.raises(UsageError, match="unknown benchmark 'mmmu'"):
        get_benchmark("mmmu")


def test_jsonl_reader_leaves_a_torn_tail_and_names_a_damaged_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    complete = b'{"pid": "1"}\n\n{"pid": "2"}\n'
    path.write_bytes(complete + b'{"pid": "3"}')  # the last record is still being written
    records, offset = read_jsonl_from(path)
    assert records == [{"pid": "1"}, {"pid": "2"}] and offset == len(complete)  # a blank line is no record
    path.write_bytes(complete + b'{"pid": "3"}\n')
    assert read_jsonl_from(path, offset) == ([{"pid": "3"}], len(complete) + 13)
    for damaged, kind in ((b"[1, 2]", "a JSON list"), (b'{"pid": ', "not valid JSON")):
        path.write_bytes(complete + damaged + b'\n{"pid": "3"}\n')
        for start in (0, len(complete)):  # counted from the file's start, whatever the offset read from
            with pytest.raises(DataError, match=rf"results\.jsonl line 4 .*{kind}"):
                read_jsonl_from(path, start)


def test_a_manifest_without_what_readers_need_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "method": "maps", "ids": ["1"]}))
    with pytest.raises(DataError, match=r"manifest\.json: benchmark: field required"):
        read_manifest(tmp_path)
    result = run_maps(["report", str(tmp_path), "--out", str(tmp_path / "report")], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and "benchmark: field required" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_transcript_takes_only_known_record_kinds(tmp_path: Path) -> None:
    writer = RunWriter(tmp_path)
    writer.append(StopEvent(stop_reason="critic_passed"))
    # What is not a transcript record is never made: an unknown stop reason or kind, an event of no kind.
    with pytest.raises(ValidationError, match="stop_reason"):
        StopEvent(stop_reason="gave_up")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        TranscriptLineModel.model_validate({"type": "note", "text": "?"})
    with pytest.raises(TypeError, match="made as its kind's model"):
        EventRecord(event="stop")
    writer.close()
    assert [r["event"] for r in map(json.loads, (tmp_path / "transcript.jsonl").read_text().splitlines())] == ["stop"]


def _blocking(tmp_path: Path, *packages: str) -> str:
    """A PYTHONPATH whose sitecustomize makes `packages` unimportable, as if not installed."""
    folder = tmp_path / "block"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {packages!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, _Block())\n")
    return f"{folder}:{REPO}"


def test_solve_needs_neither_the_openai_sdk_nor_the_extras(tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png")
    with FakeOpenAI(rollback_script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY,
                        PYTHONPATH=_blocking(tmp_path, "openai", "datasets", "matplotlib"))
        # A fresh interpreter: what it can import is what is tested.
        result = run_maps(solve_args(png, tmp_path, "--quiet", "--max-rollbacks", "0"), env=env, cwd=tmp_path, process=True)
    assert result.returncode == 0 and result.stdout == "A. 2 kg\n", result.stderr


def test_a_missing_extra_names_its_install_command(tmp_path: Path) -> None:
    code = ("from maps_autogen.problem._hub import import_datasets\n"
            "try:\n    import_datasets()\nexcept Exception as error:\n    print(type(error).__name__, error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**clean_env(), "PYTHONPATH": _blocking(tmp_path, "datasets")})
    assert result.stdout.startswith("UsageError") and "pip install 'maps-autogen[eval]'" in result.stdout, result.stderr
