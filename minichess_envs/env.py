"""Single-agent Gymnasium environment: the learner plays one color against an opponent.

>>> import gymnasium as gym, minichess_envs
>>> env = gym.make("MiniChess-Gardner-v0")
>>> obs, info = env.reset(seed=0)
>>> obs["observation"].shape, obs["action_mask"].shape
((5, 5, 18), (1225,))

One ``step`` plays the learner's move and, unless the game ended, the
opponent's reply, so the learner always observes a position where it is to
move. The episode ends (``terminated``) when the rules end the game, and is
``truncated`` when the ply limit is reached: the limit is not a draw.

Every element of the action space is valid input to ``step``: an illegal move
ends the episode with the learner's loss (reward -1, ``info["illegal_action"]``),
the convention of PettingZoo's classic games; ``illegal_action="raise"`` raises
``IllegalMoveError`` instead. Anything outside the action space (out of range,
not an integer) raises :class:`~minichess_envs.engine.ActionSpaceError`, a
``ValueError``. The final observation's mask is never all zeros: it holds the
legal moves if there are any, else only :data:`~minichess_envs.encoding.NO_OP_ACTION`.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding

from minichess_envs.encoding import NO_OP_ACTION, ObservationEncoding
from minichess_envs.engine import (
    BLACK,
    COLOR_NAMES,
    MAX_COUNTER,
    WHITE,
    IllegalMoveError,
    Position,
    Termination,
    _check_action,
)
from minichess_envs.pgn import game_pgn
from minichess_envs.players import check_player, choose_action, player_name
from minichess_envs.render import Renderer
from minichess_envs.variants import Variant, get_variant

#: Alpha-Mini's piece values had the king at 600 pawns (60000 vs 100), so with
#: outcomes worth +-1 a pawn is worth 1/600 under ``reward="material"``.
MATERIAL_SCALE = 1 / 600


def observation_space(variant: Variant, encoding: ObservationEncoding) -> spaces.Dict:
    """``Dict(observation=Box[0, 1] float32, action_mask=Box{0, 1} int8)`` for a variant."""
    return spaces.Dict({
        "observation": spaces.Box(0.0, 1.0, encoding.shape, np.float32),
        "action_mask": spaces.Box(0, 1, (variant.num_actions,), np.int8),
    })


_MASK64 = (1 << 64) - 1

#: Values of the ``draws`` option: when repetition and the no-progress rule end a game.
DRAWS = ("automatic", "claim")


def claimable_draw(position: Position) -> int:
    """The :class:`Termination` of a draw the player to move could claim, else 0 (for a game not yet over).

    The game's own rules end it when a position occurs the n-th time or the
    no-progress clock reaches its limit; FIDE (9.2, 9.3) lets the player to move
    claim either draw one move earlier too, with the move that would complete it.
    python-chess's ``can_claim_draw``, which PettingZoo ``chess_v6`` tests after
    every move, is this rule for threefold repetition and the 50-move rule.
    """
    variant = position.variant
    clock = position.halfmove_clock
    # A move completes the n-th occurrence only after 4 (n - 1) plies without capture or pawn move (each
    # side must move away and back); these bounds spare the move-by-move test in most positions.
    may_repeat = variant.repetition and clock + 1 >= 4 * (variant.repetition - 1)
    may_stall = variant.no_progress_plies and clock + 1 >= variant.no_progress_plies
    if not (may_repeat or may_stall):
        return 0
    for action in position.legal_actions():
        position.push_action(action)
        try:
            candidate = ((variant.repetition and position.repetitions >= variant.repetition)
                         or (variant.no_progress_plies and position.halfmove_clock >= variant.no_progress_plies))
            reason = position.outcome_code()[0] if candidate else 0  # mate or stalemate by that move comes first
        finally:
            position.pop_code()
        if reason in (Termination.REPETITION, Termination.NO_PROGRESS):
            return reason
    return 0


def game_outcome(position: Position, draws: str) -> tuple[int, int]:
    """``position.outcome_code()`` under a ``draws`` rule: with ``"claim"``, a claimable draw ends the game too."""
    code = position.outcome_code()
    if code[0] or draws == "automatic":
        return code
    claim = claimable_draw(position)
    return (claim, -1) if claim else code


def claim_tags(position: Position, draws: str) -> dict[str, str]:
    """PGN tags of a game that ended by a claimed draw (its position is not over by the rules), else ``{}``."""
    if draws == "automatic" or position.outcome_code()[0]:
        return {}
    claim = claimable_draw(position)
    return {"Result": "1/2-1/2", "Termination": Termination(claim).name.lower()} if claim else {}


def resolve_ply_limit(variant: Variant, ply_limit: float | None) -> int:
    """The ply limit an env uses: the variant's for ``None``, none for ``math.inf`` (as ``MAX_COUNTER``)."""
    if ply_limit is None:
        return variant.ply_limit
    return MAX_COUNTER if ply_limit == math.inf else int(ply_limit)


