"""The `maps` command line: thin commands that call public functions.

This is the one place where domain errors become one-line messages and exit codes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from maps_autogen.benchmarks import NAMES as BENCHMARK_NAMES
from maps_autogen.errors import MapsError

if TYPE_CHECKING:
    from maps_autogen.human_desk import HumanDesk
    from maps_autogen.live import LiveConsole
    from maps_autogen.view.server import ViewServer


#: Every option of every command can come from an environment variable named MAPS_<COMMAND>_<OPTION>
#: (click's auto_envvar_prefix: MAPS_EVAL_CONCURRENCY for `maps eval --concurrency`); the command
#: line wins over the variable, the variable over the default; `--help` names each one.
ENV_PREFIX = "MAPS"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": ENV_PREFIX})
@click.version_option(package_name="maps-autogen", allow_from_autoenv=False)  # MAPS_VERSION=1 must not print it
def cli() -> None:
    """MAPS: a team of LLM agents solving multimodal scientific problems.

    Every option can also be set by an environment variable MAPS_<COMMAND>_<OPTION> (e.g.
    MAPS_EVAL_MAX_TOKENS=1024 for maps eval --max-tokens 1024); each command's --help names them."""
    _load_env()
    _register_keys()


def _register_keys() -> None:
    """Before any command runs, the one place every command's masking starts: the well-known key
    variables and the api_key_env of every endpoint of the default config (./agents.yaml, else
    the built-in one) are registered, so `maps view`, `--serve` and `maps score` mask a key found
    in the files they read just as solve and eval do (which also register their --config's)."""
    from maps_autogen.config import configured_secrets
    from maps_autogen.redact import register_key_variables, register_secret, register_well_known_keys

    register_well_known_keys()
    key_variables, inline_keys = configured_secrets()  # the config read once
    register_key_variables(key_variables)
    for key in inline_keys:  # written in an AG2 config list that agents.yaml names
        register_secret(key)


def _say(text: str, *, err: bool = False) -> None:
    """Print a line that may hold untrusted text: secrets masked, control characters escaped."""
    from maps_autogen.redact import terminal_safe

    click.echo(terminal_safe(text), err=err)


def _load_env() -> None:
    from dotenv import load_dotenv

    load_dotenv(Path.cwd() / ".env", override=False)


MODEL_OPTIONS = (
    click.option(
        "--config",
        "config_file",
        type=click.Path(path_type=Path),
        help="agents.yaml to use (default: ./agents.yaml, else the built-in one).",
    ),
    click.option(
        "--config-list",
        help="An AG2 OAI_CONFIG_LIST: a JSON file, or a variable holding the JSON or the file's path; its "
        "models become endpoints.",
    ),
    click.option("--model", help="Model for every role: NAME, ENDPOINT:NAME, or an endpoint name (e.g. local)."),
    click.option(
        "--threshold",
        type=click.FloatRange(0),
        help="Reviewer pass threshold on the team's scale (1-5 by default, at most its highest score; overrides "
        "critic.threshold).",
    ),
    click.option(
        "--max-rollbacks", type=click.IntRange(0, 20), help="Maximum rollbacks (overrides critic.max_rollbacks)."
    ),
    click.option(
        "--team",
        "team_file",
        type=click.Path(path_type=Path),
        help="A team file (or a built-in team: maps, the default, or big_five) instead of the config's team.",
    ),
    # The sampling settings sent with every step's request, over each step's own (every_step: in agents.yaml).
    click.option("--temperature", type=click.FloatRange(0, 2),
                 help="Sampling temperature for every step (over each step's own; every_step.temperature)."),
    click.option("--top-p", type=click.FloatRange(0, 1, min_open=True),
                 help="Nucleus sampling top_p for every step (every_step.top_p)."),
    click.option("--seed", type=int,
                 help="The models' sampling seed, sent with every step's request (every_step.seed); a service "
                 "that honours it repeats its sampling."),
    click.option("--max-tokens", type=click.IntRange(min=1),
                 help="Reply cap for every step, over each step's own (every_step.max_tokens)."),
)


