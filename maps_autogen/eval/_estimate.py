"""What `maps eval` will call and bill, said before its first model call.

The announcement names, per step, the model and the endpoint it is sent to, the number of
problems, and a cost range from our own token accounting (model/_tokens.py) and the price table:

- prompt tokens: per call, the step's prompt (system message, instruction, the task preamble),
  the problem's text and images (images only for a step that sees them, on a model that takes
  images) and the outputs of the steps it reads; counted on the actual problems (up to
  `MEASURED` of them, evenly spread, the rest assumed alike), each image's size read from its
  file's header (nothing decoded; an image whose header does not say, a URL, is read);
- lower bound: one pass through the team, every reply `TYPICAL_SHARE` of its step's max_tokens;
- upper bound: every reply at its max_tokens, and the pass repeated for every allowed rollback
  (plus the last review), as if every rollback re-ran the whole team.

A cached reply costs nothing, so a run with a warm cache bills less than the lower bound.
When a model has no price (or a step has no max_tokens), the cost is unknown and the line says
which model lacks one; never a guessed price. A model on this machine (an endpoint of kind
`local`) costs nothing: the cost of a run on it alone is "free".

The same count gives the calls and tokens per problem and the time: each call's seconds from
`orchestration.call_seconds` (the embedded model's measured time per call; any other service's
reply tokens at an assumed speed, said as one), the problems in flight at once (`--concurrency`;
one at a time on a server that answers one request at a time) sharing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maps_autogen._util import MapsError
from maps_autogen.eval._baselines import BaselinePrompt
from maps_autogen.eval._batching import expected_rounds
from maps_autogen.model import TOKENS_PER_MESSAGE, TOKENS_PER_REPLY, image_tokens, text_tokens
from maps_autogen.orchestration import (
    ASSUMED_TOKENS_PER_S,
    EMBEDDED_SECONDS_PER_CALL,
    Team,
    call_seconds,
    duration,
    embedded,
    one_at_a_time,
)
from maps_autogen.problem import EvalItem, Problem, image_size_from_field
from maps_autogen.settings import ResolvedModel, plan_chat

TYPICAL_SHARE = 0.25  # the lower bound's reply length, as a share of max_tokens
MEASURED = 20  # problems whose prompts are counted; the others are assumed alike


@dataclass(frozen=True)
class Call:
    """One model call of a pass through the team: who, on what model, with how many prompt
    tokens before the outputs it reads, and which steps' outputs it reads."""

    role: str
    model: ResolvedModel
    prompt_tokens: int
    reads: tuple[str, ...]


@dataclass(frozen=True)
class Shown:
    """What the estimate counts of a problem: its texts and the size each image is sent at."""

    texts: tuple[str, ...]
    sizes: tuple[tuple[int, int], ...]


def shown_of(problem: Problem) -> Shown:
    """A loaded problem's texts and image sizes."""
    texts = (problem.question, problem.context, *problem.options, problem.answer_format)
    return Shown(tuple(text for text in texts if text), tuple((image.width, image.height) for image in problem.images))


def _texts(value: Any) -> list[str]:
    """The strings in an EvalItem's `shown` (texts, lists of options, nested)."""
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, (list, tuple)):
        return [text for part in value for text in _texts(part)]
    if isinstance(value, dict):
        return [text for part in value.values() for text in _texts(part)]
    return []


def unread_shown(item: EvalItem, max_side: int) -> Shown | None:
    """An item's texts and image sizes without decoding an image: each size from its file's
    header (rows.image_size_from_field); None when the item records no texts or some header does
    not say (the problem is then loaded)."""
    if not item.shown:
        return None
    sizes = []
    for number, ref in enumerate(item.image_refs, start=1):
        try:
            size = image_size_from_field(ref, name=f"{item.pid}-{number}", base_dir=item.base_dir, max_side=max_side)
        except MapsError:
            return None
        if size is not None:
            sizes.append(size)
    return Shown(tuple(_texts(item.shown)), tuple(sizes))


def _problem_tokens(shown: Shown, *, with_images: bool) -> int:
    total = sum(text_tokens(list(shown.texts)))
    if with_images:
        total += sum(image_tokens(width, height) for width, height in shown.sizes)
    return total


def pass_calls(team: Team, problem: Problem | Shown, *, method: str, without: frozenset[str],
               baseline: BaselinePrompt | None = None) -> list[Call]:
    """The calls of one pass through the team for `problem` (one call for a baseline method)."""
    problem = shown_of(problem) if isinstance(problem, Problem) else problem
    config = team.loaded.team.config
    models = team.resolution.models
    overhead = TOKENS_PER_REPLY + 2 * TOKENS_PER_MESSAGE
    if method != "maps":
        final = config.final_step.name
        prompt = (baseline.system + baseline.instruction) if baseline is not None else ""
        tokens = overhead + sum(text_tokens([prompt])) + _problem_tokens(problem, with_images=models[final].vision)
        return [Call(final, models[final], tokens, ())]
    plan = plan_chat(config, has_images=bool(problem.sizes), without=without,
                     images_to_next=team.loaded.config.images.to_next_step)
    preamble = team.prompts.task.preamble
    calls = []
    for name in (*plan.steps, *([plan.reviewer] if plan.reviewer else [])):
        role = team.prompts.roles[name]
        step = config.step(name)
        reads = tuple(read for read in dict.fromkeys((*step.inputs, *(step.reviews or ()))) if read in plan.steps)
        tokens = (overhead + sum(text_tokens([team.prompts.system_message(name), role.instruction, preamble]))
                  + _problem_tokens(problem, with_images=name in plan.image_steps and models[name].vision))
        calls.append(Call(name, models[name], tokens, reads))
    return calls


