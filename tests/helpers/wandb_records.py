"""An offline W&B run read back: the records of its run-<id>.wandb file, each parsed with wandb's own
protobuf schema (`wandb.proto.wandb_internal_pb2.Record`). The file is W&B's transaction log: a
7-byte header (":W&B", a magic number, a version) and then LevelDB's log format: 32 KiB blocks of
chunks, each with a CRC-32C, a little-endian length and a type (full, first, middle, last); a block's
tail shorter than a chunk header is padding."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = 7
BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def payloads(path: Path) -> Iterator[bytes]:
    """Each record's bytes, chunks joined."""
    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:8]
    position, pending = HEADER, b""
    while position + CHUNK_HEADER <= len(data):
        left_in_block = BLOCK - position % BLOCK
        if left_in_block < CHUNK_HEADER:
            position += left_in_block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[position:position + CHUNK_HEADER])
        chunk = data[position + CHUNK_HEADER:position + CHUNK_HEADER + length]
        position += CHUNK_HEADER + length
        if kind == FULL:
            yield chunk
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            yield pending + chunk
            pending = b""
        elif kind == 0 and length == 0:  # zero padding
            continue


@dataclass
class OfflineRun:
    """What an offline run recorded: its config, history rows, summary and artifacts."""

    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # name -> (type, its files)


def read_offline_run(run_file: Path) -> OfflineRun:
    from wandb.proto import wandb_internal_pb2

    run = OfflineRun()
    for payload in payloads(run_file):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(payload)
        which = record.WhichOneof("record_type")
        if which == "run":
            run.config.update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        elif which == "config":
            run.config.update({item.key: json.loads(item.value_json) for item in record.config.update})
        elif which == "history":
            run.history.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                                for item in record.history.item})
        elif which == "summary":
            run.summary.update({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                                for item in record.summary.update})
        elif which == "artifact":
            files = [entry.path for entry in record.artifact.manifest.contents]
            run.artifacts[record.artifact.name] = (record.artifact.type, files)
    # W&B keeps its own bookkeeping under _wandb; the config's values are under "value"
    run.config = {key: value["value"] if isinstance(value, dict) and set(value) == {"value"} else value
                  for key, value in run.config.items() if key != "_wandb"}
    return run