def random_pick(state: int, n: int) -> tuple[int, int]:
    """``(new_state, k)``: a uniform index ``k < n`` from a xorshift64* generator.

    The C core's batched stepping draws with the same generator and rule, so a
    random opponent plays identical games in the single and the vector env.
    """
    x = state or 0x9E3779B97F4A7C15
    x ^= x >> 12
    x ^= (x << 25) & _MASK64
    x ^= x >> 27
    u = ((x * 0x2545F4914F6CDD1D) & _MASK64) >> 11  # 53 random bits
    return x, (u * n) >> 53


class Opponent:
    """Chooses the opponent's moves: the env's seeded random player, an agent, or a function.

    An agent is any object with ``act(observation, action_mask, position) -> action``;
    a function takes the position and returns an action, a ``Move`` or a UCI string
    (:mod:`minichess_envs.players`).
    """

    def __init__(self, player, encoding: ObservationEncoding, reset_player: bool = True):
        if player is not None:
            check_player(player, "opponent")
        self.player = player
        self.encoding = encoding
        self.reset_player = reset_player  # False when several games share one player
        self.state = 1  # of the random player's generator
        self.name = "random" if player is None else player_name(player)

    def reset(self, np_random: np.random.Generator) -> None:
        self.state = int(np_random.integers(1, 2**63))  # seeded from the env's generator
        if self.reset_player and self.player is not None and hasattr(self.player, "reset"):
            self.player.reset()

    def choose(self, position: Position) -> int:
        if self.player is None:
            actions = position.legal_actions()
            self.state, k = random_pick(self.state, len(actions))
            return actions[k]
        return choose_action(self.player, position, self.encoding, name=self.label)

    @property
    def label(self) -> str:
        """How errors name the opponent."""
        return f"opponent {self.name!r}"


