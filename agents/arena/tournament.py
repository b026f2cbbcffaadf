"""Checkpoint tournaments: how a run's saved networks compare with each other and with an engine (who plays whom,
and how they are rated: docs/supervised.md).

>>> result = checkpoint_tournament(["runs/x/agents/epoch-000", "runs/x/agents/epoch-005"], "gardner")  # doctest: +SKIP
>>> print(tournament_table(result))  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Sequence

from agents.arena import MatchResult, all_games, close_agents, rating_results, run_tournament
from agents.base import load
from agents.arena.ladder import engine_levels
from agents.arena.ratings import Rating, elo_mle
from agents.reports import markdown_table


@dataclasses.dataclass
class TournamentResult:
    """The players in order (checkpoints, then engine levels), their ratings and the matches played."""

    checkpoints: list[str]
    engines: list[str]
    ratings: dict[str, Rating]
    matches: list[MatchResult]
    prior_draws: float = 1.0


def checkpoint_tournament(checkpoints: Sequence[str], variant: str, engine_nodes: Sequence[int] = (1, 10, 100),
                          games: int = 20, seed: int = 0, workers: int = 1, opening_plies: int = 2,
                          simulations: int | None = None, prior_draws: float = 1.0, engine: str | None = None,
                          progress: Callable | None = None) -> TournamentResult:
    """Play and rate saved agents (a run's checkpoints, in order) and engine levels.

    :param checkpoints: saved-agent directories, oldest first; named by their directory.
    :param engine_nodes: UCI ``go nodes`` budgets of the engine levels (empty: no engine).
    :param games: games per pairing, colours alternating.
    :param simulations: search budget for AlphaZero checkpoints (default: as saved).
    :param prior_draws: virtual draws per pairing, so that a clean sweep has a finite rating.
    """
    if len(checkpoints) < 1:
        raise ValueError("give at least one checkpoint")
    players = []
    for path in checkpoints:
        agent = load(path)
        if simulations is not None and hasattr(agent, "simulations"):  # a searching agent (AlphaZero)
            agent = type(agent).load(path, simulations=simulations)
        agent.name = os.path.basename(os.path.normpath(path))
        players.append(agent)
    names = [p.name for p in players]
    if len(set(names)) < len(names):
        raise ValueError(f"checkpoint directories need distinct names: {names}")
    engines = engine_levels(variant, engine_nodes, engine)
    everyone = players + engines
    k = len(players)
    pairings = [(i, i + 1) for i in range(k - 1)]  # each checkpoint against the next
    pairings += [(0, i) for i in range(2, k)]  # ... and against the first, the reference
    pairings += [(i, k + e) for i in range(k) for e in range(len(engines))]  # ... and every engine level
    pairings += [(k + e, k + e + 1) for e in range(len(engines) - 1)]  # engine levels against each other
    try:
        matches = run_tournament(everyone, variant, games, seed, pairings=pairings, workers=workers,
                                 progress=progress, opening_plies=opening_plies, illegal="forfeit")
    finally:
        close_agents(engines)
    ratings = elo_mle(rating_results(all_games(matches)), anchor=names[0], prior_draws=prior_draws,
                      players=[p.name for p in everyone])
    return TournamentResult(names, [e.name for e in engines], ratings, matches, prior_draws)


def tournament_table(result: TournamentResult) -> str:
    """Markdown: each player's Elo (relative to the first checkpoint), 95% interval, games and mean score."""
    rows = []
    for name in result.checkpoints + result.engines:
        r = result.ratings[name]
        rows.append([name, f"{r.elo:+.0f}", f"[{r.low:+.0f}, {r.high:+.0f}]", r.games, f"{r.score:.3f}"])
    return markdown_table(["player", "Elo", "95% interval", "games", "score"], rows)


def pairings_table(result: TournamentResult) -> str:
    """Markdown: each pairing's results from its first player's side, and the Elo difference that pairing's
    games alone give (same model and prior as the ratings), for the reader to check the fit against."""
    rows = []
    for match in result.matches:
        t = match.tally()
        alone = elo_mle(rating_results(match.games), anchor=match.b, prior_draws=result.prior_draws)[match.a]
        rows.append([f"{match.a} vs {match.b}", f"{t.wins}-{t.draws}-{t.losses}", f"{t.score:.3f}",
                     f"{alone.elo:+.0f} [{alone.low:+.0f}, {alone.high:+.0f}]"])
    return markdown_table(["pairing", "W-D-L", "score", "Elo difference from these games alone"], rows)


def tournament_plot(result: TournamentResult, path: str, title: str = "Elo of the checkpoints") -> None:
    """Elo of each checkpoint with its interval, engine levels as horizontal lines (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    x = range(len(result.checkpoints))
    rated = [result.ratings[n] for n in result.checkpoints]
    ax.errorbar(x, [r.elo for r in rated], yerr=[[r.elo - r.low for r in rated], [r.high - r.elo for r in rated]],
                marker="o", capsize=3, label="checkpoints (95% interval)")
    for name in result.engines:
        ax.axhline(result.ratings[name].elo, linestyle="--", linewidth=1, color="gray")
        ax.annotate(name, (len(result.checkpoints) - 1, result.ratings[name].elo), fontsize=8, color="gray",
                    va="bottom", ha="right")
    ax.set_xticks(list(x), result.checkpoints, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(f"Elo (relative to {result.checkpoints[0]})")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
