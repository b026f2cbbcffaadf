"""Native batched Gymnasium vector environment: ``num_envs`` games stepped in one call.

>>> envs = gym.make_vec("MiniChess-Gardner-v0", num_envs=64)   # this class, not SyncVectorEnv
>>> obs, infos = envs.reset(seed=0)
>>> obs["observation"].shape, obs["action_mask"].shape
((64, 5, 5, 18), (64, 1225))

Each sub-environment is the single-agent game of :class:`~minichess_envs.env.MiniChessEnv`
(same options, rules and rewards). With the default random opponent the whole
batch is stepped by one C call (learner moves, random replies from each game's
own generator, outcomes) and observations and masks are written by another, so
a game here plays exactly as ``MiniChessEnv`` with the same seed. Other
opponents go through :class:`~minichess_envs.env.Duel` per game, with one
``act_batch`` call for all replies when the opponent has it. All three autoreset
modes of Gymnasium 1.x are supported (``autoreset_mode=``, also given as
``gym.make_vec(..., vector_kwargs={"autoreset_mode": ...})``, the form sync and
async take).

Infos are what Gymnasium's ``SyncVectorEnv`` of ``MiniChessEnv`` returns, key for
key: each game's single-env info (``action_mask``, ``learner_color``, ``ply``,
``outcome``, ``winner``, ``move``, ``opponent_move``, ``illegal_action``; in
``"SameStep"`` mode ``final_obs`` and ``final_info``) batched into arrays with
``_key`` masks. They are built on first use (:class:`LazyInfos`), so a loop that
never reads them does not pay for a string per game and step.

Actions follow the single env's convention: an illegal move loses the game
(``illegal_action="lose"``, the default) or raises before any game moves
(``"raise"``); actions outside the action space raise ``ActionSpaceError``.
The mask of a game that just ended is never all zeros (the legal moves, else
only ``NO_OP_ACTION``), and the action given for it in the next step is
ignored (the game is reset), so a sampler that draws from the masks never fails.
``call``, ``get_attr`` and ``set_attr`` answer per game, as Gymnasium's
``SyncVectorEnv`` of ``MiniChessEnv`` does.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from minichess_envs import _core
from minichess_envs.encoding import NO_OP_ACTION, ObservationEncoding
from minichess_envs.engine import (
    COLOR_NAMES,
    ActionSpaceError,
    IllegalMoveError,
    Position,
    Termination,
    _decode,
)
from minichess_envs.env import (
    MATERIAL_SCALE,
    Duel,
    Opponent,
    StartPositions,
    check_env_options,
    draw_color,
    episode_pgn,
    observation_space,
    resolve_ply_limit,
)
from minichess_envs.players import choose_actions
from minichess_envs.render import render_ansi, render_rgb
from minichess_envs.variants import Variant, get_variant


class LazyInfos(dict):
    """A ``dict`` of vector infos that fills itself on first use (any read, write or copy).

    ``infos._fill = (function, *args)``: ``function(*args, infos)`` adds the
    entries. Until then the dict holds nothing, so only the methods below may
    touch it (``dict(infos)``, ``{**infos}``, pickling and ``json`` go through
    them too). No ``__init__`` and no ``functools.partial``: every step makes
    one, and a one-game step is short enough for their cost to show.
    """

    __slots__ = ("_fill",)

    def _filled(self) -> LazyInfos:
        fill = getattr(self, "_fill", None)
        if fill is not None:
            self._fill = None
            fill[0](*fill[1:], self)
        return self

    def __reduce_ex__(self, protocol):  # pickle and copy: a plain dict of the filled entries
        return dict, (dict(self._filled()),)


def _filling(name: str):
    method = getattr(dict, name)

    @functools.wraps(method)
    def filled_first(self, *args, **kwargs):
        return method(self._filled(), *args, **kwargs)

    return filled_first


for _name in ("__getitem__", "__setitem__", "__delitem__", "__contains__", "__iter__", "__reversed__", "__len__",
              "__eq__", "__ne__", "__repr__", "__or__", "__ror__", "__ior__", "__sizeof__", "keys", "values", "items",
              "get", "pop", "popitem", "setdefault", "update", "clear", "copy"):
    setattr(LazyInfos, _name, _filling(_name))


class MiniChessVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` learner-versus-opponent games of one variant.

    Options as :class:`~minichess_envs.env.MiniChessEnv`, plus ``num_envs`` and
    ``autoreset_mode`` (``"NextStep"`` default, ``"SameStep"`` or ``"Disabled"``).
    ``opponent`` may be one agent for all games; if it has ``act_batch``, the
    replies of all games are chosen in one call. ``draws="claim"`` steps the
    games one by one in Python (the C step knows only the automatic draws).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        variant: str | Variant = "gardner",
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
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
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
    ):
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, not {num_envs!r}")
        self.variant = get_variant(variant)
        check_env_options(agent_color, reward, illegal_action, render_mode, self.metadata["render_modes"], draws)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = dict(self.metadata, autoreset_mode=self.autoreset_mode)
        self.num_envs = int(num_envs)
        self.agent_color = agent_color
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.ply_limit = resolve_ply_limit(self.variant, ply_limit)
        self.draws = draws
        self.encoding = ObservationEncoding(self.variant, history, last_move)
        self.single_observation_space = observation_space(self.variant, self.encoding)
        self.single_action_space = spaces.Discrete(self.variant.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.starts = StartPositions(self.variant, start)
        self.opponent_player = opponent
        self.duels = [
            Duel(Opponent(opponent, self.encoding, reset_player=False), reward, material_scale, self.ply_limit,
                 max_episode_steps, draws)
            for _ in range(self.num_envs)
        ]
        self._fast = opponent is None and draws == "automatic"  # the C path: the env's random opponent
        self.reward_mode, self.material_scale = reward, material_scale
        self.max_episode_steps = max_episode_steps
        self._learners = np.zeros(self.num_envs, np.int8)
        self._positions = [duel.position for duel in self.duels]  # kept in step with the duels
        self._arange = np.arange(self.num_envs)
        self._scratch = (np.zeros(self.num_envs, np.int8), np.zeros(self.num_envs, np.int8),
                         np.zeros(self.num_envs, np.uint8), np.zeros(self.num_envs, np.uint8),
                         np.zeros(self.num_envs, np.int32))  # outputs of the C step
        self._rng_state = np.zeros(self.num_envs, np.uint64)
        self._steps = np.zeros(self.num_envs, np.int32)
        self._lead = np.zeros(self.num_envs, np.int64)
        n, A = self.num_envs, self.variant.num_actions
        self._obs = np.zeros((n, *self.encoding.shape), np.float32)
        self._masks = np.zeros((n, A), np.int8)
        self._needs_reset = np.ones(n, bool)  # replaced, never changed in place: step's infos keep it
        self._uci_of_code: dict[int, str] = {}
        self._reset_called = False

    # -- Gymnasium API ---------------------------------------------------------------------

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset all games, or those in ``options["reset_mask"]`` (for ``autoreset_mode="Disabled"``).

        ``seed`` is an int (game i gets ``seed + i``) or a list of per-game seeds.
        ``options["fen"]`` starts every reset game from that position.
        """
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        unknown = set(options) - {"fen"}
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}; supported: 'fen', 'reset_mask'")
        if mask is None:
            mask = np.ones(self.num_envs, bool)
        elif not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (self.num_envs,)):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)")
        fen = options.get("fen")
        if fen is not None:
            Position(self.variant, fen)  # a bad FEN fails here, before any game or generator changes
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"expected {self.num_envs} seeds, got {len(seeds)}")
        if seed is not None or not hasattr(self, "_rngs"):
            self._np_random_seed = seeds[0] if seed is not None else None
            self._rngs = [np.random.default_rng(s) for s in seeds]
        elif any(s is not None for s in seeds):
            for i in np.flatnonzero(mask):
                if seeds[i] is not None:
                    self._rngs[i] = np.random.default_rng(seeds[i])
        self._learners = self._learners.copy()  # the last step's infos keep the old one
        replies = {int(i): self._reset_game(i, fen) for i in np.flatnonzero(mask)}
        self._needs_reset = self._needs_reset & ~mask
        self._reset_called = True
        obs = self._observations()
        ply = [p.ply for p in self._positions]
        infos = {}
        for i, reply in replies.items():  # as SyncVectorEnv: the reset games' infos only
            infos = self._add_info(infos, self._reset_info(i, obs["action_mask"], self._learners, ply, reply), i)
        return obs, infos

    def step(self, actions):
        if not self._reset_called:
            raise ResetNeeded("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer):
            raise ActionSpaceError(f"actions must be {self.num_envs} integers, got {actions.dtype} array "
                                   f"{actions.shape}")
        A = self.variant.num_actions
        out_of_range = (actions < 0) | (actions >= A)  # before the cast: uint64 values >= 2**63 would wrap
        if out_of_range.any():
            i = int(np.flatnonzero(out_of_range)[0])
            raise ActionSpaceError(f"action {int(actions[i])} of game {i} is outside the action space [0, {A})")
        actions = actions.astype(np.int64, copy=False)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            to_reset = self._needs_reset
        elif self._needs_reset.any():  # only "Disabled" leaves ended games for the user to reset
            raise ResetNeeded(f"games {np.flatnonzero(self._needs_reset).tolist()} have ended: reset them with "
                              "reset(options={'reset_mask': mask}) (autoreset_mode='Disabled')")
        else:
            to_reset = self._needs_reset  # all False
        playing = ~to_reset
        illegal = playing & (self._masks[self._arange, actions] == 0)
        if illegal.any() and self.illegal_action == "raise":  # checked before any game moves
            i = int(np.flatnonzero(illegal)[0])
            raise IllegalMoveError(f"action {int(actions[i])} of game {i} is not a legal move in "
                                   f"{self.duels[i].position.fen()}")
        playing &= ~illegal
        if self._fast:
            rewards, terminated, truncated = self._play_random_replies(actions, playing)
        else:
            rewards, terminated, truncated = self._play_duels(actions, playing)
        if illegal.any():  # illegal_action="lose"
            rewards[illegal], terminated[illegal] = -1.0, True
        # Infos are built on first use (LazyInfos), maybe after later steps, from what is kept here. A game's
        # moves stay in its position's history: a reset gives the game a new Position and leaves the old one.
        replies = {}
        if to_reset.any():
            self._learners = self._learners.copy()  # resets change it, and the last step's infos keep the old
            replies = {int(i): self._reset_game(i) for i in np.flatnonzero(to_reset)}
        ended = terminated | truncated
        positions, finals, final_obs = list(self._positions), {}, {}
        if ended.any():  # few games: what their end needs, before a reset replaces them
            for i in np.flatnonzero(ended):
                finals[int(i)] = self._end_info(i, illegal[i])
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                final = self._observations(ended)
                self._learners = self._learners.copy()
                for i in finals:
                    final_obs[i] = {k: v[i] for k, v in final.items()}
                    replies[i] = self._reset_game(i)
                ended = np.zeros_like(ended)
        self._needs_reset = ended
        obs = self._observations(ended)
        infos = LazyInfos()
        infos._fill = (self._fill_step_infos, obs["action_mask"].copy(), self._learners,
                       [p.ply for p in self._positions], positions, replies, finals, final_obs)
        return obs, rewards, terminated, truncated, infos

    def _play_random_replies(self, actions, playing):
        """All games in one C call; rewards from the outcomes, as :meth:`Duel.reward` computes them."""
        reasons, winners, trunc, illegal, material = self._scratch
        _core.step_random_duels(self._positions, actions, playing.view(np.uint8), self._rng_state, self._steps,
                                self.ply_limit, self.max_episode_steps or 0, reasons, winners, trunc, illegal,
                                material)
        assert not illegal[playing].any(), "the mask and the engine disagree on a legal action"
        terminated = playing & (reasons != 0)
        truncated = playing & ~terminated & (trunc == 1)
        won = terminated & (winners == self._learners)
        lost = terminated & (winners == 1 - self._learners)
        rewards = won.astype(np.float64) - lost
        if self.reward_mode == "material":
            lead = np.where(self._learners == 0, material, -material)
            rewards[playing] += (lead[playing] - self._lead[playing]) * self.material_scale
            self._lead[playing] = lead[playing]
        return rewards, terminated, truncated

    def _play_duels(self, actions, playing):
        """Game by game through :class:`Duel`, with the opponent's replies batched."""
        rewards, terminated, truncated = np.zeros(self.num_envs), np.zeros(self.num_envs, bool), np.zeros(
            self.num_envs, bool)
        replying = [i for i in np.flatnonzero(playing) if self.duels[i].learner_move(int(actions[i]))]
        for i, action in zip(replying, self._replies(replying)):
            self.duels[i].reply(action)
        for i in np.flatnonzero(playing):
            rewards[i], terminated[i], truncated[i] = self.duels[i].result()
        return rewards, terminated, truncated

    def action_masks(self) -> np.ndarray:
        """The observations' action masks, bool ``(num_envs, num_actions)``."""
        return self._masks.astype(bool)

    # -- per-game access, as SyncVectorEnv offers it ---------------------------------------------

    #: What ``call`` and ``get_attr`` answer per game, as ``MiniChessEnv`` would for that game.
    GAME_ATTRIBUTES = ("position", "learner", "moves", "action_masks", "to_pgn", "render")
    #: Settings ``set_attr`` may change (one value for every game: the games share them).
    SETTABLE = ("illegal_action",)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """For each game, ``name`` called with the arguments if it is a method, else its value.

        Names: :attr:`GAME_ATTRIBUTES`, or a setting the games share (``variant``,
        ``ply_limit``, ``illegal_action``, ...), repeated for every game.
        """
        if name in self.GAME_ATTRIBUTES:
            values = [self._game_attribute(i, name) for i in range(self.num_envs)]
        elif not name.startswith("_") and hasattr(self, name) and not callable(getattr(self, name)):
            values = [getattr(self, name)] * self.num_envs
        else:
            raise AttributeError(f"{type(self).__name__}.call: no per-game attribute {name!r}; per-game names are "
                                 f"{list(self.GAME_ATTRIBUTES)}, or a setting such as 'variant' or 'ply_limit'")
        return tuple(v(*args, **kwargs) if callable(v) else v for v in values)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The value of ``name`` for each game (see :meth:`call`)."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Change a setting in :attr:`SETTABLE`: one value, or a list with one (equal) value per game."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"expected one value or {self.num_envs} values, got {len(values)}")
        if name not in self.SETTABLE:
            raise AttributeError(f"{type(self).__name__} cannot set {name!r}; settable: {list(self.SETTABLE)}")
        if any(v != values[0] for v in values):
            raise ValueError(f"{name!r} is shared by every game of a {type(self).__name__}: give one value")
        if name == "illegal_action" and values[0] not in ("raise", "lose"):
            raise ValueError(f"illegal_action must be 'raise' or 'lose', not {values[0]!r}")
        setattr(self, name, values[0])

    def _game_attribute(self, i: int, name: str):
        duel = self.duels[i]
        if name == "position":
            return duel.position
        if name == "learner":
            return duel.learner
        if name == "moves":
            return [m.uci() for m in duel.position.move_stack]
        if name == "action_masks":
            return lambda: self._masks[i].astype(bool)
        if name == "to_pgn":
            return lambda headers=None: episode_pgn(duel.position, duel.learner, duel.opponent.name,
                                                    self.ply_limit, headers, self.draws)
        if name == "render":
            draw = {"ansi": render_ansi, "rgb_array": render_rgb}.get(self.render_mode)
            return lambda: None if draw is None else draw(duel.position)
        raise AttributeError(name)

    @property
    def positions(self) -> list:
        """The current position of every game (the live objects: copy before changing them)."""
        return list(self._positions)

    def render(self):
        if self.render_mode == "ansi":
            return tuple(render_ansi(p) for p in self.positions)
        if self.render_mode == "rgb_array":
            return tuple(render_rgb(p) for p in self.positions)
        return None

    # -- internals ---------------------------------------------------------------------------

    def _reset_game(self, i: int, fen: str | None = None) -> str | None:
        """A new game in slot ``i``, drawing from its generator in :class:`MiniChessEnv`'s order; returns
        the opponent's first move (UCI) if it moved first."""
        rng, duel = self._rngs[i], self.duels[i]
        learner = draw_color(self.agent_color, rng)
        reply = duel.start(self.starts.position(rng, learner, fen), learner, rng)
        self._learners[i] = learner
        self._positions[i] = duel.position
        self._rng_state[i] = duel.opponent.state
        self._steps[i] = 0
        self._lead[i] = duel.material
        return reply

    def _replies(self, games: list[int]) -> list[int]:
        """The opponent's actions in these games: one ``act_batch`` call if it has one."""
        if self.opponent_player is None:  # the random player, off the C path (draws="claim")
            return [self.duels[i].opponent.choose(self.duels[i].position) for i in games]
        positions = [self.duels[i].position for i in games]
        return choose_actions(self.opponent_player, positions, self.encoding, name=self.duels[0].opponent.label)

    def _observations(self, ended: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Observations and masks of every game; games in ``ended`` without a legal move get ``NO_OP_ACTION``."""
        _core.write_batch(self._positions, self._obs, self._masks, self._learners, self.encoding.history,
                          self.encoding.last_move)
        if ended is not None and ended.any():
            games = np.flatnonzero(ended)
            self._masks[games[~self._masks[games].any(axis=1)], NO_OP_ACTION] = 1
        return {"observation": self._obs.copy(), "action_mask": self._masks.copy()}

    # Infos: each game's is MiniChessEnv's (``_info``). Reset and final infos go through Gymnasium's own
    # ``_add_info``, as in SyncVectorEnv; a step's are built key by key in the layout it gives.

    def _end_info(self, i: int, illegal: bool) -> tuple[dict[str, Any], bool | None]:
        """Game ``i`` ended in this step: its info without ``action_mask`` and moves, and whether the
        opponent replied (``None`` after an illegal action, which plays no move)."""
        duel = self.duels[i]
        reason, winner = duel.outcome_code()
        info = {"learner_color": COLOR_NAMES[duel.learner], "ply": duel.position.ply,
                "outcome": Termination(reason).name.lower() if reason else None,
                "winner": COLOR_NAMES[winner] if reason and winner >= 0 else None}
        if illegal:
            info["illegal_action"] = True
        return info, None if illegal else duel.position.turn == duel.learner

    def _moves(self, position: Position, ply: int, replied: bool) -> dict[str, str]:
        """``move`` and, if the opponent replied, ``opponent_move`` of a step that ended at ``ply``."""
        moves = {"move": self._uci(position, ply - replied)}
        if replied:
            moves["opponent_move"] = self._uci(position, ply)
        return moves

    def _uci(self, position: Position, ply: int) -> str:
        """The UCI of the move that led to ``ply`` (cached by move code: a variant has few)."""
        code = position.board_state(ply).last_move
        uci = self._uci_of_code.get(code)
        if uci is None:
            uci = self._uci_of_code[code] = _decode(code, position._names).uci()
        return uci

    @staticmethod
    def _reset_info(i: int, masks: np.ndarray, learners: np.ndarray, ply: list[int], reply: str | None) -> dict:
        info = {"action_mask": masks[i], "learner_color": COLOR_NAMES[learners[i]], "ply": ply[i],
                "outcome": None, "winner": None}
        if reply is not None:
            info["opponent_move"] = reply
        return info

    def _fill_step_infos(self, masks, learners, ply, positions, replies, finals, final_obs, infos: dict) -> None:
        """The infos of a step: what SyncVectorEnv's ``_add_info`` makes of each game's MiniChessEnv info,
        built key by key rather than game by game (``tests/test_vector_modes.py`` holds them equal)."""
        n = self.num_envs
        outcome, winner = np.full(n, None, object), np.full(n, None, object)
        extra = {"move": {}, "opponent_move": {}, "illegal_action": {}}  # key -> {game: value}, the keys some have
        for i, (info, replied) in finals.items():
            if i in final_obs:  # SameStep: nested under final_info; the game's own keys are its new game's
                final_info = {"action_mask": final_obs[i]["action_mask"], **info}
                if replied is not None:
                    final_info.update(self._moves(positions[i], info["ply"], replied))
                self._add_info(infos, {"final_obs": final_obs[i], "final_info": final_info}, i)
                continue
            outcome[i], winner[i] = info["outcome"], info["winner"]
            if replied is None:
                extra["illegal_action"][i] = True
            else:
                for key, value in self._moves(positions[i], info["ply"], replied).items():
                    extra[key][i] = value
        for i, reply in replies.items():
            if reply is not None:
                extra["opponent_move"][i] = reply
        moves, opponent_moves = extra["move"], extra["opponent_move"]
        for i in range(n):
            if i not in finals and i not in replies:  # stepped, and the opponent replied
                moves[i], opponent_moves[i] = self._uci(positions[i], ply[i] - 1), self._uci(positions[i], ply[i])
        # Every game's info has these, so every mask is all True (SyncVectorEnv: int -> int64, str/None -> object)
        infos.update({"action_mask": masks, "learner_color": np.array(COLOR_NAMES, object)[learners],
                      "ply": np.array(ply, dtype=int), "outcome": outcome, "winner": winner})
        for key in ("action_mask", "learner_color", "ply", "outcome", "winner"):
            infos[f"_{key}"] = np.ones(n, bool)
        for key, values in extra.items():
            if values:
                games = list(values)
                array = np.zeros(n, bool) if key == "illegal_action" else np.full(n, None, object)
                array[games] = list(values.values())
                infos[key], infos[f"_{key}"] = array, np.zeros(n, bool)
                infos[f"_{key}"][games] = True

