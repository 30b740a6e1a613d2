"""How long model calls take, said before the first call.

The embedded model's time per call is measured; for every other service the reply tokens are
counted at an assumed speed, said as one (nothing is measured before the first reply: the live
view and the eval's progress bar measure it from then on)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen.orchestration._flow import calls_left
from maps_autogen.records import FlowRecord
from maps_autogen.settings import EMBEDDED_MODEL_LABEL, ResolvedModel, plan_chat

if TYPE_CHECKING:
    from maps_autogen.orchestration._solving import Team

#: One call to the embedded model at its default reply cap (384 tokens), prompt included: ~13 s
#: on 2 cores shared with other work (measured with `make demo`, 9 calls in 120 s); less when idle.
EMBEDDED_SECONDS_PER_CALL = 12.0
#: A service's speed before anything is measured: reply tokens per second per request. An
#: assumption, said as one wherever it is used: hosted APIs write about 50-100 tokens a second
#: (gpt-4o), a 7B model on a CPU 5-20.
ASSUMED_TOKENS_PER_S = 50.0


def embedded(model: ResolvedModel) -> bool:
    """Whether `model` is the embedded offline model (its speed is measured, not assumed)."""
    return model.model == EMBEDDED_MODEL_LABEL


def one_at_a_time(model: ResolvedModel) -> bool:
    """Whether the model's server answers one request at a time (maps' own local server has one
    slot): problems in flight then wait for each other, and the time does not shrink with them."""
    return model.kind == "local"


def call_seconds(model: ResolvedModel, reply_tokens: int) -> float:
    """How long one call of `reply_tokens` reply tokens is expected to take: the embedded model's
    measured time per call, else the reply at ASSUMED_TOKENS_PER_S."""
    return EMBEDDED_SECONDS_PER_CALL if embedded(model) else reply_tokens / ASSUMED_TOKENS_PER_S


def duration(seconds: float) -> str:
    """A time as people say it: "40 s", "12.5 min", "3.2 h"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def expected_time(team: Team, *, has_images: bool = True, without: frozenset[str] = frozenset()) -> str:
    """The line `maps solve` prints before its first call: the calls the chat can make on its
    problem (the steps that run: `has_images`, `without`; the live view's count, flow.calls_left)
    and how long they take, on the embedded model from its measured speed, on any other from the
    reply budgets at an assumed speed (said so)."""
    models = team.resolution.models
    config = team.loaded.team.config
    plan = plan_chat(config, has_images=has_images, without=without,
                     images_to_next=team.loaded.config.images.to_next_step)
    reviewer = plan.reviewer
    critic = team.loaded.config.critic
    # Every rollback used, each re-running every working step and reviewed again, the last one
    # only with the final review.
    steps = [name for name in plan.steps if name in models]
    flow = FlowRecord(steps=steps, critic=reviewer is not None, reviewer=reviewer, max_rollbacks=critic.max_rollbacks,
                      final_review=critic.final_review)
    least, most = calls_left(flow)
    if models and all(embedded(model) for model in models.values()):
        low, high = (round(calls * EMBEDDED_SECONDS_PER_CALL / 60, 1) for calls in (least, most))
        return (f"this takes about {low:g}-{high:g} minutes: {least} to {most} calls to the embedded model, "
                f"~{EMBEDDED_SECONDS_PER_CALL:g} s each on 2 cores")
    running = [name for name in (*steps, *([reviewer] if reviewer else [])) if name in models]
    caps = [models[name].max_tokens for name in running]
    if any(cap is None for cap in caps):
        return (f"this takes {least} to {most} calls; a step without max_tokens has no bound on its reply, so the "
                "time is estimated from the first reply on")
    one_pass = sum(cap or 0 for cap in caps)
    longest = one_pass * (1 + critic.max_rollbacks if reviewer else 1)
    return (f"this takes {least} to {most} calls with replies of up to {max(c or 0 for c in caps):,} tokens "
            f"({longest:,} reply tokens at most): up to {duration(longest / ASSUMED_TOKENS_PER_S)} at "
            f"{ASSUMED_TOKENS_PER_S:g} tokens/s (an assumed speed, not measured: the estimate follows the "
            "measured speed from the first reply on)")


__all__ = ["ASSUMED_TOKENS_PER_S", "EMBEDDED_SECONDS_PER_CALL", "call_seconds", "duration", "embedded", "expected_time",
           "one_at_a_time"]
