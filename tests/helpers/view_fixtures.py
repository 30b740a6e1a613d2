"""A large eval folder written directly in the run format (no model calls), for the viewer's
scaling tests and perf/viewer_load.py: manifest.json, results.jsonl and, per problem, a
run folder with run.json, a transcript of a full MAPS chat and an image."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from maps_autogen.records._schema import SCHEMA_VERSION

ROLES = ("interpreter", "aligner", "scholar", "solver", "critic")
SCORED = {"interpreter": "caption", "aligner": "alignment", "scholar": "knowledge", "solver": "solution"}  # step -> dimension
TEAM = {"steps": list(ROLES), "reviewer": "critic", "final_step": "solver", "scored": SCORED}  # as run.json and the manifest record it
SUBSETS = ("general", "math")
MODELS = {role: {"endpoint": "openai", "kind": "openai", "model": "gpt-4o", "base_url": "https://api.openai.com/v1",
                  "prompt_layout": "paper"} for role in ROLES}
PARAGRAPH = ("The diagram shows a uniform lever on a pivot with two masses hung at marked distances; "
             "the text asks which mass keeps it level. ") * 4


def problem_facts(number: int) -> dict[str, Any]:
    """What problem `number` (1-based) of the synthetic eval is: its subset, verdict and where the
    Critic's feedback went, by simple rules a test can count independently."""
    failed = number % 17 == 0
    rollback = None if failed or number % 5 else ("scholar" if number % 10 else "solver")
    return {"pid": f"q{number}", "subset": SUBSETS[number % 2], "failed": failed, "correct": None if failed else number % 3 != 0,
            "rollback": rollback}


def _png(number: int) -> bytes:
    image = Image.new("RGB", (64, 40), "white")
    image.putpixel((number % 64, 20), (200, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def _message(role: str, round_: int, content: str, **extra: Any) -> dict[str, Any]:
    usage = {"prompt_tokens": 900, "completion_tokens": 120, "cost": 0.0035, "seconds": 1.2}
    return {"type": "message", "agent": role.capitalize(), "role": role, "step": role, "round": round_, "content": content,
            "usage": usage, "model": "gpt-4o", **extra}


def _transcript(facts: dict[str, Any]) -> list[dict[str, Any]]:
    records = [{"type": "message", "agent": "UserProxy", "role": "user_proxy", "step": "task", "round": 0, "content": f"Question {facts['pid']}: {PARAGRAPH}"}]
    low = {"scholar": "knowledge", "solver": "solution"}.get(facts["rollback"] or "")
    scores = {"caption": 5, "alignment": 5, "knowledge": 2 if low == "knowledge" else 5, "solution": 2 if low == "solution" else 5}
    for role in ROLES:
        if role == "critic":
            feedback = {dim: f"What about the {dim}?" for dim in scores}
            records.append(_message(role, 0, json.dumps({"scores": scores, "feedback": feedback}),
                                    parsed={"scores": scores, "feedback": feedback, "evaluation": {},
                                            "worst_step": low or "solution"}))
        elif role == "solver":
            records.append(_message(role, 0, json.dumps({"final_answer": "4 kg"}), parsed={"final_answer": "4 kg", "parsed": True}))
        else:
            records.append(_message(role, 0, f"{role}: {PARAGRAPH}"))
    if facts["rollback"]:
        records.append({"type": "event", "event": "rollback", "number": 1, "step": facts["rollback"], "dimension": low, "scores": scores,
                        "question": f"What about the {low}?", "by": "critic", "sender": "Critic"})
        records.append(_message(facts["rollback"], 1, f"revised {facts['rollback']}: {PARAGRAPH}", revision=True))
    records.append({"type": "event", "event": "stop", "stop_reason": "rollback_limit" if facts["rollback"] else "critic_passed", "final_answer": "4 kg"})
    return [{"schema_version": SCHEMA_VERSION, "index": n, **record} for n, record in enumerate(records)]


def write_synthetic_eval(eval_dir: Path, count: int) -> list[dict[str, Any]]:
    """Write an eval folder of `count` problems; returns each problem's facts."""
    problems_dir = eval_dir / "problems"
    problems_dir.mkdir(parents=True)
    facts = [problem_facts(number) for number in range(1, count + 1)]
    ids = [fact["pid"] for fact in facts]
    hashes = {pid: "0" * 12 for pid in ids}
    settings = {"method": "maps", "without": [], "team": {"steps": [{"name": role} for role in ROLES]},
                "models": {role: {"kind": "openai", "model": "gpt-4o", "base_url": "https://api.openai.com/v1",
                                  "prompt_layout": "paper"} for role in ROLES},
                "data": {"count": len(ids), "sha256": "sha256:" + "0" * 64, "gold": hashes, "shown": hashes}}
    manifest = {"schema_version": SCHEMA_VERSION, "kind": "eval", "eval_id": eval_dir.name, "benchmark": "mathvista", "subsets": list(SUBSETS),
                "ids": ids, "method": "maps", "without": [], "models": MODELS, "created_at": "2026-01-01T00:00:00Z",
                "team": TEAM, "selection": {"ids": ids, "scoring": hashes, "shown": hashes}, "settings": settings}
    (eval_dir / "manifest.json").write_text(json.dumps(manifest))
    with open(eval_dir / "results.jsonl", "w") as results:
        for number, fact in enumerate(facts, start=1):
            run_dir = problems_dir / fact["pid"]
            (run_dir / "images").mkdir(parents=True)
            (run_dir / "images" / "image-1.png").write_bytes(_png(number))
            records = _transcript(fact)
            (run_dir / "transcript.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
            calls = sum(1 for record in records if record["type"] == "message" and record["role"] != "user_proxy")
            usage = {"calls": calls, "prompt_tokens": 900 * calls, "completion_tokens": 120 * calls, "cost": round(0.0035 * calls, 6)}
            by_role = {role: {"calls": 1, "prompt_tokens": 900, "completion_tokens": 120, "cost": 0.0035} for role in ROLES}
            run = {"schema_version": SCHEMA_VERSION, "kind": "solve", "run_id": fact["pid"], "status": "finished", "pid": fact["pid"], "subset": fact["subset"],
                   "problem": {"question": f"Question {fact['pid']}: which mass balances the lever?", "image_files": ["images/image-1.png"]},
                   "models": MODELS, "team": TEAM,
                   "flow": {"steps": list(ROLES[:-1]), "critic": True, "reviewer": "critic", "scored": SCORED, "threshold": 5},
                   "final_answer": "4 kg", "gold": "4 kg", "correct": fact["correct"], "usage": usage, "usage_by_role": by_role}
            (run_dir / "run.json").write_text(json.dumps(run))
            row = {"schema_version": SCHEMA_VERSION, "pid": fact["pid"], "subset": fact["subset"], "status": "failed" if fact["failed"] else "ok",
                   "gold": "4 kg", "response": "4 kg", "extraction": "4 kg", "prediction": "4 kg", "correct": fact["correct"],
                   "stop_reason": "error" if fact["failed"] else ("rollback_limit" if fact["rollback"] else "critic_passed"),
                   "rollbacks": [fact["rollback"]] if fact["rollback"] else [], "feedback_step": fact["rollback"],
                   "usage": usage, "usage_by_role": by_role, "seconds": 7.5, "error": "service down" if fact["failed"] else None,
                   "metadata": {"category": "math-targeted-vqa"}, "run_dir": f"problems/{fact['pid']}", "scoring": {}}
            results.write(json.dumps(row) + "\n")
    return facts
