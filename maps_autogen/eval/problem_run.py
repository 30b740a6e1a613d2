"""One eval problem: a fresh folder, the MAPS chat (or one baseline call) in it, the answer
scored, and the problem's results row (`records.ResultRow`)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen.benchmarks.tasks import EvalItem, Task, load_answer_formats
from maps_autogen.client import Completion
from maps_autogen.config import LoadedConfig
from maps_autogen.errors import DataError, MapsError
from maps_autogen.eval.baselines import load_baseline_prompts, run_baseline
from maps_autogen.records import PROBLEMS_DIR, RUN_FILE, Evaluation, ResultRow, Usage
from maps_autogen.run_files import read_run, write_record
from maps_autogen.safe_paths import belongs_to, child_folder, safe_component
from maps_autogen.scoring import score_record
from maps_autogen.solving import Team, solve_problem


@dataclass(frozen=True)
class ProblemRunner:
    """What every problem of one eval invocation shares: the benchmark, the method, the team and
    the eval folder (and, for a baseline, its prompts and answer formats)."""

    task: Task
    method: str
    without: frozenset[str]
    rules: str
    team: Team
    eval_dir: Path
    baseline_prompts: Any = None
    formats: Any = None

    @classmethod
    def of(cls, task: Task, loaded: LoadedConfig, team: Team, eval_dir: Path, *, method: str,
           without: frozenset[str], rules: str) -> ProblemRunner:
        """The runner of one eval invocation (a baseline's prompts and answer formats read from
        the config), as the single process and each worker process build it."""
        baseline = method != "maps"
        return cls(task=task, method=method, without=without, rules=rules, team=team, eval_dir=eval_dir,
                   baseline_prompts=load_baseline_prompts(loaded.resolve(loaded.config.baseline_prompts))
                   if baseline else None,
                   formats=load_answer_formats(loaded.resolve(loaded.config.answer_formats)) if baseline else None)

    def failed_row(self, item: EvalItem, error: str, seconds: float) -> ResultRow:
        """The row of a problem that failed before (or instead of) a verdict."""
        return ResultRow(
            pid=item.pid,
            subset=item.subset,
            status="failed",
            gold=item.gold,
            response=None,
            extraction=None,
            prediction=None,
            correct=None,
            stop_reason="error",
            rollbacks=[],
            critic_scores=[],
            feedback_step=None,
            usage=Usage(calls=0, prompt_tokens=0, completion_tokens=0, cost=0.0),
            seconds=round(seconds, 3),
            error=error,
            metadata=item.metadata,
            method=self.method,
            run_dir=f"{PROBLEMS_DIR}/{safe_component(item.pid)}",
            scoring=item.record,
        )

    def solve(self, item: EvalItem) -> tuple[ResultRow, MapsError | None]:
        """Solve and score one problem: its results row, and the service failure that ended it
        (if any) so the caller can stop the run on a fatal one."""
        name = safe_component(item.pid)
        try:
            problem_dir = fresh_problem_dir(self.eval_dir, name, item.pid)
        except DataError as tampered:  # a tampered folder fails its own problem only, and is left alone
            return self.failed_row(item, str(tampered), 0.0), None
        started = time.monotonic()
        extra = {
            "pid": item.pid,
            "subset": item.subset,
            "gold": item.gold,
            "benchmark": self.task.name,
            "method": self.method,
        }
        base = {"pid": item.pid, "subset": item.subset, "gold": item.gold, "metadata": item.metadata,
                "method": self.method, "run_dir": f"{PROBLEMS_DIR}/{name}", "scoring": item.record}
        scored: dict[str, Any] = {}
        try:
            problem = item.load_problem()  # its images are read and decoded now, not before the run
        except MapsError as broken:  # a broken image fails its own problem only
            return self.failed_row(item, str(broken), time.monotonic() - started), None
        if self.method == "maps":

            def evaluate(outcome: Any) -> dict[str, Any]:
                # Scored before run.json's final write, so the verdict goes in with it.
                if outcome.stop_reason == "error":
                    return {}
                response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
                scored["verdict"] = score_record(self.task.name, {**item.record, "response": response}, self.rules)
                return evaluation_fields(response, scored["verdict"], item.gold)

            result = solve_problem(problem, self.team, runs_dir=self.eval_dir / PROBLEMS_DIR, run_id=name,
                                   without=self.without, extra=extra, evaluate=evaluate)
            outcome = result.outcome
            error = outcome.error if outcome.stop_reason in ("error", "interrupted") else None
            failure = outcome.failure
            response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
            chat = {
                "stop_reason": outcome.stop_reason,
                "rollbacks": [r.step for r in outcome.rollbacks],
                "critic_scores": [v.scores if v else None for v in outcome.verdicts],
                "feedback_step": outcome.rollbacks[0].step if outcome.rollbacks else None,
                "final_answer": outcome.final_answer,
                # False: the answer step's last allowed reply never parsed and its text was scored.
                "solver_parsed": outcome.solver_answer.parsed if outcome.solver_answer else None,
                "usage": outcome.usage(),
                "usage_by_role": outcome.usage_by_role(),
                "models": models_sent((call.role, call.completion) for call in outcome.calls),
                "max_tokens_reached": sorted(
                    {call.role for call in outcome.calls if call.completion.finish_reason == "length"}
                ),
            }
            run_json = None  # already holds the verdict
        else:
            ending = self.formats.render(self.task.name, "baseline_ending")
            baseline = run_baseline(problem, self.team, self.method, prompt=self.baseline_prompts[self.method],
                                    ending=ending, run_dir=problem_dir, extra=extra)
            error = baseline.error
            failure = baseline.failure
            response = baseline.response
            chat = {
                "stop_reason": "error" if error else None,
                "rollbacks": [],
                "critic_scores": [],
                "feedback_step": None,
                "final_answer": response,
                "usage": baseline.usage(),
                "usage_by_role": {self.method: baseline.usage()},
                "models": models_sent([(self.method, baseline.completion)] if baseline.completion else []),
                "max_tokens_reached": [self.method]
                if baseline.completion and baseline.completion.finish_reason == "length"
                else [],
            }
            run_json = problem_dir
        seconds = time.monotonic() - started
        if error:
            failed = self.failed_row(item, error, seconds)
            return ResultRow.model_validate(
                {**failed.model_dump(exclude_unset=True), **chat, **base, "status": "failed", "error": error}
            ), failure
        verdict = scored.get("verdict") or score_record(
            self.task.name, {**item.record, "response": response}, self.rules
        )
        row = ResultRow.model_validate({**base, "status": "ok", "response": response, "extraction": verdict.extraction,
                                        "prediction": verdict.prediction, "correct": bool(verdict.correct),
                                        **_unjudged(verdict), "extractor_version": verdict.extractor_version, **chat,
                                        "seconds": round(seconds, 3), "error": None})
        if run_json is not None:
            annotate_run(run_json, evaluation_fields(response, verdict, item.gold))
        return row, None


def annotate_run(run_dir: Path, fields: dict[str, Any]) -> None:
    """Put the verdict into a baseline's run.json, for the viewer."""
    if (run_dir / RUN_FILE).is_file():
        run = read_run(run_dir)
        write_record(
            run_dir / RUN_FILE,
            run.model_copy(
                update={"evaluation": Evaluation.model_validate(fields["evaluation"]), "correct": fields["correct"]}
            ),
        )


