"""What a resumed eval compares with its manifest: every setting that changes what is sent (or
how a verdict is reached), derived from the settings models' own fields, so that a setting added
to one of them is compared without anyone having to remember it.

Each field of an endpoint (`OpenAIEndpoint`, `LocalEndpoint`), of a section of agents.yaml
(`critic`, `stop`, `images`, `limits`, the team's own) and each top-level section is one of:

- recorded where the verdict settings already show its effect (`*_RECORDED_AS`: the field and
  where: a request's settings as sent, the step's kind, JSON mode, layout...);
- left out, because it changes nothing a request carries nor any verdict (`*_NOT_COMPARED`:
  the field and why: how long a reply is waited for, how a reply travels, what a call cost);
- or, every other field: compared as it is written, when it is not at its default
  (`unrecorded_fields`), under its part of the verdict settings (`models.<step>.endpoint`,
  `review`, `images`, `limits`, `team`, or `config.<section>` for a section no part names).

A new field therefore joins the comparison by itself; one that changes nothing sent is added to
a `*_NOT_COMPARED` list with its reason (tests/eval/test_resume_every_setting.py checks that every
list names real fields and that a change of every compared field is seen). A value at its
default is not recorded, so a setting added in a later version leaves a manifest that never
recorded it matching a run that leaves it at its default (records/_schema.py: no schema version
bump for such a setting).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel

#: Endpoint fields whose effect the verdict settings record elsewhere (under models.<step>).
ENDPOINT_RECORDED_AS: dict[str, str] = {
    "kind": "kind",
    "base_url": "base_url",
    "default_model": "model, as sent",
    "json_mode": "json_mode, and response_format as sent",
    "vision": "vision",
    "prompt_layout": "prompt_layout",
    "api_type": "url and headers, as sent",
    "headers": "headers, as sent",
    "query": "query, as sent",
    "extra_body": "its fields, as sent",
    "max_tokens_field": "max_completion_tokens, as sent",
    "reasoning_effort": "reasoning_effort, as sent",
    "temperature": "temperature, as sent",
    "max_tokens": "max_tokens, as sent",
    "repeat_penalty": "repeat_penalty, as sent",
    "model_path": "local.model_path",
    "mmproj_path": "local.mmproj_path",
    "n_ctx": "local.n_ctx",
    "chat_template": "local.chat_template",
    "max_rollbacks": "review.max_rollbacks (the team setting the embedded model brings)",
    "final_review": "review.final_review (the team setting the embedded model brings)",
}

#: Endpoint fields that change nothing a request carries, nor a verdict.
ENDPOINT_NOT_COMPARED: dict[str, str] = {
    "api_key_env": "where the key is read from (a credential: never recorded, it changes no reply)",
    "timeout_s": "how long a reply is waited for",
    "stream_idle_s": "how long a streamed reply is waited for",
    "stream_total_s": "how long a streamed reply is waited for",
    "stream": "how a reply travels",
    "max_connections": "how many requests are open at once",
    "requests_per_s": "how fast requests go out",
    "models": "which model names `endpoint: auto` routes here (the model sent is recorded)",
    "n_threads": "how fast the embedded model computes",
}

#: agents.yaml's sections and the part of the verdict settings that compares each.
SECTION_PARTS: dict[str, str] = {
    "config_list": "models (its entries are endpoints)",
    "endpoints": "models",
    "model": "models",
    "every_step": "models (as sent)",
    "team": "team",
    "task_prompt": "prompts (by content)",
    "manager_prompt": "prompts (by content)",
    "user_proxy_prompt": "prompts (by content)",
    "answer_formats": "prompts (by content)",
    "baseline_prompts": "prompts (by content)",
    "critic": "review",
    "stop": "review",
    "images": "images",
    "limits": "limits",
}

#: agents.yaml's sections that change nothing sent nor any verdict of `maps eval`.
SECTION_NOT_COMPARED: dict[str, str] = {
    "schema_version": "the file's format",
    "prices": "what a call cost, never what is sent",
    "human": "maps eval never asks a person",
}

#: Fields of compared sections that change nothing sent nor any verdict, by section.
FIELD_NOT_COMPARED: dict[str, dict[str, str]] = {
    "limits": {
        "image_file_bytes": "a bound on input: a problem over it fails (and --resume runs it again)",
        "image_pixels": "a bound on input: a problem over it fails (and --resume runs it again)",
        "problem_file_bytes": "maps solve's problem files only",
    },
}


def unrecorded_fields(settings: BaseModel, recorded: Collection[str] = (),
                      excluded: Mapping[str, str] | Collection[str] = ()) -> dict[str, Any]:
    """The fields of `settings` compared as written: every field of its model but those
    `recorded` elsewhere and those `excluded`, when not at its default (as JSON)."""
    fields = type(settings).model_fields
    chosen = {name for name, info in fields.items()
              if name not in recorded and name not in excluded and getattr(settings, name) != info.get_default(
                  call_default_factory=True)}
    return settings.model_dump(mode="json", include=chosen) if chosen else {}


def endpoint_compared(endpoint: BaseModel) -> dict[str, Any]:
    """An endpoint's settings compared as written (`unrecorded_fields`: every field but those
    ENDPOINT_RECORDED_AS and ENDPOINT_NOT_COMPARED name), such as max_images and max_retries."""
    return unrecorded_fields(endpoint, ENDPOINT_RECORDED_AS, ENDPOINT_NOT_COMPARED)


def sections_compared(config: BaseModel) -> dict[str, Any]:
    """The sections of agents.yaml no part of the verdict settings names (neither SECTION_PARTS
    nor SECTION_NOT_COMPARED): each compared whole, as written, when not at its default."""
    return unrecorded_fields(config, SECTION_PARTS, SECTION_NOT_COMPARED)


__all__ = ["ENDPOINT_NOT_COMPARED", "ENDPOINT_RECORDED_AS", "FIELD_NOT_COMPARED", "SECTION_NOT_COMPARED",
           "SECTION_PARTS", "endpoint_compared", "sections_compared", "unrecorded_fields"]
