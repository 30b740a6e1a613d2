"""The report's figures drawn as PNG (matplotlib, the `report` extra): Figure 4 (where the
reviewer's first decision went), Figure 5 (accuracy per base model) and Figure 6 (solving time).
The data each figure draws is computed in _report.py; this module only lays it out. Every
figure is saved with its legend and labels inside the picture (nothing cut at an edge), and
every value has a mark, a zero included."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

from maps_autogen._util import missing_extra, write_bytes_file
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.records import NO_REGENERATION, NO_REVIEWER, NO_ROLLBACK_ALLOWED, NO_USABLE_REVIEW, NOT_A_STEP

PAPER_TIME_SCALE_S = 100.0  # the paper's Figure 6 shows every time relative to 100 s
# One colour per series (Figures 5 and 6), so a figure can be checked by colour.
SERIES_COLOURS = ("#3a86ff", "#e76f51", "#2a9d8f", "#b5179e", "#e9c46a", "#6a4c93", "#8ac926", "#ff595e")
# Figure 4: the n-th feedback target of the team (in team order), "none" (no regeneration), a
# failed first review with no rollback allowed, "no usable review" (the first review unreadable,
# or the problem failed before it) and no reviewer.
FEEDBACK_COLOURS = ("#b5179e", "#3a86ff", "#2a9d8f", "#e9c46a", "#6a4c93", "#e76f51", "#8ac926", "#ff595e")
NO_FEEDBACK_COLOUR = "#adb5bd"
NO_ROLLBACK_COLOUR = "#868e96"
NO_REVIEW_COLOUR = "#495057"
NO_REVIEWER_COLOUR = "#212529"
_BAR_COLOURS = {NO_REGENERATION: NO_FEEDBACK_COLOUR, NO_ROLLBACK_ALLOWED: NO_ROLLBACK_COLOUR,
                NO_USABLE_REVIEW: NO_REVIEW_COLOUR, NO_REVIEWER: NO_REVIEWER_COLOUR}
_DARK = (NO_REVIEW_COLOUR, NO_REVIEWER_COLOUR)  # their numbers in white
LABEL_WIDTH = 48  # characters per line of a wrapped legend or axis label


def _pyplot() -> Any:
    """matplotlib.pyplot, headless (the `report` extra)."""
    try:
        import matplotlib
    except ModuleNotFoundError as error:
        if error.name != "matplotlib":
            raise
        raise missing_extra("matplotlib", "report", "maps report's figures") from None

    matplotlib.use("Agg")  # headless: no display on servers and CI
    import matplotlib.pyplot as plt

    return plt


def _save_figure(fig: Any, path: Path) -> None:
    """Write a figure as PNG with the mode of every file we write, and free it. The picture is
    grown to hold everything drawn (legends outside the axes, long labels)."""
    import matplotlib.pyplot as plt

    picture = io.BytesIO()
    try:
        fig.savefig(picture, format="png", dpi=120, bbox_inches="tight", pad_inches=0.15)
    finally:
        plt.close(fig)
    write_bytes_file(path, picture.getvalue())  # the one writer: atomic, a full disk one line


def _wrapped(label: str) -> str:
    return "\n".join(textwrap.wrap(label, LABEL_WIDTH)) or label


def target_label(target: str) -> str:
    """A Figure 4 bar's name."""
    labels = {NO_REGENERATION: "no regeneration", NO_ROLLBACK_ALLOWED: "review failed, no rollback allowed",
              NO_USABLE_REVIEW: "no usable review (unreadable, or failed before one)", NO_REVIEWER: "no reviewer"}
    return labels[target] if target in labels else target.capitalize()


def all_targets(shares: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """The feedback targets of every bar, each once, in order: steps, then "none", then the other
    bars that are no step (records.NOT_A_STEP's order)."""
    targets = list(dict.fromkeys(t for per_row in shares.values() for row in per_row.values() for t in row))
    return sorted(targets, key=lambda target: NOT_A_STEP.index(target) + 1 if target in NOT_A_STEP else 0)


def bar_names(shares: dict[str, dict[str, dict[str, float]]]) -> list[tuple[str, str, str]]:
    """(benchmark, row label, the bar's name) per Figure 4 bar: the benchmark's title, and the
    row's label when some benchmark has several rows."""
    several = any(len(rows) > 1 for rows in shares.values()) or len(
        {label for rows in shares.values() for label in rows}) > 1
    return [(benchmark, label, f"{get_benchmark(benchmark).task.title}: {label}" if several
             else get_benchmark(benchmark).task.title)
            for benchmark, rows in shares.items() for label in rows]


def plot_feedback(shares: dict[str, dict[str, dict[str, float]]], path: Path) -> Path:
    """Figure 4: a stacked bar per benchmark and row of where the reviewer's first decision went."""
    plt = _pyplot()
    bars = bar_names(shares)
    fig, ax = plt.subplots(figsize=(9.5, 1.6 + 0.7 * len(bars)))
    names = [_wrapped(name) for _, _, name in bars]
    left = [0.0] * len(bars)
    for number, target in enumerate(all_targets(shares)):
        values = [100 * shares[benchmark][label].get(target, 0.0) for benchmark, label, _ in bars]
        colour = _BAR_COLOURS.get(target, FEEDBACK_COLOURS[number % len(FEEDBACK_COLOURS)])
        drawn = ax.barh(names, values, left=left, color=colour, label=target_label(target))
        for bar, value in zip(drawn, values):
            if value >= 6:
                ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, f"{value:.0f}%",
                        ha="center", va="center", fontsize=8,
                        color="white" if colour in _DARK else "black")
        left = [start + v for start, v in zip(left, values)]
    ax.set_xlim(0, 100)
    ax.invert_yaxis()  # the first benchmark on top, as listed
    ax.set_xlabel("share of problems (%): each counted once, by the reviewer's first decision")
    ax.set_title("Where the reviewer's first decision went")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    _save_figure(fig, path)
    return path


