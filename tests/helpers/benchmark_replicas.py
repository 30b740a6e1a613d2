"""Shared by the tests of tests/e2e/test_benchmark_replicas.py and others: hub_parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets


def hub_parquet(path: Path, rows: list[dict[str, Any]], features: datasets.Features, shards: int = 1) -> list[Path]:
    """Parquet as the hub serves it (written by `datasets`, images as {bytes, path}), in
    `shards` files named the hub's way when there are several."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for shard in range(shards):
        target = path if shards == 1 else path.with_name(path.name.replace("00000-of-00001", f"{shard:05d}-of-{shards:05d}"))
        datasets.Dataset.from_list(rows[shard::shards], features=features).to_parquet(str(target))
        written.append(target)
    return written
