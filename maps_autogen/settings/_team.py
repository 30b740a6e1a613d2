"""The team as data: an ordered list of steps declared in agents.yaml (or a team file).

Each step names its prompt file, the earlier steps and problem fields it reads, whether it sees
the images, its model, its personality, its output (text or the answer JSON), whether the
reviewer scores it and whether it gives the final answer. The reviewer step (the Critic) lists
the steps it scores; its JSON schema, rubric and the rollback rule follow from that list.

`validate_team` checks a team up front (one line per problem, naming the file and the key);
`plan_chat` turns a team, a problem's images and `--without` into the steps one chat runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from maps_autogen._util import ConfigError, UsageError

# Problem fields a step may read besides earlier steps' outputs. Images are not an input name:
# `sees_images` says who receives them.
PROBLEM_FIELDS = ("question", "context", "options", "answer_format")
STEP_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"
# Names a step cannot take: the problem's fields and the headings of a revision request.
RESERVED_NAMES = (*PROBLEM_FIELDS, "images", "previous_output", "feedback", "manager", "user_proxy", "user_question",
                  "user_notes")
#: What the reviewer's review of a step can carry back to it when it re-runs (the reviewer's
#: `sends_back`): its score, its evaluation of the step, and its feedback (the adjustment it
#: suggests, or the question it asks, as its prompt words it).
ReviewPart = Literal["score", "evaluation", "feedback"]
REVIEW_PARTS: tuple[ReviewPart, ...] = ("score", "evaluation", "feedback")  # seed 000's, the default
#: How a team's steps read their inputs: each step's `inputs` as declared, or only those of its
#: equation in the paper (its `equation_inputs`, where it declares them).
InputsRule = Literal["declared", "equations"]
#: What an answer step's reply that is not JSON gives: its text as the final answer, or none.
AnswerFallback = Literal["text", "none"]


def possessive(name: str) -> str:
    """`name` with its possessive ending: "Critic's", "Units'"."""
    return f"{name}'" if name.endswith(("s", "S")) else f"{name}'s"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepModel(_Strict):
    """A step's own model (same keys as the top-level `model:`)."""

    endpoint: str = "auto"
    name: str | None = None
    temperature: float | None = Field(default=0.0, ge=0, le=2)
    max_tokens: int | None = Field(default=2048, ge=1)
    top_p: float | None = Field(default=None, gt=0, le=1)  # None: not sent (the service's default)
    seed: int | None = None  # None: not sent; a service that honours it repeats its sampling


class ScoreScale(_Strict):
    """The reviewer's score range: 1-5 whole numbers (Big Seven) or [0, 1] (Big Five)."""

    low: float = 1
    high: float = 5
    whole: bool = True


class StepConfig(_Strict):
    """One step of the team, as written in YAML."""

    name: Annotated[str, Field(pattern=STEP_NAME_PATTERN)]
    prompt: str
    label: str | None = None  # the heading of this step's output in later requests
    inputs: tuple[str, ...] = ()
    # The inputs of this step's equation in the paper (a part of `inputs`), read instead of
    # `inputs` under the team's `inputs: equations`; None: its inputs are the equation's.
    equation_inputs: tuple[str, ...] | None = None
    sees_images: bool = False
    describes_images: bool = False  # runs only when the problem has images, and must see them
    model: StepModel | None = None  # None: the top-level model
    personality: str | None = None  # required; None only so that its absence gets a clear message
    output: Literal["text", "answer"] = "text"  # answer: the JSON of phases and a final answer
    critic_dimension: str | None = None  # the reviewer's name for this step (default: its name)
    feedback_template: str | None = None  # what the reviewer's question about this dimension looks for
    final_answer: bool = False
    # A step before the answer may state a preliminary result for the answer step to verify (the
    # task prompt's `preliminary_result`, after its instruction); None/False: it is not invited to
    # solve, as the papers' Tables 4-5 ask (docs/paper.md).
    preliminary_result: bool | None = None
    # An answer step's reply that is not JSON: its text stands as the final answer ("text", the
    # default), or it gives no answer ("none": only the JSON's final_answer counts).
    answer_fallback: AnswerFallback | None = None
    enabled: bool = True
    reviews: tuple[str, ...] | None = None  # makes this step the reviewer of these steps
    scale: ScoreScale | None = None  # reviewer only (default 1-5)
    threshold: float | None = None  # reviewer only: every score >= threshold passes
    # reviewer only: what a step it sends back receives of its review (None: REVIEW_PARTS)
    sends_back: Annotated[tuple[ReviewPart, ...], Field(min_length=1)] | None = None

    @property
    def title(self) -> str:
        """The agent's display name: the step name with a capital."""
        return self.name[:1].upper() + self.name[1:]

    @property
    def possessive(self) -> str:
        """The title with its possessive ending ("the Critic's reply", "the Units' reply")."""
        return possessive(self.title)

    @property
    def dimension(self) -> str:
        return self.critic_dimension or self.name


