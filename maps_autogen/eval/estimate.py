"""What `maps eval` will call and bill, said before its first model call.

The announcement names, per step, the model and the endpoint it is sent to, the number of
problems, and a cost range from our own token accounting (tokens.py) and the price table:

- prompt tokens: per call, the step's prompt (system message, instruction, the task preamble),
  the problem's text and images (images only for a step that sees them) and the outputs of the
  steps it reads; counted on the actual problems (up to `MEASURED` of them, evenly spread, the
  rest assumed alike), each image's size read from its file's header (nothing decoded; an image
  whose header does not say, a URL, is read);
- lower bound: one pass through the team, every reply `TYPICAL_SHARE` of its step's max_tokens;
- upper bound: every reply at its max_tokens, and the pass repeated for every allowed rollback
  (plus the last review), as if every rollback re-ran the whole team.

A cached reply costs nothing, so a run with a warm cache bills less than the lower bound.
When a model has no price (or a step has no max_tokens), the cost is unknown and the line says
which model lacks one; never a guessed price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maps_autogen._util import MapsError
from maps_autogen.eval.baselines import BaselinePrompt
from maps_autogen.eval.batching import expected_rounds
from maps_autogen.model import TOKENS_PER_MESSAGE, TOKENS_PER_REPLY, image_tokens, text_tokens
from maps_autogen.orchestration import Team
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
        tokens = overhead + sum(text_tokens([prompt])) + _problem_tokens(problem, with_images=True)
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
                  + _problem_tokens(problem, with_images=name in plan.image_steps))
        calls.append(Call(name, models[name], tokens, reads))
    return calls


def _measured(items: Sequence[EvalItem]) -> list[EvalItem]:
    if len(items) <= MEASURED:
        return list(items)
    step = len(items) / MEASURED
    return [items[int(index * step)] for index in range(MEASURED)]


def cost_range(team: Team, items: Sequence[EvalItem], *, method: str, without: frozenset[str],
               baseline: BaselinePrompt | None = None, batch: bool = False) -> tuple[float, float] | str:
    """(lower, upper) USD for `items` (`batch`: at the models' batch prices), or why the cost is unknown."""
    unpriced = sorted({model.model for model in team.resolution.models.values()
                       if model.prices_of(model.model, batch=batch) is None})
    if unpriced:
        return f"no {'batch ' if batch else ''}price for {', '.join(unpriced)}"
    uncapped = sorted({role for role, model in team.resolution.models.items() if model.max_tokens is None})
    if uncapped:
        return f"no max_tokens for {', '.join(uncapped)}"
    critic = team.loaded.config.critic
    passes = 1 if method != "maps" else 1 + critic.max_rollbacks
    measured = 0
    low = high = 0.0
    max_side = team.loaded.config.images.max_side
    for item in _measured(items):
        problem = unread_shown(item, max_side)  # image sizes from the files' headers, nothing decoded
        if problem is None:
            try:
                problem = shown_of(item.load_problem())
            except MapsError:  # a broken problem fails on its own when it runs; it is not measured
                continue
        measured += 1
        calls = pass_calls(team, problem, method=method, without=without, baseline=baseline)
        caps = {call.role: call.model.max_tokens or 0 for call in calls}
        for call in calls:
            price = call.model.prices_of(call.model.model, batch=batch)
            assert price is not None and call.model.max_tokens is not None  # checked above
            for share, bound in ((TYPICAL_SHARE, "low"), (1.0, "high")):
                completion = int(call.model.max_tokens * share)
                prompt = call.prompt_tokens + sum(int(caps[read] * share) for read in call.reads)
                usd = (prompt * price.prompt_per_million + completion * price.completion_per_million) / 1e6
                if bound == "low":
                    low += usd
                else:
                    high += usd * passes
    scale = len(items) / measured if measured else 0.0
    return (low * scale, high * scale)


def announcement(team: Team, items: Sequence[EvalItem], *, method: str, without: frozenset[str],
                 baseline: BaselinePrompt | None = None, batch: int | None = None) -> str:
    """The lines `maps eval` prints before its first model call; `batch`: the problems in flight
    of a --batch run (its cost at batch prices, and the rounds it takes)."""
    config = team.loaded.team.config
    if method == "maps":
        roles = [step.name for step in config.steps if step.enabled and step.name not in without]
    else:
        roles = [config.final_step.name]
    lines = [f"maps eval: {len(items)} problem(s), method {method}; {team.resolution.announcement}"]
    for role in roles:
        model = team.resolution.models[role]
        where = ", ".join(model.base_urls) or model.base_url or "the embedded local server"
        cap = "no cap" if model.max_tokens is None else str(model.max_tokens)
        lines.append(f"  {role}: {model.model} at {where} (endpoint {model.endpoint_name}, max_tokens {cap})")
    estimate = cost_range(team, items, method=method, without=without, baseline=baseline, batch=batch is not None)
    rollbacks = team.loaded.config.critic.max_rollbacks if method == "maps" else 0
    if isinstance(estimate, str):
        lines.append(f"cost: unknown ({estimate})")
    else:
        lines.append(
            f"estimated cost{' at batch prices' if batch is not None else ''}: ${estimate[0]:.4f} to "
            f"${estimate[1]:.4f} (low: one pass, replies at {TYPICAL_SHARE:.0%} of max_tokens; high: replies at "
            f"max_tokens and {rollbacks} rollback(s) re-running every step; cached replies cost nothing)"
        )
    if batch is not None and items:
        lines.append(batch_line(team, items, method=method, without=without, at_once=batch, passes=1 + rollbacks))
    return "\n".join(lines)


def batch_line(team: Team, items: Sequence[EvalItem], *, method: str, without: frozenset[str], at_once: int,
               passes: int) -> str:
    """What a --batch run will wait for: its rounds (each call of a chat waits for the round
    before), a round's requests, and how long a round takes."""
    max_side = team.loaded.config.images.max_side
    # A pass's calls follow one another: the longest pass of the problems the estimate measures.
    calls = max(len(pass_calls(team, unread_shown(item, max_side) or Shown((), ((1, 1),)), method=method,
                               without=without)) for item in _measured(items))
    fewest, most = expected_rounds(calls, passes if method == "maps" else 1, len(items), at_once)
    return (f"by batch: {at_once} problem(s) in flight, one call each per round; {fewest} to {most} rounds, each "
            "waiting for its batch (minutes to hours, at most the 24 h window; docs/batch.md)")


__all__ = ["Call", "announcement", "cost_range", "pass_calls"]
