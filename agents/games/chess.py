"""Our chess variants as a :class:`~agents.games.Game`: a :class:`~minichess_envs.engine.Position` with its
observation encoding and a ply limit (reaching it ends the game drawn); the search plays their moves in C."""

from __future__ import annotations

import hashlib

import numpy as np

from agents.games.base import Game
from minichess_envs.encoding import ActionEncoding, ObservationEncoding
from minichess_envs.engine import Position
from minichess_envs.variants import get_variant


class ChessGame(Game):
    """A position of a chess variant; ``position`` is played in place."""

    __slots__ = ("position", "encoding", "ply_limit")

    def __init__(self, position: Position, encoding: ObservationEncoding | None = None, ply_limit: int | None = None):
        self.position = position
        self.encoding = encoding or ObservationEncoding(position.variant)
        self.ply_limit = position.variant.ply_limit if ply_limit is None else ply_limit
        self.name, self.num_actions = position.variant.name, position.variant.num_actions
        self.observation_shape = self.encoding.shape

    @classmethod
    def start(cls, variant: str, history: int = 1, last_move: bool = False, ply_limit: int | None = None,
              fen: str | None = None) -> ChessGame:
        """The variant's start position (or ``fen``), observed with ``history`` boards and ``last_move`` planes."""
        v = get_variant(variant)
        return cls(Position(v, fen) if fen else Position(v), ObservationEncoding(v, history, last_move), ply_limit)

    def copy(self) -> ChessGame:
        return ChessGame(self.position.copy(), self.encoding, self.ply_limit)

    def to_play(self) -> int:
        return self.position.turn

    @property
    def plies(self) -> int:
        return self.position.ply

    def random_start(self, rng: np.random.Generator, plies: int) -> ChessGame:
        """With ``plies`` 0, a uniformly random legal position of the variant (small boards, as the
        tablebase enumerates them); else the random walk of :meth:`Game.random_start`."""
        if plies > 0:
            return super().random_start(rng, plies)
        from minichess_envs.positions import random_position
        return ChessGame(random_position(self.position.variant, rng), self.encoding, self.ply_limit)

    def legal_actions(self) -> list[int]:
        return self.position.legal_actions()

    def legal_mask(self) -> np.ndarray:
        return self.position.action_mask()

    def step(self, action: int) -> None:
        self.position.push_action(int(action))

    def is_over(self) -> bool:
        return self.position.outcome_code()[0] != 0 or self.position.ply >= self.ply_limit

    def winner(self) -> int | None:
        reason, winner = self.position.outcome_code()
        return winner if reason and winner >= 0 else None

    def view(self) -> Position:
        """A player is shown the chess position."""
        return self.position

    def observation(self) -> np.ndarray:
        return self.encoding.encode(self.position)

    def key(self) -> int:
        digest = hashlib.blake2b(self.observation().tobytes(), digest_size=8).digest()
        return int.from_bytes(digest, "little")

    def action_name(self, action: int) -> str:
        return self.position.action_to_move(int(action)).uci()

    def symmetries(self) -> list[tuple[int, bool, np.ndarray]]:
        """The identity, and the left-right mirror where the variant has no castling."""
        variant = self.position.variant
        identity = [(0, False, np.arange(variant.num_actions))]
        return identity if variant.castling else identity + [(0, True, ActionEncoding(variant).mirror_permutation)]

    def tree_root(self) -> tuple[dict, object]:
        """The engine's rules and this position: the tree copies its history and plays moves in C."""
        e = self.encoding
        return ({"rules": self.position.variant.rules, "ply_limit": self.ply_limit, "history": e.history,
                 "last_move": e.last_move}, self.position)

    def __repr__(self) -> str:
        return f"ChessGame({self.position.fen()!r})"


def chess_games(positions, encoding: ObservationEncoding, ply_limit: int | None = None) -> list[ChessGame]:
    """Positions as games (not copied: a game's moves are played on its position)."""
    return [ChessGame(p, encoding, ply_limit) for p in positions]
