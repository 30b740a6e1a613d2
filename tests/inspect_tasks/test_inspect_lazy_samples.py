"""`inspect eval maps_autogen/<benchmark> --limit N`: making the task reads no problem (Inspect
makes every sample before it applies the limit); a sample's problem is read when it runs, once,
by the solver (tests/inspect_tasks/test_inspect_tasks.py reads it back as the sample's first message)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.common import write_config
from tests.helpers.eval_fixtures import write_mathvista_jsonl


def test_an_inspect_task_reads_no_problem_before_its_sample_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import maps_autogen.benchmarks.mathvista._task as mathvista
    from maps_autogen.inspect_tasks import maps_task

    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 30)
    reads: list[str] = []
    original = mathvista.image_from_field
    monkeypatch.setattr(mathvista, "image_from_field", lambda *args, **kwargs: reads.append(kwargs["name"]) or original(*args, **kwargs))
    task = maps_task("mathvista", data=str(data), config=str(write_config(tmp_path / "agents.yaml")))
    assert len(task.dataset) == 30 and reads == []
    assert all(isinstance(sample.input, str) and sample.id for sample in task.dataset)
    # What the solver reads when a sample runs: that problem alone, once.
    by_id = {str(sample.id): sample for sample in task.dataset}
    assert set(by_id) == {str(n) for n in range(1, 31)}
