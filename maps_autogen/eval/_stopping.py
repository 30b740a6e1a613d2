"""When an eval stops early: what a problem cost (and whether --max-cost can still be kept),
and the service failures that every further problem would meet too."""

from __future__ import annotations

from dataclasses import dataclass

from maps_autogen._util import FatalServiceError, MapsError, ServiceError, UsageError
from maps_autogen.model import refuses_the_content
from maps_autogen.orchestration import Team
from maps_autogen.records import ResultRow, Usage
from maps_autogen.settings import Resolution


@dataclass
class Stop:
    """Why the run stopped submitting problems."""

    for_cost: bool = False
    fatal: FatalServiceError | None = None
    interrupted: bool = False  # Ctrl-C or SIGTERM
    terminated: bool = False  # SIGTERM (to this process, or to one of its worker processes)
    workers_replaced: int = 0  # worker processes that died and were replaced


def check_prices(resolution: Resolution, *, batch: bool = False) -> None:
    """--max-cost can only be enforced when every paid model's price is known (with --batch, its
    batch prices). This checks the requested names before anything runs; a reply from a model
    served under a name without a price stops the run (`unknown_cost_stop`)."""
    unpriced = sorted({m.model for m in resolution.models.values()
                       if m.prices_of(m.model, batch=batch) is None and m.kind != "local"})
    if unpriced:
        what = "batch price" if batch else "price"
        where = "prices: (its batch: prices)" if batch else "prices:"
        raise UsageError(
            f"--max-cost needs the {what} of {', '.join(unpriced)}", fix=f"add it under {where} in agents.yaml"
        )


def costs(row: ResultRow, team: Team) -> tuple[float, bool, list[str]]:
    """A problem's known USD, whether any of its cost is unknown, and the paid (not local)
    roles whose cost is unknown: their served model has no price."""
    spent = (row.usage or Usage()).spent()
    if spent is not None:  # no call made (nothing spent), or every call priced
        return spent, False, []
    models = team.resolution.models
    answering = models[team.loaded.team.config.final_step.name]  # a baseline's role is its method
    unpriced = sorted(
        role
        for role, spent in row.usage_by_role.items()
        if spent.cost is None and models.get(role, answering).kind != "local"
    )
    return sum(spent.cost or 0.0 for spent in row.usage_by_role.values()), True, unpriced


def unknown_cost_stop(row: ResultRow, roles: list[str]) -> FatalServiceError:
    """Why a --max-cost run stops at a problem whose cost is unknown: the served model has no
    price, so the bound could no longer be kept (the run never goes on unbounded)."""
    sent = row.models  # step -> the settings its request body carried, and the model that answered
    names = {sent[role].served_model or sent[role].model for role in roles if role in sent}
    served = sorted(str(name) for name in names if name is not None)
    which = f" (served as {', '.join(served)})" if served else ""
    return FatalServiceError(f"--max-cost cannot be kept: the cost of problem {row.pid} is unknown{which}",
                             fix="add the served model's name under prices: in agents.yaml")


def same_failure(previous: ServiceError | None, failure: MapsError | None) -> FatalServiceError | None:
    """The error that stops an eval when two problems in a row (in the order they finish) failed
    with the same service answer: a gateway's unknown alias or refused key, a dead backend, a
    deadline no request can meet. Errors about one problem differ from problem to problem, and a
    refusal of a problem's content (a content filter, a safety system) never stops the run, however
    alike two of them read."""
    if (
        previous is None
        or not isinstance(failure, ServiceError)
        or failure.cause is None
        or failure.cause != previous.cause
        or refuses_the_content(failure.cause)
    ):
        return None
    return FatalServiceError(
        f"two problems in a row failed with the same error: {failure.problem}", fix=failure.fix, cause=failure.cause
    )


__all__ = ["Stop", "check_prices", "costs", "same_failure", "unknown_cost_stop"]
