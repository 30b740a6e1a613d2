"""A stand-in for the model server a Slurm task starts itself (examples/slurm/shards.sbatch with
MAPS_SERVE): the scripted server in a process of its own, answering the chat API with scripted
replies and vLLM's GET /health with 503 until the gate file exists (then 200), so a test decides when
the server is "healthy". It notes each start in STARTED (one line: its port) and runs until SIGTERM.

    python -m tests.helpers.standin_server PORT ANSWERS_JSON GATE STARTED
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from tests.helpers.eval_fixtures import ProblemScript
from tests.helpers.fake_openai import FakeOpenAI


def main(port: int, answers: Path, gate: Path, started: Path) -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with FakeOpenAI(ProblemScript(json.loads(answers.read_text())), port=port) as server:
        server.healthy = gate.exists
        with open(started, "a") as note:
            note.write(f"{port}\n")
        stop.wait()


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
