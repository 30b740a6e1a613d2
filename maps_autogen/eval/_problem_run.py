"""One eval problem: a fresh folder, the MAPS chat (or one baseline call) in it, the answer
scored, and the problem's results row (`records.ResultRow`)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen._util import DataError, MapsError
from maps_autogen.benchmarks import Verdict
from maps_autogen.eval._baselines import load_baseline_prompts, run_baseline
from maps_autogen.model import Completion
from maps_autogen.orchestration import ChatOutcome, Team, solve_problem
from maps_autogen.problem import EvalItem, Task, load_answer_formats
from maps_autogen.records import (
    PROBLEMS_DIR,
    RUN_FILE,
    Evaluation,
    ModelSent,
    ResultRow,
    ResultStatus,
    RoleUsage,
    Score,
    StopReason,
    Usage,
    belongs_to,
    child_folder,
    read_run,
    safe_component,
    write_record,
)
from maps_autogen.scoring import score_record
from maps_autogen.settings import LoadedConfig


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
        extra = {"pid": item.pid, "subset": item.subset, "gold": item.gold, "benchmark": self.task.name,
                 "method": self.method}
        scored: list[Verdict] = []
        try:
            problem = item.load_problem()  # its images are read and decoded now, not before the run
        except MapsError as broken:  # a broken image fails its own problem only
            return self.failed_row(item, str(broken), time.monotonic() - started), None
        if self.method == "maps":

            def evaluate(outcome: ChatOutcome) -> Evaluation | None:
                # Scored before run.json's final write, so the verdict goes in with it.
                if outcome.stop_reason == "error":
                    return None
                response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
                scored.append(score_record(self.task.name, {**item.record, "response": response}, self.rules))
                return evaluation_of(response, scored[0], item.gold)

            result = solve_problem(problem, self.team, runs_dir=self.eval_dir / PROBLEMS_DIR, run_id=name,
                                   without=self.without, extra=extra, evaluate=evaluate)
            outcome = result.outcome
            error = outcome.error if outcome.stop_reason in ("error", "interrupted") else None
            failure = outcome.failure
            response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
            ran = _Ran(
                stop_reason=outcome.stop_reason,
                final_answer=outcome.final_answer,
                rollbacks=[r.step for r in outcome.rollbacks],
                critic_scores=[dict(v.scores) if v else None for v in outcome.verdicts],
                usage=outcome.usage(),
                usage_by_role=outcome.usage_by_role(),
                models=models_sent((call.role, call.completion) for call in outcome.calls),
                max_tokens_reached=sorted(
                    {call.role for call in outcome.calls if call.completion.finish_reason == "length"}
                ),
                waited=sum(call.completion.waited_s for call in outcome.calls),
                # False: the answer step's last allowed reply never parsed and its text was scored.
                solver_parsed=outcome.solver_answer.parsed if outcome.solver_answer else None,
                chat=True,
            )
            run_json = None  # already holds the verdict
        else:
            ending = self.formats.render(self.task.name, "baseline_ending")
            baseline = run_baseline(problem, self.team, self.method, prompt=self.baseline_prompts[self.method],
                                    ending=ending, run_dir=problem_dir, extra=extra)
            error = baseline.error
            failure = baseline.failure
            response = baseline.response
            completion = baseline.completion
            ran = _Ran(
                stop_reason="error" if error else None,
                final_answer=response,
                rollbacks=[],
                critic_scores=[],
                usage=baseline.usage(),
                usage_by_role={self.method: baseline.role_usage()},
                models=models_sent([(self.method, completion)] if completion else []),
                max_tokens_reached=[self.method] if completion and completion.finish_reason == "length" else [],
                waited=completion.waited_s if completion else 0.0,
            )
            run_json = problem_dir
        # The problem's own time: the waits for a one-slot server, while other problems' calls ran, left out.
        seconds = round(max(0.0, time.monotonic() - started - ran.waited), 3)
        if error:
            return self._row(item, ran, status="failed", response=None, verdict=None, seconds=seconds,
                             error=error), failure
        verdict = scored[0] if scored else score_record(
            self.task.name, {**item.record, "response": response}, self.rules
        )
        if run_json is not None:
            annotate_run(run_json, evaluation_of(response, verdict, item.gold))
        return self._row(item, ran, status="ok", response=response, verdict=verdict, seconds=seconds,
                         error=None), None

    def _row(self, item: EvalItem, ran: _Ran, *, status: ResultStatus, response: str | None, verdict: Verdict | None,
             seconds: float, error: str | None) -> ResultRow:
        """The results row of a problem that ran: scored (`verdict`) or failed (`error`)."""
        row = ResultRow(
            pid=item.pid,
            subset=item.subset,
            status=status,
            method=self.method,
            gold=item.gold,
            metadata=item.metadata,
            response=response,
            extraction=verdict.extraction if verdict else None,
            prediction=verdict.prediction if verdict else None,
            correct=bool(verdict.correct) if verdict else None,
            stop_reason=ran.stop_reason,
            final_answer=ran.final_answer,
            rollbacks=ran.rollbacks,
            critic_scores=ran.critic_scores,
            feedback_step=ran.rollbacks[0] if ran.rollbacks else None,
            usage=ran.usage,
            usage_by_role=ran.usage_by_role,
            models=ran.models,
            max_tokens_reached=ran.max_tokens_reached,
            seconds=seconds,
            error=error,
            run_dir=f"{PROBLEMS_DIR}/{safe_component(item.pid)}",
            scoring=item.record,
        )
        if ran.waited:
            row = row.model_copy(update={"waited_seconds": round(ran.waited, 3)})
        if ran.chat:  # a baseline has no answer step whose reply is parsed
            row = row.model_copy(update={"solver_parsed": ran.solver_parsed})
        if verdict is not None:
            row = row.model_copy(update={"extractor_version": verdict.extractor_version})
            if verdict.unjudged is not None:
                row = row.model_copy(update={"unjudged": verdict.unjudged})
        return row


@dataclass(frozen=True)
class _Ran:
    """What a problem's chat (or its baseline call) gives its results row."""

    stop_reason: StopReason | None
    final_answer: str
    rollbacks: list[str]  # the step each rollback re-ran
    critic_scores: list[dict[str, Score] | None]
    usage: Usage
    usage_by_role: dict[str, RoleUsage]
    models: dict[str, ModelSent]
    max_tokens_reached: list[str]
    solver_parsed: bool | None = None  # whether the answer step's reply parsed (None: it gave none)
    chat: bool = False  # a MAPS chat's (False: a baseline call's)
    waited: float = 0.0  # seconds its calls waited for a one-slot server (not the problem's own time)