class Duel:
    """The rules of an episode: a learner's game against an opponent, rewards included.

    Shared by :class:`MiniChessEnv` and the vector env, so both play and score
    episodes identically. A step is :meth:`learner_move` (a legal action), then,
    if the game goes on, :meth:`reply` with the opponent's action, then :meth:`result`.
    """

    def __init__(self, opponent: Opponent, reward: str, material_scale: float, ply_limit: int,
                 max_steps: int | None = None, draws: str = "automatic"):
        self.opponent = opponent
        self.reward_mode = reward
        self.material_scale = material_scale
        self.ply_limit = ply_limit
        self.max_steps = max_steps  # env steps (learner moves), for make_vec(max_episode_steps=...)
        self.draws = draws
        self.position: Position | None = None
        self.learner = WHITE
        self.steps = 0
        self.material = 0
        self._outcome = (None, (0, -1))  # (position key, outcome): a step asks up to 4 times; a claim tests every move

    def outcome_code(self) -> tuple[int, int]:
        """``(reason, winner)`` of the game under the duel's ``draws`` rule (:func:`game_outcome`)."""
        position = self.position
        if self.draws == "automatic":
            return position.outcome_code()
        key = (position.ply, position.zobrist_hash)  # the game's moves only grow between starts
        if self._outcome[0] != key:
            self._outcome = (key, game_outcome(position, self.draws))
        return self._outcome[1]

    def start(self, position: Position, learner: int, np_random: np.random.Generator) -> str | None:
        """Begin from ``position``; if the opponent is to move it moves first (its UCI is returned).

        ``position`` becomes the duel's own. If the start fails (the game is
        over, the opponent's choice is illegal or ends the game), the duel is
        left as it was, the opponent's generator included.
        """
        if game_outcome(position, self.draws)[0]:
            raise ValueError(f"the start position {position.fen()} is already over")
        state = self.opponent.state
        self.opponent.reset(np_random)
        reply = None
        if position.turn != learner:
            try:
                action = self.opponent.choose(position)
            except BaseException:
                self.opponent.state = state
                raise
            reply = position.action_uci(action)
            position.push_action(action)
            if game_outcome(position, self.draws)[0] or position.ply >= self.ply_limit:
                self.opponent.state = state
                raise ValueError(f"the opponent's first move from {position.root_fen} ended the game; "
                                 "start from a position where the learner can move")
        self.position, self.learner, self.steps = position, learner, 0
        self._outcome = (None, (0, -1))  # a new game: nothing cached applies to it
        self.material = self.material_lead()
        return reply

    def play(self, action: int) -> tuple[float, bool, bool, str | None]:
        """A whole step: ``(reward, terminated, truncated, the opponent's reply or None)``."""
        reply = self.reply(self.opponent.choose(self.position)) if self.learner_move(action) else None
        return (*self.result(), reply)

    def learner_move(self, action: int) -> bool:
        """Play the learner's legal action; ``True`` if the opponent must reply."""
        self.position.push_action(action)
        self.steps += 1
        return not any(self.episode_over())

    def reply(self, action: int) -> str:
        """Play the opponent's action; returns its UCI."""
        uci = self.position.action_uci(action)
        self.position.push_action(action)
        return uci

    def result(self) -> tuple[float, bool, bool]:
        """``(reward, terminated, truncated)`` after the step."""
        terminated, truncated = self.episode_over()
        return self.reward(terminated), terminated, truncated

    def episode_over(self) -> tuple[bool, bool]:
        """``(terminated, truncated)``: the rules ended the game, or a limit did."""
        if self.outcome_code()[0]:
            return True, False
        limit = self.max_steps is not None and self.steps >= self.max_steps
        return False, limit or self.position.ply >= self.ply_limit

    def material_lead(self) -> int:
        lead = self.position.material_balance()
        return lead if self.learner == WHITE else -lead

    def reward(self, terminated: bool) -> float:
        reward = 0.0
        if terminated:
            winner = self.outcome_code()[1]
            reward = 0.0 if winner < 0 else (1.0 if winner == self.learner else -1.0)
        if self.reward_mode == "material":
            material = self.material_lead()
            reward += (material - self.material) * self.material_scale
            self.material = material
        return reward


def check_env_options(agent_color: str, reward: str, illegal_action: str, render_mode, render_modes,
                  draws: str = "automatic") -> None:
    """Validate the options the single and vector envs share."""
    if draws not in DRAWS:
        raise ValueError(f"draws must be 'automatic' or 'claim', not {draws!r}")
    if agent_color not in ("white", "black", "random"):
        raise ValueError(f"agent_color must be 'white', 'black' or 'random', not {agent_color!r}")
    if reward not in ("outcome", "material"):
        raise ValueError(f"reward must be 'outcome' or 'material', not {reward!r}")
    if illegal_action not in ("raise", "lose"):
        raise ValueError(f"illegal_action must be 'raise' or 'lose', not {illegal_action!r}")
    if render_mode is not None and render_mode not in render_modes:
        raise ValueError(f"render_mode must be one of {render_modes}, not {render_mode!r}")


