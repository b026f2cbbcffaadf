"""English draughts (American checkers, 8x8) with OpenSpiel's ``checkers`` rules and action steps, and its judge
:class:`CheckersAlphaBeta` (OpenSpiel's MCTS bot plays it too: :mod:`agents.players.openspiel_mcts`).

Squares are numbered 1..32 as in checkers books (an action's square is that number less one): row by row from
the first player's side, four dark squares a row, so that the diagram's top row (squares 1-4) holds dark squares
in columns 1, 3, 5, 7, the next (5-8) in columns 0, 2, 4, 6, and so on. The first player (Black in checkers
books, OpenSpiel's ``o``) starts on 1..12 and moves first; the second on 21..32. This diagram is OpenSpiel's
board turned 180 degrees: our (row, column) is its (7 - row, 7 - column)."""

from __future__ import annotations

import random

import numpy as np

from agents.games.base import Game, Judge

#: Plies in a row without a capture that draw the game (OpenSpiel's ``kMaxMovesWithoutCapture``).
DRAW_PLIES = 40

# A square's bit in a "ghost square" layout: square s (0..31) is bit s + s // 8, so that bits 8, 17 and 26 are
# off the board and every diagonal step is the same shift everywhere: -5 up-left, -4 up-right, +4 down-left,
# +5 down-right (up: towards square 1). Shifted pieces that land off the board fall outside VALID.
PAD = [s + s // 8 for s in range(32)]
BIT = [1 << p for p in PAD]
VALID = sum(BIT)
SHIFTS = (-5, -4, 4, 5)  # directions 0 up-left, 1 up-right, 2 down-left, 3 down-right
DIRECTION_NAMES = ("up-left", "up-right", "down-left", "down-right")
BASE = {bit: 4 * s for s, bit in enumerate(BIT)}  # a square's bit -> its first action
CROWN = (sum(BIT[28:]), sum(BIT[:4]))  # where each player's men are crowned: 29..32 and 1..4
ROWS = [sum(BIT[4 * r:4 * r + 4]) for r in range(8)]
START = (sum(BIT[:12]), sum(BIT[20:]))


def _square_of(p: int) -> int | None:
    """The square (0..31) at ghost-layout bit index ``p``, None off the board."""
    return p - p // 9 if 0 <= p < 35 and p % 9 != 8 else None


def _target(action: int, distance: int) -> int | None:
    """The square ``distance`` diagonal steps from the action's square in its direction, None off the board."""
    s, d = divmod(action, 4)
    p = PAD[s]
    for _ in range(distance):
        p += SHIFTS[d]
        if _square_of(p) is None:
            return None
    return _square_of(p)


STEP_TO = [_target(a, 1) for a in range(128)]  # square after a step (None: off the board)
JUMP_TO = [_target(a, 2) for a in range(128)]  # square after a jump (over STEP_TO)
SOURCE = [BIT[a >> 2] for a in range(128)]
STEP_BIT = [0 if s is None else BIT[s] for s in STEP_TO]
JUMP_BIT = [0 if s is None else BIT[s] for s in JUMP_TO]


def _cell(s: int) -> int:
    """Square ``s`` (0..31) in the diagram's 8 x 8 cells, row-major."""
    row = s // 4
    return 8 * row + 2 * (s % 4) + 1 - row % 2


# Observation: the board as the mover sees it, its men moving up (towards row 0): the diagram turned 180 degrees
# for the first player (its men move down the diagram), the diagram itself for the second.
# OBSERVED[player][bit]: where the piece's planes start in the flat observation (cell * 6).
OBSERVED = ({BIT[s]: 6 * (63 - _cell(s)) for s in range(32)}, {BIT[s]: 6 * _cell(s) for s in range(32)})

# Zobrist keys, fixed seed (the same in every process): pieces by kind (2 * player + king) and bit, the player to
# move, the piece that must jump on, and the plies without capture.
_rng = np.random.default_rng(0xC4EC)
_keys = [int(k) for k in _rng.integers(0, 2**64, size=4 * 32 + 2 + 32 + DRAW_PLIES + 1, dtype=np.uint64)]
PIECE_KEYS = [{BIT[s]: _keys[32 * kind + s] for s in range(32)} for kind in range(4)]
PLAYER_KEYS = _keys[128:130]
JUMPER_KEYS = {0: 0, **{BIT[s]: _keys[130 + s] for s in range(32)}}
QUIET_KEYS = _keys[162:]
del _rng, _keys


def _bits(x: int):
    while x:
        low = x & -x
        yield low
        x ^= low


def _moves(mine: int, theirs: int, kings: int, player: int, only: int = 0) -> tuple[list[int], bool]:
    """The mover's legal actions, ascending, and whether they are jumps (which are compulsory); ``only``: the bit
    of the piece that must go on jumping, whose jumps alone are legal (maybe none)."""
    empty = VALID ^ (mine | theirs)
    if only:
        mine &= only
    if player:  # the second player's men move up the diagram
        up, down = mine, mine & kings
    else:
        up, down = mine & kings, mine
    j0 = up & (theirs << 5) & (empty << 10)
    j1 = up & (theirs << 4) & (empty << 8)
    j2 = down & (theirs >> 4) & (empty >> 8)
    j3 = down & (theirs >> 5) & (empty >> 10)
    capturing = bool(j0 | j1 | j2 | j3)
    if not capturing:
        if only:
            return [], False
        j0, j1, j2, j3 = up & (empty << 5), up & (empty << 4), down & (empty >> 4), down & (empty >> 5)
    out = []
    for d, x in ((0, j0), (1, j1), (2, j2), (3, j3)):
        while x:
            low = x & -x
            out.append(BASE[low] | d)
            x ^= low
    out.sort()
    return out, capturing


class Checkers(Game):
    """English draughts on the 32 dark squares of an 8x8 board, exactly as OpenSpiel's ``checkers``.

    Men move one square diagonally forward, kings one square in any diagonal direction; a jump over an
    opponent's piece to the empty square behind takes it, men jumping forward only. Jumps are compulsory (any
    of them, not the longest), and a piece that jumped must jump on while it can, except that a man crowned
    by reaching the far row ends its move there. A player with no legal move (no pieces, or all blocked) loses.
    Draws: the game is drawn when the 40th ply in a row without a capture is played (every action counts as a
    ply, men's moves included; a capture resets the count), checked before the no-move loss; there is no
    repetition rule. OpenSpiel's maximum game length of 1000 is never reached under this rule (at most 23
    captures, each after fewer than 40 plies without one), so it needs no rule of its own.

    A multi-jump is a sequence of actions by the same player, one jump each: ``to_play`` stays while the piece
    must jump on, and only its jumps are legal; so the network and the search have a small fixed action space,
    and the steps are OpenSpiel's.

    Action ``4 * square + direction`` (128): square 0..31 (the book number less one, see the module) and
    direction 0 up-left, 1 up-right, 2 down-left, 3 down-right, in the diagram's fixed frame (not turned for
    the mover; the first player's men move down, the second's up). With jumps compulsory, a legal action is a
    step or a jump, never both in one position. :meth:`action_name`: ``"11-15"``, ``"11x18"``.

    Observation ``(8, 8, 6)`` from the mover's side, its men moving up (row 0 is where they are crowned: the
    diagram turned 180 degrees for the first player): planes 0 my men, 1 my kings, 2 their men, 3 their kings,
    4 the piece that must jump on (if any), 5 the plies without capture / 40 (every cell).
    """

    name = "checkers"
    num_actions = 128
    observation_shape = (8, 8, 6)

    # first, second: the players' pieces (ghost-layout bits); kings: both players' kings; player: to move;
    # jumper: the bit of the piece that must jump on (0: none); quiet: plies without capture; moves: plies
    # played; hash: Zobrist key of the pieces; legal: the legal actions; capturing: they are jumps;
    # result: None going on, -1 draw, else the winner; line: (earlier line, action) back to the start, None for
    # a position set up by from_squares.
    __slots__ = ("first", "second", "kings", "player", "jumper", "quiet", "moves", "hash", "legal", "capturing",
                 "result", "line")

    def __init__(self):
        self._setup(START[0], START[1], 0, 0, 0)
        self.line = ()

    def _setup(self, first: int, second: int, kings: int, player: int, quiet: int) -> None:
        self.first, self.second, self.kings, self.player, self.quiet = first, second, kings, player, quiet
        self.jumper, self.moves, self.result, self.line = 0, 0, None, None
        self.hash = 0
        for kind, pieces in enumerate((first & ~kings, first & kings, second & ~kings, second & kings)):
            for bit in _bits(pieces):
                self.hash ^= PIECE_KEYS[kind][bit]
        self.legal, self.capturing = [], False
        if quiet >= DRAW_PLIES:
            self.result = -1
            return
        mine, theirs = (second, first) if player else (first, second)
        self.legal, self.capturing = _moves(mine, theirs, kings, player)
        if not self.legal:
            self.result = player ^ 1

    @classmethod
    def from_squares(cls, first_men=(), first_kings=(), second_men=(), second_kings=(), to_play: int = 0,
                     quiet_plies: int = 0) -> Checkers:
        """A position from its pieces' squares (1..32), the player to move and the plies played without a
        capture; it is over at once if that player has no legal move (or ``quiet_plies >= 40``)."""
        groups = [list(first_men), list(first_kings), list(second_men), list(second_kings)]
        squares = [s for g in groups for s in g]
        if any(not isinstance(s, (int, np.integer)) or not 1 <= s <= 32 for s in squares):
            raise ValueError(f"squares are numbered 1..32, got {squares}")
        if len(set(squares)) != len(squares):
            raise ValueError(f"a square holds one piece at most, got {squares}")
        if any(s > 28 for s in groups[0]) or any(s <= 4 for s in groups[2]):
            raise ValueError("a man on the row where it is crowned would be a king")
        if to_play not in (0, 1) or not 0 <= quiet_plies <= DRAW_PLIES:
            raise ValueError(f"to_play must be 0 or 1 and quiet_plies 0..{DRAW_PLIES}, got {to_play}, {quiet_plies}")
        fm, fk, sm, sk = (sum(BIT[s - 1] for s in g) for g in groups)
        game = object.__new__(cls)
        game._setup(fm | fk, sm | sk, fk | sk, int(to_play), int(quiet_plies))
        return game

    def squares(self) -> dict[str, list[int]]:
        """The pieces' squares (1..32) by :meth:`from_squares`' keywords."""
        kings = self.kings
        out = {}
        for name, pieces in (("first_men", self.first & ~kings), ("first_kings", self.first & kings),
                             ("second_men", self.second & ~kings), ("second_kings", self.second & kings)):
            out[name] = [s + 1 for s in range(32) if pieces & BIT[s]]
        return out

    def copy(self) -> Checkers:
        other = object.__new__(type(self))
        other.first, other.second, other.kings, other.player = self.first, self.second, self.kings, self.player
        other.jumper, other.quiet, other.moves, other.hash = self.jumper, self.quiet, self.moves, self.hash
        other.legal, other.capturing, other.result, other.line = self.legal, self.capturing, self.result, self.line
        return other  # legal is shared: step replaces it, never changes it

    def to_play(self) -> int:
        return self.player

    def legal_actions(self) -> list[int]:
        return self.legal[:]

    def history(self) -> list[int] | None:
        """The actions played from the start position, None for a position set up by :meth:`from_squares`."""
        out, line = [], self.line
        while line:
            line, action = line
            out.append(action)
        return None if line is None else out[::-1]

    def step(self, action: int) -> None:
        if action not in self.legal:
            if self.result is not None:
                raise ValueError(f"{self!r}: the game is over")
            raise ValueError(f"illegal checkers action {action!r} ({self._describe(action)}) in {self!r}; "
                             f"legal: {[self.action_name(a) for a in self.legal]}")
        action = int(action)
        player, kings = self.player, self.kings
        mine, theirs = (self.second, self.first) if player else (self.first, self.second)
        src = SOURCE[action]
        kind = 2 * player + (1 if kings & src else 0)
        h = self.hash ^ PIECE_KEYS[kind][src]
        capture = self.capturing
        if capture:
            dst, over = JUMP_BIT[action], STEP_BIT[action]
            h ^= PIECE_KEYS[2 * (player ^ 1) + (1 if kings & over else 0)][over]
            theirs ^= over
            kings &= ~over
            quiet = 0
        else:
            dst, quiet = STEP_BIT[action], self.quiet + 1
        mine ^= src | dst
        crowned = False
        if kind & 1:
            kings ^= src | dst
        elif dst & CROWN[player]:
            kings |= dst
            kind += 1
            crowned = True
        self.hash = h ^ PIECE_KEYS[kind][dst]
        if player:
            self.first, self.second = theirs, mine
        else:
            self.first, self.second = mine, theirs
        self.kings, self.quiet, self.moves = kings, quiet, self.moves + 1
        if self.line is not None:
            self.line = (self.line, action)
        if capture and not crowned:
            legal, _ = _moves(mine, theirs, kings, player, dst)
            if legal:  # the piece jumps on: same player, its jumps alone
                self.jumper, self.legal = dst, legal
                return
        self.jumper = 0
        self.player = player = player ^ 1
        if quiet >= DRAW_PLIES:
            self.legal, self.capturing, self.result = [], False, -1
            return
        self.legal, self.capturing = _moves(theirs, mine, kings, player)
        if not self.legal:
            self.result = player ^ 1

    def observation(self) -> np.ndarray:
        player, kings = self.player, self.kings
        mine, theirs = (self.second, self.first) if player else (self.first, self.second)
        where = OBSERVED[player]
        flat = bytearray(384)  # set in Python, converted once: faster than numpy for some 24 pieces
        for plane, pieces in enumerate((mine & ~kings, mine & kings, theirs & ~kings, theirs & kings, self.jumper)):
            while pieces:
                low = pieces & -pieces
                flat[where[low] + plane] = 1
                pieces ^= low
        out = np.frombuffer(flat, np.uint8).astype(np.float32)
        if self.quiet:
            out[5::6] = self.quiet / DRAW_PLIES
        return out.reshape(8, 8, 6)

    def key(self) -> int:
        return self.hash ^ PLAYER_KEYS[self.player] ^ JUMPER_KEYS[self.jumper] ^ QUIET_KEYS[self.quiet]

    def action_name(self, action: int) -> str:
        """``"11-15"`` (a step) or ``"11x18"`` (one jump: a jump where the mover must capture), squares 1..32."""
        action = int(action)
        target = (JUMP_TO if self.capturing else STEP_TO)[action] if 0 <= action < 128 else None
        if target is None:
            raise ValueError(f"checkers action {action} is no {'jump' if self.capturing else 'step'}: "
                             f"{self._describe(action)}")
        return f"{action // 4 + 1}{'x' if self.capturing else '-'}{target + 1}"

    def cells(self) -> list[list[str]]:
        """The diagram (squares 1-4 the top row): ``"b"``/``"B"`` the first player's men and kings
        (Black), ``"w"``/``"W"`` the second's (White)."""
        grid = [[""] * 8 for _ in range(8)]
        for s, bit in enumerate(BIT):
            if bit & (self.first | self.second):
                letter = "b" if bit & self.first else "w"
                grid[_cell(s) // 8][_cell(s) % 8] = letter.upper() if bit & self.kings else letter
        return grid

    @staticmethod
    def square_labels() -> list[list[str]]:
        """The diagram's cells labelled with their square numbers, 1-32 (``""`` on the light squares)."""
        grid = [[""] * 8 for _ in range(8)]
        for s in range(32):
            grid[_cell(s) // 8][_cell(s) % 8] = str(s + 1)
        return grid

    def action_cells(self, action: int) -> tuple[tuple[int, int], tuple[int, int]]:
        name = self.action_name(action)  # ValueError for an action that is no step (or jump) here
        start, end = (int(n) - 1 for n in name.replace("x", "-").split("-"))
        return divmod(_cell(start), 8), divmod(_cell(end), 8)

    @staticmethod
    def _describe(action) -> str:
        if not isinstance(action, (int, np.integer)) or not 0 <= action < 128:
            return "not an action 0..127"
        return f"square {action // 4 + 1} {DIRECTION_NAMES[action % 4]}"

    def openspiel_state(self):
        """OpenSpiel's ``checkers`` state after this game's actions (replayed from the start: ``ValueError`` for a
        position set up by :meth:`from_squares`)."""
        import pyspiel
        actions = self.history()
        if actions is None:
            raise ValueError(f"OpenSpiel replays a game from the start; {self!r} was set up by from_squares")
        replay, state = Checkers(), pyspiel.load_game("checkers").new_initial_state()
        for action in actions:
            state.apply_action(to_openspiel(replay, action))
            replay.step(action)
        return state

    @staticmethod
    def from_openspiel(action: int) -> int:
        return from_openspiel(action)

    @classmethod
    def symmetries(cls) -> list[tuple[int, bool, np.ndarray]]:
        """The identity alone: a left-right mirror (or a quarter turn) takes the 8x8 board's dark squares to
        light ones, as its width is even; the diagonal reflections and the half turn keep the dark squares but
        not the rules (they turn the men's forward direction sideways, or swap the sides, which the mover's-view
        observation already does)."""
        return [(0, False, np.arange(cls.num_actions))]

    def __repr__(self) -> str:
        first, second, kings = self.first, self.second, self.kings
        cells = ["B" if b & first & kings else "b" if b & first else "W" if b & second & kings else
                 "w" if b & second else "." for b in BIT]
        rows = "/".join("".join(cells[4 * r:4 * r + 4]) for r in range(8))
        extra = f" jumping={_square_of(self.jumper.bit_length() - 1) + 1}" if self.jumper else ""
        extra += f" quiet={self.quiet}" if self.quiet else ""
        return f"Checkers({rows} {'bw'[self.player]}{extra})"


# -- judges ------------------------------------------------------------------------

WIN = 1_000_000
MAN, KING = 1000, 1500


def evaluate(game: Checkers) -> int:
    """Material for the player to move, man 1000, king 1500 (a king is worth about one and a half men), plus
    1 per row each man has advanced (at most 84 in all: it only breaks ties between equal material)."""
    first, second, kings = game.first, game.second, game.kings
    fm, sm, fk, sk = first & ~kings, second & ~kings, first & kings, second & kings
    score = MAN * (fm.bit_count() - sm.bit_count()) + KING * (fk.bit_count() - sk.bit_count())
    for r in range(1, 8):  # the first player's men advance down the diagram (row r), the second's up (row 7 - r)
        score += r * ((fm & ROWS[r]).bit_count() - (sm & ROWS[7 - r]).bit_count())
    return -score if game.player else score


def _negamax(game: Checkers, depth: int, alpha: int, beta: int, ply: int) -> int:
    """The value of ``game`` for its player to move: a win ``WIN - ply`` (sooner: larger), a loss its negative,
    a draw 0, else :func:`evaluate` once ``depth`` moves are searched and the mover need not capture."""
    if game.result is not None:
        return 0 if game.result < 0 else WIN - ply if game.result == game.player else ply - WIN
    if depth <= 0 and not game.capturing:
        return evaluate(game)
    me, best = game.player, -2 * WIN
    for action in game.legal:
        child = game.copy()
        child.step(action)
        if child.player == me:  # the same piece jumps on: the same move, the same depth and side
            value = _negamax(child, depth, alpha, beta, ply + 1)
        else:
            value = -_negamax(child, depth - 1, -beta, -alpha, ply + 1)
        if value > best:
            best = value
            if best > alpha:
                alpha = best
                if alpha >= beta:
                    break
    return best


def alpha_beta_values(game: Checkers, depth: int, exact: bool = False) -> dict[int, int]:
    """Every legal action's value for the player to move, searched ``depth`` moves deep: exact for the best
    actions, an upper bound below the best for the others (``exact=True``: exact for all)."""
    if game.result is not None:
        raise ValueError(f"{game!r}: the game is over")
    out: dict[int, int] = {}
    me, best = game.player, -2 * WIN
    for action in game.legal:
        child = game.copy()
        child.step(action)
        alpha = -2 * WIN if exact else best - 1  # equal values come out exact, worse ones as bounds
        if child.player == me:
            out[action] = _negamax(child, depth, alpha, 2 * WIN, 1)
        else:
            out[action] = -_negamax(child, depth - 1, -2 * WIN, -alpha, 1)
        best = max(best, out[action])
    return out


class CheckersAlphaBeta(Judge):
    """Alpha-beta (negamax) ``depth`` moves deep with :func:`evaluate`: a move is one player's turn, so a
    multi-jump's later jumps are searched at the same depth, and a position where the mover must capture is
    searched on rather than evaluated (captures are forced lines). Wins are worth ``WIN`` less the plies to
    them. Ties between the best actions are broken at random (seeded). It needs the position: the observation
    does not say which player moves, so not which way the board is turned."""

    game_class, new_rng = Checkers, random.Random

    def __init__(self, depth: int = 4, seed: int = 0):
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        super().__init__(seed)
        self.depth = depth
        self.name = f"alpha-beta depth {depth}"

    def act(self, observation, action_mask, position=None) -> int:
        if not isinstance(position, Checkers):
            raise ValueError(f"{type(self).__name__} needs the position: act(observation, action_mask, position) "
                             f"with a Checkers game, got {type(position).__name__}")
        return self.choose(position)

    def scores(self, game: Checkers) -> dict[int, int]:
        return alpha_beta_values(game, self.depth)


# -- OpenSpiel ---------------------------------------------------------------------

# Our direction d in OpenSpiel's frame (turned 180 degrees): its 0 up-left, 1 up-right, 2 down-right, 3 down-left.
OPENSPIEL_DIRECTIONS = (2, 3, 1, 0)


def to_openspiel(game: Checkers, action: int) -> int:
    """OpenSpiel's ``checkers`` action (row, column, direction, jump or step, mixed radix 8, 8, 4, 2) for our
    ``action`` in ``game``."""
    cell = 63 - _cell(action // 4)
    return (cell * 4 + OPENSPIEL_DIRECTIONS[action % 4]) * 2 + int(game.capturing)


def from_openspiel(action: int) -> int:
    """Our action for OpenSpiel's ``checkers`` action."""
    cell, direction = action // 8, action // 2 % 4
    row, column = divmod(63 - cell, 8)
    return 4 * (4 * row + column // 2) + OPENSPIEL_DIRECTIONS.index(direction)