def _spread(items: Sequence[EvalItem], count: int) -> list[EvalItem]:
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(index * step)] for index in range(count)]


def measured(items: Sequence[EvalItem], max_side: int, count: int = MEASURED) -> list[Shown]:
    """What up to `count` of the items, evenly spread, show the team: each image's size from its
    file's header where it says (nothing decoded), else the problem loaded. A broken problem
    fails on its own when it runs: it is not measured."""
    shown = []
    for item in _spread(items, count):
        problem = unread_shown(item, max_side)
        if problem is None:
            try:
                problem = shown_of(item.load_problem())
            except MapsError:
                continue
        shown.append(problem)
    return shown


@dataclass(frozen=True)
class Bounds:
    """What a run's problems are expected to take, per problem (the mean over those measured):
    low, one pass with every reply at TYPICAL_SHARE of its max_tokens; high, every reply at its
    max_tokens and the pass repeated for every allowed rollback."""

    calls: tuple[float, float]
    prompt_tokens: tuple[float, float]
    completion_tokens: tuple[float, float]
    seconds: tuple[float, float]  # of its calls one after another (orchestration.call_seconds)
    usd: tuple[float, float] | None  # None: some model has no price (`unpriced` names it)
    unpriced: str | None = None


def bounds(team: Team, items: Sequence[EvalItem], *, method: str, without: frozenset[str],
           baseline: BaselinePrompt | None = None, batch: bool = False) -> Bounds | str:
    """The per-problem bounds of `items` (measured on up to MEASURED of them; `batch`: the cost at
    the models' batch prices), or why there are none (a step without max_tokens has no bound on
    its replies)."""
    uncapped = sorted({role for role, model in team.resolution.models.items() if model.max_tokens is None})
    if uncapped:
        return f"no max_tokens for {', '.join(uncapped)}"
    unpriced = sorted({model.model for model in team.resolution.models.values()
                       if model.prices_of(model.model, batch=batch) is None
                       and model.kind != "local"})  # a model on this machine costs nothing
    critic = team.loaded.config.critic
    reviewer = team.loaded.team.config.reviewer
    totals = {name: [0.0, 0.0] for name in ("calls", "prompt", "completion", "seconds", "usd")}
    shown = measured(items, team.loaded.config.images.max_side)  # image sizes from the files' headers
    for problem in shown:
        calls = pass_calls(team, problem, method=method, without=without, baseline=baseline)
        caps = {call.role: call.model.max_tokens or 0 for call in calls}
        # Rollbacks only where a review runs (not for a baseline, nor with the reviewer left out).
        reviewed = reviewer is not None and any(call.role == reviewer.name for call in calls)
        passes = 1 + critic.max_rollbacks if reviewed else 1
        for call in calls:
            price = call.model.prices_of(call.model.model, batch=batch)
            for index, (share, repeat) in enumerate(((TYPICAL_SHARE, 1), (1.0, passes))):
                completion = int((call.model.max_tokens or 0) * share)
                prompt = call.prompt_tokens + sum(int(caps[read] * share) for read in call.reads)
                usd = 0.0
                if price is not None and call.model.kind != "local":
                    usd = (prompt * price.prompt_per_million + completion * price.completion_per_million) / 1e6
                for name, value in (("calls", 1), ("prompt", prompt), ("completion", completion),
                                    ("seconds", call_seconds(call.model, completion)), ("usd", usd)):
                    totals[name][index] += value * repeat
    count = len(shown) or 1

    def mean(name: str) -> tuple[float, float]:
        low, high = totals[name]
        return (low / count, high / count)

    return Bounds(calls=mean("calls"), prompt_tokens=mean("prompt"), completion_tokens=mean("completion"),
                  seconds=mean("seconds"), usd=None if unpriced else mean("usd"),
                  unpriced=", ".join(unpriced) or None)


def cost_range(team: Team, items: Sequence[EvalItem], *, method: str, without: frozenset[str],
               baseline: BaselinePrompt | None = None, batch: bool = False) -> tuple[float, float] | str:
    """(lower, upper) USD for `items` (`batch`: at the models' batch prices), or why the cost is unknown."""
    found = bounds(team, items, method=method, without=without, baseline=baseline, batch=batch)
    if isinstance(found, str):
        return found
    if found.usd is None:
        return f"no {'batch ' if batch else ''}price for {found.unpriced}"
    return (found.usd[0] * len(items), found.usd[1] * len(items))


