"""`maps solve`: one problem, from the command line or a problem file, through `api`'s solve."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from maps_autogen.cli._shared import options_of, say, start_viewer, stop_viewers
from maps_autogen.orchestration import SolveOptions

if TYPE_CHECKING:
    from maps_autogen.orchestration import HumanDesk
    from maps_autogen.report import LiveConsole, ProgressLines
    from maps_autogen.report.view import ViewServer


@click.command()
@click.argument("images", nargs=-1)
@click.option("-q", "--question", help="The question to solve.")
@click.option("-c", "--context", default="", help="Context that comes with the question.")
@click.option("-o", "--option", "options", multiple=True, help="An answer option (repeat for each option).")
@click.option(
    "--problem",
    "problem_file",
    type=click.Path(path_type=Path),
    help="A problem.yaml (question, context, options, images).",
)
@options_of(SolveOptions)
@click.option("--quiet", is_flag=True, help="Print only the final answer.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the outcome.")
@click.option("--human", is_flag=True,
              help="Take part in the chat: the UserProxy asks you after each review (agents.yaml human.when), "
              "one line each (Enter: continue; back STEP QUESTION; stop; other text: a note); with --view, on the "
              "page too.")
@click.option(
    "--view",
    "live_view",
    is_flag=True,
    help="Watch the run in a browser: serve it live on 127.0.0.1 and print the URL.",
)
@click.option("--batch", is_flag=True, help="Refused: a batch API answers in hours, and maps solve answers one "
              "problem now (--batch is maps eval's; docs/batch.md).")
def solve(images: tuple[str, ...], question: str | None, context: str, options: tuple[str, ...],
          problem_file: Path | None, quiet: bool, as_json: bool, human: bool, live_view: bool, batch: bool,
          **declared: Any) -> None:
    """Solve one problem: IMAGES are diagram files, http(s) URLs or data URLs."""
    import json as json_module

    from maps_autogen._util import ClosedOutputGuard, ProblemError, ServiceError, UsageError

    if batch:
        raise UsageError("maps solve answers one problem now, and a batch API answers in minutes to hours: "
                         "--batch is for maps eval", fix="drop --batch; to send problems by batch, run them as "
                         "a benchmark: maps eval custom --data FILE --batch (docs/batch.md)")
    from maps_autogen.api import load_problem, load_settings
    from maps_autogen.api._api import _solve
    from maps_autogen.problem import ImageLimits, build_problem, image_limits, private_urls_allowed
    from maps_autogen.report import LiveConsole, ProgressLines

    if problem_file is not None and (question or images or options or context):
        raise ProblemError(
            "give either --problem FILE or the problem on the command line, not both", fix="drop one of them"
        )
    if problem_file is None and not question:
        raise ProblemError("no question given", fix='pass -q "your question" or --problem problem.yaml')
    chosen = SolveOptions.from_cli(declared)
    loaded = load_settings(chosen, without=chosen.without)
    if problem_file is not None:
        problem = load_problem(problem_file, config=loaded, allow_private_urls=chosen.allow_private_urls,
                               allow_outside_paths=chosen.allow_outside_paths)
    else:
        with image_limits(ImageLimits.of(loaded.config.limits)), private_urls_allowed(True):  # typed: the user's
            problem = build_problem(question or "", context=context, options=options, image_sources=images,
                                    max_side=loaded.config.images.max_side)
    desk = None
    if human:  # the terminal answers, and the live page with --view: the first answer wins
        from maps_autogen.orchestration import HumanDesk

        desk = HumanDesk(terminal=sys.stdin, page=live_view, wait_s=loaded.config.human.wait_s)
    live: LiveConsole | ProgressLines | None = None
    if as_json:  # standard output holds the JSON alone; standard error says how the run goes
        live = ProgressLines(sys.stderr)
    elif not quiet:
        live = LiveConsole(options=problem.options)
    viewers: list[ViewServer] = []
    try:
        result = _solve(
            problem, loaded, chosen, on_human=desk.ask if desk else None,
            observer=ClosedOutputGuard(live) if live is not None else None,
            announce=None if live is None else (lambda text: say(text, err=True)),
            on_ready=lambda run_dir: _ready(run_dir, live, viewers if live_view else None, desk),
        )
    finally:
        stop_viewers(viewers)
    if as_json:
        from maps_autogen._util import terminal_safe_json

        click.echo(terminal_safe_json(json_module.dumps(result.summary(), ensure_ascii=False)))
    elif quiet:
        say(result.final_answer_text)
    else:
        say(f"\nFinal answer: {result.final_answer_text}")
        if result.run.correct is not None:
            verdict = "right" if result.run.correct else "wrong"
            say(f"Gold answer: {result.run.gold} (from the problem file): the final answer is {verdict}")
        elif result.run.gold is not None:  # a run that failed or has no answer has no verdict, never "wrong"
            why = "the run failed" if result.outcome.stop_reason == "error" else "the run has no answer"
            say(f"Gold answer: {result.run.gold} (from the problem file): no verdict, {why}")
        say(f"Stop reason: {result.outcome.stop_reason}; run saved in {result.run_dir}")
    if result.outcome.stop_reason == "error":
        raise ServiceError(
            result.outcome.error or "the chat failed", fix=f"finished steps are saved in {result.run_dir}"
        )


def _ready(run_dir: Path, live: LiveConsole | ProgressLines | None, viewers: list[ViewServer] | None,
           human: HumanDesk | None) -> None:
    """A solve's run folder exists: the terminal's live view plans its estimate from it, and
    `--view` serves it (with `human`, the page answers the chat's pauses too)."""
    if live is not None:
        live.watch(run_dir)
    if viewers is not None:
        viewers.append(start_viewer(run_dir, human=human))
