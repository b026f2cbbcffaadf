"""Evaluations beside the arena's matches: :func:`versus_random` (a batch of games against the envs' random player,
in lockstep) and :func:`score_moves` (how often a player's moves keep the exact values a judge gives).

>>> result = versus_random(agent, "gardner", games=1000, color="white", seed=0)   # doctest: +SKIP
>>> score_moves(games, choose_actions(agent, games, batch=256), move_values)       # doctest: +SKIP
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Sequence

import numpy as np

from agents.arena import Tally
from agents.spec import from_spec
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import BLACK, WHITE, Position
from minichess_envs.env import Duel, Opponent
from minichess_envs.players import check_player, choose_actions, player_name
from minichess_envs.tablebase import VALUE_NAMES
from minichess_envs.variants import get_variant


@dataclasses.dataclass(frozen=True, kw_only=True)
class RandomMatch(Tally):
    """Results of an agent against the random player, from the agent's side."""

    variant: str
    color: str
    truncated: int  # of the draws: games stopped by the ply limit
    mean_plies: float

    @property
    def win_rate(self) -> float:
        return self.wins / self.games

    @property
    def win_interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the win rate."""
        return self.rate_interval("wins")

    def __str__(self) -> str:
        lo, hi = self.win_interval
        return (f"{self.variant} as {self.color}: {self.wins}-{self.draws}-{self.losses} (W-D-L) of {self.games}, "
                f"win rate {self.win_rate:.3f} [{lo:.3f}, {hi:.3f}], score {self.score:.3f}")


def versus_random(agent, variant: str = "gardner", games: int = 1000, color: str = "white", seed: int = 0,
                  batch: int = 250, ply_limit: int | None = None, visited: list | None = None) -> RandomMatch:
    """Play ``games`` games of ``agent`` (as ``color``) against the environments' random player.

    Game ``i`` is the single-agent env's episode (:class:`~minichess_envs.env.Duel`) seeded ``seed + i``;
    ``batch`` games run together, in one ``act_batch`` call per ply. A game reaching the ply limit is a draw
    (also counted in ``truncated``). ``visited``, if given, gets ``(fens, reward)`` per game: the FENs the
    agent moved in and its reward (+1, 0 or -1).
    """
    if color not in ("white", "black"):
        raise ValueError(f"color must be 'white' or 'black', not {color!r}")
    check_player(agent)
    name = player_name(agent)
    v = get_variant(variant)
    encoding = ObservationEncoding(v)
    limit = v.ply_limit if ply_limit is None else int(ply_limit)
    learner = WHITE if color == "white" else BLACK
    outcomes, plies, truncated = [], [], 0  # per game: +1, 0 or -1 for the agent
    for first in range(0, games, batch):
        duels = []
        for i in range(first, min(first + batch, games)):
            duel = Duel(Opponent(None, encoding), "outcome", 0.0, limit)
            duel.start(Position(v), learner, np.random.default_rng(seed + i))
            duels.append(duel)
        if hasattr(agent, "reset"):
            agent.reset(seed + first)
        live = list(range(len(duels)))
        seen = [[] for _ in duels]
        while live:
            positions = [duels[i].position for i in live]
            if visited is not None:
                for i, position in zip(live, positions):
                    seen[i].append(position.fen())
            actions = choose_actions(agent, positions, encoding, name=name)
            still = []
            for i, position, action in zip(live, positions, actions):
                reward, terminated, truncated_now, _ = duels[i].play(action)
                if not (terminated or truncated_now):
                    still.append(i)
                    continue
                outcomes.append(0 if truncated_now else int(np.sign(reward)))
                plies.append(position.ply)
                truncated += bool(truncated_now)
                if visited is not None:
                    visited.append((seen[i], outcomes[-1]))
            live = still
    return RandomMatch(outcomes.count(1), outcomes.count(0), outcomes.count(-1), variant=v.name, color=color,
                       truncated=truncated, mean_plies=float(np.mean(plies)))


def score_moves(games: list, chosen: Sequence[int], move_values: list[dict[int, int]]) -> dict:
    """How often the chosen moves keep each position's value.

    ``move_values[i]`` maps every legal action of ``games[i]`` to its exact value (1 win, 0 draw, -1 loss) for
    the player to move. Returns ``value_preserving`` (the share of positions), ``positions`` and the blunder
    counts ``win->draw``, ``win->loss``, ``draw->loss``, also per player to move.
    """
    def count(rows):
        blunders = collections.Counter(f"{VALUE_NAMES[best]}->{VALUE_NAMES[got]}" for best, got in rows if got < best)
        share = float(np.mean([best == got for best, got in rows])) if rows else float("nan")
        return {"positions": len(rows), "value_preserving": share,
                **{k: blunders[k] for k in ("win->draw", "win->loss", "draw->loss")}}

    rows, by_side = [], {0: [], 1: []}
    for game, action, values in zip(games, chosen, move_values):
        if int(action) not in values:
            raise ValueError(f"illegal action {action} chosen in {game!r}")
        row = (max(values.values()), values[int(action)])
        rows.append(row)
        by_side[game.to_play()].append(row)
    return {**count(rows), "first player to move": count(by_side[0]), "second player to move": count(by_side[1])}


#: The baseline players of :func:`baselines` as agent specs (:func:`agents.spec.from_spec`): the uniformly random
#: player, greedy capture, and alpha-beta on material to depth 1 and 2 (1 takes a mate in one, 2 also avoids one).
BASELINES = ("random", "greedy", "minimax:1", "minimax:2")


def baselines(variant: str, colors: Sequence[str] = ("white", "black"), games: int = 500, seed: int = 0) -> list[dict]:
    """Win rates of the baseline players against the random player (:func:`versus_random`, as for trained
    agents), one row per baseline and color."""
    rows = []
    for spec in BASELINES:
        for color in colors:
            agent = from_spec(spec, variant, seed=seed)
            match = versus_random(agent, variant, games=games, color=color, seed=seed)
            lo, hi = match.win_interval
            rows.append({"player": agent.name, "variant": variant, "color": color, "games": match.games,
                         "wins": match.wins, "draws": match.draws, "losses": match.losses,
                         "win_rate": match.win_rate, "win_low": lo, "win_high": hi})
    return rows
