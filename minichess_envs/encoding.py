"""The action and observation encodings, one scheme for every board.

Both are computed by the C core; this module describes them (sizes, names of
planes and channels) and offers the batch helpers the environments use.

Actions (AlphaZero style, the layout of PettingZoo ``chess_v6`` and pgx)
    ``action = (file * height + rank) * num_planes + plane``, where
    ``(file, rank)`` is the from-square seen from the side to move (ranks are
    flipped for Black) and the planes are, with ``D = max(width, height) - 1``:

    * ``0 .. 8D-1``: queen-like moves, ``plane = (distance - 1) * 8 + direction``,
      directions ``(df, dr)`` in the order (-1,-1) (-1,0) (-1,1) (0,-1) (0,1)
      (1,-1) (1,0) (1,1), i.e. SW W NW S N SE E NE;
    * ``8D .. 8D+7``: knight jumps (-2,-1) (-2,1) (-1,-2) (-1,2) (1,-2) (1,2) (2,-1) (2,1);
    * ``8D+8 .. 8D+16``: underpromotions, ``3 * (df + 1) + piece`` with piece
      0 knight, 1 bishop, 2 rook and ``df`` -1 / 0 / +1 (capture left, push,
      capture right).

    A pawn move to the last rank without an underpromotion plane promotes to
    the variant's first promotion piece (the queen in every shipped variant).
    Castling is the king's two-square move. This gives 1225 actions on 5x5
    (as pgx) and 4672 on 8x8 (as PettingZoo ``chess_v6``, index for index).

Observations
    float32 planes of shape ``(height, width, channels)`` seen from the side to
    move: row 0 is the mover's back rank (ranks flipped for Black), column 0 the
    a-file. See :meth:`ObservationEncoding.channel_names` for the channel list.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from minichess_envs import _core
from minichess_envs.engine import PIECE_SYMBOLS, Position
from minichess_envs.variants import Variant, get_variant

DIRECTION_NAMES = ("SW", "W", "NW", "S", "N", "SE", "E", "NE")

#: The action the masks of a finished game offer when no move is legal, so that
#: a sampler can always draw from a mask. It would move from the mover's a1
#: corner one square south-west, off the board: never a legal move. The envs
#: ignore the action of a finished game (the vector env resets it, the AEC env
#: treats it as PettingZoo's ``None``).
NO_OP_ACTION = 0
UNDERPROMOTION_PIECES = "nbr"


class ActionEncoding:
    """The action space of one variant: sizes, plane meanings, symmetries."""

    def __init__(self, variant: str | Variant):
        self.variant = get_variant(variant)
        rules = self.variant.rules
        self.width, self.height = rules.width, rules.height
        self.num_planes = rules.num_planes
        self.num_actions = rules.num_actions
        self.max_distance = rules.max_distance
        self._deltas = [rules.plane_delta(p) for p in range(self.num_planes)]

    def plane_name(self, plane: int) -> str:
        """Human-readable meaning of a plane, e.g. ``"N x2"``, ``"knight (1,2)"``, ``"=r capture right"``."""
        df, dr, under = self._deltas[plane]
        D = self.max_distance
        if plane < 8 * D:
            return f"{DIRECTION_NAMES[plane % 8]} x{plane // 8 + 1}"
        if plane < 8 * D + 8:
            return f"knight ({df},{dr})"
        side = {-1: "capture left", 0: "push", 1: "capture right"}[df]
        return f"={PIECE_SYMBOLS[under]} {side}"

    def decode(self, action: int) -> tuple[int, int, int, int, str | None]:
        """``(from_file, from_rank, to_file, to_rank, underpromotion)`` seen from the mover.

        Coordinates may fall off the board: not every action is a move.
        """
        if not 0 <= action < self.num_actions:
            raise ValueError(f"action {action} is outside [0, {self.num_actions})")
        square, plane = divmod(action, self.num_planes)
        file, rank = divmod(square, self.height)
        df, dr, under = self._deltas[plane]
        return file, rank, file + df, rank + dr, PIECE_SYMBOLS[under] if under else None

    def action(self, from_file: int, from_rank: int, plane: int) -> int:
        """Action index of a plane at a from-square (mover's view)."""
        return (from_file * self.height + from_rank) * self.num_planes + plane

    @functools.cached_property
    def mirror_permutation(self) -> np.ndarray:
        """``perm[a]`` is the action ``a`` reflected left-right (files reversed).

        Use it to augment training data: the policy target of the mirrored
        position is ``target[perm]`` (valid only for variants without castling).
        Actions whose reflection leaves the board map to themselves; they are
        never legal.
        """
        plane_of = {}
        for p, (df, dr, under) in enumerate(self._deltas):
            plane_of[(df, dr, under)] = p
        perm = np.arange(self.num_actions)
        for a in range(self.num_actions):
            ff, fr, tf, tr, under = self.decode(a)
            df, dr, u = self._deltas[a % self.num_planes]
            mirrored_plane = plane_of[(-df, dr, u)]
            mf = self.width - 1 - ff
            if 0 <= ff < self.width and 0 <= tf < self.width and 0 <= tr < self.height:
                perm[a] = self.action(mf, fr, mirrored_plane)
        return perm


@dataclasses.dataclass(frozen=True)
class ObservationEncoding:
    """Observation planes of one variant.

    :param history: positions shown, the current one first (AlphaZero used 8), at most 1024.
    :param last_move: add two planes marking the last move's from- and to-square
        (AlphaZero for Gomoku and Connect Four found them useful).

    Channels, in order (``n`` = piece types of the variant, order P N B R Q K):
    for each of the ``history`` positions, the mover's ``n`` piece planes, the
    opponent's ``n``, then "this position occurred twice" and "... three
    times"; then color (1 when Black is to move) and the no-progress clock
    divided by the variant's limit; then, where the variant has them, four
    castling-right planes (mover's options, then opponent's), one en-passant
    target plane, and the two last-move planes. The clock plane is all zeros in
    variants without a no-progress rule (3x3), where the clock changes nothing.
    """

    variant: Variant
    history: int = 1
    last_move: bool = True

    def __post_init__(self):
        object.__setattr__(self, "variant", get_variant(self.variant))
        if not isinstance(self.history, int) or not 1 <= self.history <= _core.MAX_HISTORY:
            raise ValueError(f"history must be an integer >= 1 and at most {_core.MAX_HISTORY}, got {self.history!r}")

    @functools.cached_property
    def num_channels(self) -> int:
        return len(self.channel_names())

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.variant.height, self.variant.width, self.num_channels)

    def channel_names(self) -> list[str]:
        """Names of the channels, in order."""
        v = self.variant
        types = [t for t in "PNBRQK" if t in v.pieces.upper()]
        names = []
        for t in range(self.history):
            when = "now" if t == 0 else f"t-{t}"
            names += [f"{when} own {p}" for p in types] + [f"{when} opponent {p}" for p in types]
            names += [f"{when} repeated twice", f"{when} repeated three times"]
        names += ["black to move", "no-progress clock"]
        if v.castling:
            names += ["own castling 0", "own castling 1", "opponent castling 0", "opponent castling 1"]
        if v.en_passant:
            names += ["en-passant square"]
        if self.last_move:
            names += ["last move from", "last move to"]
        return names

    def encode(self, position: Position, out: np.ndarray | None = None) -> np.ndarray:
        """Observation of ``position``; written into ``out`` if given."""
        if out is None:
            out = np.empty(self.shape, np.float32)
        position.write_observation(out, self.history, self.last_move)
        return out
