"""Reply budgets fitted to what each server says of its context, before the first call.

A server of one's own has a context window (llama.cpp: `--ctx-size` per slot; vLLM:
`--max-model-len`) that one request's prompt and reply share; a step's prompt holds the earlier
steps' replies, each up to its step's `max_tokens`. With budgets made for a hosted model
(3,072 to 8,192 tokens) a 4,096-token slot fails, minutes into a run, on the first request that
outgrows it. So before the first call, for every step on a server that says its context
(model/_context.py), the longest request the step can make is bounded:

    its prompt (counted as the estimate counts it, eval/_estimate.py, times PROMPT_MARGIN for the
    server's own tokenizer and chat template, on the problems it is given: an eval's up to FITTED,
    evenly spread, eval/_runner.py) + every earlier reply it
    reads at its step's budget + on a revision its own previous reply and the reviewer's reply +
    its own reply at its budget.

When every such request fits, nothing changes. Otherwise the budgets are capped at the largest
N (one cap: budgets under it are kept) with which every request fits, announced and recorded
(what is sent is what the run records). The run is refused before its first call, naming the
fix, when the cap would leave a reply fewer than MIN_REPLY tokens, or when the budgets were set
for every step (`--max-tokens`, `every_step.max_tokens`) and do not fit: a setting the user
chose is never changed behind their back.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from maps_autogen._util import UsageError
from maps_autogen.eval._baselines import BaselinePrompt
from maps_autogen.eval._estimate import Shown, pass_calls
from maps_autogen.model import FITTED_KEY, ResponseCache, ServerContext
from maps_autogen.orchestration import Team, assemble_team
from maps_autogen.settings import LoadedConfig, Resolution, ResolvedModel

#: Our count of a step's prompt (GPT-4o's vocabulary, eval/_estimate.py) against what the server
#: counts: the request's headings and labels add 5-10% to it, and a small model's vocabulary splits
#: the same text into more tokens (SmolLM2's: 5% more on our prompts, read from llama.cpp's
#: /tokenize). Counted generously, with the chat template's own tokens on top.
PROMPT_MARGIN = 1.25
PROMPT_OVERHEAD = 64  # the chat template's own tokens, per request
MIN_REPLY = 256  # a reply budget under this cannot hold a step's work (the Solver's four phases)


@dataclass(frozen=True)
class Request:
    """The longest request one step can make: its prompt, whose replies it reads, and the server's context."""

    role: str
    prompt: int  # tokens, counted generously
    reads: tuple[str, ...]  # roles whose replies it holds (a revision: its own and the reviewer's too)
    context: ServerContext


@dataclass(frozen=True)
class ContextFit:
    """What the servers' contexts mean for a run: the resolution to run with (None: as it was)
    and the line that says so (None: no server said its context)."""

    resolution: Resolution | None
    note: str | None


def longest_requests(team: Team, problems: Sequence[Shown], contexts: dict[str, ServerContext], *,
                     method: str, without: frozenset[str], baseline: BaselinePrompt | None) -> list[Request]:
    """The longest request of every step on a server that said its context, over `problems`."""
    longest: dict[str, Request] = {}
    config = team.loaded.team.config
    reviewer = config.reviewer.name if config.reviewer is not None else None
    revised = set(config.reviewer.reviews or ()) if config.reviewer is not None else set()
    rollbacks = team.loaded.config.critic.max_rollbacks if method == "maps" else 0
    for problem in problems:
        for call in pass_calls(team, problem, method=method, without=without, baseline=baseline):
            context = contexts.get(call.role)
            if context is None:
                continue
            reads = call.reads
            if rollbacks and call.role in revised and reviewer is not None:
                reads = (*reads, call.role, reviewer)  # sent back: its previous reply and the review
            prompt = math.ceil(call.prompt_tokens * PROMPT_MARGIN) + PROMPT_OVERHEAD
            known = longest.get(call.role)
            if known is None or prompt > known.prompt:
                longest[call.role] = Request(call.role, prompt, reads, context)
    return list(longest.values())


def _fits(requests: Sequence[Request], budgets: dict[str, int | None], cap: int) -> bool:
    def budget(role: str) -> int:
        own = budgets.get(role)
        return cap if own is None else min(own, cap)

    return all(r.prompt + sum(budget(read) for read in r.reads) + budget(r.role) <= r.context.tokens
               for r in requests)


def largest_cap(requests: Sequence[Request], budgets: dict[str, int | None]) -> int:
    """The largest N such that every request fits when each budget is capped at N (0: none does)."""
    high = max((r.context.tokens for r in requests), default=0)
    low = 0
    while low < high:  # the fit only loosens as N shrinks: a binary search
        middle = (low + high + 1) // 2
        if _fits(requests, budgets, middle):
            low = middle
        else:
            high = middle - 1
    return low


def _where(model: ResolvedModel) -> str:
    return model.shown_base_url or "the embedded local server"