class TeamConfig(_Strict):
    """A whole team: its steps in order, plus the traits of the two non-reasoning agents."""

    manager_personality: str | None = None
    user_proxy_personality: str | None = None
    # declared: each step reads its `inputs`; equations: its `equation_inputs` where it has them
    # (the paper's Eqs. 2-6; applied when the team is loaded, so the steps record what they read)
    inputs: InputsRule = "declared"
    # The task preamble's `grounding` sentence ("do not invent measurements ...") in every step's
    # request; false: the preamble without it (docs/paper.md)
    grounding: bool = True
    steps: Annotated[tuple[StepConfig, ...], Field(min_length=1)]

    def step(self, name: str) -> StepConfig:
        return next(step for step in self.steps if step.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(step.name for step in self.steps)

    @property
    def reviewer(self) -> StepConfig | None:
        return next((step for step in self.steps if step.reviews is not None and step.enabled), None)

    @property
    def final_step(self) -> StepConfig:
        return next(step for step in self.steps if step.final_answer)

    @property
    def scale(self) -> ScoreScale:
        reviewer = self.reviewer
        return (reviewer.scale if reviewer is not None else None) or ScoreScale()

    @property
    def threshold(self) -> float:
        reviewer = self.reviewer
        if reviewer is not None and reviewer.threshold is not None:
            return reviewer.threshold
        return self.scale.high

    @property
    def sends_back(self) -> tuple[ReviewPart, ...]:
        """What a step the reviewer sends back receives of its review."""
        reviewer = self.reviewer
        return (reviewer.sends_back if reviewer is not None else None) or REVIEW_PARTS

    def variables(self) -> dict[str, str]:
        """The team's names a prompt or label may use: `{{reviewer}}` (the reviewer's title, or
        "reviewer" in a team without one) and `{{answer_step}}` (the final-answer step's title)."""
        reviewer = self.reviewer
        return {"reviewer": reviewer.title if reviewer is not None else "reviewer",
                "answer_step": self.final_step.title}


@dataclass(frozen=True)
class LoadedTeam:
    """A validated team and where it was written (`key` is its path inside that file)."""

    config: TeamConfig
    source: Path
    key: str  # "team" when inline in agents.yaml, "" for a team file
    base_dir: Path

    def where(self, suffix: str) -> str:
        return f"{self.key}.{suffix}" if self.key else suffix


def _describe(error: ErrorDetails, key: str) -> str:
    parts: list[str] = []
    for part in error["loc"]:
        if isinstance(part, int):
            parts[-1:] = [f"{parts[-1]}[{part}]"] if parts else [f"[{part}]"]
        else:
            parts.append(str(part))
    where = ".".join(([key] if key else []) + parts)
    if error["type"] == "extra_forbidden":
        return f"unknown key '{where}'"
    if error["type"] == "missing":
        return f"missing key '{where}'"
    return f"'{where}': {error['msg']}"


def parse_team(data: Any, source: Path, *, key: str, base_dir: Path) -> LoadedTeam:
    """Validate a team's YAML data (shape, then the links between steps)."""
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: '{key or 'steps'}' must be a mapping with a 'steps' list", fix="see the default agents.yaml"
        )
    try:
        config = TeamConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(
            f"{source}: {_describe(error.errors()[0], key)}", fix="see the team in the default agents.yaml"
        ) from None
    team = LoadedTeam(config=config, source=source, key=key, base_dir=base_dir)
    validate_team(team)
    if config.inputs == "equations":
        steps = tuple(step if step.equation_inputs is None else step.model_copy(update={"inputs": step.equation_inputs})
                      for step in config.steps)
        team = replace(team, config=config.model_copy(update={"steps": steps}))
    return team


