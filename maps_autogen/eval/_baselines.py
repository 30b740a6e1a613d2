"""The single-call baselines of the paper's Table 1: `direct` and `cot`, with the same model as
the Solver. Each writes a run folder in the same format as a MAPS chat."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen._util import ConfigError, MapsError, redact
from maps_autogen.eval._options import BASELINES
from maps_autogen.model import Completion
from maps_autogen.orchestration import (
    RunWriter,
    Team,
    format_options,
    interleave_images,
    request_for_transcript,
    utc_now,
    withheld_image_notes,
)
from maps_autogen.problem import Problem
from maps_autogen.records import (
    USER_PROXY_ROLE,
    ErrorEvent,
    ImagesWithheldEvent,
    MessageRecord,
    ModelRecord,
    RoleUsage,
    RunRecord,
    Usage,
)
from maps_autogen.settings import PromptSet, read_yaml

METHODS = BASELINES  # the methods this module runs


@dataclass(frozen=True)
class BaselinePrompt:
    system: str
    instruction: str


def load_baseline_prompts(path: Path) -> dict[str, BaselinePrompt]:
    """prompts/baselines.yaml: a system message and an instruction per method."""
    data = read_yaml(path)
    prompts = {}
    for method in METHODS:
        entry = data.get(method) if isinstance(data, dict) else None
        if not isinstance(entry, dict) or set(entry) != {"system", "instruction"}:
            raise ConfigError(
                f"{path}: '{method}' needs exactly the keys system and instruction",
                fix="see the default prompts/baselines.yaml",
            )
        prompts[method] = BaselinePrompt(str(entry["system"]).strip(), str(entry["instruction"]).strip())
    return prompts


def baseline_request(
    problem: Problem, prompt: BaselinePrompt, prompts: PromptSet, ending: str, *, send_images: bool,
    max_images: int | None = None,
) -> list[dict[str, Any]]:
    """The one request of a baseline: instruction, question, context, options, answer format;
    each image right after its `<image_k>` placeholder, as the benchmarks' own evaluation code
    places them (an image the text never names follows it, after its tag); at most `max_images`
    of them (an endpoint's limit per request). An image not sent (a text-only model, or beyond
    `max_images`) has the same note under the images heading as a MAPS step's request."""
    labels = prompts.task.labels
    sections = [prompt.instruction, f"## {labels['question']}\n{problem.question}"]
    if problem.context:
        sections.append(f"## {labels['context']}\n{problem.context}")
    if problem.options:
        sections.append(f"## {labels['options']}\n{format_options(problem.options)}")
    if problem.answer_format or ending:
        sections.append(
            f"## {labels['answer_format']}\n" + " ".join(part for part in (problem.answer_format, ending) if part)
        )
    sent = (len(problem.images) if max_images is None else min(max_images, len(problem.images))) if send_images else 0
    if sent < len(problem.images):
        capped = max_images if send_images else None  # else the model cannot see images
        sections.append(f"## {labels['images']}\n" + withheld_image_notes(prompts, problem.images, sent, capped))
    text = "\n\n".join(sections)
    content: str | list[dict[str, Any]] = text
    if sent:
        content = interleave_images(text, problem.images[:sent], problem.options)
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": content}]


@dataclass
class BaselineOutcome:
    response: str
    completion: Completion | None
    seconds: float
    error: str | None = None
    failure: MapsError | None = None  # the service failure behind `error`

    def usage(self) -> Usage:
        """The one call's usage (none when it failed)."""
        c = self.completion
        usage = Usage(calls=1 if c else 0, cached_calls=1 if c and c.cached else 0,
                      prompt_tokens=(c.prompt_tokens or 0) if c else 0,
                      cached_tokens=(c.cached_tokens or 0) if c else 0,
                      completion_tokens=(c.completion_tokens or 0) if c else 0, cost=c.cost if c else 0.0)
        return usage.model_copy(update={"batch_calls": 1}) if c and c.batch is not None else usage

    def role_usage(self) -> RoleUsage:
        """The same, as the method's share (a results row's usage by role)."""
        usage = self.usage()
        role = RoleUsage(calls=usage.calls, cached_calls=usage.cached_calls, prompt_tokens=usage.prompt_tokens,
                         cached_tokens=usage.cached_tokens, completion_tokens=usage.completion_tokens, cost=usage.cost)
        return role.model_copy(update={"batch_calls": usage.batch_calls}) if usage.batch_calls else role


def run_baseline(
    problem: Problem,
    team: Team,
    method: str,
    *,
    prompt: BaselinePrompt,
    ending: str,
    run_dir: Path,
    extra: Mapping[str, Any] | None = None,
) -> BaselineOutcome:
    """One model call on the whole problem; writes run.json (with `extra`, fields of
    `records.RunRecord` an eval sets) and transcript.jsonl in run_dir."""
    answering = team.loaded.team.config.final_step.name
    backend = team.backends[answering]  # the answering step's model
    writer = RunWriter(run_dir)
    started = time.monotonic()
    try:
        image_files = writer.save_images(problem)
        messages = baseline_request(
            problem, prompt, team.prompts, ending, send_images=backend.supports_images,
            max_images=backend.model.max_images,
        )
        content = messages[1]["content"]
        opening = (
            content if isinstance(content, str) else "".join(part["text"] for part in content if part["type"] == "text")
        )
        writer.append(MessageRecord(agent="UserProxy", role=USER_PROXY_ROLE, step="task", round=0, revision=False,
                                    content=opening, images=image_files))
        carried = backend.model.images_carried(len(problem.images))
        withheld = [method] if problem.has_images and carried < len(problem.images) else []
        if withheld:
            writer.append(ImagesWithheldEvent(
                roles=withheld, at=utc_now(),
                detail=f"images withheld from the request: {backend.model.images_withheld_because()}"))
        completion, error, service_failure = None, None, None
        try:
            completion = backend.complete(messages, role=method)
        except MapsError as failure:
            error = redact(str(failure))
            service_failure = failure
        request = request_for_transcript(
            messages, {image.data_url(): file for image, file in zip(problem.images, image_files)}
        )
        if completion is not None:
            writer.append(MessageRecord(
                agent=method.upper() if method == "cot" else method.capitalize(), role=method, step="answer", round=0,
                revision=False, content=completion.text, parsed=None, model=completion.model,
                seconds=round(completion.seconds, 4), usage=completion.usage(), finish_reason=completion.finish_reason,
                served_model=completion.served_model, sent=completion.sent, request=request,
            ))
        else:
            writer.append(ErrorEvent(detail=error or "", at=utc_now()))
        outcome = BaselineOutcome(
            completion.text if completion else "", completion, time.monotonic() - started, error, service_failure
        )
        model = ModelRecord.of(backend.model)
        # What was sent when a request succeeded; else what its requests carry.
        model = model.model_copy(update={"sent": completion.sent} if completion else
                                 {"request_settings": backend.settings()})
        writer.write_run(RunRecord(
            kind="baseline", method=method, problem=problem.describe(image_files), models={answering: model},
            final_answer=outcome.response, stop_reason="error" if error else None, error=error,
            seconds=round(outcome.seconds, 4), usage=outcome.usage(), images_withheld=withheld,
        ).model_copy(update=extra))
    finally:
        writer.close()
    return outcome
