"""The one Problem type every source produces (command line, problem file, benchmarks, the
Python API's `maps_autogen.Problem`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from PIL.Image import Image as PILImage

from maps_autogen._util import ConfigError, DataError, ProblemError, valid_text
from maps_autogen.problem._fetch import private_urls_allowed
from maps_autogen.problem._images import ImageInput, ImageSource, fitted_image, image_input, load_image
from maps_autogen.records import ImageInfo, ProblemRecord, checked_reference, outside_paths_allowed
from maps_autogen.settings import ImagesConfig, LimitsConfig, read_yaml

PROBLEM_FILE_KEYS = {"question", "context", "options", "images", "answer_format", "id", "answer"}
#: The longest gold answer a problem file may give (a letter, a number or a short text).
MAX_GOLD_CHARS = 1000
#: The longest side an image gets when a Problem is made with images to load (the built-in
#: `images.max_side`); a run whose config sets a smaller one downscales further (`fitted`).
DEFAULT_MAX_SIDE = ImagesConfig().max_side


@dataclass(frozen=True, init=False)
class Problem:
    """A problem as the team sees it: question, context, options, images.

    `images` may be given as paths, http(s) or data URLs, bytes or PIL images (the Python API):
    each is loaded and checked when the Problem is made, as a problem file's images are (the image
    limits in force; downscaled to `max_side`, the built-in `images.max_side`), and an image URL at
    a private address (loopback, LAN) is refused unless `allow_private_urls`. Text is made valid
    Unicode; None stands for empty. A bad part raises ProblemError. `answer` is a gold answer the
    solve is scored against (never shown to the team)."""

    question: str
    context: str = ""
    options: tuple[str, ...] = ()
    images: tuple[ImageInput, ...] = ()
    answer_format: str = ""  # a benchmark's instruction on how to state the answer
    id: str | int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    answer: str | None = None  # the gold answer (a problem file's `answer`): never shown to the team

    def __init__(
        self,
        question: str,
        context: str | None = "",
        options: Iterable[str] | None = (),
        images: Iterable[ImageSource] | ImageSource | None = (),
        answer_format: str | None = "",
        id: str | int | None = None,
        metadata: dict[str, Any] | None = None,
        answer: str | int | float | None = None,
        *,
        allow_private_urls: bool = False,
        max_side: int = DEFAULT_MAX_SIDE,
    ) -> None:
        if not isinstance(question, str):
            raise ProblemError(f"the question must be text, not {type(question).__name__}",
                               fix='e.g. Problem("Which mass balances the lever?")')
        if not question.strip():
            raise ProblemError(
                "the question is empty", fix="give the question with -q/--question or in the problem file"
            )
        if isinstance(options, str) or not isinstance(options, (Iterable, type(None))) \
                or isinstance(options, (bytes, bytearray, dict)):
            raise ProblemError("options must be a list of texts, not one text" if isinstance(options, str)
                               else f"options must be a list of texts, not {type(options).__name__}",
                               fix='e.g. options=["2 kg", "4 kg"]')
        if metadata is not None and not isinstance(metadata, dict):
            raise ProblemError(f"metadata must be a dict, not {type(metadata).__name__}",
                               fix='e.g. metadata={"source": "..."}')
        if images is None:
            images = ()
        elif isinstance(images, (str, bytes, bytearray, os.PathLike, ImageInput, PILImage)):
            images = (images,)  # one image given bare
        with private_urls_allowed(allow_private_urls):
            loaded = tuple(image_input(image, max_side=max_side, index=index)
                           for index, image in enumerate(images, start=1))
        for name, value in (
            ("question", valid_text(question)),
            ("context", valid_text(context or "")),
            ("options", tuple(valid_text(str(option)) for option in options or ())),
            ("images", loaded),
            ("answer_format", valid_text(answer_format or "")),
            ("id", id),
            ("metadata", {} if metadata is None else metadata),
            ("answer", None if answer is None else valid_text(str(answer))),
        ):
            object.__setattr__(self, name, value)

    def fitted(self, max_side: int) -> Problem:
        """This problem with every image downscaled to at most `max_side` (and checked against the
        image limits in force): what a run whose config sets `images.max_side` sends."""
        images = tuple(fitted_image(image, max_side=max_side) for image in self.images)
        if all(new is old for new, old in zip(images, self.images)):
            return self
        return replace(self, images=images)

    @property
    def has_images(self) -> bool:
        return bool(self.images)

    def describe(self, image_files: list[str]) -> ProblemRecord:
        """The problem as a run records it (images by name and size, never inlined), with the
        run folder's files of its images."""
        return ProblemRecord(
            id=self.id,
            question=self.question,
            context=self.context,
            options=list(self.options),
            answer_format=self.answer_format,
            images=[ImageInfo(name=image.name, source=image.source, mime=image.mime, width=image.width,
                              height=image.height) for image in self.images],
            metadata=self.metadata,
            image_files=image_files,
        )