def fresh_problem_dir(eval_dir: Path, name: str, pid: str) -> Path:
    """`<eval>/problems/<name>`, empty: the folder of a problem that was in flight when the run
    was killed is removed first. Only a real folder (not a symlink) that is a direct child of
    the real problems folder and belongs to no other problem is ever removed."""
    problems = eval_dir / PROBLEMS_DIR
    problems.mkdir(parents=True, exist_ok=True)
    problem_dir = child_folder(problems, name, what=f"the folder of problem {pid!r}")
    if problem_dir.exists():
        if not problem_dir.is_dir():
            raise DataError(f"{problem_dir} is not a folder", fix="remove it, or resume into an untouched run folder")
        if not belongs_to(problem_dir, pid):
            raise DataError(
                f"{problem_dir} holds another problem than {pid!r}", fix="resume into an untouched run folder"
            )
        shutil.rmtree(problem_dir)
    return problem_dir


def evaluation_fields(response: str, verdict: Any, gold: Any) -> dict[str, Any]:
    """What a problem's run.json records of its scoring, for the viewer."""
    evaluation = {"response": response, "extraction": verdict.extraction, "prediction": verdict.prediction,
                  "correct": bool(verdict.correct), "gold": gold, **_unjudged(verdict)}
    return {"evaluation": evaluation, "correct": evaluation["correct"]}


def _unjudged(verdict: Any) -> dict[str, str]:
    """A verdict's `unjudged` reason as a record field, only when it has one."""
    return {"unjudged": verdict.unjudged} if verdict.unjudged is not None else {}


def models_sent(calls: Iterable[tuple[str, Completion]]) -> dict[str, dict[str, Any]]:
    """Per role that called a model, the settings read back from its last request body sent
    (and the model name the service reported, when it differs)."""
    models: dict[str, dict[str, Any]] = {}
    for role, completion in calls:
        entry = dict(completion.sent)
        if completion.served_model:
            entry["served_model"] = completion.served_model
        models[role] = entry
    return models


__all__ = ["ProblemRunner", "annotate_run", "evaluation_fields", "fresh_problem_dir", "models_sent"]