def fit_budgets(team: Team, problems: Sequence[Shown], contexts: dict[str, ServerContext], *, method: str,
                without: frozenset[str], baseline: BaselinePrompt | None = None) -> ContextFit:
    """The budgets every request of the run fits in (see the module's docstring), or a UsageError
    naming the fix before any call."""
    if not contexts:
        return ContextFit(None, None)
    requests = longest_requests(team, problems, contexts, method=method, without=without, baseline=baseline)
    if not requests:
        return ContextFit(None, None)
    models = team.resolution.models
    budgets = {role: model.max_tokens for role, model in models.items()}
    cap = largest_cap(requests, budgets)
    involved = sorted({role for r in requests for role in (r.role, *r.reads)}, key=list(models).index)
    said = "; ".join(sorted({f"{_where(models[r.role])} serves {models[r.role].model} with {r.context.describe()}"
                             for r in requests}))
    told = {role: replace(model, context_tokens=contexts[role].tokens, context_raise=contexts[role].how_to_raise)
            if role in contexts else model for role, model in models.items()}
    if all((budget := budgets[role]) is not None and budget <= cap for role in involved):
        return ContextFit(Resolution(models=told, announcement=team.resolution.announcement),
                          f"{said}: every request fits at the steps' own max_tokens")
    # The request with the least room per reply it holds: the one the cap is made for.
    worst = min(requests, key=lambda r: (r.context.tokens - r.prompt) / (len(r.reads) + 1))
    holding = f"~{worst.prompt:,} prompt tokens, counted generously, and {len(worst.reads)} earlier " \
              f"repl{'y' if len(worst.reads) == 1 else 'ies'}"
    how = worst.context.how_to_raise
    if cap < MIN_REPLY:
        raise UsageError(
            f"{said}: the {worst.role}'s longest request ({holding}) leaves "
            f"{'no room' if cap == 0 else f'at most {cap} tokens'} for each reply",
            fix=f"{how}; or leave steps out (--without STEP)")
    every_step = team.loaded.config.every_step.max_tokens
    if every_step is not None:  # the user's own budget for every step: never changed behind their back
        raise UsageError(
            f"{said}: max_tokens {every_step} for every step does not fit the {worst.role}'s longest request "
            f"({holding})",
            fix=f"pass --max-tokens {cap} (the most that fits), or {how}")
    fitted = dict(told)
    changed = []
    for role in involved:
        model = told[role]
        if model.max_tokens is None or model.max_tokens > cap:
            fitted[role] = replace(model, max_tokens=cap, max_tokens_key=FITTED_KEY)
            changed.append(f"{role} {model.max_tokens if model.max_tokens is not None else 'uncapped'}")
    note = (f"{said}: max_tokens capped at {cap} so that every request fits (the tightest, the {worst.role}'s, "
            f"holds {holding}; was: {', '.join(changed)}); --max-tokens N chooses another cap, or {how}")
    return ContextFit(Resolution(models=fitted, announcement=team.resolution.announcement), note)


def fit_team(team: Team, loaded: LoadedConfig, problems: Sequence[Shown] | Callable[[], Sequence[Shown]], *,
             method: str, without: frozenset[str], baseline: BaselinePrompt | None = None,
             cache: ResponseCache | None = None, max_connections: int = 64) -> Team:
    """`team` with reply budgets every request fits in (`fit_budgets`) on `problems` (or what a
    callable gives, asked only when a server says its context), its backends opened again, and
    the line that says so as its `context_note`; `team` itself when no server says its context.
    A UsageError before any call when they cannot fit."""
    contexts = server_contexts(team, list(team.resolution.models))
    if not contexts:
        return team
    shown = problems() if callable(problems) else problems
    fit = fit_budgets(team, shown, contexts, method=method, without=without, baseline=baseline)
    if fit.resolution is None:
        return team
    fitted = assemble_team(loaded, resolution=fit.resolution, cache=cache, max_connections=max_connections)
    fitted.context_note = fit.note
    return fitted


def server_contexts(team: Team, roles: Sequence[str]) -> dict[str, ServerContext]:
    """What each role's server says of its context (roles whose server says nothing are left
    out), each server and model asked once."""
    asked: dict[tuple[str | None, str], ServerContext | None] = {}
    found: dict[str, ServerContext] = {}
    for role in roles:
        backend = team.backends.get(role)
        server_context = getattr(backend, "server_context", None)
        if backend is None or not callable(server_context):
            continue
        key = (getattr(backend, "base_url", None), backend.model.model)
        if key not in asked:
            answer = server_context()
            asked[key] = answer if isinstance(answer, ServerContext) else None
        context = asked[key]
        if context is not None:
            found[role] = context
    return found


__all__ = ["ContextFit", "MIN_REPLY", "Request", "fit_budgets", "fit_team", "largest_cap", "longest_requests",
           "server_contexts"]
