"""The viewer's templates: every printed value passes the one redaction pass and autoescaping,
in whole pages and in the live feed's fragments alike, and a variable a template needs but was
not given is an error, never an empty string."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jinja2 import UndefinedError

from maps_autogen.records._schema import SCHEMA_VERSION
from maps_autogen.report.view import render_view
from maps_autogen.report.view._prepare import TranscriptState, team_of
from maps_autogen.report.view._render import (
    read_run_or_none,
    read_transcript_from,
    render_outcome_and_usage,
    render_records,
)
from maps_autogen.report.view._templating import fragment

SECRET = "abcdefghijklmnop0123456789"
LEAK = f"Authorization: Bearer {SECRET}"


def hand_written_run(folder: Path) -> Path:
    """A run folder whose every text field echoes a credential (as a tampered or hand-made one might)."""
    folder.mkdir()
    run = {"schema_version": SCHEMA_VERSION, "kind": "solve", "run_id": f"solve-{LEAK}", "status": "finished", "final_answer": LEAK,
           "error": LEAK, "problem": {"question": LEAK, "context": LEAK, "options": [LEAK], "metadata": {"note": LEAK}},
           "team": {"steps": ["solver", "critic"], "reviewer": "critic", "final_step": "solver", "scored": {"solver": "solution"}},
           "flow": {"steps": ["solver"], "critic": True, "reviewer": "critic", "scored": {"solver": "solution"}, "threshold": 5},
           "rollbacks": [{"number": 1, "step": "solver", "dimension": "solution", "question": LEAK, "sender": "Critic"}]}
    lines = [
        {"type": "message", "agent": "UserProxy", "role": "user_proxy", "step": "task", "content": LEAK},
        {"type": "message", "agent": "Solver", "role": "solver", "step": "solution", "content": LEAK,
         "parsed": {"final_answer": LEAK, "parsed": True}, "request": [{"role": "user", "content": [{"type": "text", "text": LEAK}]}]},
        {"type": "message", "agent": "Critic", "role": "critic", "step": "review", "content": LEAK,
         "parsed": {"scores": {"solution": 2}, "feedback": {"solution": LEAK}, "evaluation": {"solution": LEAK},
                    "worst_step": "solution"}},
        {"type": "event", "event": "rollback", "number": 1, "step": "solver", "dimension": "solution", "scores": {"solution": 2},
         "question": LEAK, "evaluation": LEAK, "by": "critic", "sender": "Critic"},
        {"type": "event", "event": "error", "detail": LEAK},
        {"type": "event", "event": "stop", "stop_reason": "rollback_limit", "final_answer": LEAK},
    ]
    (folder / "run.json").write_text(json.dumps(run))
    (folder / "transcript.jsonl").write_text("".join(json.dumps({"schema_version": SCHEMA_VERSION, **line}) + "\n"
                                                     for line in lines))
    return folder


def test_every_printed_value_is_masked_on_the_page_and_in_live_fragments(tmp_path: Path) -> None:
    folder = hand_written_run(tmp_path / "solve-leaky")
    page = render_view(folder)
    run = read_run_or_none(folder)
    records, _ = read_transcript_from(folder / "transcript.jsonl")
    fragments = render_records(records, run, True, TranscriptState(team_of(run))) + render_outcome_and_usage(run)
    for html in (page, fragments):
        assert SECRET not in html
        assert "Bearer ***" in html
    # every field above reached the page (masked), what the rollback sent back too
    assert page.count("Bearer ***") >= 12 and "Feedback: <span class=\"text\">" in page


def test_a_value_a_template_needs_but_was_not_given_is_an_error() -> None:
    class Partial:  # a turn without most of its fields
        role = "solver"

    with pytest.raises(UndefinedError):
        fragment("turn", Partial())
