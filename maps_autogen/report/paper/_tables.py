"""The MAPS paper's published Tables 1 and 2 (table1.csv and table2.csv beside this file), for
`maps report --paper`: every cell as printed (Table 1 in the paper's second version, which
corrects two cells of the first; Table 2 the same in both), which version each row comes from,
which of our runs each row corresponds to, and which printed figures do not follow from the
paper's own numbers (`table2_checks`, `human_margin`)."""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TABLE1_FILE = Path(__file__).with_name("table1.csv")
TABLE2_FILE = Path(__file__).with_name("table2.csv")
TABLE2_BENCHMARK = "olympiadbench"  # the paper's ablations ran on OlympiadBench only
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


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


@dataclass(frozen=True)
class AblationRow:
    """One row of the paper's Table 2: the full team, or the team without one agent."""

    row: str  # the paper's name, e.g. "w/o Interpreter"
    without: str  # the paper's agent left out, lower case ("" for the full team)
    source: str
    cells: dict[str, str]  # "olympiadbench/<subset>" or "olympiadbench/Avg." -> the printed text

    def value(self, column: str) -> float | None:
        try:
            return float(self.cells.get(column, ""))
        except ValueError:
            return None


@lru_cache(maxsize=1)
def table2_rows() -> tuple[AblationRow, ...]:
    """The rows of the paper's Table 2, in the paper's order."""
    fixed = ("row", "without", "source")
    return tuple(AblationRow(row["row"], row["without"], row["source"],
                             {key: value for key, value in row.items() if key not in fixed})
                 for row in _read(TABLE2_FILE))


@dataclass(frozen=True)
class Flag:
    """A printed cell that does not follow from the paper's own numbers, and why."""

    row: str
    column: str  # "olympiadbench/<subset>" or "olympiadbench/Avg."
    printed: float
    why: str
    follows: float | None = None  # an Avg.: what the row's own cells give


def table2_checks(sizes: Mapping[str, int]) -> list[Flag]:
    """The cells of the paper's Table 2 that its own numbers contradict, with `sizes` the problems
    of each subset (the paper's Table 3): a cell no whole number of its subset's problems gives
    (k/n to two decimals), and an Avg. that is not the mean of its row's cells weighted by the
    subsets' sizes (as the paper's other averages are; allowing for the cells' rounding)."""
    flags: list[Flag] = []
    total = sum(sizes.values())
    for row in table2_rows():
        cells = {subset: row.value(f"{TABLE2_BENCHMARK}/{subset}") for subset in sizes}
        for subset, value in cells.items():
            n = sizes[subset]
            if value is not None and all(round(100 * k / n, 2) != value for k in range(n + 1)):
                below = int(value * n / 100)
                flags.append(Flag(row.row, f"{TABLE2_BENCHMARK}/{subset}", value,
                                  f"no whole number of the {n} problems gives {value:.2f}% ({below}/{n} = "
                                  f"{100 * below / n:.2f}, {below + 1}/{n} = {100 * (below + 1) / n:.2f})"))
        printed = row.value(f"{TABLE2_BENCHMARK}/Avg.")
        if printed is None or any(value is None for value in cells.values()) or not total:
            continue
        weighted = sum((value or 0.0) * sizes[subset] for subset, value in cells.items()) / total
        if abs(weighted - printed) > 0.01:
            plain = sum(value or 0.0 for value in cells.values()) / len(cells)
            flags.append(Flag(row.row, f"{TABLE2_BENCHMARK}/Avg.", printed,
                              f"its cells weighted by the subsets' sizes ({', '.join(map(str, sizes.values()))}) "
                              f"give {weighted:.2f} (their plain mean {plain:.2f}), not the printed {printed:.2f}",
                              round(weighted, 2)))
    return flags


@dataclass(frozen=True)
class HumanMargin:
    """MAPS against the Human Expert row, overall: as printed, and with the corrected EMMA average."""

    maps: float  # MAPS's overall Avg.
    human_printed: float  # the Human Expert's overall Avg. as printed (from the uncorrected EMMA average)
    human_corrected: float  # the mean of its benchmark averages as the second version prints them

    @property
    def printed(self) -> float:
        return round(self.maps - self.human_printed, 2)

    @property
    def corrected(self) -> float:
        return round(self.maps - self.human_corrected, 2)


def human_margin() -> HumanMargin | None:
    """How far MAPS's overall average is above the Human Expert's, from the paper's Table 1: the
    paper says 3.58 (56.31 - 52.73); the Human Expert's overall average from its corrected EMMA
    average (75.17) is the mean of its three benchmark averages. None if a row is missing."""
    rows = {row.method: row for row in table1_rows()}
    if "maps" not in rows or "human" not in rows:
        return None
    maps, human = rows["maps"], rows["human"]
    averages = [value for key in human.cells if key.endswith("/Avg.") and (value := human.value(key)) is not None]
    overall, printed = maps.value(OVERALL), human.value(OVERALL)
    if overall is None or printed is None or not averages:
        return None
    return HumanMargin(overall, printed, round(sum(averages) / len(averages), 2))