def _fail(team: LoadedTeam, index: int, field: str, problem: str, fix: str) -> ConfigError:
    step = team.config.steps[index]
    return ConfigError(f"{team.source}: {team.where(f'steps[{index}]')} ({step.name}).{field}: {problem}", fix=fix)


def _cycle(steps: tuple[StepConfig, ...], start: str, target: str) -> list[str] | None:
    """A chain of reads from `start` back to `target`, if one exists."""
    by_name = {step.name: step for step in steps}
    stack, seen = [(start, [start])], set()
    while stack:
        name, path = stack.pop()
        if name == target and len(path) > 1:
            return path
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        for read in (*by_name[name].inputs, *(by_name[name].reviews or ())):
            stack.append((read, [*path, read]))
    return None


def validate_team(team: LoadedTeam) -> None:
    """Raise a one-line ConfigError for the first problem in the team's links."""
    names = [step.name for step in team.config.steps]
    _check_missing_steps(team, names)
    for index in range(len(names)):
        _check_step(team, index, names)
        _check_reads(team, index, names)
        if team.config.inputs == "equations":  # unused otherwise: a renamed step need not touch them
            _check_equation_inputs(team, index)
    _check_final_step(team, names)
    _check_reviewer(team, names)
    _check_scales(team)
    _check_answer_settings(team)


def _check_step(team: LoadedTeam, index: int, names: list[str]) -> None:
    """A step's own fields: a unique, unreserved name, a personality, images it can describe."""
    step = team.config.steps[index]
    if names.index(step.name) != index:
        raise _fail(team, index, "name", f"'{step.name}' names two steps", "give every step its own name")
    if step.name in RESERVED_NAMES:
        raise _fail(
            team, index, "name", f"'{step.name}' is reserved", f"choose a name other than {', '.join(RESERVED_NAMES)}"
        )
    if not (step.personality or "").strip():
        raise _fail(team, index, "personality", "missing", "describe this step's temperament in one sentence")
    if step.describes_images and not step.sees_images:
        raise _fail(
            team,
            index,
            "sees_images",
            "this step describes the images (describes_images: true) but receives none",
            "set sees_images: true, or drop describes_images",
        )


def _check_missing_steps(team: LoadedTeam, names: list[str]) -> None:
    """Every reference to a step the team does not have, in one error: a step deleted from the
    list leaves the steps that read it and the reviewer's `reviews` behind, and the way to leave
    a step out is `enabled: false` or --without."""
    missing: dict[str, list[str]] = {}
    for index, step in enumerate(team.config.steps):
        for field, reads in (("inputs", step.inputs), ("reviews", step.reviews or ())):
            for read in reads:
                if read not in names and read not in PROBLEM_FIELDS and read != "images":
                    missing.setdefault(read, []).append(f"{team.where(f'steps[{index}]')} ({step.name}).{field}")
    if not missing:
        return
    described = "; ".join(f"{where}: '{name}' is not a step" for name, refs in missing.items() for where in refs)
    left_out = ", ".join(f"--without {name}" for name in missing)
    raise ConfigError(
        f"{team.source}: {described}",
        fix=f"to leave a step out, keep it in the list with enabled: false (or pass {left_out}); "
        f"otherwise read one of: {', '.join([*names, *PROBLEM_FIELDS])}",
    )


def _check_reads(team: LoadedTeam, index: int, names: list[str]) -> None:
    """A step reads (inputs) or reviews only problem fields and steps listed before it."""
    steps = team.config.steps
    step = steps[index]
    position = {name: number for number, name in enumerate(names)}
    for read in (*step.inputs, *(step.reviews or ())):
        field = "inputs" if read in step.inputs else "reviews"
        if read in PROBLEM_FIELDS and field == "inputs":
            continue
        if read == "images":
            raise _fail(
                team, index, field, "'images' is not an input", "use sees_images: true to send a step the images"
            )
        if read not in position:
            allowed = ", ".join([*names[:index], *PROBLEM_FIELDS]) if field == "inputs" else ", ".join(names[:index])
            raise _fail(
                team,
                index,
                field,
                f"'{read}' is not a step{' or a problem field' if field == 'inputs' else ''}",
                f"use one of: {allowed}",
            )
        if position[read] >= index:
            chain = _cycle(steps, read, step.name)
            if chain is not None or read == step.name:
                loop = " -> ".join([step.name, *(chain or [read])]) if chain else f"{step.name} -> {step.name}"
                raise _fail(team, index, field, f"a cycle: {loop}", "a step reads only steps listed before it")
            raise _fail(team, index, field, f"'{read}' runs later (step {position[read]})",
                        "a step reads only steps listed before it; reorder the steps")


