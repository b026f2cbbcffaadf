"""Alpha-beta search to a fixed depth with a material evaluation.

Negamax with alpha-beta pruning on the C engine's move codes. Leaves score the
material balance in pawns (``Position.material_balance``: the engine's
``PIECE_VALUES``, P 1, N 3, B 3, R 5, Q 9) from the side to move; finished
games score a win as ``MATE - ply`` (so faster wins and slower losses are
preferred), draws 0. Captures are searched first, most valuable victim by
least valuable attacker (MVV-LVA, the same values, the king's 100 included), then
promotions. There is no quiescence
search: at the horizon, a piece that is about to be taken still counts.
Among equally good root moves the agent picks at random from its seeded
generator, so games against it vary with the seed.
"""

from __future__ import annotations

import numpy as np

from agents.base import Agent, check_settings, read_manifest, write_manifest
from minichess_envs.engine import PIECE_VALUES, captured_values, move_from, move_promotion

MATE = 100_000
_INF = 10 * MATE
#: The deepest search a saved agent's ``agent.json`` may ask for (the command line's bound too): depth 4
#: already takes minutes on 8x8 and each further ply multiplies the time by the branching factor.
MAX_DEPTH = 8


def _ordered(pos, codes):
    """Move codes, captures first by MVV-LVA, then promotions, then the rest (stable)."""
    pieces = pos.pieces
    values = PIECE_VALUES
    keyed = []
    for code, gain in zip(codes, captured_values(pieces, codes)):
        if gain:
            key = 1000 + 10 * gain - values[pieces[move_from(code)] & 7]
        else:
            promotion = move_promotion(code)
            key = 500 + values[promotion] if promotion else 0
        keyed.append((key, code))
    keyed.sort(key=lambda kc: -kc[0])
    return [code for _, code in keyed]


class MinimaxAgent(Agent):
    """Alpha-beta (negamax) to ``depth`` plies with a material evaluation; needs the position.

    ``nodes`` counts the positions searched since construction, for speed measurements.
    """

    def __init__(self, depth: int = 2, seed: int | None = None, name: str | None = None):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"MinimaxAgent depth must be an integer >= 1, got {depth!r}")
        self.depth = depth
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.name = name or f"minimax-d{depth}"
        self.nodes = 0

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask, position=None) -> int:
        if position is None:
            raise ValueError("MinimaxAgent searches the position, so it needs it: pass position=")
        best = self.best_moves(position)
        code = best[self.rng.integers(len(best))]
        return int(position.encode(code))

    def best_moves(self, position) -> list[int]:
        """Codes of all root moves with the best score (searched on a copy of ``position``)."""
        pos = position.copy()  # keeps the history, so repetitions are scored as draws
        codes = pos.legal_move_codes()
        if not codes:
            raise ValueError(f"no legal move: the game is over in {position.fen()}")
        best_score, best = -_INF, []
        for code in _ordered(pos, codes):
            pos.push_code(code)
            # Window (best - 1, inf): a move equal to the best gets its exact score, so ties are found.
            score = -self._search(pos, self.depth - 1, -_INF, -(best_score - 1), 1)
            pos.pop_code()
            if score > best_score:
                best_score, best = score, [code]
            elif score == best_score:
                best.append(code)
        return best

    def _search(self, pos, depth: int, alpha: int, beta: int, ply: int) -> int:
        self.nodes += 1
        reason, winner = pos.outcome_code()
        if reason:
            if winner < 0:
                return 0
            return MATE - ply if winner == pos.turn else ply - MATE
        if depth == 0:
            balance = pos.material_balance()
            return balance if pos.turn == 0 else -balance
        best = -_INF
        codes = pos.legal_move_codes()
        for code in _ordered(pos, codes) if depth > 1 else codes:  # ordering pays off above the leaves only
            pos.push_code(code)
            score = -self._search(pos, depth - 1, -beta, -alpha, ply + 1)
            pos.pop_code()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best

    def save(self, path: str) -> None:
        write_manifest(path, self, depth=self.depth, seed=self.seed, name=self.name)

    @classmethod
    def load(cls, path: str) -> MinimaxAgent:
        settings = check_settings(path, read_manifest(path)["settings"], {"depth": int},
                                  {"seed": (int, None), "name": (str, None)}, bounds={"depth": (1, MAX_DEPTH)})
        return cls(**settings)
