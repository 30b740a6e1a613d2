"""The terminal's estimate of the time left (`maps solve`'s live view and `--json`'s progress
lines say it alike, from one piece): the chat's run.json is read once, also when it cannot be
read, and a step the person sent back spends none of the reviewer's rollbacks. The team's steps
are renamed: the estimate plans by the steps the flow records."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import maps_autogen.report._live as live
from maps_autogen.orchestration._transcript import RunWriter
from maps_autogen.records._chat_records import MessageRecord, RollbackEvent, StopEvent
from maps_autogen.records._schema import FlowRecord, RunRecord
from maps_autogen.report._live import LiveConsole, ProgressLines

# describer, reasoner, and the judge's review; one rollback allowed, no final review after it
FLOW = FlowRecord(steps=["describer", "expert", "reasoner"], critic=True, reviewer="judge", max_rollbacks=1,
                  final_review=False)


def _reply(role: str, seconds: float = 2.0) -> MessageRecord:
    return MessageRecord(agent=role.title(), role=role, round=1, content=f"{role} notes",
                         seconds=seconds)


def _back(by: str) -> RollbackEvent:
    return RollbackEvent(number=1, step="expert", dimension="knowledge", scores={"knowledge": 2}, by=by,
                         sender="UserProxy" if by == "user" else "Judge")


def _views() -> list[tuple[ProgressLines | LiveConsole, io.StringIO]]:
    shown, printed = io.StringIO(), io.StringIO()
    return [(ProgressLines(shown), shown), (LiveConsole(file=printed), printed)]


def test_a_step_the_person_sent_back_leaves_the_reviewers_rollbacks_in_the_estimate(tmp_path: Path) -> None:
    writer = RunWriter(tmp_path)
    writer.write_run(RunRecord(status="running", flow=FLOW))
    writer.close()
    for by, calls in (("user", "3-6"), ("critic", "2")):
        for view, out in _views():
            view.watch(tmp_path)
            view.emit(_reply("describer"))
            view.emit(_back(by))
            # the expert and the reasoner again, then the review; up to the one rollback left, re-running
            # all three steps (its last, not reviewed again); after the reviewer's own: its last, unreviewed
            estimate = [line for line in out.getvalue().splitlines() if "more model call" in line][-1]
            assert f"≈ {calls} more model calls at ~2.0 s each" in estimate, (type(view).__name__, by, estimate)


def test_the_run_json_is_read_once_also_when_it_cannot_be_read(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "run.json").write_text("{ damaged")
    reads: list[Path] = []
    real = live.read_run

    def counted(run_dir: Path) -> RunRecord:
        reads.append(run_dir)
        return real(run_dir)

    monkeypatch.setattr(live, "read_run", counted)
    for view, out in _views():
        reads.clear()
        view.watch(tmp_path)
        for record in (_reply("describer"), _reply("expert"), _back("critic"), _reply("expert"),
                       StopEvent(stop_reason="rollback_limit")):
            view.emit(record)
        assert reads == [tmp_path], type(view).__name__
        assert "more model call" not in out.getvalue()  # nothing to plan by: no estimate said
