"""PPO on the PettingZoo board games (Tic-Tac-Toe, Connect Four): the built-in PPO's pieces, and an
sb3-contrib demonstration.

The built-in PPO (``agents/ppo/native.py``) trains on these games when ``PPOSettings.game`` names one;
this module holds what differs from chess:

- :class:`BoardGameVectorEnv`: ``num_envs`` games for ``native.collect``, the learner's move and the
  opponent's reply in one step, same-step autoreset, PettingZoo's observation dicts, infos with
  ``winner``, ``learner_color`` (``"first"`` / ``"second"``), ``opponent`` and ``final_obs``; the
  opponent is the random player or (self-play) the past self drawn from
  :class:`~agents.ppo.selfplay.OpponentPool`, with a share of random games;
- :func:`net_config`: :class:`~agents.ppo.network.PPONet` with a linear policy head (Connect Four's 7
  column actions are not square planes);
- :class:`BoardGamePPOAgent`: the saved policy (``agent.json`` + ``weights.pt``, no pickle), a batched
  player for :mod:`agents.boardgame_judges` (games -> its most probable legal actions);
- :func:`evaluate`: win rates against the random player in both seats, with Wilson intervals.

The demonstration (:class:`GameEnv`, :func:`train_ppo`, :func:`policy_player`): sb3-contrib's
``MaskablePPO`` on a single-agent env, against random or a frozen copy of itself, without
checkpoints or resume.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

from agents.games import BOARD_GAMES as GAMES
from agents.games import new_game
from agents.base import Agent, check_settings, read_manifest, write_manifest
from agents.ppo.network import PPONet, PPONetConfig, greedy_actions
from agents.ppo.selfplay import KINDS, PAST_SELF, RANDOM, PastSelfVectorEnv
from agents.weights import load_network, save_network

SEATS = ("first", "second")
#: ``PPOSettings.agent_color`` read as a seat: White moves first.
SEAT_OF_COLOR = {"white": "first", "black": "second", "random": "random"}
#: ``PPOSettings`` fields a board-game run does not read (chess's rules, rewards and library backends).
CHESS_SETTINGS = ("variant", "reward", "material_scale", "start", "opponent", "opponent_eps", "env_runners",
                  "vectorize")


def check_game(name: str) -> str:
    """``name`` if it is a board game PPO trains on; ``ValueError`` listing the known ones otherwise."""
    if name not in GAMES:
        raise ValueError(f"unknown board game {name!r}; known: {', '.join(GAMES)}")
    return name


# -- the vector env ---------------------------------------------------------------------------------


class BoardGameVectorEnv(PastSelfVectorEnv):
    """``num_envs`` games of the learner against the random player or its past self.

    Each game draws at its start the learner's seat (``learner_seat``: ``"first"``, ``"second"`` or
    ``"random"``) and, once :meth:`set_past_self` has given weights, its opponent: the random player
    with probability ``random_share``, else the past self, which samples from its masked policy.
    The opponent's first move, when the learner sits second, is made before the learner sees the
    board. Reward +1 / 0 / -1 for the learner at the end, 0 before; games end only by the rules.
    """

    def __init__(self, game: str, num_envs: int, *, learner_seat: str = "random", random_share: float = 0.2,
                 net_config: PPONetConfig | None = None):
        self.game = check_game(game)
        if learner_seat not in (*SEATS, "random"):
            raise ValueError(f"learner_seat must be 'first', 'second' or 'random', got {learner_seat!r}")
        if not 0.0 <= random_share <= 1.0:
            raise ValueError(f"random_share must be a probability in [0, 1], got {random_share}")
        probe = new_game(game)
        self.num_envs, self.learner_seat, self.random_share = num_envs, learner_seat, random_share
        self.single_observation_space = spaces.Dict({
            "observation": spaces.Box(0.0, 1.0, probe.observation_shape, np.float32),
            "action_mask": spaces.Box(0, 1, (probe.num_actions,), np.int8)})
        self.single_action_space = spaces.Discrete(probe.num_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.games = [probe.copy() for _ in range(num_envs)]
        self._init_opponents(num_envs, net_config or net_config_for(game))  # learners: 0 moves first

    def step(self, actions):
        actions = np.asarray(actions, np.int64).reshape(self.num_envs)
        for i, (game, action) in enumerate(zip(self.games, actions)):
            if not (0 <= action < game.num_actions) or not game.legal_mask()[action]:
                raise ValueError(f"action {int(action)} of game {i} is not legal in {game!r}; "
                                 f"legal: {game.legal_actions()}")
        for game, action in zip(self.games, actions):
            game.step(int(action))
        self._reply(np.array([i for i, g in enumerate(self.games) if not g.is_over()], np.int64))
        n = self.num_envs
        rewards, terminated = np.zeros(n), np.array([g.is_over() for g in self.games])
        infos: dict = {}
        ended = np.flatnonzero(terminated)
        if len(ended):
            final = self._observations()
            for i in ended:
                game, learner = self.games[i], int(self.learners[i])
                winner = game.winner()
                rewards[i] = 0.0 if winner is None else (1.0 if winner == learner else -1.0)
                infos = self._add_info(infos, {
                    "final_obs": {k: v[i] for k, v in final.items()},
                    "winner": None if winner is None else SEATS[winner], "learner_color": SEATS[learner],
                    "moves": int(game.moves), "opponent": KINDS[self.kinds[i]]}, i)
            self._new_games(ended)
        return self._observations(), rewards, terminated, np.zeros(n, bool), infos

    # -- internals ---------------------------------------------------------------------------

    def _new_games(self, indices: np.ndarray) -> None:
        """Start games: the learner's seat and the opponent drawn, the opponent's first move if it sits first."""
        for i in indices:
            rng = self._rngs[i]
            seat = self.learner_seat if self.learner_seat != "random" else SEATS[int(rng.integers(2))]
            kind = RANDOM if not self.has_past_self or rng.random() < self.random_share else PAST_SELF
            self.games[i] = new_game(self.game)
            self.learners[i], self.kinds[i] = SEATS.index(seat), kind
            self.games_started[kind] += 1
        self._reply(np.array([i for i in indices if self.learners[i] == 1], np.int64))

    def _reply(self, indices: np.ndarray) -> None:
        """The opponents' moves in these games: the random player's per game, the past self's in one batch."""
        by_self = [i for i in indices if self.kinds[i] == PAST_SELF]
        for i in indices:
            if self.kinds[i] == RANDOM:
                self.games[i].step(int(self._rngs[i].choice(self.games[i].legal_actions())))
        if by_self:
            games = [self.games[i] for i in by_self]
            obs = torch.from_numpy(np.stack([g.observation() for g in games]))
            masks = torch.from_numpy(np.stack([g.legal_mask() for g in games]))
            with torch.inference_mode():
                logits, _ = self.past_self(obs, masks)
                actions = torch.multinomial(torch.softmax(logits, -1), 1, generator=self.generator).squeeze(1)
            for game, action in zip(games, actions.tolist()):
                game.step(action)

    def _observations(self) -> dict[str, np.ndarray]:
        """PettingZoo's dicts, batched: planes from the view of the player to move (the learner in a
        game going on), and the legal mask (all zero in a finished game's final observation)."""
        return {"observation": np.stack([g.observation() for g in self.games]),
                "action_mask": np.stack([g.legal_mask() for g in self.games])}


