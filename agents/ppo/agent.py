"""Trained PPO policies as agents in plain torch, and the epsilon-random opponent of the Alpha-Mini procedure."""

from __future__ import annotations

import os

import numpy as np
import torch

from agents.base import Agent, SeededAgent, check_settings, load, manifest_file, read_manifest, write_manifest
from agents.ppo.network import PPONet, PPONetConfig
from agents.weights import NetworkAgent, load_network, save_network
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.variants import get_variant


class BatchAgent(Agent):
    """An agent whose :meth:`act` is its :meth:`act_batch` on a batch of one."""

    def act(self, observation, action_mask, position=None) -> int:
        return int(self.act_batch(np.asarray(observation)[None], np.asarray(action_mask)[None],
                                  None if position is None else [position])[0])


class PPOAgent(BatchAgent, NetworkAgent):
    """A PPO policy network for any game (a chess variant, ``history`` and ``last_move`` saying what the network
    sees, or a board game): its most probable legal action, or a sample from it (``sample=True``). Given positions
    (chess positions or :class:`~agents.games.Game`), it encodes observations of another shape itself."""

    name = "ppo"

    def __init__(self, net: PPONet, game: str, history: int = 1, last_move: bool = True, *,
                 sample: bool = False, seed: int | None = None, name: str = "ppo", backend: str = "rllib"):
        super().__init__(net, game, history, last_move)
        self.sample, self.seed, self.name, self.backend = sample, seed, name, backend
        self.rng = torch.Generator().manual_seed(0 if seed is None else seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng.manual_seed(seed)

    def __getstate__(self) -> dict:
        # the generator as its state's bytes: torch's process pickler shares a Generator's state tensor by file
        # descriptor, which a spawned arena worker cannot map ("unable to resize file")
        return {**self.__dict__, "rng": bytes(self.rng.get_state().numpy())}

    def __setstate__(self, state: dict) -> None:
        rng = torch.Generator()
        rng.set_state(torch.frombuffer(bytearray(state["rng"]), dtype=torch.uint8))
        self.__dict__.update(state, rng=rng)

    def act_batch(self, observations, action_masks, positions=None) -> np.ndarray:
        observations = torch.as_tensor(self._observations(observations, positions), dtype=torch.float32)
        masks = torch.as_tensor(action_masks)
        if masks.ndim != 2 or not bool((masks != 0).any(1).all()):
            raise ValueError("every position needs at least one legal action (a non-empty action mask)")
        with torch.inference_mode():
            logits = self.net.policy_logits(self.net.features(observations), masks)
        if not self.sample:
            return logits.argmax(1).numpy()
        return torch.multinomial(torch.softmax(logits, -1), 1, generator=self.rng).squeeze(1).numpy()

    def act_games(self, games) -> np.ndarray:
        """The chosen action in each :class:`~agents.games.Game` (one network call for all)."""
        return self.act_batch(np.stack([g.observation() for g in games]), np.stack([g.legal_mask() for g in games]))

    __call__ = act_games

    def _observations(self, observations, positions):
        shape = None if observations is None else np.shape(observations)[1:]
        if shape == self.shape:
            return np.asarray(observations)
        if positions is None:
            raise ValueError(f"{self.name}: observations of shape {shape} are not the {self.shape} "
                             "planes this network reads; pass the positions to have them encoded")
        return np.stack([self.as_game(p).observation() for p in positions])

    def save(self, path: str) -> None:
        save_network(path, self.net)
        write_manifest(path, self, game=self.game, history=self.history, last_move=self.last_move,
                       sample=self.sample, seed=self.seed, backend=self.backend)

    @classmethod
    def load(cls, path: str, sample: bool | None = None) -> PPOAgent:
        manifest = read_manifest(path)
        settings = check_settings(path, cls.saved_settings(manifest), {"game": str},
                                  {"history": int, "last_move": bool, "sample": bool, "seed": (int, None),
                                   "backend": str}, bounds={"history": (1, 64)})
        if sample is not None:
            settings["sample"] = sample
        net = load_network(path, PPONet, PPONetConfig, "PPO")
        try:
            return cls(net, **settings, name=manifest.get("name", "ppo"))
        except ValueError as exc:
            raise ValueError(f"bad agent manifest {manifest_file(path)}: {exc}") from None


class EpsilonRandomAgent(BatchAgent, SeededAgent):
    """Plays a uniformly random legal move with probability ``eps``, else ``inner``'s move (seeded): Alpha-Mini's
    opponents, a frozen earlier policy that "suggests a random move" half the time (eps = 0.5)."""

    def __init__(self, inner: Agent, eps: float = 0.5, seed: int | None = 0, name: str | None = None):
        if not 0.0 <= eps <= 1.0:
            raise ValueError(f"eps must be a probability in [0, 1], got {eps}")
        super().__init__(seed, name or f"{getattr(inner, 'name', 'agent')}+eps{eps:g}")
        self.inner, self.eps = inner, float(eps)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.inner.reset(seed)

    def act_batch(self, observations, action_masks, positions=None) -> np.ndarray:
        masks = np.asarray(action_masks)
        actions = np.asarray(self.inner.act_batch(observations, masks, positions), np.int64)
        for i in np.flatnonzero(self.rng.random(len(masks)) < self.eps):
            actions[i] = self.pick(np.flatnonzero(masks[i]))
        return actions

    def save(self, path: str) -> None:
        self.inner.save(os.path.join(path, "inner"))
        write_manifest(path, self, inner="inner", eps=self.eps, seed=self.seed, name=self.name)

    @classmethod
    def load(cls, path: str) -> EpsilonRandomAgent:
        settings = check_settings(path, read_manifest(path)["settings"], {"inner": str, "eps": float},
                                  {"seed": (int, None), "name": (str, None)})
        return cls(load(_subdirectory(path, settings.pop("inner"))), **settings)


class ByColorAgent(BatchAgent):
    """Two agents as one player: ``white`` moves when White is to move, ``black`` when Black is (Alpha-Mini's
    policies trained as one color each); the side to move comes from the positions, else the observations."""

    def __init__(self, white: Agent, black: Agent, variant: str, name: str = "ppo-pair"):
        self.white, self.black, self.name = white, black, name
        self.variant = get_variant(variant)
        self.encoding = ObservationEncoding(self.variant)
        self._color_plane = self.encoding.channel_names().index("black to move")

    def reset(self, seed: int | None = None) -> None:
        self.white.reset(seed)
        self.black.reset(seed)

    def act_batch(self, observations, action_masks, positions=None) -> np.ndarray:
        observations, masks = np.asarray(observations), np.asarray(action_masks)
        if positions is not None:
            black = np.array([p.turn == 1 for p in positions])
        elif observations.shape[1:] == self.encoding.shape:
            black = observations[:, 0, 0, self._color_plane] > 0.5
        else:
            raise ValueError(f"{self.name}: pass the positions, or observations of shape {self.encoding.shape}")
        actions = np.zeros(len(masks), np.int64)
        for agent, rows in ((self.white, np.flatnonzero(~black)), (self.black, np.flatnonzero(black))):
            if len(rows):
                actions[rows] = agent.act_batch(observations[rows], masks[rows],
                                                None if positions is None else [positions[i] for i in rows])
        return actions

    def save(self, path: str) -> None:
        self.white.save(os.path.join(path, "white"))
        self.black.save(os.path.join(path, "black"))
        write_manifest(path, self, variant=self.variant.name, white="white", black="black")

    @classmethod
    def load(cls, path: str) -> ByColorAgent:
        manifest = read_manifest(path)
        settings = check_settings(path, manifest["settings"], {"variant": str, "white": str, "black": str})
        return cls(load(_subdirectory(path, settings["white"])), load(_subdirectory(path, settings["black"])),
                   settings["variant"], manifest.get("name", "ppo-pair"))


def _subdirectory(path: str, name: str) -> str:
    """``path/name`` for a nested saved agent; ``ValueError`` if ``name`` would leave ``path``."""
    if not name or name != os.path.basename(name) or name in (".", ".."):
        raise ValueError(f"agent manifest in {path!r} names nested agent {name!r}: not a plain subdirectory name")
    return os.path.join(path, name)