class MiniChessEnv(gym.Env):
    """A learner against an opponent on any variant.

    :param variant: variant name or :class:`~minichess_envs.Variant`.
    :param agent_color: ``"white"``, ``"black"`` or ``"random"`` (drawn at each reset).
    :param opponent: ``None`` for uniformly random legal moves (seeded from the
        env's generator), an agent with ``act(observation, action_mask, position)``,
        or a function ``position -> move``.
    :param reward: ``"outcome"`` (+1 win, 0 draw, -1 loss at the end) or
        ``"material"``: the outcome plus, after every step, the change of the
        learner's material lead in pawns (``Position.material_balance``: the
        engine's ``PIECE_VALUES``, kings not counted) times ``material_scale``
        (Alpha-Mini's shaping).
    :param illegal_action: what a legal-looking but illegal action (in the
        action space, not in the mask) does: ``"lose"`` (default: the episode
        ends with reward -1 and ``info["illegal_action"] = True``, PettingZoo's
        convention) or ``"raise"`` (``IllegalMoveError``, a ``ValueError``,
        and the env stays as it was).
    :param start: ``"default"`` (the variant's start), ``"random"`` (a uniformly
        drawn legal non-terminal position with the learner to move; small boards
        only), or a FEN. ``reset(options={"fen": ...})`` overrides it once.
    :param history, last_move: the observation encoding (see
        :class:`~minichess_envs.encoding.ObservationEncoding`).
    :param ply_limit: plies after which the episode is truncated (default: the variant's;
        ``math.inf``: none).
    :param draws: ``"automatic"`` (default: a position's n-th occurrence and the
        no-progress limit end the game) or ``"claim"`` (they end it one move
        earlier too, when the player to move could claim them: PettingZoo
        ``chess_v6``'s rule; :func:`claimable_draw`).
    :param render_mode: ``"ansi"``, ``"rgb_array"`` or ``"human"`` (needs pygame).
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 2}

    def __init__(
        self,
        variant: str | Variant = "gardner",
        *,
        agent_color: str = "white",
        opponent=None,
        reward: str = "outcome",
        material_scale: float = MATERIAL_SCALE,
        illegal_action: str = "lose",
        start: str = "default",
        history: int = 1,
        last_move: bool = True,
        ply_limit: float | None = None,
        draws: str = "automatic",
        render_mode: str | None = None,
    ):
        self.variant = get_variant(variant)
        check_env_options(agent_color, reward, illegal_action, render_mode, self.metadata["render_modes"], draws)
        self.agent_color = agent_color
        self.illegal_action = illegal_action
        self.draws = draws
        self.ply_limit = resolve_ply_limit(self.variant, ply_limit)
        self.encoding = ObservationEncoding(self.variant, history, last_move)
        self.observation_space = observation_space(self.variant, self.encoding)
        self.action_space = spaces.Discrete(self.variant.num_actions)
        self.render_mode = render_mode
        self.opponent = Opponent(opponent, self.encoding)
        self.duel = Duel(self.opponent, reward, material_scale, self.ply_limit, draws=draws)
        self.starts = StartPositions(self.variant, start)
        self.position = Position(self.variant)
        self.learner = WHITE
        self._mask = None
        self._done = True
        self._renderer = Renderer(render_mode, f"minichess-envs: {self.variant.name}")

    # -- Gymnasium API ---------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode. If it fails (a bad ``options["fen"]``, a game already
        over, an opponent's first move that is illegal or ends the game), the env
        is left as it was: the current episode, the env's generator and the
        random opponent's are untouched (an agent opponent's own ``reset`` may
        have run)."""
        options = options or {}
        unknown = set(options) - {"fen"}
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}; supported: 'fen'")
        if seed is not None:  # a new generator, kept only if the start succeeds
            np_random, np_random_seed = seeding.np_random(seed)
        else:
            np_random, np_random_seed = self.np_random, self.np_random_seed
        drawn_from = np_random.bit_generator.state
        try:
            learner = draw_color(self.agent_color, np_random)
            position = self.starts.position(np_random, learner, options.get("fen"))
            reply = self.duel.start(position, learner, np_random)  # a failed start leaves the duel as it was
        except BaseException:
            np_random.bit_generator.state = drawn_from
            raise
        self._np_random, self._np_random_seed = np_random, np_random_seed
        self.position, self.learner = position, learner
        self._done = False
        self._mask = position.action_mask()
        return self._observation(), self._info({} if reply is None else {"opponent_move": reply})

    def step(self, action):
        if self._done:
            raise ResetNeeded("the episode has ended: call reset() before step()")
        action = _check_action(action, self.variant.num_actions)
        if not self._mask[action]:
            if self.illegal_action == "raise":
                raise IllegalMoveError(f"action {action} is not a legal move in {self.position.fen()}")
            self._done = True
            return self._observation(), -1.0, True, False, self._info({"illegal_action": True})
        info = {"move": self.position.action_uci(action)}
        reward, terminated, truncated, reply = self.duel.play(action)
        if reply is not None:
            info["opponent_move"] = reply
        self._done = terminated or truncated
        self._mask = playable_mask(self.position)
        return self._observation(), reward, terminated, truncated, self._info(info)

    def action_masks(self) -> np.ndarray:
        """The observation's action mask as booleans (for sb3-contrib's MaskablePPO)."""
        if self._mask is None:
            raise ResetNeeded("call reset() before action_masks()")
        return self._mask.astype(bool)

    def render(self):
        if self.render_mode is None:
            gym.logger.warn('render() called without a render_mode; pass render_mode="ansi", "rgb_array" or "human"')
        return self._renderer.render(self.position)

    def close(self):
        self._renderer.close()

    # -- game records ------------------------------------------------------------------

    @property
    def moves(self) -> list[str]:
        """The moves of the current episode in UCI, from its start position."""
        return [m.uci() for m in self.position.move_stack]

    def to_pgn(self, headers: dict[str, str] | None = None) -> str:
        """The current episode as PGN (``FEN``, ``SetUp`` and ``Variant`` tags included)."""
        return episode_pgn(self.position, self.learner, self.opponent.name, self.ply_limit, headers, self.draws)

    # -- internals -----------------------------------------------------------------------

    def _observation(self) -> dict[str, np.ndarray]:
        obs = np.empty(self.encoding.shape, np.float32)
        self.position.write_observation(obs, self.encoding.history, self.encoding.last_move, self.learner)
        return {"observation": obs, "action_mask": self._mask.copy()}

    def _info(self, extra: dict) -> dict:
        reason, winner = self.duel.outcome_code()
        info = {
            "action_mask": self._mask.copy(),
            "learner_color": COLOR_NAMES[self.learner],
            "ply": self.position.ply,
            "outcome": Termination(reason).name.lower() if reason else None,
            "winner": COLOR_NAMES[winner] if reason and winner >= 0 else None,
        }
        info.update(extra)
        return info


