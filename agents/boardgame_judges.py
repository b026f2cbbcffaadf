"""Judging board-game players: move scores against exact values, and matches.

- :func:`score_moves`: the share of positions where a player's move keeps the
  game's value (a win stays a win, a draw a draw), with the blunders counted.
- :func:`play_match`: games between two players in lockstep, both colours, with
  Wilson intervals on the score.

Players here are batched: ``choose(games) -> actions``, one action per
:class:`~agents.games.Game`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from agents.games import new_game
from agents.ratings import wilson_interval

Choose = Callable[[list], Sequence[int]]
LABELS = {1: "win", 0: "draw", -1: "loss"}

def score_moves(games: list, chosen: Sequence[int], move_values: list[dict[int, int]]) -> dict:
    """How often the chosen moves keep each position's value.

    ``move_values[i]`` maps every legal action of ``games[i]`` to its exact value
    class (1 win, 0 draw, -1 loss) for the player to move. Returns
    ``value_preserving`` (the share of positions), ``positions`` and the
    blunder counts ``win->draw``, ``win->loss``, ``draw->loss``, also per player to move.
    """
    def tally(rows):
        out = {"positions": len(rows), "value_preserving": float("nan"), "win->draw": 0, "win->loss": 0,
               "draw->loss": 0}
        if rows:
            out["value_preserving"] = float(np.mean([best == got for best, got in rows]))
            for best, got in rows:
                if got < best:
                    out[f"{LABELS[best]}->{LABELS[got]}"] += 1
        return out

    rows, by_side = [], {0: [], 1: []}
    for game, action, values in zip(games, chosen, move_values):
        if int(action) not in values:
            raise ValueError(f"illegal action {action} chosen in {game!r}")
        row = (max(values.values()), values[int(action)])
        rows.append(row)
        by_side[game.to_play()].append(row)
    result = tally(rows)
    result["first player to move"] = tally(by_side[0])
    result["second player to move"] = tally(by_side[1])
    return result


def choose_in_batches(choose: Choose, games: list, batch: int = 256) -> list[int]:
    """``choose`` over ``games`` in batches (one batched search or network call each)."""
    out: list[int] = []
    for i in range(0, len(games), batch):
        out.extend(int(a) for a in choose(games[i:i + batch]))
    return out


def random_player(seed: int = 0) -> Choose:
    rng = np.random.default_rng(seed)
    return lambda games: [int(rng.choice(g.legal_actions())) for g in games]



# -- matches --------------------------------------------------------------------------


@dataclasses.dataclass
class MatchResult:
    """Games of ``player`` against ``opponent``, ``player`` moving first (``first=True``) or second."""

    player: str
    opponent: str
    first: bool
    wins: int
    draws: int
    losses: int
    distinct: int = 0  # different games among them (by their final boards)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / max(self.games, 1)

    def interval(self, what: str = "wins") -> tuple[float, float]:
        """95% Wilson interval of the win rate (``"wins"``), the score (``"score"``) or non-losses (``"not_lost"``)."""
        successes = {"wins": self.wins, "score": self.wins + 0.5 * self.draws,
                     "not_lost": self.wins + self.draws}[what]
        return wilson_interval(successes, self.games)

    def row(self) -> dict:
        lo, hi = self.interval("wins")
        slo, shi = self.interval("score")
        return {"player": self.player, "opponent": self.opponent, "player moves": "first" if self.first else "second",
                "games": self.games, "wins": self.wins, "draws": self.draws, "losses": self.losses,
                "win_rate": self.wins / max(self.games, 1), "win_low": lo, "win_high": hi,
                "score": self.score, "score_low": slo, "score_high": shi, "distinct_games": self.distinct}


def play_match(game: str, player: Choose, opponent: Choose, games: int, first: bool, names=("player", "opponent"),
               progress: Callable[[int], None] | None = None) -> MatchResult:
    """``games`` games from the empty board in lockstep, ``player`` moving first if ``first``."""
    boards = [new_game(game) for _ in range(games)]
    mover_is_player = (lambda g: g.to_play() == 0) if first else (lambda g: g.to_play() == 1)
    active = list(range(games))
    while active:
        for who, choose in ((True, player), (False, opponent)):
            todo = [i for i in active if not boards[i].is_over() and mover_is_player(boards[i]) == who]
            if todo:
                for i, a in zip(todo, choose([boards[i] for i in todo])):
                    boards[i].step(int(a))
        active = [i for i in active if not boards[i].is_over()]
        if progress is not None:
            progress(games - len(active))
    me = 0 if first else 1
    wins = sum(b.winner() == me for b in boards)
    losses = sum(b.winner() == 1 - me for b in boards)
    distinct = len({tuple(b.board) for b in boards})
    return MatchResult(names[0], names[1], first, wins, games - wins - losses, losses, distinct)
