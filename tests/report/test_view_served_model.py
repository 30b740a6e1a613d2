"""The viewer labels the model the service said answered, not only the one configured: a
service that answers with another model (an alias resolved, a fallback) shows as "served as"
on the turn, in the usage table and in an eval's summary."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.report.view import render_view
from tests.helpers.view_fixtures import write_synthetic_eval


def _rewrite(path: Path, change: dict[str, object]) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))


def test_the_served_model_is_shown_where_the_model_is(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval"
    write_synthetic_eval(eval_dir, 1)
    manifest = json.loads((eval_dir / "manifest.json").read_text())
    _rewrite(eval_dir / "manifest.json", {"served_models": {"scholar": ["gpt-4o-mini-SERVED"]}})
    folder = next((eval_dir / "problems").iterdir())
    run = json.loads((folder / "run.json").read_text())
    models = {**run["models"], "scholar": {**run["models"]["scholar"], "served_model": "gpt-4o-mini-SERVED"}}
    _rewrite(folder / "run.json", {"models": models})
    transcript = folder / "transcript.jsonl"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    records = [{**record, "served_model": "gpt-4o-mini-SERVED"} if record.get("role") == "scholar" else record
               for record in records]
    transcript.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert manifest["models"]["scholar"]["model"] == "gpt-4o"

    page = render_view(eval_dir)
    summary, problem = page.split('id="summary"', 1)[1].split("</section>", 1)[0], page.split('id="p1"', 1)[1]
    assert "gpt-4o (openai), served as gpt-4o-mini-SERVED" in summary  # the eval's models
    assert "gpt-4o (openai), served as gpt-4o-mini-SERVED" in problem  # the problem's usage table
    assert "round 0 · gpt-4o, served as gpt-4o-mini-SERVED" in problem  # the scholar's turn
    assert problem.count("served as") == 2  # the other steps' turns and rows name gpt-4o alone
