"""PettingZoo AEC environments: two players, ``player_0`` (White) and ``player_1`` (Black).

>>> from minichess_envs import aec
>>> env = aec.env("gardner")
>>> env.reset(seed=0)
>>> for agent in env.agent_iter():
...     obs, reward, terminated, truncated, info = env.last()
...     action = None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0])
...     env.step(action)

Like PettingZoo's classic games (``chess_v6``): observations are dicts with an
``action_mask`` (all zeros for the player not to move during the game), the
winner gets +1 and the loser -1 at the end, and reaching the ply limit
truncates the game for both players. Each player observes the board from its
own side. Ids are registered in PettingZoo's registry as
``minichess/<variant>_v0`` (``pettingzoo.make("aec", "minichess/gardner_v0")``).

Actions, as in the single-agent env: an illegal move (in the action space, not
in the mask) ends the game with -1 for the mover and 0 for the other player,
both terminated and truncated (``TerminateIllegalWrapper``, as ``chess_v6`` is
wrapped); ``env(..., illegal_action="raise")`` raises ``IllegalMoveError``
instead, as the unwrapped ``raw_env`` does. Anything outside the action space
raises ``ActionSpaceError`` (a ``ValueError``, also under ``python -O``).

``draws="claim"`` ends the game also when the player to move could claim a
draw by repetition or the no-progress rule, as ``chess_v6`` does; with
``ply_limit=math.inf`` (``chess_v6`` has no limit), 8x8 games end exactly where
``chess_v6``'s do.

Once the game is over neither mask is all zeros: the player to move keeps its
legal moves where it has any (at the ply limit, after a draw by repetition);
otherwise a mask offers only ``NO_OP_ACTION``. The finished players' steps
take ``None`` as PettingZoo expects; ``env()`` also accepts any action of the
action space there and ignores it, so a sampler that draws from the masks
never fails.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from minichess_envs.encoding import NO_OP_ACTION, ObservationEncoding
from minichess_envs.engine import Position, Termination, _check_action
from minichess_envs.env import (
    DRAWS,
    claim_tags,
    game_outcome,
    observation_space,
    resolve_ply_limit,
)
from minichess_envs.pgn import game_pgn
from minichess_envs.render import Renderer
from minichess_envs.variants import Variant, get_variant

AGENTS = ("player_0", "player_1")


def env(variant: str | Variant = "gardner", *, illegal_action: str = "lose", **options) -> AECEnv:
    """A wrapped AEC env, as PettingZoo's classic games are wrapped.

    :param illegal_action: ``"lose"`` (default: an illegal move ends the game
        with -1 for the mover) or ``"raise"`` (``IllegalMoveError``).
    :param options: those of :class:`raw_env`.
    """
    if illegal_action not in ("raise", "lose"):
        raise ValueError(f"illegal_action must be 'raise' or 'lose', not {illegal_action!r}")
    wrapped = raw_env(variant, **options)
    if illegal_action == "lose":
        wrapped = wrappers.TerminateIllegalWrapper(wrapped, illegal_reward=-1)
    wrapped = CheckedActionWrapper(wrapped)
    return wrappers.OrderEnforcingWrapper(wrapped)


class CheckedActionWrapper(wrappers.BaseWrapper):
    """Rejects actions outside the action space with ``ActionSpaceError``, and
    passes an action given for a finished player on as ``None``.

    In place of PettingZoo's ``AssertOutOfBoundsWrapper``, whose ``assert``
    vanishes under ``python -O``; it runs before ``TerminateIllegalWrapper``
    indexes the mask with the action.
    """

    def step(self, action) -> None:
        agent = self.agent_selection
        if action is not None or not (self.terminations[agent] or self.truncations[agent]):
            action = _check_action(action, self.action_space(agent).n)
        if self.terminations[agent] or self.truncations[agent]:
            action = None
        super().step(action)


class raw_env(AECEnv):
    """Two-player chess of one variant (PettingZoo naming: ``raw_env`` is unwrapped).

    :param variant: variant name or :class:`~minichess_envs.Variant`.
    :param history, last_move: the observation encoding.
    :param ply_limit: plies after which the game is truncated (default: the variant's; ``math.inf``: none).
    :param draws: ``"automatic"`` (default) or ``"claim"``: as :class:`~minichess_envs.env.MiniChessEnv`'s.
    :param render_mode: ``"ansi"``, ``"rgb_array"`` or ``"human"`` (needs pygame).
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "name": "minichess_v0",
                "is_parallelizable": False, "render_fps": 2}

    def __init__(self, variant: str | Variant = "gardner", *, history: int = 1, last_move: bool = True,
                 ply_limit: float | None = None, draws: str = "automatic", render_mode: str | None = None):
        super().__init__()
        self.variant = get_variant(variant)
        self.metadata = dict(self.metadata, name=f"minichess_{self.variant.name.replace('-', '_')}_v0")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, not {render_mode!r}")
        if draws not in DRAWS:
            raise ValueError(f"draws must be 'automatic' or 'claim', not {draws!r}")
        self.render_mode = render_mode
        self.draws = draws
        self.encoding = ObservationEncoding(self.variant, history, last_move)
        self.ply_limit = resolve_ply_limit(self.variant, ply_limit)
        self.possible_agents = list(AGENTS)
        self.agents = []
        space = observation_space(self.variant, self.encoding)
        self.observation_spaces = {a: space for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(self.variant.num_actions) for a in AGENTS}
        self.position = Position(self.variant)
        self._renderer = Renderer(render_mode, f"minichess-envs: {self.variant.name}")

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        # The game itself is deterministic; the seed is accepted for API compatibility.
        options = options or {}
        unknown = set(options) - {"fen"}
        if unknown:  # PettingZoo's api_test passes made-up options, so warn rather than fail
            warnings.warn(f"ignoring unknown reset option(s) {sorted(unknown)}; supported: 'fen'", stacklevel=2)
        position = Position(self.variant, options.get("fen"))
        if game_outcome(position, self.draws)[0]:
            raise ValueError(f"the start position {position.fen()} is already over")
        self.position = position
        self.agents = list(AGENTS)
        self.rewards = {a: 0 for a in AGENTS}
        self._cumulative_rewards = {a: 0 for a in AGENTS}
        self.terminations = {a: False for a in AGENTS}
        self.truncations = {a: False for a in AGENTS}
        self.infos = {a: {} for a in AGENTS}
        self.agent_selection = AGENTS[position.turn]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """The board from ``agent``'s side; the mask as the module docstring describes."""
        color = AGENTS.index(agent)
        obs = np.empty(self.encoding.shape, np.float32)
        self.position.write_observation(obs, self.encoding.history, self.encoding.last_move, color)
        if color == self.position.turn:
            mask = self.position.action_mask()
        else:
            mask = np.zeros(self.variant.num_actions, np.int8)
        if self._ended() and not mask.any():
            mask[NO_OP_ACTION] = 1
        return {"observation": obs, "action_mask": mask}

    def step(self, action) -> None:
        """Play the selected player's action: ``ActionSpaceError`` outside the action
        space, ``IllegalMoveError`` for an illegal move (nothing changes); ``None``
        for a finished player."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)  # a ValueError unless None
            return
        self.position.push_action(_check_action(action, self.variant.num_actions))
        self._cumulative_rewards[agent] = 0
        for a in AGENTS:
            self.infos[a] = {"move": self.position.peek().uci()}
        reason, winner = game_outcome(self.position, self.draws)
        if reason:
            for color, a in enumerate(AGENTS):
                self.rewards[a] = 0 if winner < 0 else (1 if winner == color else -1)
                self.terminations[a] = True
                self.infos[a]["outcome"] = Termination(reason).name.lower()
        elif self.position.ply >= self.ply_limit:
            for a in AGENTS:
                self.truncations[a] = True
        else:
            self.rewards = {a: 0 for a in AGENTS}
        self.agent_selection = AGENTS[self.position.turn]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _ended(self) -> bool:
        """Is the game over: by the rules, the ply limit, or a player's termination (an illegal move)?"""
        return (self.position.outcome_code()[0] != 0 or self.position.ply >= self.ply_limit or len(self.agents) < 2
                or any(self.terminations.values()) or any(self.truncations.values()))

    def render(self):
        return self._renderer.render(self.position)

    def close(self) -> None:
        self._renderer.close()

    @property
    def moves(self) -> list[str]:
        """The moves of the current game in UCI."""
        return [m.uci() for m in self.position.move_stack]

    def to_pgn(self, headers: dict[str, str] | None = None) -> str:
        """The current game as PGN, players named ``player_0`` / ``player_1``."""
        tags = {"White": AGENTS[0], "Black": AGENTS[1], **claim_tags(self.position, self.draws)}
        tags.update(headers or {})
        return game_pgn(self.position, tags)

