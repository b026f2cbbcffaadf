"""Alpha-beta search to a fixed depth with a material evaluation.

Negamax with alpha-beta pruning on the C engine's move codes. Leaves score the material balance in pawns
(``Position.material_balance``: the engine's ``PIECE_VALUES``, P 1, N 3, B 3, R 5, Q 9) from the side to move;
finished games score a win as ``MATE - ply`` (faster wins and slower losses preferred), draws 0. Captures are
searched first, most valuable victim by least valuable attacker (MVV-LVA, the same values, the king's 100
included), then promotions. No quiescence search: at the horizon, a piece about to be taken still counts.
Ties among the best root moves are broken by the agent's seeded generator, so games vary with the seed."""

from __future__ import annotations

from agents.base import SeededAgent, need_position
from minichess_envs.engine import PIECE_VALUES, captured_values, move_from, move_promotion

MATE = 100_000
_INF = 10 * MATE
#: The deepest search a saved agent's ``agent.json`` may ask for (the command line's bound too): depth 4
#: already takes minutes on 8x8 and each further ply multiplies the time by the branching factor.
MAX_DEPTH = 8


def _ordered(pos, codes):
    """Move codes, captures first by MVV-LVA, then promotions, then the rest (stable)."""
    pieces, keyed = pos.pieces, []
    for code, gain in zip(codes, captured_values(pieces, codes)):
        if gain:
            key = 1000 + 10 * gain - PIECE_VALUES[pieces[move_from(code)] & 7]
        else:
            promotion = move_promotion(code)
            key = 500 + PIECE_VALUES[promotion] if promotion else 0
        keyed.append((key, code))
    keyed.sort(key=lambda kc: -kc[0])
    return [code for _, code in keyed]


class MinimaxAgent(SeededAgent):
    """Alpha-beta (negamax) to ``depth`` plies with a material evaluation; needs the position."""

    required = {"depth": int}
    optional = {"seed": (int, None), "name": (str, None)}
    bounds = {"depth": (1, MAX_DEPTH)}

    def __init__(self, depth: int = 2, seed: int | None = None, name: str | None = None):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"MinimaxAgent depth must be an integer >= 1, got {depth!r}")
        super().__init__(seed, name or f"minimax-d{depth}")
        self.depth = depth

    def act(self, observation, action_mask, position=None) -> int:
        position = need_position(self, position)
        return int(position.encode(self.pick(self.best_moves(position))))

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
            best = max(best, score)
            if score > alpha:  # alpha >= best throughout, so a new alpha is a new best too
                alpha = score
                if alpha >= beta:
                    break
        return best