def build_problem(
    question: str,
    *,
    context: str = "",
    options: Sequence[str] = (),
    image_sources: Sequence[str] = (),
    max_side: int,
    base_dir: Path | None = None,
    answer_format: str = "",
    problem_id: str | None = None,
    answer: str | None = None,
) -> Problem:
    """Validate the parts of a problem and load its images. Text from the command line may hold
    lone surrogates (bytes that were not UTF-8): made valid here."""
    question, context, answer_format = (
        valid_text(question or ""),
        valid_text(context or ""),
        valid_text(answer_format or ""),
    )
    options = [valid_text(str(option)) for option in options]
    if not question or not question.strip():
        raise ProblemError("the question is empty", fix="give the question with -q/--question or in the problem file")
    images = tuple(
        load_image(source, max_side=max_side, base_dir=base_dir, index=index)
        for index, source in enumerate(image_sources, start=1)
    )
    return Problem(
        question=question.strip(),
        context=(context or "").strip(),
        options=tuple(str(option).strip() for option in options),
        images=images,
        answer_format=(answer_format or "").strip(),
        id=problem_id,
        answer=valid_text(answer).strip() if answer is not None else None,
    )


def _string_list(data: dict[str, Any], key: str, path: Path) -> list[str]:
    value = data.get(key) or []
    if isinstance(value, (str, int, float)):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, (str, int, float)) for item in value):
        raise ProblemError(f"{path}: '{key}' must be a list of strings", fix=f"write {key} as a YAML list")
    return [str(item) for item in value]


def _gold_answer(data: dict[str, Any], path: Path) -> str | None:
    """The problem file's `answer` (its gold answer) as text: a non-empty string or number, short.
    Whether it fits the options is checked where it is scored (the custom benchmark's rules)."""
    value = data.get("answer")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
        raise ProblemError(f"{path}: 'answer' must be a non-empty string or a number",
                           fix="write the gold answer, e.g. answer: B for the second option")
    if len(str(value)) > MAX_GOLD_CHARS:
        raise ProblemError(f"{path}: 'answer' is longer than {MAX_GOLD_CHARS} characters",
                           fix="give only the gold answer: an option letter, a number or a short text")
    return str(value)


def load_problem_file(path: Path, *, max_side: int, max_bytes: int = LimitsConfig().problem_file_bytes,
                      allow_private_urls: bool = False, allow_outside_paths: bool = False) -> Problem:
    """Read a problem.yaml (question, context, options, images, answer_format, id, and `answer`,
    the gold answer a solve is scored against); image paths
    are relative to the file. The file is untrusted: at most `max_bytes`, no YAML aliases, image
    files only inside the file's folder (no absolute path, `~`, `..` or symlink leading out)
    unless `allow_outside_paths`, image URLs fetched only from public addresses unless
    `allow_private_urls`."""
    if not path.is_file():
        raise ProblemError(f"problem file {path} does not exist", fix="check the --problem path")
    try:
        data = read_yaml(path, allow_aliases=False, max_bytes=max_bytes, limit_name="limits.problem_file_bytes")
    except ConfigError as error:
        raise ProblemError(error.problem, fix=error.fix) from None
    if not isinstance(data, dict):
        raise ProblemError(f"{path}: expected a mapping with at least 'question'", fix="see examples/")
    unknown = sorted(set(data) - PROBLEM_FILE_KEYS)
    if unknown:
        raise ProblemError(
            f"{path}: unknown key '{unknown[0]}'", fix=f"allowed keys: {', '.join(sorted(PROBLEM_FILE_KEYS))}"
        )
    question = data.get("question")
    if not isinstance(question, str):
        raise ProblemError(f"{path}: 'question' is missing or not text", fix="add question: ...")
    images = _string_list(data, "images", path)
    with outside_paths_allowed(allow_outside_paths):
        for number, image in enumerate(images, start=1):
            try:
                checked_reference(image, path.resolve().parent, what=f"{path}: image {number}",
                                  folder="the problem file's folder", trust="the file")
            except DataError as outside:
                raise ProblemError(outside.problem, fix=outside.fix) from None
    with private_urls_allowed(allow_private_urls):
        return build_problem(
            question,
            context=str(data.get("context") or ""),
            options=_string_list(data, "options", path),
            image_sources=images,
            max_side=max_side,
            base_dir=path.resolve().parent,
            answer_format=str(data.get("answer_format") or ""),
            problem_id=str(data["id"]) if data.get("id") is not None else None,
            answer=_gold_answer(data, path),
        )
