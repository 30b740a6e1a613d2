"""`maps report`'s paired comparisons: each full MAPS run against each baseline and each ablation
run of the same benchmark, problem by problem, when both ran the same problems: the difference
of their accuracies with its 95% interval and the exact McNemar p-value of the problems only one
of them got right (eval/_intervals.py). Runs on different problems are never compared this way;
the report names them. A problem either run failed without a verdict is left out of the pair
(never counted wrong), and the pair says how many."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maps_autogen._util import markdown_table, markdown_text
from maps_autogen.benchmarks import NAMES as BENCHMARK_ORDER
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval import PairedComparison, Run, group_runs

METHOD = ("the difference is MAPS's accuracy minus the other row's on the problems both scored, in points, with "
          "the Bonett-Price adjusted Wald 95% interval for paired proportions; p is the two-sided exact McNemar "
          "test (a binomial test at 1/2) on the problems only one of the two got right")


@dataclass(frozen=True)
class Pair:
    """One comparison: the benchmark, the MAPS row, the row it is compared with, its counts, and
    the problems left out because one of the two runs failed on them."""

    benchmark: str
    maps: str
    other: str
    kind: str  # "baseline" or "ablation"
    counts: PairedComparison
    left_out: int

    def as_json(self) -> dict[str, Any]:
        interval = self.counts.interval()
        difference = self.counts.difference
        return {"benchmark": self.benchmark, "row": self.maps, "against": self.other, "kind": self.kind,
                "problems": self.counts.n, "left_out_failed": self.left_out, "both_right": self.counts.both,
                "maps_only_right": self.counts.first_only, "other_only_right": self.counts.second_only,
                "both_wrong": self.counts.neither,
                "difference_points": None if difference is None else round(100 * difference, 2),
                "interval_points": None if interval is None else [round(100 * bound, 2) for bound in interval],
                "mcnemar_exact_p": self.counts.p_value}


@dataclass(frozen=True)
class Unpaired:
    """Two runs not compared problem by problem, and why."""

    benchmark: str
    maps: str
    other: str
    why: str

    def as_json(self) -> dict[str, str]:
        return {"benchmark": self.benchmark, "row": self.maps, "against": self.other, "why": self.why}


def _verdicts(run: Run) -> dict[str, bool | None]:
    """Each problem's verdict (None: it failed without one), by its id."""
    return {str(record.pid): bool(record.correct) if record.status == "ok" else None for record in run.records}


def _compare(benchmark: str, maps: Run, other: Run) -> Pair | Unpaired:
    mine, theirs = _verdicts(maps), _verdicts(other)
    kind = "ablation" if other.method == "maps" else "baseline"
    if set(mine) != set(theirs):
        only_mine, only_theirs = len(set(mine) - set(theirs)), len(set(theirs) - set(mine))
        return Unpaired(benchmark, maps.label, other.label,
                        f"not the same problems ({only_mine} only in the first, {only_theirs} only in the second)")
    both = [(bool(mine[pid]), bool(theirs[pid])) for pid in mine if mine[pid] is not None and theirs[pid] is not None]
    counts = PairedComparison(both=sum(a and b for a, b in both), first_only=sum(a and not b for a, b in both),
                              second_only=sum(b and not a for a, b in both),
                              neither=sum(not a and not b for a, b in both))
    return Pair(benchmark, maps.label, other.label, kind, counts, len(mine) - len(both))


def paired_comparisons(runs: Sequence[Run]) -> tuple[list[Pair], list[Unpaired]]:
    """Every full MAPS run against every baseline and ablation run of its benchmark: compared
    problem by problem when both ran exactly the same problems, else named as not compared."""
    group_runs(runs)  # the rows' labels
    pairs: list[Pair] = []
    unpaired: list[Unpaired] = []
    for benchmark in BENCHMARK_ORDER:
        mine = [run for run in runs if run.benchmark == benchmark]
        for maps in (run for run in mine if run.method == "maps" and not run.without):
            for other in (run for run in mine if run is not maps and (run.method != "maps" or run.without)):
                result = _compare(benchmark, maps, other)
                if isinstance(result, Pair):
                    pairs.append(result)
                else:
                    unpaired.append(result)
    return pairs, unpaired


def paired_table(pairs: Sequence[Pair], unpaired: Sequence[Unpaired]) -> str:
    """The comparisons as Markdown, how they were computed, and the runs not compared."""
    body = []
    for pair in pairs:
        interval, difference = pair.counts.interval(), pair.counts.difference
        body.append([get_benchmark(pair.benchmark).task.title, pair.maps, pair.other, str(pair.counts.n),
                     str(pair.counts.first_only), str(pair.counts.second_only),
                     "-" if difference is None or interval is None else
                     f"{100 * difference:+.2f} [{100 * interval[0]:+.2f}, {100 * interval[1]:+.2f}]",
                     f"{pair.counts.p_value:.4g}", str(pair.left_out)])
    parts = []
    if body:
        parts.append(markdown_table(["Benchmark", "MAPS row", "Against", "Problems", "Only MAPS right",
                                     "Only it right", "Difference (points) [95% CI]", "McNemar exact p",
                                     "Left out (failed)"], body))
        parts.append(f"On the problems both rows ran and scored: {METHOD}. A problem either run failed on has no "
                     "verdict and is left out of the pair (never counted wrong).")
    if unpaired:
        parts.append("Not compared problem by problem (runs on different problems): " + "; ".join(
            f"{markdown_text(item.maps)} against {markdown_text(item.other)} on "
            f"{get_benchmark(item.benchmark).task.title}: {markdown_text(item.why)}"
            for item in unpaired) + ".")
    return "\n\n".join(parts)


__all__ = ["METHOD", "Pair", "Unpaired", "paired_comparisons", "paired_table"]
