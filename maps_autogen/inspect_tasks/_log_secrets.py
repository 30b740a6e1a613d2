"""Inspect's log, masked: Inspect records what its model returned (a reply, an error, the raw
call) before our solver sees it, so a service or a model that echoes a key (Inspect's own
provider key, a config's credential) would reach the log as it came. Once a task of ours ends,
its log is read back with Inspect's reader, every text in it passed through `redact` (the one
registry of secrets, every encoding), and written again in its format, beside it and then
renamed over it (a log on the local disk, through the one atomic writer's temporaries: a writer
killed mid-way leaves nothing Inspect lists; a remote one is written in place) when anything was
masked. What the solver hands Inspect to record is only what it needs (_solver.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from inspect_ai.hooks import Hooks, TaskEnd, hooks
from inspect_ai.log import EvalLog, read_eval_log_async, write_eval_log_async

from maps_autogen._util import path_written_beside, redact, register_well_known_keys

#: The task names of ours (`maps_autogen/mathvista`...): the logs this hook masks.
TASK_PREFIX = "maps_autogen/"


def masked_data(data: Any) -> tuple[Any, bool]:
    """`data` (a log dumped as JSON-like data) with every text redacted, walked iteratively (a
    log may be deeply nested); and whether anything changed."""
    changed = False
    root = [data]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        holder, key = stack.pop()
        value = holder[key]
        if isinstance(value, str):
            masked = redact(value)
            if masked != value:
                holder[key], changed = masked, True
        elif isinstance(value, dict):
            for name in list(value):
                masked_name = redact(name) if isinstance(name, str) else name
                if masked_name != name:
                    value[masked_name] = value.pop(name)
                    changed = True
                stack.append((value, masked_name))
        elif isinstance(value, list):
            stack.extend((value, index) for index in range(len(value)))
    return root[0], changed


async def mask_log(location: str) -> bool:
    """Rewrite the log at `location` with every text redacted; whether anything was masked."""
    log = await read_eval_log_async(location)
    data, changed = masked_data(log.model_dump(mode="json", exclude_none=False))
    if not changed:
        return False
    masked = EvalLog.model_validate(data)
    form: Literal["json", "eval"] = "json" if location.endswith(".json") else "eval"
    if "://" in location and not location.startswith("file://"):
        await write_eval_log_async(masked, location, format=form)
        return True
    path = Path(location.removeprefix("file://"))
    mode = path.stat().st_mode & 0o777
    with path_written_beside(path) as temp:  # (named so Inspect never lists it as a log)
        await write_eval_log_async(masked, str(temp), format=form)
        os.chmod(temp, mode)
    return True


@hooks(name="maps_secrets", description="Masks every registered secret in the logs of maps_autogen's tasks.")
class MaskSecrets(Hooks):
    """Masks secrets in the log of each task of ours once it ends."""

    async def on_task_end(self, data: TaskEnd) -> None:
        log = data.log
        if log.location and log.eval.task.startswith(TASK_PREFIX):
            register_well_known_keys()  # the provider's key variables, whatever the task read
            await mask_log(log.location)


__all__ = ["TASK_PREFIX", "MaskSecrets", "mask_log", "masked_data"]
