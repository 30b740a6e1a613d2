"""`maps eval`: a benchmark run through `api`'s evaluate, its table and how it ended."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from maps_autogen.cli._shared import options_of, say, start_viewer, stop_viewers
from maps_autogen.eval import EvalOptions

if TYPE_CHECKING:
    from maps_autogen.report.view import ViewServer


@click.command(name="eval")
@options_of(EvalOptions)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--view",
    "live_view",
    is_flag=True,
    help="Watch the eval in a browser: serve it live on 127.0.0.1 and print the URL.",
)
@click.option("--human", is_flag=True,
              help="Refused: maps eval never waits on a person (--human is maps solve's; run it on one problem).")
def eval_command(quiet: bool, live_view: bool, human: bool, **declared: Any) -> None:
    """Run a whole benchmark (or part of it) and score it with the official rules.

    Exit codes: 0 every problem scored (or --max-cost stopped it cleanly); 1 a problem failed or
    a fatal service error stopped the run; 2 bad input; 130 interrupted (Ctrl-C); 143 stopped by SIGTERM
    (a batch system's time limit, scancel, preemption), as by Ctrl-C."""
    if human:
        from maps_autogen._util import UsageError

        raise UsageError("maps eval never waits on a person: --human is for maps solve",
                         fix="drop --human; to steer one problem yourself, run maps solve --human on it")
    chosen = EvalOptions.from_cli(declared)
    if chosen.dry_run and quiet:
        from maps_autogen._util import UsageError

        raise UsageError("--dry-run prints what the run would do, which --quiet silences", fix="drop --quiet")
    if chosen.resume is not None:
        _refuse_selection_on_resume()
    from maps_autogen._util import RunInterrupted, RunTerminated, ServiceError
    from maps_autogen.api import evaluate

    viewers: list[ViewServer] = []
    try:
        outcome = evaluate(
            chosen, progress=not quiet, announce=None if quiet else (lambda text: say(text, err=True)),
            on_ready=(lambda eval_dir: viewers.append(start_viewer(eval_dir))) if live_view else None,
        )
    finally:
        stop_viewers(viewers)
    if outcome.dry_run:
        click.echo(f"dry run: {outcome.ran} problem(s) would run; nothing was called or written")
        return
    say(outcome.table)
    for note in outcome.notes:
        say(f"note: {note}")
    summary = outcome.summary
    cost = summary.usage.cost
    spent = "unknown" if cost is None else f"${cost:.4f}"
    cached = summary.usage.cached_calls
    if cached:
        spent += f" ({cached} of {summary.usage.calls} calls answered from the cache, at $0)"
    if summary.usage.cached_tokens:
        usage = summary.usage
        spent += f"; {usage.cached_tokens} of {usage.prompt_tokens} prompt tokens cached by the services"
    click.echo(
        f"\n{summary.average.scored} scored, {summary.failed} failed; cost {spent}; run saved in {outcome.eval_dir}"
    )
    if summary.failed:
        click.echo("failed problems have no verdict: the accuracy is correct / scored, never counting them wrong")
    resume_hint = f"maps eval {chosen.benchmark} --resume {outcome.eval_dir}"
    if outcome.terminated:
        raise RunTerminated(f"stopped by SIGTERM; the finished problems are saved and summarised in {outcome.eval_dir}",
                            fix=f"continue with: {resume_hint}")
    if outcome.interrupted:
        raise RunInterrupted(
            f"interrupted; the finished problems are saved and summarised in {outcome.eval_dir}",
            fix=f"continue with: {resume_hint}",
        )
    if outcome.fatal is not None:
        raise ServiceError(
            f"stopped early: {outcome.fatal.problem}", fix=f"{outcome.fatal.fix}; then continue with: {resume_hint}"
        )
    if outcome.stopped_for_cost:
        click.echo(f"stopped: --max-cost reached; continue with: {resume_hint}")
    if summary.failed:
        raise ServiceError(
            f"some problems failed ({summary.failed})", fix=f"see results.jsonl; retry them with: {resume_hint}"
        )


def _refuse_selection_on_resume() -> None:
    """`--resume` with an option that chooses other problems or other scoring rules would be
    ignored (the manifest decides them): one line instead of a silent run under the old ones.
    Any such option given counts, even at its default value (the API refuses other values)."""
    from click.core import ParameterSource

    from maps_autogen.eval import FIXED_ON_RESUME, refuse_fixed_on_resume

    context = click.get_current_context()
    refuse_fixed_on_resume(FIXED_ON_RESUME[one.name] for one in EvalOptions.declared()
                           if one.name in FIXED_ON_RESUME
                           and context.get_parameter_source(one.dest) not in (ParameterSource.DEFAULT, None))