def _in_flight(team: Team, problems: int, concurrency: int) -> int:
    """How many problems' calls run at once: one when a server answers one request at a time."""
    if any(one_at_a_time(model) for model in team.resolution.models.values()):
        return 1
    return max(1, min(concurrency, problems))


def _time_line(team: Team, found: Bounds, problems: int, concurrency: int) -> str:
    flight = _in_flight(team, problems, concurrency)
    low, high = (found.seconds[0] * problems / flight, found.seconds[1] * problems / flight)
    span = f"estimated time: {duration(low)} to {duration(high)}"
    if all(embedded(model) for model in team.resolution.models.values()):
        return (f"{span} (~{EMBEDDED_SECONDS_PER_CALL:g} s per call on 2 cores, measured; one call at a time: "
                "the embedded server answers one request at a time)")
    at_once = ("one call at a time (a local server answers one request at a time)" if flight == 1
               else f"{flight} problems in flight")
    return (f"{span} ({at_once}, replies at {ASSUMED_TOKENS_PER_S:g} tokens/s per request: an assumed speed, "
            "not measured; the progress bar shows the measured pace)")


def announcement(team: Team, items: Sequence[EvalItem], *, method: str, without: frozenset[str],
                 baseline: BaselinePrompt | None = None, concurrency: int = 1, batch: int | None = None) -> str:
    """The lines `maps eval` prints before its first model call: each step's model, the problems,
    and per problem the calls and tokens, then the cost and the time, each with how it is counted;
    `batch`: the problems in flight of a --batch run (its cost at batch prices, and the rounds it
    takes in place of a time)."""
    config = team.loaded.team.config
    if method == "maps":
        roles = [step.name for step in config.steps if step.enabled and step.name not in without]
    else:
        roles = [config.final_step.name]
    lines = [f"maps eval: {len(items)} problem(s), method {method}; {team.resolution.announcement}"]
    if team.context_note:
        lines.append(team.context_note)
    for role in roles:
        model = team.resolution.models[role]
        where = ", ".join(model.base_urls) or model.base_url or "the embedded local server"
        cap = "no cap" if model.max_tokens is None else str(model.max_tokens)
        lines.append(f"  {role}: {model.model} at {where} (endpoint {model.endpoint_name}, max_tokens {cap})")
    found = bounds(team, items, method=method, without=without, baseline=baseline, batch=batch is not None)
    if isinstance(found, str):
        lines.append(f"cost: unknown ({found}); time: unknown ({found})")
        return "\n".join(lines)
    reviewer = team.loaded.team.config.reviewer
    reviewed = method == "maps" and reviewer is not None and reviewer.name not in without
    rollbacks = team.loaded.config.critic.max_rollbacks if reviewed else 0
    how = (f"low: one pass, replies at {TYPICAL_SHARE:.0%} of max_tokens; high: replies at max_tokens and "
           f"{rollbacks} rollback(s) re-running every step")
    lines.append(
        f"per problem: {found.calls[0]:.0f} to {found.calls[1]:.0f} calls, {found.prompt_tokens[0]:,.0f} to "
        f"{found.prompt_tokens[1]:,.0f} prompt tokens and {found.completion_tokens[0]:,.0f} to "
        f"{found.completion_tokens[1]:,.0f} reply tokens ({how}; prompts counted on "
        f"{min(len(items), MEASURED)} of the problems)")
    if all(model.kind == "local" for model in team.resolution.models.values()):
        lines.append("cost: free (the model runs on this machine)")
    elif found.usd is None:
        lines.append(f"cost: unknown (no {'batch ' if batch is not None else ''}price for {found.unpriced})")
    else:
        low, high = (found.usd[0] * len(items), found.usd[1] * len(items))
        lines.append(f"estimated cost{' at batch prices' if batch is not None else ''}: ${low:.4f} to ${high:.4f} "
                     f"({how}; cached replies cost nothing)")
    if batch is None:
        lines.append(_time_line(team, found, len(items), concurrency))
    elif items:
        lines.append(batch_line(team, items, method=method, without=without, at_once=batch, passes=1 + rollbacks))
    return "\n".join(lines)


def batch_line(team: Team, items: Sequence[EvalItem], *, method: str, without: frozenset[str], at_once: int,
               passes: int) -> str:
    """What a --batch run will wait for: its rounds (each call of a chat waits for the round
    before), a round's requests, and how long a round takes."""
    # A pass's calls follow one another: the longest pass of the problems the estimate measures.
    shown = measured(items, team.loaded.config.images.max_side) or [Shown((), ((1, 1),))]
    calls = max(len(pass_calls(team, problem, method=method, without=without)) for problem in shown)
    fewest, most = expected_rounds(calls, passes if method == "maps" else 1, len(items), at_once)
    return (f"by batch: {at_once} problem(s) in flight, one call each per round; {fewest} to {most} rounds, each "
            "waiting for its batch (minutes to hours, at most the 24 h window; docs/batch.md)")


__all__ = ["Bounds", "Call", "Shown", "announcement", "batch_line", "bounds", "cost_range", "measured", "pass_calls",
           "shown_of"]
