"""The MAPS paper's published Table 1 (table1.csv beside this file), for `maps report --paper`:
every cell as printed in the paper's second version (which corrects two cells of the first),
which version each row comes from, and which of our runs each row corresponds to."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE1_FILE = Path(__file__).with_name("table1.csv")
_FIXED = ("row", "cot", "method", "model_pattern", "source")
# What `source` names, said under the table (the paper's two versions: the first with the Big Seven
# team, the second with the Big Five).
SOURCES = {
    "v2": "the paper's second version (Big Five team), Table 1; the same cells as the first version's "
          "(Big Seven team) Table 1",
    "v2, EMMA Avg. corrected": "the paper's second version, Table 1, whose EMMA averages correct the first "
                                "version's arithmetic (Random Choice 23.00 → 21.00, the mean of 13, 23 and 27; "
                                "Human Expert 64.50 → 75.17, the mean of 75, 64.5 and 86); both versions print the "
                                "same overall Avg. for these rows (16.06, 52.73), computed from the uncorrected EMMA "
                                "averages (from the corrected ones it would be 15.39 and 56.29)",
}
OVERALL = "Avg."  # the paper's last column: the mean of the three benchmark averages


@dataclass(frozen=True)
class PaperRow:
    """One row of the paper's Table 1."""

    row: str  # the paper's model name, e.g. "GPT-4o"
    cot: str  # "✓" with chain of thought, "-" without
    method: str  # direct, cot, maps, or random/human (reference rows no run matches)
    model_pattern: str  # a model name our run must match in full (case-insensitive)
    source: str  # which version of the paper printed these cells (a key of SOURCES)
    cells: dict[str, str]  # "benchmark/subset" or "benchmark/Avg." or "Avg." -> the printed text

    @property
    def label(self) -> str:
        return f"{self.row} (CoT)" if self.cot == "✓" else self.row

    def matches(self, method: str, models: set[str]) -> bool:
        """Whether a run of `method` whose roles all use one of `models` reproduces this row."""
        if method != self.method or not self.model_pattern or len(models) != 1:
            return False
        return re.fullmatch(self.model_pattern, next(iter(models)), re.IGNORECASE) is not None

    def value(self, column: str) -> float | None:
        text = self.cells.get(column, "")
        try:
            return float(text)
        except ValueError:
            return None


@lru_cache(maxsize=1)
def table1_rows() -> tuple[PaperRow, ...]:
    """The rows of the paper's Table 1, in the paper's order."""
    with open(TABLE1_FILE, encoding="utf-8") as handle:
        reader = csv.DictReader(line for line in handle if not line.startswith("#"))
        return tuple(
            PaperRow(row["row"], row["cot"], row["method"], row["model_pattern"], row["source"],
                     {key: value for key, value in row.items() if key not in _FIXED})
            for row in reader
        )


def paper_row_for(method: str, models: set[str]) -> PaperRow | None:
    """The paper's row a run of `method` with `models` corresponds to, if any."""
    return next((row for row in table1_rows() if row.matches(method, models)), None)


def reference_notes() -> list[str]:
    """Where the paper's rows come from: one line per source, naming its rows."""
    by_source: dict[str, list[str]] = {}
    for row in table1_rows():
        by_source.setdefault(row.source, []).append(row.label)
    return [f"paper ({source}): {', '.join(labels)}: {SOURCES[source]}" for source, labels in by_source.items()]