def _check_equation_inputs(team: LoadedTeam, index: int) -> None:
    """Under `inputs: equations`, a step's equation inputs are some of its inputs."""
    step = team.config.steps[index]
    extra = [name for name in step.equation_inputs or () if name not in step.inputs]
    if extra:
        raise _fail(team, index, "equation_inputs", f"'{extra[0]}' is not one of its inputs (read under inputs: "
                    "equations)", f"list only some of: {', '.join(step.inputs) or '(no inputs)'}")


def _check_final_step(team: LoadedTeam, names: list[str]) -> None:
    """Exactly one step gives the final answer, and it is enabled."""
    steps = team.config.steps
    finals = [index for index, step in enumerate(steps) if step.final_answer]
    if len(finals) > 1:
        raise _fail(team, finals[1], "final_answer", f"a second final-answer step (the first is {names[finals[0]]})",
                    "mark exactly one step final_answer: true")
    if not finals:
        raise ConfigError(f"{team.source}: {team.where('steps')}: no step has final_answer: true",
                          fix="mark the step whose output is the answer")
    if not steps[finals[0]].enabled:
        raise _fail(team, finals[0], "enabled", "the final-answer step is disabled",
                    "enable it, or mark another step final_answer: true")


def _check_reviewer(team: LoadedTeam, names: list[str]) -> None:
    """At most one reviewer: the last step, not the answer, one dimension per reviewed step, a
    scale whose high is above its low."""
    steps = team.config.steps
    reviewers = [index for index, step in enumerate(steps) if step.reviews is not None]
    if len(reviewers) > 1:
        raise _fail(team, reviewers[1], "reviews", f"a second reviewer (the first is {names[reviewers[0]]})",
                    "keep one reviewer step")
    for index in reviewers:
        reviewer = steps[index]
        if index != len(steps) - 1:
            raise _fail(team, index, "reviews", "the reviewer must be the last step", "move it to the end of the list")
        if reviewer.final_answer:
            raise _fail(
                team, index, "final_answer", "the reviewer cannot give the final answer", "mark a reviewed step instead"
            )
        dimensions = [team.config.step(name).dimension for name in reviewer.reviews or ()]
        if len(set(dimensions)) != len(dimensions):
            raise _fail(team, index, "reviews", "two reviewed steps share a critic_dimension",
                        "give each reviewed step its own critic_dimension")
        scale = reviewer.scale or ScoreScale()
        if scale.high <= scale.low:
            raise _fail(team, index, "scale", "high must be above low", "e.g. {low: 1, high: 5}")
        unreachable = threshold_problem(reviewer.threshold, scale)
        if unreachable is not None:
            raise _fail(team, index, "threshold", unreachable, threshold_fix(scale))
        if reviewer.sends_back is not None and not {"evaluation", "feedback"} & set(reviewer.sends_back):
            raise _fail(team, index, "sends_back", "a step sent back with only its score has nothing to act on",
                        "add evaluation or feedback (or both)")


def _number(value: float) -> str:
    return f"{value:g}"


def threshold_problem(threshold: float | None, scale: ScoreScale) -> str | None:
    """Why a pass threshold cannot work on the reviewer's scale (None: it can): above the
    highest score no problem ever passes."""
    if threshold is None or threshold <= scale.high:
        return None
    return (f"{_number(threshold)} is above the reviewer's score scale "
            f"({_number(scale.low)}-{_number(scale.high)}): no score reaches it, so every problem fails review")


def threshold_fix(scale: ScoreScale) -> str:
    """The fix of an unreachable threshold on `scale`."""
    return f"use a threshold from {_number(scale.low)} to {_number(scale.high)}; the highest passes only top scores"


def _check_scales(team: LoadedTeam) -> None:
    """Only the reviewer has a score scale, a threshold and what it sends back."""
    for index, step in enumerate(team.config.steps):
        if step.reviews is not None:
            continue
        for field, value in (("scale", step.scale), ("threshold", step.threshold), ("sends_back", step.sends_back)):
            if value is not None:
                raise _fail(team, index, field, f"only the reviewer has a {field.replace('_', ' ')}",
                            "move it to the step with reviews:")


