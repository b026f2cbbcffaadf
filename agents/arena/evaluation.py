"""Evaluations beside the arena's matches: against the envs' random player, and moves against exact values.

- :func:`versus_random`: a chess agent against the environments' random
  opponent, a whole batch of games in lockstep, so an agent with ``act_batch``
  (a network) is called once per ply for all of them.
- :func:`score_moves`: the share of positions where a player's move keeps the
  game's exact value (a win stays a win, a draw a draw), with the blunders
  counted; the values come from a judge (a solver, a tablebase).

>>> result = versus_random(agent, "gardner", games=1000, color="white", seed=0)   # doctest: +SKIP
>>> result.win_rate, result.win_interval                                           # doctest: +SKIP
>>> score_moves(games, choose_actions(agent, games, batch=256), move_values)       # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from agents.arena.ratings import wilson_interval
from agents.players.greedy import GreedyAgent
from agents.players.minimax import MinimaxAgent
from agents.players.random_agent import RandomAgent
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import BLACK, WHITE, Position
from minichess_envs.env import Duel, Opponent
from minichess_envs.players import check_player, choose_actions, player_name
from minichess_envs.variants import get_variant


@dataclasses.dataclass(frozen=True)
class RandomMatch:
    """Results of an agent against the random player, from the agent's side."""

    variant: str
    color: str
    wins: int
    draws: int
    losses: int
    truncated: int  # of the draws: games stopped by the ply limit
    mean_plies: float

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def win_rate(self) -> float:
        return self.wins / self.games

    @property
    def score(self) -> float:
        """Points per game: 1 a win, 1/2 a draw."""
        return (self.wins + 0.5 * self.draws) / self.games

    @property
    def win_interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the win rate."""
        return wilson_interval(self.wins, self.games)

    @property
    def score_interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the score (draws as half a success)."""
        return wilson_interval(self.wins + 0.5 * self.draws, self.games)

    def __str__(self) -> str:
        lo, hi = self.win_interval
        return (f"{self.variant} as {self.color}: {self.wins}-{self.draws}-{self.losses} (W-D-L) of {self.games}, "
                f"win rate {self.win_rate:.3f} [{lo:.3f}, {hi:.3f}], score {self.score:.3f}")


def versus_random(agent, variant: str = "gardner", games: int = 1000, color: str = "white", seed: int = 0,
                  batch: int = 250, ply_limit: int | None = None, visited: list | None = None) -> RandomMatch:
    """Play ``games`` games of ``agent`` (as ``color``) against the environments' random player.

    Each game is the single-agent env's episode (:class:`~minichess_envs.env.Duel`),
    game ``i`` seeded ``seed + i``; ``batch`` games run together and the agent
    sees them in one ``act_batch`` call per ply when it has one. A game that
    reaches the ply limit is a draw (also counted in ``truncated``).

    :param visited: if given, each finished game appends ``(fens, reward)`` to
        it: the FENs of the positions the agent moved in, in order, and the
        game's reward for the agent (+1, 0 or -1).
    """
    if color not in ("white", "black"):
        raise ValueError(f"color must be 'white' or 'black', not {color!r}")
    check_player(agent)
    player, name = agent, player_name(agent)
    v = get_variant(variant)
    encoding = ObservationEncoding(v)
    limit = v.ply_limit if ply_limit is None else int(ply_limit)
    learner = WHITE if color == "white" else BLACK
    wins = draws = losses = truncated = 0
    plies = []
    for first in range(0, games, batch):
        duels = []
        for i in range(first, min(first + batch, games)):
            duel = Duel(Opponent(None, encoding), "outcome", 0.0, limit)
            duel.start(Position(v), learner, np.random.default_rng(seed + i))
            duels.append(duel)
        if hasattr(player, "reset"):
            player.reset(seed + first)
        live = list(range(len(duels)))
        seen = [[] for _ in duels]
        while live:
            positions = [duels[i].position for i in live]
            if visited is not None:
                for i, position in zip(live, positions):
                    seen[i].append(position.fen())
            actions = choose_actions(player, positions, encoding, name=name)
            still = []
            for i, position, action in zip(live, positions, actions):
                reward, terminated, truncated_now, _ = duels[i].play(action)
                if not (terminated or truncated_now):
                    still.append(i)
                    continue
                if visited is not None:
                    visited.append((seen[i], 0 if truncated_now else int(np.sign(reward))))
                plies.append(position.ply)
                if truncated_now:
                    draws += 1
                    truncated += 1
                elif reward > 0:
                    wins += 1
                elif reward < 0:
                    losses += 1
                else:
                    draws += 1
            live = still
    return RandomMatch(v.name, color, wins, draws, losses, truncated, float(np.mean(plies)))


VALUE_NAMES = {1: "win", 0: "draw", -1: "loss"}


def score_moves(games: list, chosen: Sequence[int], move_values: list[dict[int, int]]) -> dict:
    """How often the chosen moves keep each position's value.

    ``move_values[i]`` maps every legal action of ``games[i]`` (:class:`~agents.games.Game` objects)
    to its exact value class (1 win, 0 draw, -1 loss) for the player to move. Returns
    ``value_preserving`` (the share of positions), ``positions`` and the blunder counts
    ``win->draw``, ``win->loss``, ``draw->loss``, also per player to move.
    """
    def count(rows):
        out = {"positions": len(rows), "value_preserving": float("nan"), "win->draw": 0, "win->loss": 0,
               "draw->loss": 0}
        if rows:
            out["value_preserving"] = float(np.mean([best == got for best, got in rows]))
            for best, got in rows:
                if got < best:
                    out[f"{VALUE_NAMES[best]}->{VALUE_NAMES[got]}"] += 1
        return out

    rows, by_side = [], {0: [], 1: []}
    for game, action, values in zip(games, chosen, move_values):
        if int(action) not in values:
            raise ValueError(f"illegal action {action} chosen in {game!r}")
        row = (max(values.values()), values[int(action)])
        rows.append(row)
        by_side[game.to_play()].append(row)
    result = count(rows)
    result["first player to move"] = count(by_side[0])
    result["second player to move"] = count(by_side[1])
    return result


#: The baseline players of :func:`baselines`: the uniformly random player, greedy capture, and alpha-beta
#: search on material to depth 1 and 2 (depth 1 also takes a mate in one; depth 2 also avoids one).
BASELINES = ("random", "greedy", "minimax-d1", "minimax-d2")


def baseline_agent(name: str, seed: int = 0):
    """The baseline player called ``name`` (one of :data:`BASELINES`), seeded."""
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
