"""Re-score recorded model outputs with a benchmark's official rules (`maps score`).

Generic over the benchmarks: each benchmark module supplies a `Scorer` (see
`maps_autogen.benchmarks._base`); this module reads and writes JSONL, keeps every input field,
skips unusable lines with their line numbers, and summarises accuracy per subset.
`score_record` is the single code path shared with `maps eval`. `ScoreOptions` declares
`maps score`'s options (settings/_options.py says what is made from them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from maps_autogen._util import DataError, NumberTooLong, UsageError, atomic_text_writer, json_loads
from maps_autogen.benchmarks import NAMES, RecordError, Scorer, Unjudgeable, Verdict, get_benchmark
from maps_autogen.scoring._tally import Tally
from maps_autogen.settings import LoadedConfig, Options, argument, option

logger = logging.getLogger(__name__)

SCORED_SUFFIX = ".scored.jsonl"
#: The versions of the official rules every benchmark takes (one with a single version ignores the name).
RULES = ("current", "legacy")


@dataclass(frozen=True, kw_only=True)
class ScoreOptions(Options):
    """What `maps score` (and `maps_autogen.score`) scores, by which rules, and where it writes."""

    benchmark: str = argument(f"The benchmark whose rules score the file: {', '.join(NAMES)}.", kind="choice",
                              choices=NAMES)
    file: Path = argument("The JSONL file of recorded model outputs.", kind="path")
    rules: str = option("current", "--rules", "Which version of the official rules to apply (benchmarks with one "
                        "version ignore it).", kind="choice", choices=RULES)
    out: Path | None = option(None, "--out", "Where to write the scored JSONL (default: FILE with .scored.jsonl).",
                              kind="path", dest="out_path")
    llm_extract: bool = option(False, "--llm-extract", "MathVista: ask the configured model to extract answers the "
                               "rules cannot read.", kind="flag")
    config: Path | LoadedConfig | None = option(None, "--config", "agents.yaml for --llm-extract.", kind="path",
                                                dest="config_file", loaded=True)
    model: str | None = option(None, "--model", "Model for --llm-extract: NAME, ENDPOINT:NAME or an endpoint name.",
                               kind="text")


@dataclass(frozen=True)
class SkippedLine:
    """An input line that could not be scored: its 1-based number and why."""

    line_no: int
    reason: str


@dataclass
class ScoreReport:
    """What `score_file` did: per-subset tallies, skipped lines and where the output went."""

    benchmark: str
    rules: str
    input_path: Path
    out_path: Path
    subsets: dict[str, Tally] = field(default_factory=dict)
    methods: dict[str, Tally] = field(default_factory=dict)
    skipped: list[SkippedLine] = field(default_factory=list)
    # Lines sent to the LLM extractor (those the rules could not read); None when it was off.
    llm_requests: int | None = None
    # Lines whose response could not be judged within the scorers' bounds (judged wrong).
    unjudged: int = 0

    @property
    def overall(self) -> Tally:
        """The tally over every scored line (skipped lines are listed apart, in `skipped`)."""
        return Tally(
            n=sum(tally.n for tally in self.subsets.values()),
            scored=sum(tally.scored for tally in self.subsets.values()),
            correct=sum(tally.correct for tally in self.subsets.values()),
        )


def resolve_scorer(benchmark: str, rules: str) -> Scorer:
    """The benchmark's scorer, after checking `rules` (UsageError for an unknown value).

    A benchmark with a single rule version accepts any known version name and ignores it, so
    `--rules legacy` can be passed uniformly across benchmarks.
    """
    try:
        scorer = get_benchmark(benchmark).scorer
    except ModuleNotFoundError as error:
        if not (error.name or "").startswith("maps_autogen.benchmarks."):
            raise  # a missing third-party package is a real installation problem
        raise UsageError(
            f"scoring for {benchmark} is not available in this version",
            fix="update maps-autogen",
        ) from None
    known = {*RULES, *scorer.rule_versions}
    if rules not in known:
        raise UsageError(
            f"unknown rules {rules!r}", fix=f"use one of: {', '.join(sorted(known))}"
        )
    return scorer


def _effective_rules(scorer: Scorer, rules: str) -> str:
    """The version to pass to the scorer: a single-version benchmark always gets its own."""
    return rules if rules in scorer.rule_versions else scorer.rule_versions[0]


def score_record(benchmark: str, record: Mapping[str, Any], rules: str = "current") -> Verdict:
    """Score one in-memory record with the benchmark's official rules.

    Raises RecordError when the record is unusable and UsageError for an unknown benchmark or
    rules value.
    """
    scorer = resolve_scorer(benchmark, rules)
    return judged(scorer, record, _effective_rules(scorer, rules))


def judged(scorer: Scorer, record: Mapping[str, Any], rules: str) -> Verdict:
    """`scorer.score`, with a response whose judging passes a bound the scorer did not catch
    itself judged wrong, saying why (`Verdict.unjudged`): never a crash, never a failure."""
    try:
        return scorer.score(record, rules)
    except Unjudgeable as beyond:
        return Verdict(extraction=None, prediction=None, correct=False, unjudged=beyond.reason)


def has_prediction_stage(scorer: Scorer) -> bool:
    """Whether a benchmark normalises its extraction into a prediction.

    Read from an optional class attribute `has_prediction` (MathVista sets it): there a None
    prediction means "normalisation failed" and is written, as in the official files; for
    benchmarks without the stage a None prediction is simply left out.
    """
    return bool(getattr(scorer, "has_prediction", False))


def scored_line(
    record: Mapping[str, Any], verdict: Verdict, *, with_prediction: bool = True
) -> dict[str, Any]:
    """The output object: the input unchanged plus `extraction`, `prediction` (when
    `with_prediction` or the verdict has one) and `correct`; also `extraction_method`
    when the scorer extracted the answer from the response itself: the scorer's own label
    ("rules", "unreadable") or, if it gives none, "rules"; `extractor_version` when the
    benchmark's rules have one (MathVista), so that scores made by different rules can be
    told apart; and `unjudged`, why, when the response could not be judged within the scorers'
    bounds (`correct` is then false)."""
    out = dict(record)
    if record.get("extraction") is None and verdict.extraction_method not in (None, "given"):
        out["extraction_method"] = verdict.extraction_method
    elif record.get("extraction") is None and verdict.extraction is not None:
        # Say how the answer was obtained, so rule-extracted and LLM-extracted results can be
        # reported apart. A given extraction keeps whatever label it came with.
        out.setdefault("extraction_method", "rules")
    out["extraction"] = verdict.extraction
    if with_prediction or verdict.prediction is not None:
        out["prediction"] = verdict.prediction
    out["correct"] = verdict.correct
    if verdict.extractor_version is not None:
        out["extractor_version"] = verdict.extractor_version
    if verdict.unjudged is not None:
        out["unjudged"] = verdict.unjudged
    return out


def _open_input(path: Path) -> TextIO:
    """Open a results file for reading; DataError (one line, with the fix) if that fails."""
    try:
        return path.open(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(
            f"results file {path} not found", fix="check the path or run `maps eval` first"
        ) from None
    except IsADirectoryError:
        raise DataError(f"{path} is a folder", fix="pass a JSONL results file") from None
    except OSError as error:
        raise DataError(
            f"cannot read {path}: {error.strerror or error}", fix="check the file's permissions"
        ) from None


def _iter_lines(handle: TextIO, path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) for each non-blank line of an open UTF-8 text file."""
    try:
        for line_no, line in enumerate(handle, start=1):
            if line.strip():
                yield line_no, line
    except UnicodeDecodeError:
        raise DataError(f"{path} is not UTF-8 text", fix="pass a JSONL results file") from None