def net_config_for(game: str, channels: int = 32, conv_layers: int = 2, value_hidden: int = 64) -> PPONetConfig:
    """The :class:`PPONetConfig` of a board game: PettingZoo's ``(H, W, 2)`` planes, a linear policy head."""
    probe = new_game(check_game(game))
    return PPONetConfig(*probe.observation_shape, probe.num_actions, channels=channels, conv_layers=conv_layers,
                        value_hidden=value_hidden, policy_head="linear")


def make_envs(settings) -> BoardGameVectorEnv:
    """The games of a board-game run (``settings.game``): against the random player, or in self-play
    against the pool of past selves with ``selfplay_random`` of the games against random."""
    return BoardGameVectorEnv(settings.game, settings.num_envs, learner_seat=SEAT_OF_COLOR[settings.agent_color],
                              random_share=settings.selfplay_random if settings.selfplay else 1.0,
                              net_config=settings.net_config())


# -- the saved agent --------------------------------------------------------------------------------


class BoardGamePPOAgent(Agent):
    """A PPO policy for a board game: its most probable legal action.

    ``act(observation, action_mask)`` takes PettingZoo's observation planes and mask; called on a list
    of :class:`~agents.games.Game` it is a batched player for :mod:`agents.boardgame_judges`.
    """

    def __init__(self, net: PPONet, game: str, *, name: str = "ppo", backend: str = "native"):
        self.net = net.eval()
        self.game = check_game(game)
        probe, c = new_game(game), net.config
        if (c.height, c.width, c.channels_in, c.num_actions) != (*probe.observation_shape, probe.num_actions):
            raise ValueError(f"network for {c.height}x{c.width}x{c.channels_in} planes and {c.num_actions} actions "
                             f"does not fit {game} ({probe.observation_shape}, {probe.num_actions} actions)")
        self.name, self.backend = name, backend

    def act(self, observation, action_mask, position=None) -> int:
        return int(self.act_batch(np.asarray(observation)[None], np.asarray(action_mask)[None])[0])

    def act_batch(self, observations, action_masks, positions=None) -> np.ndarray:
        return greedy_actions(self.net, observations, action_masks).numpy()

    def act_games(self, games) -> np.ndarray:
        """The chosen action in each game (one network call for all)."""
        return self.act_batch(np.stack([g.observation() for g in games]), np.stack([g.legal_mask() for g in games]))

    __call__ = act_games

    def save(self, path: str) -> None:
        save_network(path, self.net)
        write_manifest(path, self, game=self.game, backend=self.backend)

    @classmethod
    def load(cls, path: str) -> BoardGamePPOAgent:
        manifest = read_manifest(path)
        settings = check_settings(path, manifest["settings"], {"game": str}, {"backend": str})
        if settings["game"] not in GAMES:
            raise ValueError(f"{path}: unknown board game {settings['game']!r}; known: {', '.join(GAMES)}")
        net = load_network(path, PPONet, PPONetConfig, "PPO")
        return cls(net, settings["game"], name=manifest.get("name", "ppo"), backend=settings.get("backend", "native"))