def annotate_run(run_dir: Path, evaluation: Evaluation) -> None:
    """Put the verdict into a baseline's run.json, for the viewer."""
    if (run_dir / RUN_FILE).is_file():
        run = read_run(run_dir)
        write_record(run_dir / RUN_FILE,
                     run.model_copy(update={"evaluation": evaluation, "correct": evaluation.correct}))


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


def evaluation_of(response: str, verdict: Verdict, gold: Any) -> Evaluation:
    """What a problem's run.json records of its scoring, for the viewer."""
    evaluation = Evaluation(response=response, extraction=verdict.extraction, prediction=verdict.prediction,
                            correct=bool(verdict.correct), gold=gold)
    return evaluation if verdict.unjudged is None else evaluation.model_copy(update={"unjudged": verdict.unjudged})


def models_sent(calls: Iterable[tuple[str, Completion]]) -> dict[str, ModelSent]:
    """Per role that called a model, the settings read back from its last request body sent
    (and the model name the service reported, when it differs)."""
    models: dict[str, ModelSent] = {}
    for role, completion in calls:
        entry = ModelSent.model_validate(completion.sent.model_dump(exclude_unset=True))
        if completion.served_model:
            entry = entry.model_copy(update={"served_model": completion.served_model})
        models[role] = entry
    return models


__all__ = ["ProblemRunner", "annotate_run", "evaluation_of", "fresh_problem_dir", "models_sent"]
