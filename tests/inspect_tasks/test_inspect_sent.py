"""What an Inspect step's request records as sent: the settings Inspect merges for it, the
eval's own (`inspect eval --max-tokens`, `--temperature`) included where the step sets none."""

from __future__ import annotations

import contextvars
import os

import pytest

if os.environ.get("CI") != "true":  # CI installs the inspect extra (scripts/setup.sh): missing is a failure
    pytest.importorskip("inspect_ai")

from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.model._model import init_active_model

from maps_autogen.inspect_tasks._backend import sent_settings


def test_the_eval_s_settings_are_recorded_where_the_step_sets_none() -> None:
    model = get_model("mockllm/model")

    def sent() -> dict[str, object]:
        init_active_model(model, GenerateConfig(max_tokens=77, temperature=0.9))  # `inspect eval --max-tokens 77 ...`
        return sent_settings(model, GenerateConfig(temperature=0.2)).model_dump(exclude_unset=True)  # the step sets a temperature only

    assert contextvars.copy_context().run(sent) == {"model": "mockllm/model", "temperature": 0.2, "max_tokens": 77}
