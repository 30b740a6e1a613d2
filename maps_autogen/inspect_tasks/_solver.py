"""The MAPS team (or a direct / cot baseline) as an Inspect solver, and our official-conformant
scorers as an Inspect scorer.

The solver runs the same AG2 chat as `maps solve` (chat.MapsChat) in a worker thread; every
step's request goes through Inspect's active model (`get_model()`), so `--model`, Inspect's
retries, limits, cache and log apply. Each step's turn is a span named for the step, each
event of the chat (a rollback with its step and scores, a reply cut at max_tokens) an info
event, so both show in `inspect view`. The scorer gives the verdict `maps eval` gives: the same
response rendering and `scoring.score_record`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import Model, ModelOutput, get_model
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    accuracy,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from pydantic import BaseModel, ConfigDict, Field

from maps_autogen._util import ServiceError, redact
from maps_autogen.benchmarks import HelperStartError
from maps_autogen.eval import BaselinePrompt, baseline_request
from maps_autogen.inspect_tasks._backend import InspectBackend, SampleLoop, in_chat_thread
from maps_autogen.inspect_tasks._local_model import LOCAL, runs_on_local
from maps_autogen.inspect_tasks._samples import problem_message
from maps_autogen.orchestration import ChatOutcome, MapsChat, configured_chat_settings
from maps_autogen.problem import EvalItem, Problem, Task
from maps_autogen.records import ChatRecord, EventRecord, StopEvent, StopReason, dumped
from maps_autogen.records import Score as ReviewScore
from maps_autogen.scoring import score_record
from maps_autogen.settings import (
    LoadedConfig,
    LocalEndpoint,
    OpenAIEndpoint,
    PromptSet,
    Resolution,
    ResolvedModel,
    embedded_team_setting,
    max_tokens_key,
)

#: Where the solver leaves what the scorer reads (the sample's store).
STORE_KEY = "maps"
#: The `source` of the info events the chat's events become.
EVENT_SOURCE = "maps"


def step_models(loaded: LoadedConfig, model_name: str) -> dict[str, ResolvedModel]:
    """Each step's model as a run records it: Inspect's model, the step's sampling settings
    (temperature, max_tokens, top_p, seed; `every_step:` over the step's own) from the team
    config, and the JSON mode, retries for unusable
    replies and vision of the endpoint the step names (the first declared service when it names
    `auto` or a local one); on maps' own local model (`--model maps/local`), the local endpoint's,
    as `maps solve` applies them (its reply cap, its repeat penalty, a note for each image on a
    text-only model). A reply cut at its cap names the key that sets the step's max_tokens."""
    if runs_on_local(model_name):
        return _local_step_models(loaded, model_name)
    endpoints = loaded.config.endpoints
    fallback = next((ep for ep in endpoints.values() if isinstance(ep, OpenAIEndpoint)), OpenAIEndpoint())
    models = {}
    for role in loaded.team.config.names:
        choice = loaded.model_for(role)
        endpoint = endpoints.get(choice.endpoint)
        if not isinstance(endpoint, OpenAIEndpoint):
            endpoint = fallback
        resolved = ResolvedModel(
            endpoint_name="inspect", kind="inspect", model=model_name, base_url=None, timeout_s=endpoint.timeout_s,
            max_retries=endpoint.max_retries, json_mode=endpoint.json_mode, stream=False,
            temperature=choice.temperature, max_tokens=choice.max_tokens, vision=endpoint.vision,
            max_images=endpoint.max_images, prompt_layout=endpoint.prompt_layout,
            top_p=choice.top_p, seed=choice.seed,
        )
        models[role] = replace(resolved, max_tokens_key=_inspect_key(loaded, role, resolved))
    return models


def _inspect_key(loaded: LoadedConfig, role: str, model: ResolvedModel) -> str:
    """The key that sets a step's max_tokens on Inspect: the team config's, or, for a step that
    sets none, Inspect's own --max-tokens."""
    return max_tokens_key(loaded, role, model) if model.max_tokens is not None else "Inspect's --max-tokens"


def _local_step_models(loaded: LoadedConfig, model_name: str) -> dict[str, ResolvedModel]:
    """The steps' models on maps' own local server (`maps/local`): the local endpoint's settings."""
    endpoint = loaded.config.endpoints.get(LOCAL)
    if not isinstance(endpoint, LocalEndpoint):
        endpoint = LocalEndpoint()
    models = {}
    for role in loaded.team.config.names:
        choice = loaded.model_for(role)
        resolved = ResolvedModel(
            endpoint_name=LOCAL, kind="inspect", model=model_name, base_url=None, timeout_s=endpoint.timeout_s,
            max_retries=endpoint.max_retries, json_mode=endpoint.json_mode, stream=False,
            temperature=choice.temperature, max_tokens=min(choice.max_tokens or endpoint.max_tokens,
                                                           endpoint.max_tokens),
            vision=endpoint.sees_images, prompt_layout=endpoint.prompt_layout, top_p=choice.top_p, seed=choice.seed,
            extra_body={"repeat_penalty": endpoint.repeat_penalty},
        )
        models[role] = replace(resolved, max_tokens_key=max_tokens_key(loaded, role, resolved))
    return models


def run_settings(loaded: LoadedConfig, model_name: str) -> LoadedConfig:
    """The settings a sample runs under: on maps' own local model, with the review loop its
    endpoint brings when nothing else sets one (as `maps solve` applies it)."""
    if not runs_on_local(model_name):
        return loaded
    models = step_models(loaded, model_name)
    return embedded_team_setting(loaded, Resolution(models=models, announcement=""))[0]


class TranscriptObserver:
    """The chat's events (rollbacks, replies cut at max_tokens, unparseable replies) as Inspect
    info events, each added on the solver's loop so it lands in the sample's transcript."""

    def __init__(self, sample: SampleLoop):
        self._sample = sample

    def emit(self, record: ChatRecord) -> None:
        """Record one chat event (messages and tokens are the ModelEvents' to show)."""
        if not isinstance(record, EventRecord) or isinstance(record, StopEvent):
            return
        data = {key: value for key, value in dumped(record).items() if key not in ("type", "schema_version")}
        self._sample.run(_info(data))


async def _info(data: dict[str, Any]) -> None:
    transcript().info(data, source=EVENT_SOURCE)


def _backends(loaded: LoadedConfig, model: Model, sample: SampleLoop) -> dict[str, InspectBackend]:
    return {role: InspectBackend(resolved, model, sample) for role, resolved in step_models(loaded, str(model)).items()}


class SampleResult(BaseModel):
    """What the solver leaves the scorer (and the log) of a sample: the response as `maps eval`
    renders it, the answer, and for a MAPS chat how it went (a baseline's sets what it has)."""

    model_config = ConfigDict(extra="forbid")

    response: str
    final_answer: str
    stop_reason: StopReason | None = None  # None: a baseline's (one call, no chat)
    solver_parsed: bool | None = None
    rollbacks: list[str] = Field(default_factory=list)
    critic_scores: list[dict[str, ReviewScore] | None] = Field(default_factory=list)
    max_tokens_reached: list[str] = Field(default_factory=list)


def _chat_result(outcome: ChatOutcome, task: Task, item: EvalItem) -> SampleResult:
    """What the scorer and the log keep of a MAPS chat (the response as `maps eval` renders it)."""
    response = task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
    return SampleResult(
        response=response,
        final_answer=outcome.final_answer,
        stop_reason=outcome.stop_reason,
        solver_parsed=outcome.solver_answer.parsed if outcome.solver_answer else None,
        rollbacks=[rollback.step for rollback in outcome.rollbacks],
        critic_scores=[dict(verdict.scores) if verdict else None for verdict in outcome.verdicts],
        max_tokens_reached=sorted({c.role for c in outcome.calls if c.completion.finish_reason == "length"}),
    )


def _recorded(solve: Solver, *, benchmark: str, method: str, without: list[str], config: str,
              team: list[str]) -> Solver:
    """`solve` as Inspect's `maps` solver, registered with only these parameters: Inspect records a
    solver's arguments in its log (the plan), so it is handed what it needs to record (masked),
    never the loaded configuration (headers, query credentials, extra_body), the prompts or the
    data."""

    @solver(name="maps")
    def maps(benchmark: str, method: str, without: list[str], config: str, team: list[str]) -> Solver:
        return solve

    return maps(benchmark=benchmark, method=method, without=without, config=config, team=team)


def maps_solver(task: Task, items: Mapping[str, EvalItem], loaded: LoadedConfig, prompts: PromptSet, *,
                method: str = "maps", without: frozenset[str] = frozenset(),
                baseline: BaselinePrompt | None = None, ending: str = "") -> Solver:
    """Solve each sample with the MAPS team (`method` maps) or one baseline call (direct, cot:
    `baseline` and `ending` give its prompt), every request through Inspect's active model; the
    log records the benchmark, method, steps left out, config path and team (`_recorded`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        item = items[str(state.sample_id)]
        model = get_model()
        sample = SampleLoop(asyncio.get_running_loop())
        backends = _backends(loaded, model, sample)

        read: list[Problem] = []

        def run() -> SampleResult:
            problem = item.load_problem()  # its images read here, once, when its sample runs
            read.append(problem)
            if method != "maps":
                assert baseline is not None
                backend = backends[loaded.team.config.final_step.name]  # the answering step's model
                messages = baseline_request(problem, baseline, prompts, ending,
                                            send_images=backend.supports_images,
                                            max_images=backend.model.max_images)
                try:
                    completion = backend.complete(messages, role=method)
                except ServiceError as failure:
                    raise sample.failure or failure from None
                return SampleResult(response=completion.text, final_answer=completion.text, stop_reason=None,
                                    max_tokens_reached=[method] if completion.finish_reason == "length" else [])
            settings = configured_chat_settings(problem, run_settings(loaded, str(model)), without=without)
            chat = MapsChat(problem, prompts=prompts, backends=backends, settings=settings,
                            observer=TranscriptObserver(sample))
            outcome = chat.run()
            if outcome.stop_reason in ("error", "interrupted"):
                raise sample.failure or outcome.failure or RuntimeError(outcome.error or outcome.stop_reason)
            return _chat_result(outcome, task, item)

        try:
            result = await in_chat_thread(run)
        except asyncio.CancelledError:
            sample.cancel()  # the chat's thread ends at its request in flight
            raise
        finally:
            if read:  # the problem as its steps were shown it, in place of the input naming it
                state.messages[:1] = [problem_message(read[0], prompts.task.labels)]
        state.store.set(STORE_KEY, result.model_dump(exclude_unset=True))
        state.output = ModelOutput.from_content(str(model), result.final_answer)
        state.messages.append(state.output.message)
        return state

    return _recorded(solve, benchmark=task.name, method=method, without=sorted(without),
                     config=redact(str(loaded.path)), team=list(loaded.team.config.names))


def _recorded_scorer(score: Scorer, *, benchmark: str, rules: str) -> Scorer:
    """`score` as Inspect's `official` scorer, registered with only the benchmark and the rules
    as its parameters (Inspect records them in its log: never the data set's rows)."""

    @scorer(metrics=[accuracy(), stderr()], name="official")
    def official(benchmark: str, rules: str) -> Scorer:
        return score

    return official(benchmark=benchmark, rules=rules)


@metric
def rollback_rate() -> Metric:
    """The share of the scored MAPS samples whose Critic rolled back at least once (the scorer
    keeps each sample's rollbacks; a baseline's samples have none to count, nor a failed sample)."""

    def rate(scores: list[SampleScore]) -> float:
        counted = [score.score.metadata["rollbacks"] for score in scores
                   if score.score.metadata and isinstance(score.score.metadata.get("rollbacks"), list)]
        return sum(1 for rollbacks in counted if rollbacks) / len(counted) if counted else 0.0

    return rate


def maps_metrics() -> list[Metric | dict[str, list[Metric]]]:
    """A MAPS task's metrics: the official accuracy and its standard error, and how often the Critic rolled back."""
    return [accuracy(), stderr(), rollback_rate()]


def official_scorer(task: Task, items: Mapping[str, EvalItem], rules: str = "current") -> Scorer:
    """The benchmark's official-conformant verdict on the solver's response (`maps score`'s rules)."""

    async def score(state: TaskState, target: Target) -> Score:
        item = items[str(state.sample_id)]
        stored = state.store.get(STORE_KEY)  # Inspect's store of the sample
        result = SampleResult.model_validate(stored) if stored else None
        response = result.response if result is not None else ""
        kept = result.model_dump(exclude_unset=True, exclude={"response"}) if result is not None else {}
        # In a thread: a symbolic check may wait seconds on its helper process, and the event
        # loop runs every other sample meanwhile. A response past the scorers' bounds is judged
        # wrong, saying why; a scorer that fails on this sample leaves it without a verdict
        # (unscored: out of the metrics, the reason kept), never the task; a setup problem (no
        # symbolic helper can start) stops the task as any broken installation does.
        try:
            verdict = await asyncio.to_thread(score_record, task.name, {**item.record, "response": response}, rules)
        except HelperStartError:
            raise
        except Exception as error:  # noqa: BLE001 - this sample's failure, recorded on it
            reason = f"the scorer failed on this sample: {error.__class__.__name__}: {error}"
            return Score.unscored(answer=None, explanation=reason,
                                  metadata={"response": response, "gold": item.gold, "scorer_error": reason})
        unjudged = f"; not judged within the scorers' bounds: {verdict.unjudged}" if verdict.unjudged else ""
        return Score(
            value=CORRECT if verdict.correct else INCORRECT,
            answer=verdict.prediction if verdict.prediction is not None else verdict.extraction,
            explanation=f"extraction: {verdict.extraction!r}; gold: {item.gold!r}{unjudged}",
            metadata={"response": response, "extraction": verdict.extraction, "prediction": verdict.prediction,
                      "extraction_method": verdict.extraction_method,
                      "extractor_version": verdict.extractor_version, "gold": item.gold,
                      "unjudged": verdict.unjudged,
                      **kept},
        )

    return _recorded_scorer(score, benchmark=task.name, rules=rules)