def model_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options `solve`, `eval` and `config` share (which config, model and team, the
    reviewer's bounds, the sampling settings for every step), declared once so the commands
    accept and document them alike."""
    for option in reversed(MODEL_OPTIONS):
        command = option(command)
    return command


@cli.command()
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
@model_options
@click.option(
    "--without", "without", multiple=True, metavar="STEP",
    help="Leave a step out (repeatable); README: Changing the team."
)
@click.option(
    "--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True, help="Where run folders go."
)
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
@click.option("--allow-private-urls", is_flag=True,
              help="Let the problem file's image URLs point at private addresses (loopback, LAN); trusted files only.")
@click.option("--allow-outside-paths", is_flag=True,
              help="Let the problem file's images be files outside its folder; trusted files only.")
def solve(
    images: tuple[str, ...], question: str | None, context: str, options: tuple[str, ...], problem_file: Path | None,
    config_file: Path | None, config_list: str | None, model: str | None, threshold: float | None,
    max_rollbacks: int | None, team_file: Path | None, temperature: float | None, top_p: float | None,
    seed: int | None, max_tokens: int | None, without: tuple[str, ...], runs_dir: Path,
    quiet: bool, as_json: bool, human: bool, live_view: bool, allow_private_urls: bool, allow_outside_paths: bool,
) -> None:
    """Solve one problem: IMAGES are diagram files, http(s) URLs or data URLs."""
    import json as json_module

    from maps_autogen.api import load_problem, load_settings
    from maps_autogen.api import solve as solve_problem
    from maps_autogen.errors import ProblemError, ServiceError
    from maps_autogen.fetch import private_urls_allowed
    from maps_autogen.images import ImageLimits, image_limits
    from maps_autogen.interrupts import ClosedOutputGuard
    from maps_autogen.live import LiveConsole
    from maps_autogen.problem import build_problem

    if problem_file is not None and (question or images or options or context):
        raise ProblemError(
            "give either --problem FILE or the problem on the command line, not both", fix="drop one of them"
        )
    if problem_file is None and not question:
        raise ProblemError("no question given", fix='pass -q "your question" or --problem problem.yaml')
    loaded = load_settings(config_file, model=model, team=team_file, config_list=config_list, threshold=threshold,
                           max_rollbacks=max_rollbacks, without=without, temperature=temperature, top_p=top_p,
                           seed=seed, max_tokens=max_tokens)
    if problem_file is not None:
        problem = load_problem(problem_file, config=loaded, allow_private_urls=allow_private_urls,
                               allow_outside_paths=allow_outside_paths)
    else:
        with image_limits(ImageLimits.of(loaded.config.limits)), private_urls_allowed(True):  # typed: the user's
            problem = build_problem(question or "", context=context, options=options, image_sources=images,
                                    max_side=loaded.config.images.max_side)
    desk = None
    if human:  # the terminal answers, and the live page with --view: the first answer wins
        from maps_autogen.human_desk import HumanDesk

        desk = HumanDesk(terminal=sys.stdin, page=live_view)
    live = None if (quiet or as_json) else LiveConsole(options=problem.options)
    viewers: list[ViewServer] = []
    try:
        result = solve_problem(
            problem, config=loaded, runs_dir=runs_dir, without=without, on_human=desk.ask if desk else None,
            observer=ClosedOutputGuard(live) if live is not None else None,
            announce=None if live is None else (lambda text: _say(text, err=True)),
            on_ready=lambda run_dir: _ready(run_dir, live, viewers if live_view else None, desk),
        )
    finally:
        for viewer in viewers:
            _stop_viewer(viewer)
    if as_json:
        from maps_autogen.redact import terminal_safe_json

        click.echo(terminal_safe_json(json_module.dumps(result.summary(), ensure_ascii=False)))
    elif quiet:
        _say(result.final_answer_text)
    else:
        _say(f"\nFinal answer: {result.final_answer_text}")
        if result.run.correct is not None:
            verdict = "right" if result.run.correct else "wrong"
            _say(f"Gold answer: {result.run.gold} (from the problem file): the final answer is {verdict}")
        elif result.run.gold is not None:  # a run that failed or has no answer has no verdict, never "wrong"
            why = "the run failed" if result.outcome.stop_reason == "error" else "the run has no answer"
            _say(f"Gold answer: {result.run.gold} (from the problem file): no verdict, {why}")
        _say(f"Stop reason: {result.outcome.stop_reason}; run saved in {result.run_dir}")
    if result.outcome.stop_reason == "error":
        raise ServiceError(
            result.outcome.error or "the chat failed", fix=f"finished steps are saved in {result.run_dir}"
        )


@cli.command()
@click.argument("benchmark", type=click.Choice(BENCHMARK_NAMES))
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--rules", type=click.Choice(["current", "legacy"]), default="current", show_default=True,
              help="Which version of the official rules to apply (benchmarks with one version ignore it).")
@click.option("--out", "out_path", type=click.Path(path_type=Path), default=None,
              help="Where to write the scored JSONL (default: FILE with .scored.jsonl).")
@click.option(
    "--llm-extract", is_flag=True, help="MathVista: ask the configured model to extract answers the rules cannot read."
)
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="agents.yaml for --llm-extract.")
@click.option("--model", help="Model for --llm-extract: NAME, ENDPOINT:NAME or an endpoint name.")
def score(
    benchmark: str,
    file: Path,
    rules: str,
    out_path: Path | None,
    llm_extract: bool,
    config_file: Path | None,
    model: str | None,
) -> None:
    """Re-score recorded model outputs with the benchmark's official rules."""
    from maps_autogen.scoring import render_summary, score_file

    extractor = None
    if llm_extract:
        if benchmark != "mathvista":
            raise click.UsageError(
                "--llm-extract is MathVista's optional step; the other benchmarks score by rules only"
            )
        from maps_autogen.benchmarks.mathvista.scorer import with_llm_extraction
        from maps_autogen.config import load_config, with_overrides
        from maps_autogen.solving import assemble_team

        loaded = with_overrides(load_config(config_file), model=model)
        backend = assemble_team(loaded).backends[loaded.team.config.final_step.name]

        def complete(prompt: str) -> str:
            return backend.complete([{"role": "user", "content": prompt}], role="extractor").text

        extractor = lambda record: with_llm_extraction(record, complete)  # noqa: E731
    report = score_file(benchmark, file, rules=rules, out_path=out_path, llm_extract=extractor)
    for skipped in report.skipped:
        _say(f"warning: line {skipped.line_no}: {skipped.reason}", err=True)
    _say(render_summary(report))


@cli.command(name="eval")
@click.argument("benchmark", type=click.Choice(BENCHMARK_NAMES))
@click.option(
    "--subset",
    "subsets",
    multiple=True,
    help="A subset to run (repeatable; default: all). Paper column names work too.",
)
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    help="A local copy: a hub download as it comes, a save_to_disk folder, parquet or JSONL (docs/benchmarks.md: "
    "Data layouts).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), help="Run N problems spread evenly over the subsets (deterministic)."
)
@click.option("--sample", type=click.IntRange(min=1), help="Sample N problems per subset (seeded).")
@click.option(
    "--sample-seed", type=int, default=0, show_default=True,
    help="Seed for --sample and the paper's sampled subsets (--seed is the models' sampling seed).",
)
@click.option(
    "--method",
    type=click.Choice(["maps", "direct", "cot"]),
    default=None,
    help="maps (default), or a single-call baseline.",
)
@click.option(
    "--without",
    "without",
    multiple=True,
    metavar="STEP",
    help="Ablate a step of the team (repeatable), e.g. scholar; README: Changing the team.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1, max=512),
    default=8,
    show_default=True,
    help="Problems in flight at once.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=256),
    help="Worker processes sharing the problems in flight (default: chosen from the cores and --concurrency; "
    "docs/benchmarks.md: Worker processes).",
)
@click.option(
    "--rules",
    type=click.Choice(["current", "legacy"]),
    default="current",
    show_default=True,
    help="Official scoring rule version.",
)
@click.option("--no-cache", is_flag=True, help="Do not reuse cached model replies.")
@click.option(
    "--max-cost", type=click.FloatRange(min=0), help="Stop cleanly once this many USD are spent (resume carries on)."
)
@click.option("--shard", help="Run shard i of n (1-based, e.g. 2/4); combine shards with maps merge.")
@click.option(
    "--resume",
    type=click.Path(path_type=Path),
    help="Continue an eval run folder: skip finished problems, retry failed ones.",
)
@click.option(
    "--allow-change",
    "--allow-model-change",
    "allow_change",
    is_flag=True,
    help="Let --resume run under other settings (team, prompts, review, models, method, data); the "
    "manifest records each change.",
)
@click.option("--runs-dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True)
@model_options
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--allow-outside-paths",
    is_flag=True,
    help="Let data set rows refer to files outside the data folder (trusted data only).",
)
@click.option(
    "--allow-private-urls",
    is_flag=True,
    help="Let data set rows' image URLs point at private addresses (trusted data only).",
)
@click.option(
    "--view",
    "live_view",
    is_flag=True,
    help="Watch the eval in a browser: serve it live on 127.0.0.1 and print the URL.",
)
@click.option("--human", is_flag=True, hidden=True)  # refused: maps eval never waits on a person
def eval_command(
    benchmark: str,
    subsets: tuple[str, ...],
    data: Path | None,
    limit: int | None,
    sample: int | None,
    sample_seed: int,
    method: str | None,
    without: tuple[str, ...],
    team_file: Path | None,
    concurrency: int,
    workers: int | None,
    rules: str,
    no_cache: bool,
    max_cost: float | None,
    shard: str | None,
    resume: Path | None,
    allow_change: bool,
    runs_dir: Path,
    config_file: Path | None,
    config_list: str | None,
    model: str | None,
    threshold: float | None,
    max_rollbacks: int | None,
    temperature: float | None,
    top_p: float | None,
    seed: int | None,
    max_tokens: int | None,
    quiet: bool,
    allow_outside_paths: bool,
    allow_private_urls: bool,
    live_view: bool,
    human: bool,
) -> None:
    """Run a whole benchmark (or part of it) and score it with the official rules.

    Exit codes: 0 every problem scored (or --max-cost stopped it cleanly); 1 a problem failed or
    a fatal service error stopped the run; 2 bad input; 130 interrupted (Ctrl-C); 143 stopped by SIGTERM
    (a batch system's time limit, scancel, preemption), as by Ctrl-C."""
    if human:
        from maps_autogen.errors import UsageError

        raise UsageError("maps eval never waits on a person: --human is for maps solve",
                         fix="drop --human; to steer one problem yourself, run maps solve --human on it")
    if resume is not None:
        _refuse_selection_on_resume()
    from maps_autogen.api import evaluate
    from maps_autogen.errors import RunInterrupted, RunTerminated, ServiceError

    viewers: list[ViewServer] = []
    try:
        outcome = evaluate(
            benchmark, data=data, method=method, subsets=subsets, limit=limit, sample=sample, sample_seed=sample_seed,
            without=without, concurrency=concurrency, rules=rules, cache=not no_cache, max_cost=max_cost,
            shard=shard, resume=resume, allow_change=allow_change, runs_dir=runs_dir, config=config_file,
            model=model, team=team_file, config_list=config_list, threshold=threshold, max_rollbacks=max_rollbacks,
            allow_outside_paths=allow_outside_paths, allow_private_urls=allow_private_urls, progress=not quiet,
            announce=None if quiet else (lambda text: _say(text, err=True)),
            on_ready=(lambda eval_dir: viewers.append(_start_viewer(eval_dir))) if live_view else None,
            workers=workers, temperature=temperature, top_p=top_p, seed=seed, max_tokens=max_tokens,
        )
    finally:
        for viewer in viewers:
            _stop_viewer(viewer)
    _say(outcome.table)
    for note in outcome.notes:
        _say(f"note: {note}")
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
    resume_hint = f"maps eval {benchmark} --resume {outcome.eval_dir}"
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

    from maps_autogen.eval.runner import FIXED_ON_RESUME, refuse_fixed_on_resume

    context = click.get_current_context()
    refuse_fixed_on_resume(flag for name, flag in FIXED_ON_RESUME.items()
                           if context.get_parameter_source(name) not in (ParameterSource.DEFAULT, None))


