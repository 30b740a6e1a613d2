"""The embedded offline model as Inspect's model: `--model maps/local`, no key and no network.

`inspect eval maps_autogen/custom ... --model maps/local` runs on the server `maps solve` starts
without a key: llama.cpp's server (xllamacpp) on 127.0.0.1 serving `endpoints.local` of the
agents.yaml maps finds (./agents.yaml, else the built-in one: the embedded SmolLM2-135M-Instruct; `-M agents=FILE`
names another), started once per process and stopped with it. Inspect talks to it through its own
OpenAI-compatible provider (what Inspect's own llama-cpp-python and vLLM providers build on), so
its retries, limits, cache and log apply as for any model.

Registered with Inspect as the provider `maps` when Inspect loads the package's entry point
(tasks.py imports this module). The steps' settings on it are the local endpoint's, as in `maps
solve` (_solver.py's `step_models`): each reply capped at its `max_tokens`, a note in place of
each image on a text-only model, its review loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai._util.error import PrerequisiteError
from inspect_ai.model import GenerateConfig, ModelAPI, get_model, modelapi
from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI

from maps_autogen._util import ConfigError
from maps_autogen.settings import EMBEDDED_MODEL_LABEL, LocalEndpoint, load_config

#: The provider's name: `--model maps/local`.
PROVIDER = "maps"
#: The one model it serves: the agents.yaml's `endpoints.local`.
LOCAL = "local"
_DEFAULT_CONFIG = GenerateConfig()  # Inspect passes its own


def local_endpoint(agents: str | None) -> tuple[LocalEndpoint, Path]:
    """The `local` endpoint of the agents.yaml maps finds (or `agents`), and its folder."""
    loaded = load_config(Path(agents) if agents else None)
    endpoint = loaded.config.endpoints.get(LOCAL)
    if not isinstance(endpoint, LocalEndpoint):
        raise ConfigError(f"{loaded.path} declares no local endpoint (endpoints.{LOCAL} of kind local)",
                          fix=f"declare endpoints.{LOCAL} with kind: local, or drop -M agents=")
    return endpoint, loaded.base_dir


class EmbeddedModelAPI(OpenAICompatibleAPI):
    """`maps/local`: Inspect's OpenAI-compatible provider pointed at maps' own local server."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = _DEFAULT_CONFIG, **model_args: Any) -> None:
        if model_name != LOCAL:
            raise ConfigError(f"Inspect's provider {PROVIDER} serves one model, {PROVIDER}/{LOCAL}, not "
                              f"{PROVIDER}/{model_name}", fix=f"pass --model {PROVIDER}/{LOCAL}")
        from maps_autogen.model.local import settings_from_endpoint, shared_local_server

        endpoint, folder = local_endpoint(model_args.pop("agents", None))
        name = Path(endpoint.model_path).name if endpoint.model_path else EMBEDDED_MODEL_LABEL
        server = shared_local_server(settings_from_endpoint(endpoint, base_dir=folder, model_name=name))
        super().__init__(model_name=model_name, base_url=server.base_url, api_key=server.api_key, config=config,
                         service=PROVIDER, **model_args)


@modelapi(name=PROVIDER)
def maps_provider() -> type[ModelAPI]:
    """maps' own provider for Inspect: `--model maps/local`, the embedded offline model."""
    return EmbeddedModelAPI


#: What Inspect names its stand-in when no model is given (no --model, no INSPECT_EVAL_MODEL).
NO_MODEL = "none/none"


def check_model_given(task: str) -> None:
    """`inspect eval maps_autogen/<task>` without a model: one line naming the fix (Inspect prints a
    PrerequisiteError's message alone), before any sample runs into Inspect's traceback. Outside an
    eval (a task made directly) there is no model to check."""
    try:
        model = str(get_model())
    except ValueError:  # no eval running: nothing to check
        return
    if model == NO_MODEL:
        raise PrerequisiteError(
            f"error: {task} needs a model: pass --model {PROVIDER}/{LOCAL} (the embedded offline model, no key), "
            "or a service's, e.g. --model openai/gpt-4o (docs/inspect.md)")


def runs_on_local(model_name: str) -> bool:
    """Whether Inspect's model (its `provider/name`) is maps' local model."""
    return model_name == f"{PROVIDER}/{LOCAL}"


__all__ = ["LOCAL", "PROVIDER", "EmbeddedModelAPI", "check_model_given", "local_endpoint", "maps_provider",
           "runs_on_local"]