# -- evaluation -------------------------------------------------------------------------------------


def evaluate(agent: BoardGamePPOAgent, game: str, games: int, seed: int = 10_000) -> dict:
    """Win, draw and loss rates against the random player moving first and second (95% Wilson intervals)."""
    from agents.boardgame_judges import play_match, random_player

    row = {}
    for seat in SEATS:
        match = play_match(game, agent.act_games, random_player(seed), games, first=seat == "first")
        lo, hi = match.interval("wins")
        row.update({f"win_rate_{seat}": match.wins / match.games, f"win_low_{seat}": lo, f"win_high_{seat}": hi,
                    f"draws_{seat}": match.draws / match.games, f"losses_{seat}": match.losses / match.games})
    return row


# -- the sb3-contrib demonstration ------------------------------------------------------------------


class GameEnv(gym.Env):
    """One player of a board game against ``opponent(games) -> actions`` (batched, one game here)."""

    metadata = {"render_modes": []}

    def __init__(self, game: str, opponent, learner_first: bool | None = None):
        self.game_name = game
        self.opponent = opponent
        self.learner_first = learner_first  # None: drawn at random each episode
        probe = new_game(game)
        self.observation_space = gym.spaces.Box(0.0, 1.0, probe.observation_shape, np.float32)
        self.action_space = gym.spaces.Discrete(probe.num_actions)
        self.game = probe
        self.learner = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.game = new_game(self.game_name)
        first = self.learner_first if self.learner_first is not None else bool(self.np_random.integers(2))
        self.learner = 0 if first else 1
        if not first:
            self.game.step(int(self.opponent([self.game])[0]))
        return self.game.observation(), {}

    def action_masks(self) -> np.ndarray:
        return self.game.legal_mask().astype(bool)

    def step(self, action):
        action = int(action)
        if self.game.is_over():
            raise RuntimeError("step after the end of the game: call reset()")
        if not (0 <= action < self.action_space.n) or not self.game.legal_mask()[action]:
            raise ValueError(f"illegal action {action} in {self.game!r}; legal: {self.game.legal_actions()}")
        self.game.step(action)
        if not self.game.is_over():
            self.game.step(int(self.opponent([self.game])[0]))
        if not self.game.is_over():
            return self.game.observation(), 0.0, False, False, {}
        winner = self.game.winner()
        reward = 0.0 if winner is None else (1.0 if winner == self.learner else -1.0)
        return self.game.observation(), reward, True, False, {"winner": winner}


def policy_player(model):
    """A MaskablePPO model (or its policy) as a batched player: its most probable legal action."""
    def choose(games):
        obs = np.stack([g.observation() for g in games])
        masks = np.stack([g.legal_mask().astype(bool) for g in games])
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        return [int(a) for a in np.atleast_1d(actions)]
    return choose


def train_ppo(game: str, opponent: str = "random", total_steps: int = 50_000, seed: int = 0, n_envs: int = 8,
              snapshot_steps: int = 5_000, verbose: int = 0, **ppo_kwargs):
    """MaskablePPO (MLP policy) trained against ``"random"`` or in ``"self"``-play; returns the model."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.boardgame_judges import random_player

    if opponent not in ("random", "self"):
        raise ValueError(f"opponent must be 'random' or 'self', got {opponent!r}")
    frozen = {"choose": random_player(seed + 1)}

    def current(games):  # the env's opponent: whatever is frozen now
        return frozen["choose"](games)

    envs = DummyVecEnv([lambda: GameEnv(game, current) for _ in range(n_envs)])
    envs.seed(seed)
    settings = dict(n_steps=256, batch_size=256, n_epochs=4, gamma=0.99, learning_rate=1e-3, ent_coef=0.01)
    settings.update(ppo_kwargs)
    model = MaskablePPO("MlpPolicy", envs, seed=seed, verbose=verbose, **settings)

    class Snapshot(BaseCallback):
        def _on_step(self) -> bool:
            if opponent == "self" and self.num_timesteps % snapshot_steps < n_envs:
                frozen["choose"] = policy_player(copy.deepcopy(model.policy))
            return True

    if opponent == "self":
        frozen["choose"] = policy_player(copy.deepcopy(model.policy))
    model.learn(total_timesteps=total_steps, callback=Snapshot())
    return model