@cli.command(name="config")
@model_options
def config_command(
    config_file: Path | None, config_list: str | None, model: str | None, threshold: float | None,
    max_rollbacks: int | None, team_file: Path | None, temperature: float | None, top_p: float | None,
    seed: int | None, max_tokens: int | None,
) -> None:
    """Print the effective configuration: the config file merged onto the built-in defaults (and
    the options given), with where each part came from, the team that runs, and each step's
    model, endpoint and sampling settings. Secrets are never printed: keys are named by their
    variables."""
    from maps_autogen.api import load_settings
    from maps_autogen.config import render_effective
    from maps_autogen.endpoints import resolve_models, step_lines

    loaded = load_settings(config_file, model=model, team=team_file, config_list=config_list, threshold=threshold,
                           max_rollbacks=max_rollbacks, temperature=temperature, top_p=top_p, seed=seed,
                           max_tokens=max_tokens)
    _say(render_effective(loaded))
    try:
        resolution = resolve_models(loaded)
    except MapsError as error:  # the configuration is shown either way; what is missing to run it, too
        _say(f"\n# not runnable as is: {error}")
        return
    _say("\n# Each step's model (endpoint, where it is served, the sampling settings its requests carry):")
    for line in step_lines(resolution):
        _say(f"#   {line}")
    _say("# " + resolution.announcement)


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="The merged run folder (default: runs/<new id>).")
@click.option("--allow-incomplete", is_flag=True,
              help="Write the merge even when shards or problems are missing (summary.json: complete false and "
              "the missing ids).")
