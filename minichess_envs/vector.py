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
modes of Gymnasium 1.x are supported (``autoreset_mode=``); infos carry
``outcome``, ``winner``, ``learner_color`` and ``ply`` (with ``_outcome`` etc.
masks) for the games that ended, with the single env's values (``None`` for no
outcome, as at the ply limit, and for no winner).

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

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from minichess_envs import _core
from minichess_envs.encoding import NO_OP_ACTION, ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, ActionSpaceError, IllegalMoveError, Position, Termination
from minichess_envs.env import (
    MATERIAL_SCALE,
    Duel,
    Opponent,
    StartPositions,
    check_options,
    draw_color,
    episode_pgn,
    observation_space,
)
from minichess_envs.players import choose_actions
from minichess_envs.render import render_ansi, render_rgb
from minichess_envs.variants import Variant, get_variant


class MiniChessVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` learner-versus-opponent games of one variant.

    Options as :class:`~minichess_envs.env.MiniChessEnv`, plus ``num_envs`` and
    ``autoreset_mode`` (``"NextStep"`` default, ``"SameStep"`` or ``"Disabled"``).
    ``opponent`` may be one agent for all games; if it has ``act_batch``, the
    replies of all games are chosen in one call.
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
        ply_limit: int | None = None,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
    ):
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, not {num_envs!r}")
        self.variant = get_variant(variant)
        check_options(agent_color, reward, illegal_action, render_mode, self.metadata["render_modes"])
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = dict(self.metadata, autoreset_mode=self.autoreset_mode)
        self.num_envs = int(num_envs)
        self.agent_color = agent_color
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.ply_limit = self.variant.ply_limit if ply_limit is None else int(ply_limit)
        self.encoding = ObservationEncoding(self.variant, history, last_move)
        self.single_observation_space = observation_space(self.variant, self.encoding)
        self.single_action_space = spaces.Discrete(self.variant.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.starts = StartPositions(self.variant, start)
        self.opponent_player = opponent
        self.duels = [
            Duel(Opponent(opponent, self.encoding, reset_player=False), reward, material_scale, self.ply_limit,
                 max_episode_steps)
            for _ in range(self.num_envs)
        ]
        self._fast = opponent is None  # the C path plays the env's own random opponent
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
        self._needs_reset = np.ones(n, bool)
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
        for i in np.flatnonzero(mask):
            self._reset_game(i, fen)
        self._needs_reset[mask] = False
        self._reset_called = True
        return self._observations(), {}

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
        infos: dict[str, Any] = {}
        if illegal.any():  # illegal_action="lose"
            rewards[illegal], terminated[illegal] = -1.0, True
            for i in np.flatnonzero(illegal):
                infos = self._add_info(infos, {"illegal_action": True}, i)
        if to_reset.any():
            for i in np.flatnonzero(to_reset):
                self._reset_game(i)
        ended = terminated | truncated
        if ended.any():
            for i in np.flatnonzero(ended):
                infos = self._add_info(infos, self._end_info(i), i)
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                final = self._observations(ended)
                for i in np.flatnonzero(ended):
                    infos = self._add_info(infos, {"final_obs": {k: v[i] for k, v in final.items()},
                                                   "final_info": self._end_info(i)}, i)
                    self._reset_game(i)
                ended = np.zeros_like(ended)
        self._needs_reset = ended
        return self._observations(ended), rewards, terminated, truncated, infos

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
                                                    self.ply_limit, headers)
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

    def _reset_game(self, i: int, fen: str | None = None) -> None:
        """A new game in slot ``i``, drawing from its generator in :class:`MiniChessEnv`'s order."""
        rng, duel = self._rngs[i], self.duels[i]
        learner = draw_color(self.agent_color, rng)
        duel.start(self.starts.position(rng, learner, fen), learner, rng)
        self._learners[i] = learner
        self._positions[i] = duel.position
        self._rng_state[i] = duel.opponent.state
        self._steps[i] = 0
        self._lead[i] = duel.material

    def _replies(self, games: list[int]) -> list[int]:
        """The opponent's actions in these games: one ``act_batch`` call if it has one."""
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

    def _end_info(self, i: int) -> dict[str, Any]:
        reason, winner = self.duels[i].position.outcome_code()
        return {
            "outcome": Termination(reason).name.lower() if reason else None,
            "winner": COLOR_NAMES[winner] if reason and winner >= 0 else None,
            "learner_color": COLOR_NAMES[self.duels[i].learner],
            "ply": self.duels[i].position.ply,
        }
