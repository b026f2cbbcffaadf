"""What the experiments' reports share: markdown tables, PNG plots, and the baselines a win rate is read against.

Report writers compute their numbers first (rows of dicts), then format them
with these helpers. Where timings were measured: :func:`agents.runs.machine_text`.
"""

from __future__ import annotations

import os
from typing import Sequence

from minichess_envs.extras import MissingExtraError, require

def baseline_table(rows: list[dict]) -> str:
    """The rows of :func:`agents.arena.evaluation.baselines` as a markdown table."""
    return markdown_table(
        ["baseline", "variant", "as", "W-D-L", "win rate vs random [95% Wilson]"],
        [[f"{r['player']} vs random", r["variant"], r["color"], f"{r['wins']}-{r['draws']}-{r['losses']}",
          f"{r['win_rate']:.3f} [{r['win_low']:.3f}, {r['win_high']:.3f}]"] for r in rows])


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def line_plot(path: str, x: Sequence[float], series: dict[str, Sequence[float]], xlabel: str, ylabel: str,
              title: str) -> bool:
    """Write a PNG line plot of series over shared x values; ``False`` (and a note) without matplotlib."""
    return curves_plot(path, {label: (x[: len(ys)], ys) for label, ys in series.items()}, xlabel, ylabel, title)


def curves_plot(path: str, curves: dict[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str,
                title: str, hline: tuple[float, str] | None = None) -> bool:
    """A PNG of curves with their own x values (``{label: (xs, ys)}``), optionally a labelled horizontal line.

    ``False`` (and a note naming the extra) without matplotlib.
    """
    try:
        fig = curves_figure(curves, xlabel, ylabel, title, hline)
    except MissingExtraError as exc:
        print(f"skipping {os.path.basename(path)}: {exc}")
        return False
    fig.savefig(path)
    _pyplot().close(fig)
    return True


#: The i-th curve's marker is ``MARKERS[i % 8]``, its line style ``LINESTYLES[(i + i // 8) % 4]``: no two of
#: the first 32 curves look alike, so where curves coincide (two probes with the same value) both still show.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")


def curves_figure(curves: dict[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str,
                  title: str, hline: tuple[float, str] | None = None):
    """The matplotlib figure of :func:`curves_plot` (for a caller to save or inspect; close it after).

    Each curve has its own marker and line style (:data:`MARKERS`); an axis whose x values are all
    whole numbers (iterations, steps) ticks at whole numbers only.
    """
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    whole = True
    for i, (label, (xs, ys)) in enumerate(curves.items()):
        # hollow markers, each smaller than the last: coinciding points show as nested shapes
        ax.plot(xs, ys, marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[(i + i // len(MARKERS)) % 4],
                markersize=max(7 - 0.5 * i, 3), fillstyle="none", linewidth=1.4, label=label)
        whole = whole and all(float(x).is_integer() for x in xs)
    if whole:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # iteration 1, 2, 3: never 1.25, 1.5
    if hline is not None:
        ax.axhline(hline[0], color="grey", linestyle="--", linewidth=1, label=hline[1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def interval_bars_plot(path: str, labels: Sequence[str], series: dict[str, Sequence[tuple[float, float, float]]],
                       xlabel: str, title: str) -> bool:
    """A PNG of horizontal bars with error bars: ``series`` maps a legend label to one ``(value, low, high)``
    per entry of ``labels`` (a win rate and its 95% interval, say). ``False`` (and a note) without matplotlib."""
    try:
        plt = _pyplot()
    except MissingExtraError as exc:
        print(f"skipping {os.path.basename(path)}: {exc}")
        return False
    height = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.35 * len(labels) * len(series)), dpi=110)
    for i, (name, triples) in enumerate(series.items()):
        ys = [k + (i - (len(series) - 1) / 2) * height for k in range(len(labels))]
        values = [t[0] for t in triples]
        errors = [[t[0] - t[1] for t in triples], [t[2] - t[0] for t in triples]]
        ax.barh(ys, values, height=height, xerr=errors, capsize=2, label=name, hatch=("", "//", "..", "xx")[i % 4])
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()  # the first label at the top, as in the report's table
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _pyplot():
    """matplotlib.pyplot drawing to files only (no display); :class:`MissingExtraError` without matplotlib."""
    matplotlib = require("matplotlib", purpose="plotting")
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", purpose="plotting")


def generation_throughput(total: dict) -> str:
    """The engine games' cost from :func:`agents.supervised.engine_games.generate_games`'s ``"total"``, as a phrase."""
    rate = total["positions_per_s_per_worker"]
    if rate is None:
        return "generation throughput not recorded"
    return f"{rate:,.0f} positions/s per worker while generating"