def merge(runs: tuple[Path, ...], out: Path | None, allow_incomplete: bool) -> None:
    """Combine the shard runs of one evaluation into one run (refused when a shard or a
    problem is missing, unless --allow-incomplete)."""
    from maps_autogen.eval.merge import merge_runs
    from maps_autogen.run_files import read_summary
    from maps_autogen.transcript import new_run_id

    outcome = merge_runs(list(runs), out or Path("runs") / new_run_id("merged"), allow_incomplete=allow_incomplete)
    summary = read_summary(outcome.out)
    for note in outcome.notes:
        _say(f"note: {note}", err=True)
    click.echo(
        f"merged {len(runs)} runs into {outcome.out}: {summary.average.scored} scored, accuracy "
        f"{summary.average.accuracy}" + ("" if summary.complete else " (incomplete: see summary.json's missing)")
    )


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out", type=click.Path(path_type=Path), help="Folder for the tables and figures (default: runs/report-<stamp>)."
)
@click.option(
    "--paper",
    is_flag=True,
    help="Add the paper's Table 1 rows beside ours, with the difference, and random-choice rows.",
)
def report(runs: tuple[Path, ...], out: Path | None, paper: bool) -> None:
    """Tables and figures comparing eval runs (Table 1 and 2, Figures 4, 5 and 6, cost per role)."""
    from maps_autogen.report import write_report
    from maps_autogen.transcript import new_run_id

    result = write_report(list(runs), out or Path("runs") / new_run_id("report"), paper=paper)
    _say(result.markdown)
    _say("wrote: " + ", ".join(str(path) for path in result.files))


