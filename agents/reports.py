"""What the experiments' reports share: markdown tables, PNG plots, and the baselines a win rate is read against.

Report writers compute their numbers first (rows of dicts), then format them
with these helpers. Where timings were measured: :func:`agents.runs.machine_text`.
"""

from __future__ import annotations

import os
from typing import Sequence

#: The baseline players of :func:`baselines`: the uniformly random player, greedy capture, and alpha-beta
#: search on material to depth 1 and 2 (depth 1 also takes a mate in one; depth 2 also avoids one).
BASELINES = ("random", "greedy", "minimax-d1", "minimax-d2")


def baseline_agent(name: str, seed: int = 0):
    """The baseline player called ``name`` (one of :data:`BASELINES`), seeded."""
    from agents.greedy import GreedyAgent
    from agents.minimax import MinimaxAgent
    from agents.random_agent import RandomAgent

    if name == "random":
        return RandomAgent(seed)
    if name == "greedy":
        return GreedyAgent(seed)
    if name.startswith("minimax-d") and name[9:].isdigit():
        return MinimaxAgent(int(name[9:]), seed=seed)
    raise ValueError(f"unknown baseline {name!r}; the baselines are {list(BASELINES)}")


def baselines(variant: str, colors: Sequence[str] = ("white", "black"), games: int = 500, seed: int = 0) -> list[dict]:
    """Win rates of the baseline players against the random player, computed now.

    One row per baseline and color: ``versus_random`` over ``games`` games (the same protocol as
    the trained agents' rows), so a trained agent's win rate can be read against random play and
    against greedy capture (which wins most games under king capture by taking an exposed king) and
    against shallow search.
    """
    from agents.evaluation import versus_random

    rows = []
    for name in BASELINES:
        for color in colors:
            agent = baseline_agent(name, seed)
            match = versus_random(agent, variant, games=games, color=color, seed=seed)
            lo, hi = match.win_interval
            rows.append({"player": name, "variant": variant, "color": color, "games": match.games,
                         "wins": match.wins, "draws": match.draws, "losses": match.losses,
                         "win_rate": match.win_rate, "win_low": lo, "win_high": hi})
    return rows


def baseline_table(rows: list[dict]) -> str:
    """The rows of :func:`baselines` as a markdown table."""
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


def generation_throughput(total: dict) -> str:
    """The engine games' cost from :func:`agents.games.generate_games`'s ``"total"``, as a phrase."""
    rate = total["positions_per_s_per_worker"]
    if rate is None:
        return "generation throughput not recorded"
    return f"{rate:,.0f} positions/s per worker while generating"
