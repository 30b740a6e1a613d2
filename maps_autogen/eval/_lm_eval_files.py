"""lm-evaluation-harness's own output layout, beside results.json and our richer files: under
the model's sanitized name, `results_<date>.json` (results.json's figures with the model's identity
and lm-eval's per-task hashes) and one `samples_<task>_<date>.jsonl` per subset, the per-sample
records lm-eval writes with `--log_samples`. lm-eval's own readers find and read them
(`get_results_filenames`, `get_sample_results_filenames`, `make_table`, its W&B logger's
`log_eval_result` and `log_eval_samples`; tests/eval/test_lm_eval_layout.py runs them).

A sample is a scored problem (a failed one has no verdict and is never a wrong answer: it stays
in results.jsonl only): `doc_id` (its place among its subset's problems), `doc` (the problem as the
team was given it, with the data set's answer and fields), `target`, `arguments` (lm-eval's
generation request as its evaluator holds it: `[[prompt, gen_kwargs]]`, the prompt being the problem's
text and gen_kwargs what each step's requests carried), `resps` (the team's final response),
`filtered_resps` (the extraction the verdict was reached on), `filter`, `metrics`, `acc` (1.0 or
0.0), and lm-eval's `doc_hash`, `prompt_hash` and `target_hash` (SHA-256 of the doc as lm-eval dumps
it, of the prompt and of the target); `pid` links it to results.jsonl. The date is the run's start
(the manifest's `created_at`, in lm-eval's `isoformat` with `-` for `:`), so a resumed or merged run
rewrites the same files."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from maps_autogen._util import atomic_text_writer
from maps_autogen.eval._harness import FILTER, HARNESS_FILE, METRIC, HarnessResults
from maps_autogen.records import (
    MANIFEST_FILE,
    PROBLEMS_DIR,
    RESULTS_FILE,
    SUMMARY_FILE,
    Manifest,
    ResultRow,
    problem_folder,
    read_run,
    safe_component,
    write_record,
)

MODEL_SOURCE = "maps-autogen"
# lm-eval's sanitize_model_name: these characters become "__"
_MODEL_UNSAFE = re.compile(r"[\"<>:/|\\?*\[\]]+")
_TASK_UNSAFE = re.compile(r"\W")  # lm-eval's sanitize_task_name
_PLAIN_NAME = re.compile(r"[\w.,+=@ -]{1,100}")
_OURS = {PROBLEMS_DIR, HARNESS_FILE, SUMMARY_FILE, RESULTS_FILE, MANIFEST_FILE}  # an eval folder's own names


class HarnessSample(BaseModel):
    """One line of samples_<task>_<date>.jsonl."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    doc_id: int
    doc: dict[str, Any]
    target: str
    arguments: list[list[Any]]
    resps: list[list[str]]
    filtered_resps: list[str]
    filter: str
    metrics: list[str]
    doc_hash: str
    prompt_hash: str
    target_hash: str
    acc: float
    pid: str


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def model_folder_name(model: str) -> str:
    """lm-eval's sanitized model name (`sanitize_model_name`), as a folder inside the eval folder:
    a name that would still not be one plain folder name (dots first, control characters, very long)
    is made one (records/_safe_paths.py)."""
    name = _MODEL_UNSAFE.sub("__", model)
    name = name if _PLAIN_NAME.fullmatch(name) and not name.startswith((".", " ")) else safe_component(model)
    return f"model-{name}" if name in _OURS else name


def lm_eval_folder(eval_dir: Path, results: HarnessResults) -> Path:
    """Where an eval's lm-eval files are: its model's sanitized name (`model_folder_name`) inside it."""
    return eval_dir / model_folder_name(results.config.get("model") or "model")


def lm_eval_files(eval_dir: Path, results: HarnessResults) -> list[Path]:
    """The lm-eval files an eval folder holds (`results_<date>.json`, `samples_<task>_<date>.jsonl`),
    regular files only (a symlink planted in a run folder is never one of them), sorted."""
    folder = lm_eval_folder(eval_dir, results)
    return sorted(path for path in folder.glob("*_*.json*")
                  if path.name.startswith(("results_", "samples_")) and path.is_file() and not path.is_symlink())