@cli.command()
@click.argument("run", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="A .html file (one self-contained page) or a folder (index.html, a page per problem, images as files). "
    "Default: RUN/view.html for a solve run, the folder RUN/view/ for an eval run.",
)
@click.option("--open", "open_page", is_flag=True, help="Open the page in the default browser.")
@click.option(
    "--serve",
    is_flag=True,
    help="Serve the run from a local web server, updating live while it runs (Ctrl-C stops it).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port for --serve (0: any free port)."
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address for --serve (the URL's token still guards it)."
)
def view(run: Path, out: Path | None, open_page: bool, serve: bool, port: int, host: str) -> None:
    """Read a solve run or an eval run in a browser: pages on disk, or live with --serve."""
    from maps_autogen.view import write_pages

    if serve:
        from maps_autogen.view.render import kind_of
        from maps_autogen.view.server import ViewServer

        if out is not None:
            raise click.UsageError("--serve writes no files; drop --out")
        kind_of(run)  # a folder that is not a run is a one-line error before anything starts
        server = ViewServer(run, host=host, port=port)
        click.echo(server.url)
        if open_page:
            _open_in_browser(server.url)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
        finally:
            server.close()
        return
    page = write_pages(run, out)
    click.echo(str(page))
    if open_page:
        _open_in_browser(page.resolve().as_uri())


def _open_in_browser(url: str) -> None:
    """`--open`: hand `url` to the default browser; when there is none (no display, no browser
    installed), say so in one line on stderr: the page's path or URL is already printed."""
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        _say(f"--open: no browser to open here (no display?); open {url} yourself", err=True)


def _ready(run_dir: Path, live: LiveConsole | None, viewers: list[ViewServer] | None,
           human: HumanDesk | None) -> None:
    """A solve's run folder exists: the terminal's live view plans its estimate from it, and
    `--view` serves it (with `human`, the page answers the chat's pauses too)."""
    if live is not None:
        live.watch(run_dir)
    if viewers is not None:
        viewers.append(_start_viewer(run_dir, human=human))


def _start_viewer(run_dir: Path, human: HumanDesk | None = None) -> ViewServer:
    """`--view`: the live viewer beside a running solve or eval, its URL on stderr (stdout may be --json);
    with `human`, the page answers the chat's pauses too."""
    from maps_autogen.view.server import ViewServer

    server = ViewServer(run_dir, human=human).start()
    click.echo(f"watch live: {server.url} (until this command ends; then: maps view {run_dir} --serve)", err=True)
    return server


def _stop_viewer(server: ViewServer | None) -> None:
    if server is not None:
        server.close()


def _configure_logging() -> None:
    """Warnings to stderr, one line each, with every registered secret masked."""
    import logging

    from maps_autogen.redact import RedactingFilter

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
            handler.addFilter(RedactingFilter())


def _show_env_variables(group: click.Group) -> None:
    """Each option's --help names the environment variable that can set it."""
    for command in group.commands.values():
        for param in command.params:
            if isinstance(param, click.Option) and param.allow_from_autoenv:
                param.show_envvar = True


def _from_environment(error: click.BadParameter) -> None:
    """A bad value that came from an environment variable: the message names the variable."""
    from click.core import ParameterSource

    param, ctx = error.param, error.ctx
    if param is None or ctx is None or param.name is None:
        return
    if ctx.get_parameter_source(param.name) is not ParameterSource.ENVIRONMENT:
        return
    variable = param.envvar if isinstance(param.envvar, str) else f"{ctx.auto_envvar_prefix}_{param.name.upper()}"
    error.param_hint = f"{param.get_error_hint(ctx)} (from the environment variable {variable})"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `maps` console script."""
    from maps_autogen.interrupts import stop_like_ctrl_c, stopped_by

    _configure_logging()
    stop_like_ctrl_c()  # SIGTERM stops every command as the first Ctrl-C does
    try:
        cli.main(args=argv, prog_name="maps", standalone_mode=False)
    except MapsError as error:
        # One line per problem (a data check may report several bad rows).
        for line in str(error).splitlines():
            _say(f"error: {line}", err=True)
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt) as stop:  # click raises Abort for a KeyboardInterrupt
        said, code = stopped_by(stop)
        click.echo(said, err=True)
        sys.exit(code)
    except BrokenPipeError:  # the reader of standard output went away (`maps ... | head`): end quietly
        from maps_autogen.interrupts import OUTPUT_CLOSED_EXIT_CODE, silence_stdout

        silence_stdout()
        sys.exit(OUTPUT_CLOSED_EXIT_CODE)
    except click.ClickException as error:
        if isinstance(error, click.BadParameter):
            _from_environment(error)
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    sys.exit(0)


_show_env_variables(cli)

if __name__ == "__main__":
    main()