def _check_answer_settings(team: LoadedTeam) -> None:
    """`answer_fallback` is an answer step's; `preliminary_result` a working step's before the
    answer (the final-answer step gives the answer itself, the reviewer gives none)."""
    for index, step in enumerate(team.config.steps):
        if step.answer_fallback is not None and step.output != "answer":
            raise _fail(team, index, "answer_fallback", "only a step with output: answer has a JSON reply to fall "
                        "back from", "move it to the answer step")
        if step.preliminary_result and (step.final_answer or step.reviews is not None):
            what = ("the final-answer step gives the answer itself" if step.final_answer
                    else "the reviewer gives no result")
            raise _fail(team, index, "preliminary_result", what, "set it on a working step before the answer")


def load_team_file(path: Path, *, read_yaml: Any) -> LoadedTeam:
    """A team file (`--team FILE` or `team: FILE`): a mapping with `steps:`."""
    return parse_team(read_yaml(path), path, key="", base_dir=path.resolve().parent)


@dataclass(frozen=True)
class ChatPlan:
    """The steps one chat runs: working steps in order, the reviewer, who gets the images."""

    steps: tuple[str, ...]
    reviewer: str | None
    scored: tuple[tuple[str, str], ...]  # (step, dimension) of each running step the reviewer scores
    image_steps: frozenset[str]
    final_step: str
    # Left-out steps whose images reached no step (images.to_next_step false: the paper's ablation).
    images_dropped: tuple[str, ...] = ()


def check_without(team: TeamConfig, without: frozenset[str], source: Path) -> None:
    """`--without` names must be steps of the team; the final-answer step cannot go."""
    for name in sorted(without):
        if name not in team.names:
            raise UsageError(
                f"--without {name}: {source} has no step '{name}'", fix=f"use one of: {', '.join(team.names)}"
            )
    if team.final_step.name in without:
        raise UsageError(f"--without {team.final_step.name}: that step gives the final answer",
                         fix="mark another step final_answer: true in the team to ablate this one")
    if all(step.name in without or step.reviews is not None or not step.enabled for step in team.steps):
        raise UsageError("--without removes every working step", fix="keep at least the final-answer step")


def plan_chat(team: TeamConfig, *, has_images: bool, without: frozenset[str] = frozenset(),
              images_to_next: bool = False) -> ChatPlan:
    """Which steps run for one problem. A step is left out when it is disabled, named by
    `--without`, or describes images the problem does not have. A left-out step's output is
    simply absent from the requests of the steps that read it. The images a left-out step
    would have received go nowhere (the paper's ablation: without the Interpreter no agent sees
    the diagram), recorded in `images_dropped`; with `images_to_next` they go to the next
    working step that runs instead."""
    running: list[StepConfig] = []
    image_steps: set[str] = set()
    dropped_images: list[str] = []
    orphan_images = False
    reviewer: str | None = None
    for step in team.steps:
        dropped = not step.enabled or step.name in without or (step.describes_images and not has_images)
        if step.reviews is not None:
            reviewer = None if dropped else step.name
            if not dropped and (step.sees_images or orphan_images) and has_images:
                image_steps.add(step.name)
            continue
        if dropped:
            if step.sees_images and has_images:
                if images_to_next:
                    orphan_images = True
                else:
                    dropped_images.append(step.name)
            continue
        running.append(step)
        if has_images and (step.sees_images or orphan_images):
            image_steps.add(step.name)
            orphan_images = False
    names = tuple(step.name for step in running)
    reviewed = set(team.step(reviewer).reviews or ()) if reviewer else set()
    scored = tuple((step.name, step.dimension) for step in running if step.name in reviewed)
    if reviewer is not None and not scored:
        reviewer = None  # nothing it scores runs: no review
    return ChatPlan(
        steps=names,
        reviewer=reviewer,
        scored=scored,
        image_steps=frozenset(image_steps),
        final_step=team.final_step.name,
        images_dropped=tuple(dropped_images),
    )


def derived_max_rounds(plan: ChatPlan, max_rollbacks: int) -> int:
    """Turns a chat can take: the first pass plus, per rollback, at most every step and a review."""
    per_pass = len(plan.steps) + (1 if plan.reviewer else 0)
    return per_pass * (max_rollbacks + 1)