def _legend_below(fig: Any, handles: list[Any], labels: list[str]) -> None:
    """A legend under the panels, one column per label up to three, each label wrapped."""
    fig.legend(handles, [_wrapped(label) for label in labels], loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(3, len(labels)), fontsize=8, frameon=False)


def plot_times(times: dict[str, dict[str, Any]], path: Path, *, paper_scale: bool = False) -> Path:
    """Figure 6: one panel per property, titled with the data field each benchmark's values
    come from; one line per series (a report row) over the panel's values, every panel on the
    same time axis; on the paper's scale, each time relative to 100 s (1.0 = 100 s)."""
    plt = _pyplot()
    labels = list(dict.fromkeys(label for panel in times.values() for label in panel["series"]))
    colours = {label: SERIES_COLOURS[n % len(SERIES_COLOURS)] for n, label in enumerate(labels)}
    fig, axes = plt.subplots(1, len(times), figsize=(4.2 * len(times), 4.4), squeeze=False, sharey=True)
    scale = PAPER_TIME_SCALE_S if paper_scale else 1.0
    for ax, (panel, data) in zip(axes[0], times.items()):
        values = data["values"]
        for label, seconds in data["series"].items():
            ys = [float("nan") if t is None else t / scale for t in seconds]
            ax.plot(range(len(values)), ys, marker="o", color=colours[label], label=label)
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels([v if len(v) <= 28 else v[:27] + "…" for v in values], rotation=35, ha="right", fontsize=8)
        fields = ", ".join(f"{get_benchmark(b).task.title}: {field}" for b, field in data["fields"].items())
        ax.set_title(f"by {panel}\n({_wrapped(fields)})", fontsize=9)
    axes[0][0].set_ylim(bottom=0)
    axes[0][0].set_ylabel(
        f"solving time relative to {PAPER_TIME_SCALE_S:.0f} s" if paper_scale else "mean solving time (s)"
    )
    handles = [plt.Line2D([0], [0], color=colours[label], marker="o") for label in labels]
    fig.suptitle(
        f"Solving time relative to {PAPER_TIME_SCALE_S:.0f} s (the paper's scale)" if paper_scale else "Solving time"
    )
    fig.tight_layout()
    _legend_below(fig, handles, labels)
    _save_figure(fig, path)
    return path


def plot_models(data: dict[str, dict[str, dict[str, float]]], path: Path) -> Path:
    """Figure 5: accuracy per subset and pooled, one panel per benchmark, one bar colour per
    row (method and base model), as the paper compares base models with and without MAPS. Each
    bar carries its value; a bar of 0 is drawn as a line on the axis, so it is seen."""
    plt = _pyplot()
    labels = list(dict.fromkeys(label for rows in data.values() for label in rows))
    colours = {label: SERIES_COLOURS[n % len(SERIES_COLOURS)] for n, label in enumerate(labels)}
    fig, axes = plt.subplots(1, len(data), figsize=(max(5.0, 1.2 + 1.1 * len(labels)) * len(data), 4.2), squeeze=False)
    for ax, (benchmark, rows) in zip(axes[0], data.items()):
        task = get_benchmark(benchmark).task
        known = {s.name for s in task.subsets}
        ran = dict.fromkeys(name for values in rows.values() for name in values if name != "Avg.")
        groups = (
            [s.name for s in task.subsets if s.name in ran] + [name for name in ran if name not in known] + ["Avg."]
        )
        width = 0.8 / max(1, len(rows))
        for n, (label, values) in enumerate(rows.items()):
            xs = [g + (n - (len(rows) - 1) / 2) * width for g, name in enumerate(groups) if name in values]
            heights = [values[name] for name in groups if name in values]
            ax.bar(xs, heights, width=width * 0.92, color=colours[label])
            for x, height in zip(xs, heights):
                if height == 0:  # no bar to see: a line on the axis in the row's colour
                    ax.plot([x - width * 0.4, x + width * 0.4], [0, 0], color=colours[label], linewidth=4,
                            solid_capstyle="butt", clip_on=False, zorder=3)
                ax.text(x, height + 1, f"{height:.0f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(groups)))
        columns = {s.name: s.column for s in task.subsets}
        ax.set_xticklabels([columns.get(name, name) for name in groups], fontsize=9)
        ax.set_ylim(0, 105)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(task.title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[label]) for label in labels]
    fig.suptitle("Accuracy per base model")
    fig.tight_layout()
    _legend_below(fig, handles, labels)
    _save_figure(fig, path)
    return path


__all__ = ["FEEDBACK_COLOURS", "NO_FEEDBACK_COLOUR", "NO_REVIEWER_COLOUR", "NO_REVIEW_COLOUR", "NO_ROLLBACK_COLOUR",
           "PAPER_TIME_SCALE_S", "SERIES_COLOURS", "all_targets", "bar_names", "plot_feedback", "plot_models",
           "plot_times", "target_label"]
