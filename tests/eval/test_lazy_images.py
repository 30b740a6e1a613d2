"""`maps eval` reads and decodes a problem's images when the problem starts, not before the run:
a broken image fails its own problem only, and an image is read as it is when its turn comes."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from maps_autogen._util._errors import ProblemError
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval._runner import load_items
from maps_autogen.settings._config import load_config
from tests.helpers.benchmark_replicas import hub_parquet
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps
from tests.helpers.eval_cli import eval_dir_of, scripted_answers
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.eval_tasks import MV_FEATURES, MV_ROWS
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

RED = (255, 0, 0)


def _results(runs: Path) -> dict[str, dict]:
    lines = (eval_dir_of(runs) / "results.jsonl").read_text().splitlines()
    return {record["pid"]: record for record in map(json.loads, lines)}


def _pids_asked(server: FakeOpenAI, script: ProblemScript) -> set[str | None]:
    return {script.pid_of_critic(request) for request in server.received}


def test_an_unreadable_image_fails_its_problem_while_the_others_finish(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "data", 4)
    (data.parent / "images" / "2.png").write_bytes(b"this is not a PNG")
    script = ProblemScript(scripted_answers(rows))
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--concurrency", "2"],
                          env=env, cwd=tmp_path)
        asked = _pids_asked(server, script)
    assert result.returncode == 1 and "some problems failed (1)" in result.stderr and "Traceback" not in result.stderr
    results = _results(tmp_path / "runs")
    assert {pid: record["status"] for pid, record in results.items()} == {"1": "ok", "2": "failed", "3": "ok", "4": "ok"}
    error = results["2"]["error"]
    assert "\n" not in error and "2.png is not a readable image" in error
    assert asked == {"1", "3", "4"}  # nothing of problem 2 was sent
    summary = json.loads((eval_dir_of(tmp_path / "runs") / "summary.json").read_text())
    assert summary["failed"] == 1 and summary["average"]["scored"] == 3


class _ReplaceImageWhenFirstProblemStarts:
    """The scripted service, which replaces problem 3's image file once problem 1 is asked about."""

    def __init__(self, script: ProblemScript, image: Path):
        self.script = script
        self.image = image
        self.replaced = False

    def __call__(self, request: Received) -> Reply:
        if not self.replaced and self.script.pid_of_critic(request) == "1":
            make_png(self.image, mark=200)  # row 0 turns red up to x = 199
            self.replaced = True
        return self.script(request)


def test_an_image_is_read_when_its_problem_starts(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "data", 3)
    script = ProblemScript(scripted_answers(rows))
    service = _ReplaceImageWhenFirstProblemStarts(script, data.parent / "images" / "3.png")
    with FakeOpenAI(service) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--concurrency", "1"],
                          env=env, cwd=tmp_path)
        sent = [url for request in server.received if script.pid_of_critic(request) == "3" for url in request.image_urls()]
    assert result.returncode == 0, result.stderr
    assert service.replaced and sent
    for url in sent:
        with Image.open(io.BytesIO(base64.b64decode(url.partition(",")[2]))) as image:
            # The file as it was when problem 3 started, not when the run began (mark 3: white here).
            assert image.convert("RGB").getpixel((100, 0)) == RED


def test_data_set_rows_keep_their_images_undecoded_until_the_problem_starts(tmp_path: Path) -> None:
    good = io.BytesIO()
    Image.new("RGB", (30, 20), "blue").save(good, format="PNG")
    rows = [dict(MV_ROWS[1], pid="7", decoded_image={"bytes": b"broken image bytes", "path": "7.png"}),
            dict(MV_ROWS[1], pid="8", decoded_image={"bytes": good.getvalue(), "path": "8.png"})]
    folder = tmp_path / "snapshot"
    hub_parquet(folder / "data" / "testmini-00000-of-00001.parquet", rows, MV_FEATURES)
    task = get_benchmark("mathvista").task
    items = {item.pid: item for item in load_items(task, task.subsets, folder, load_config(cwd=tmp_path))}
    assert [image.mime for image in items["8"].load_problem().images] == ["image/png"]
    with pytest.raises(ProblemError, match="is not a readable image"):
        items["7"].load_problem()