def _json_line(obj: Mapping[str, Any]) -> str:
    """One JSONL line, readable UTF-8 where possible. A lone surrogate (legal as a JSON escape
    in the input, not encodable as UTF-8) forces ASCII escapes so the line still round-trips."""
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj)
    return text + "\n"


def default_out_path(input_path: Path) -> Path:
    """`results.jsonl` → `results.scored.jsonl` (any other suffix is replaced the same way)."""
    return input_path.with_name(input_path.stem + SCORED_SUFFIX) if input_path.suffix else \
        input_path.with_name(input_path.name + SCORED_SUFFIX)


def score_file(
    benchmark: str,
    input_path: Path | str,
    *,
    rules: str = "current",
    out_path: Path | str | None = None,
    llm_extract: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> ScoreReport:
    """Score every line of a JSONL results file and write the scored copy.

    Each output line is the input object unchanged plus `extraction`, `prediction` (when the
    benchmark has a normalisation stage) and `correct`. Lines that are not JSON objects or that
    the scorer rejects are skipped and listed in the report; blank lines are ignored. The output
    (default: input with `.scored.jsonl`) is written atomically. Raises DataError when the
    input cannot be read and UsageError for an unknown benchmark or rules value.

    `llm_extract` (off by default) is asked only for the lines the scorer marks "unreadable"
    (a response the rules cannot read, not one that gives no answer); it returns the record
    with an LLM-made `extraction` (`extraction_method: "llm"`). The report counts those
    requests, and the summary reports every line under how it was extracted.
    """
    input_path = Path(input_path)
    scorer = resolve_scorer(benchmark, rules)
    effective = _effective_rules(scorer, rules)
    target = Path(out_path) if out_path is not None else default_out_path(input_path)
    if target.resolve() == input_path.resolve():
        raise UsageError(f"output {target} would overwrite the input", fix="pass another --out")
    report = ScoreReport(benchmark=benchmark, rules=effective, input_path=input_path,
                         out_path=target, llm_requests=0 if llm_extract is not None else None)
    with_prediction = has_prediction_stage(scorer)
    # Open the input first, so a missing file creates nothing on the output side.
    with _open_input(input_path) as in_file, atomic_text_writer(target, fsync=True) as out_file:
        for line_no, text in _iter_lines(in_file, input_path):
            try:
                record = json_loads(text)
            except json.JSONDecodeError as error:
                report.skipped.append(SkippedLine(line_no, f"not valid JSON ({error.msg})"))
                continue
            except NumberTooLong as error:
                report.skipped.append(SkippedLine(line_no, str(error)))
                continue
            except RecursionError:
                report.skipped.append(SkippedLine(line_no, "JSON nested too deeply"))
                continue
            if not isinstance(record, dict):
                report.skipped.append(
                    SkippedLine(line_no, f"expected a JSON object, got {type(record).__name__}")
                )
                continue
            try:
                verdict = judged(scorer, record, effective)
                if llm_extract is not None and verdict.extraction_method == "unreadable":
                    report.llm_requests = (report.llm_requests or 0) + 1
                    record = dict(llm_extract(record))
                    verdict = judged(scorer, record, effective)
            except RecordError as error:
                report.skipped.append(SkippedLine(line_no, str(error)))
                continue
            out = scored_line(record, verdict, with_prediction=with_prediction)
            out_file.write(_json_line(out))
            report.unjudged += verdict.unjudged is not None
            report.subsets.setdefault(scorer.subset(record), Tally()).add(scored=True, correct=verdict.correct)
            # Lines that came with an unlabelled extraction count as "given".
            method = str(out.get("extraction_method") or "given")
            report.methods.setdefault(method, Tally()).add(scored=True, correct=verdict.correct)
    logger.info("scored %d lines of %s into %s", report.overall.scored, input_path, target)
    return report


def _tally_row(label: str, tally: Tally, width: int) -> str:
    accuracy = "     -" if tally.accuracy is None else f"{tally.accuracy:6.2f}%"
    return f"  {label:<{width}}  {tally.correct:>6} / {tally.scored:<6} {accuracy}"


def render_summary(report: ScoreReport) -> str:
    """A plain-text summary: accuracy per subset and overall, per extraction method when the
    lines say how they were extracted, skipped lines, and the output path."""
    labels = [*report.subsets, "overall", *report.methods]
    width = max(len(label) for label in labels)
    lines = [f"{report.benchmark} ({report.rules} rules): {report.input_path}"]
    for name in sorted(report.subsets):
        lines.append(_tally_row(name, report.subsets[name], width))
    lines.append(_tally_row("overall", report.overall, width))
    if set(report.methods) - {"given"}:
        lines.append("by extraction method:")
        for name in sorted(report.methods):
            lines.append(_tally_row(name, report.methods[name], width))
    if report.llm_requests is not None:
        lines.append(f"sent to the LLM extractor (unreadable by the rules): {report.llm_requests}")
    if report.unjudged:
        lines.append(f"not judged within the scorers' bounds, so counted wrong (`unjudged` says why): "
                     f"{report.unjudged}")
    lines.append(f"skipped lines: {len(report.skipped)}")
    lines.append(f"written: {report.out_path}")
    return "\n".join(lines)


__all__ = [
    "RULES",
    "ScoreOptions",
    "ScoreReport",
    "SkippedLine",
    "default_out_path",
    "has_prediction_stage",
    "judged",
    "render_summary",
    "resolve_scorer",
    "score_file",
    "score_record",
    "scored_line",
]
