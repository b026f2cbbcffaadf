"""Small helpers the experiments share to write their reports: markdown tables and PNG plots."""

from __future__ import annotations

import os
from typing import Sequence


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
    """A PNG of curves with their own x values (``{label: (xs, ys)}``), optionally a labelled horizontal line."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: skipping {os.path.basename(path)} (pip install matplotlib)")
        return False
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for label, (xs, ys) in curves.items():
        ax.plot(xs, ys, marker="o", markersize=2.5, linewidth=1.4, label=label)
    if hline is not None:
        ax.axhline(hline[0], color="grey", linestyle="--", linewidth=1, label=hline[1])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True
