"""examples/slurm/shards.sbatch resumes its folder when a task starts again (a requeue) whether
the problems were chosen by flags or by the environment (`MAPS_EVAL_LIMIT` exported before
sbatch): a resume refuses any choice of problems, so the script's resume path leaves both out.
Run here as Slurm would run one array task, with bash and the task's variables, against the
scripted server (the real-Slurm run is tests/e2e/test_slurm_sharded_eval.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from maps_autogen.eval import FIXED_ON_RESUME, EvalOptions
from tests.helpers.common import REPO, TEST_KEY, clean_env
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI

SHARDS = REPO / "examples" / "slurm" / "shards.sbatch"


def test_a_requeued_task_resumes_with_selection_given_by_the_environment(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    answers = {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}
    runs = tmp_path / "shards"
    with FakeOpenAI(ProblemScript(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY, SLURM_ARRAY_JOB_ID="7",
                        SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_MIN="1", SLURM_ARRAY_TASK_COUNT="2",
                        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                        # the selection, exported before sbatch (as the flags they stand for)
                        MAPS_EVAL_LIMIT="1", MAPS_EVAL_SAMPLE_SEED="5")
        args = ["bash", str(SHARDS), str(runs), "mathvista", "--data", str(data), "--quiet"]
        first = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr
        (run,) = (runs / "1").glob("eval-*")
        requeued = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert requeued.returncode == 0, requeued.stderr
    assert "cannot change a resumed run" not in requeued.stderr
    assert list((runs / "1").glob("eval-*")) == [run]  # the same folder, resumed


def test_the_resume_path_unsets_exactly_the_variables_of_the_options_a_resume_refuses() -> None:
    text = SHARDS.read_text()
    block = text[text.index("unset MAPS_EVAL_"):]
    unset = set(re.findall(r"MAPS_EVAL_\w+", block[: block.index("options=()")]))
    refused = {f"MAPS_EVAL_{one.dest.upper()}" for one in EvalOptions.declared() if one.name in FIXED_ON_RESUME}
    assert unset == {*refused, "MAPS_EVAL_RUNS_DIR"}
