"""What PPO trains on, said once: a :class:`Task` built from the settings by :func:`task_for` (docs/ppo.md)."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym

from agents.base import load
from agents.games import SEAT_NAMES, new_game
from agents.ppo.agent import EpsilonRandomAgent, PPOAgent
from agents.ppo.boardgame_env import BoardGameVectorEnv, check_game
from agents.ppo.network import PPONet, PPONetConfig
from minichess_envs.variants import get_variant


class Task:
    """One game for PPO; ``settings`` is the run's :class:`~agents.ppo.common.PPOSettings`. A subclass names its
    game and defines ``make_envs(num_envs=None)`` (``num_envs``, default ``settings.num_envs``, games of the learner
    against its opponent) and ``evaluate_vs_random(agent, games, seed=10_000, sides=None)`` (docs/ppo.md)."""

    backends: tuple[str, ...] = ("native",)
    policy_head = "planes"
    agent_options: ClassVar[dict]  # how the game is seen: by the probe and the saved :class:`PPOAgent`

    def __init__(self, settings, game: str):
        self.settings = settings
        self.probe = new_game(game, **self.agent_options)  # the start of a game: its observation shape and actions
        self.name = self.probe.name  # a board game's name or a chess variant's

    def net_config(self) -> PPONetConfig:
        s = self.settings
        return PPONetConfig(*self.probe.observation_shape, self.probe.num_actions, channels=s.channels,
                            conv_layers=s.conv_layers, value_hidden=s.value_hidden, policy_head=self.policy_head)

    def agent(self, net: PPONet, backend: str, name: str = "ppo") -> PPOAgent:
        """The saved form of a policy trained on this task."""
        return PPOAgent(net, self.name, **self.agent_options, name=name, backend=backend)

    def check_backend(self, kind: str) -> None:
        if kind not in self.backends:
            raise ValueError(f"{self.name} trains with the {' or '.join(self.backends)} backend, not {kind}")

    @staticmethod
    def row(side: str, wins: int, draws: int, losses: int, games: int, interval: tuple[float, float]) -> dict:
        lo, hi = interval
        return {f"win_rate_{side}": wins / games, f"win_low_{side}": lo, f"win_high_{side}": hi,
                f"draws_{side}": draws / games, f"losses_{side}": losses / games}


class ChessTask(Task):
    """A chess variant: the learner against the env's random player or a saved agent (``opponent``),
    with the settings' rewards and starts; a spatial policy head over the action encoding's planes."""

    backends = ("native", "rllib", "sb3")
    agent_options: ClassVar[dict] = {"history": 1, "last_move": True}  # the envs' observation encoding

    def __init__(self, settings):
        if settings.selfplay:
            raise ValueError("selfplay (a pool of past selves) is the board games'; on chess it did not beat training "
                             "against the random player at equal wall-clock and was removed (docs/decisions.md)")
        super().__init__(settings, settings.variant)

    def env_kwargs(self) -> dict:
        """Keyword arguments of ``MiniChessEnv`` / ``MiniChessVectorEnv`` but the opponent; ``illegal_action="raise"``:
        a masked policy never chooses an illegal action, so one is a bug to surface, not a loss to learn from."""
        s = self.settings
        return {"variant": s.variant, "agent_color": s.agent_color, "reward": s.reward, "start": s.start,
                "material_scale": s.material_scale, "illegal_action": "raise"}

    def make_envs(self, num_envs: int | None = None):
        s = self.settings
        return gym.make_vec(get_variant(s.variant).gym_id, num_envs=num_envs or s.num_envs,
                            vectorization_mode="vector_entry_point", autoreset_mode="SameStep",
                            opponent=make_opponent(s.opponent, s.opponent_eps, s.seed + 1), **self.env_kwargs())

    def evaluate_vs_random(self, agent, games: int, seed: int = 10_000, sides: list[str] | None = None) -> dict:
        from agents.arena.evaluation import versus_random
        row = {}
        for color in sides or self.settings.eval_colors():
            match = versus_random(agent, self.settings.variant, games=games, color=color, seed=seed)
            row.update(self.row(color, match.wins, match.draws, match.losses, match.games, match.win_interval))
        return row


class BoardGameTask(Task):
    """A board game: the learner in a seat (``agent_color`` ``"white"``: first) against the random player or
    (``selfplay``) its past selves; a linear policy head (Connect Four's columns are not planes)."""

    policy_head = "linear"
    agent_options: ClassVar[dict] = {"history": 1, "last_move": False}  # the plain board: PettingZoo's planes as is
    #: ``PPOSettings`` fields a board-game run does not read (chess's rules, rewards and RLlib's runners).
    unread_settings = ("variant", "reward", "material_scale", "start", "opponent", "opponent_eps", "env_runners")
    #: ``PPOSettings.agent_color`` read as a seat: White moves first.
    SEAT_OF_COLOR = {"white": "first", "black": "second", "random": "random"}

    def __init__(self, settings):
        check_game(settings.game)
        if settings.opponent is not None or settings.start != "default":
            raise ValueError(f"a {settings.game} run plays from the empty board against the random player or "
                             "(selfplay) its past selves: opponent and start are chess settings")
        super().__init__(settings, settings.game)

    def make_envs(self, num_envs: int | None = None) -> BoardGameVectorEnv:
        s = self.settings
        return BoardGameVectorEnv(s.game, num_envs or s.num_envs, self.net_config(),
                                  learner_seat=self.SEAT_OF_COLOR[s.agent_color],
                                  random_share=s.selfplay_random if s.selfplay else 1.0)

    def evaluate_vs_random(self, agent, games: int, seed: int = 10_000, sides: list[str] | None = None) -> dict:
        from agents.arena import play_match
        from agents.players.random_agent import RandomAgent
        row = {}
        for seat in sides or SEAT_NAMES:
            match = play_match(agent, RandomAgent(seed), self.name, games, seed, seats=seat, names=("ppo", "random"))
            t = match.tally("ppo")
            row.update(self.row(seat, t.wins, t.draws, t.losses, t.games, t.rate_interval("wins")))
        return row


def task_for(settings) -> Task:
    """The task of a run: the board game ``settings.game`` names, else the chess variant ``settings.variant``."""
    return ChessTask(settings) if settings.game is None else BoardGameTask(settings)


def make_opponent(path: str | None, eps: float = 0.0, seed: int = 0):
    """A chess run's opponent: ``None`` (the random player) or the agent at ``path``, a random move at rate ``eps``."""
    if path is None:
        return None
    return EpsilonRandomAgent(load(path), eps, seed=seed) if eps > 0 else load(path)