def episode_pgn(position: Position, learner: int, opponent_name: str, ply_limit: int,
                headers: dict[str, str] | None = None, draws: str = "automatic") -> str:
    """An episode as PGN, the players named ``learner`` and the opponent's name."""
    names = {learner: "learner", learner ^ 1: opponent_name}
    tags = {"White": names[WHITE], "Black": names[BLACK]}
    if position.outcome() is None and position.ply >= ply_limit:
        tags["Termination"] = "truncated at the ply limit"
    tags.update(claim_tags(position, draws))  # a claim ends the game before the ply limit would
    tags.update(headers or {})
    return game_pgn(position, tags)


def playable_mask(position: Position) -> np.ndarray:
    """The legal-action mask, or only :data:`NO_OP_ACTION` when there is no legal move (the game is over)."""
    mask = position.action_mask()
    if not mask.any():
        mask[NO_OP_ACTION] = 1
    return mask


def draw_color(agent_color: str, np_random: np.random.Generator) -> int:
    """The learner's color for a new episode."""
    if agent_color == "random":
        return int(np_random.integers(2))
    return WHITE if agent_color == "white" else BLACK


class StartPositions:
    """Where episodes start: the variant's start, a fixed FEN, or random legal positions.

    ``"random"`` draws uniformly among the legal non-terminal positions with the
    learner to move, enumerated once (:mod:`minichess_envs.positions`); only
    boards small enough to enumerate qualify (3x3, or a custom variant like it).
    """

    MAX_PLACEMENTS = 10**8  # enumeration is exhaustive: refuse boards where it cannot finish

    def __init__(self, variant: Variant, start: str):
        self.variant = variant
        self.start = start
        self._random = None
        self._template = None
        if start == "random":
            from minichess_envs.positions import non_terminal_positions

            pieces = sum(1 for ch in variant.start_fen.split()[0] if ch.isalpha())
            if (variant.width * variant.height) ** pieces > self.MAX_PLACEMENTS:
                raise ValueError(f"start='random' enumerates every legal position; {variant.name} "
                                 f"({variant.width}x{variant.height}, {pieces} pieces) has too many")
            everything = non_terminal_positions(variant)
            self._random = {color: [p for p in everything if p[1] == color] for color in (WHITE, BLACK)}
        elif start != "default":
            Position(variant, start)  # a bad FEN fails here, with the FEN named

    def position(self, np_random: np.random.Generator, learner: int, fen: str | None = None) -> Position:
        if fen is not None:
            return Position(self.variant, fen)
        if self.start != "random":
            if self._template is None:  # copying beats parsing the FEN at every reset
                self._template = Position(self.variant, None if self.start == "default" else self.start)
            return self._template.copy()
        from minichess_envs.positions import make_position

        candidates = self._random[learner]
        return make_position(self.variant, *candidates[int(np_random.integers(len(candidates)))])