def file_task_name(task: str) -> str:
    """A task's name in a file name: lm-eval's `sanitize_task_name`, bounded in length."""
    name = _TASK_UNSAFE.sub("_", task)
    return name if len(name) <= 100 else safe_component(task)


def date_id(manifest: Manifest) -> str:
    """The files' date: the run's start as lm-eval writes a date into a file name."""
    try:
        started = datetime.fromisoformat(manifest.created_at or "")
    except ValueError:
        started = datetime.fromtimestamp(0, UTC)
    if started.tzinfo is not None:
        started = started.astimezone(UTC).replace(tzinfo=None)
    return started.isoformat().replace(":", "-")


def _prompt(question: str, context: str | None, options: Sequence[str]) -> str:
    """The problem's text as one prompt: the question, its context, its options."""
    parts = [question]
    if context:
        parts.append(f"Context: {context}")
    if options:
        parts.append("Options: " + "; ".join(f"({chr(65 + n) if n < 26 else n + 1}) {option}"
                                             for n, option in enumerate(options)))
    return "\n".join(parts)


def harness_sample(eval_dir: Path, row: ResultRow, doc_id: int) -> HarnessSample:
    """A scored problem's sample, its problem read from its own run.json."""
    folder = problem_folder(eval_dir, row.run_dir)
    problem = read_run(folder).problem if folder is not None else None
    question = problem.question if problem is not None else ""
    context = problem.context if problem is not None else None
    options = list(problem.options) if problem is not None else []
    doc = {"pid": str(row.pid), "subset": row.subset, "question": question, "context": context, "options": options,
           "images": [image.name for image in problem.images] if problem is not None else [],
           "answer": row.gold, **{key: value for key, value in row.metadata.items()
                                  if key not in ("pid", "subset", "question", "context", "options", "answer")}}
    doc = json.loads(json.dumps(doc, default=str, ensure_ascii=False))  # as JSON holds it (and lm-eval hashes it)
    prompt = _prompt(question, context, options)
    target = "" if row.gold is None else str(row.gold)
    gen_kwargs = {step: sent.model_dump(mode="json", exclude_unset=True) for step, sent in row.models.items()}
    extraction = row.extraction if row.extraction is not None else row.prediction
    return HarnessSample(
        doc_id=doc_id, doc=doc, target=target, arguments=[[prompt, gen_kwargs]], resps=[[row.response or ""]],
        filtered_resps=["" if extraction is None else str(extraction)], filter=FILTER, metrics=[METRIC],
        doc_hash=_hash(json.dumps(doc, indent=2, ensure_ascii=False)), prompt_hash=_hash(prompt),
        target_hash=_hash(target), acc=1.0 if row.correct else 0.0, pid=str(row.pid),
    )


def write_lm_eval_files(eval_dir: Path, manifest: Manifest, results: HarnessResults,
                        rows: Sequence[ResultRow]) -> Path:
    """Write <model>/results_<date>.json and a samples_<task>_<date>.jsonl per subset; the folder."""
    folder = lm_eval_folder(eval_dir, results)
    folder.mkdir(exist_ok=True)
    date = date_id(manifest)
    scored = {str(row.pid): row for row in rows if row.status == "ok" and row.correct is not None}
    hashes: dict[str, str] = {}
    for task, subset in ((f"{manifest.benchmark}_{name}", name) for name in manifest.subsets):
        pids = [str(pid) for pid in manifest.ids if manifest.subset_of(pid) == subset]
        samples = [harness_sample(eval_dir, scored[pid], doc_id) for doc_id, pid in enumerate(pids) if pid in scored]
        hashes[task] = _hash("".join(s.doc_hash + s.prompt_hash + s.target_hash for s in samples))
        with atomic_text_writer(folder / f"samples_{file_task_name(task)}_{date}.jsonl") as handle:
            for sample in samples:
                handle.write(json.dumps(sample.model_dump(mode="json"), ensure_ascii=False) + "\n")
    model = results.config.get("model") or ""
    write_record(folder / f"results_{date}.json", results.model_copy(update={
        "model_source": MODEL_SOURCE, "model_name": model, "model_name_sanitized": folder.name,
        "task_hashes": hashes}))
    return folder


__all__ = ["HarnessSample", "date_id", "file_task_name", "harness_sample", "lm_eval_files", "lm_eval_folder",
           "model_folder_name", "write_lm_eval_files"]
