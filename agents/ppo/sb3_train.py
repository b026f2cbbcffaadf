"""PPO with GAE in stable-baselines3: sb3-contrib's ``MaskablePPO`` on the task's env and our network."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from agents.ppo.common import Backend, PPOSettings, iteration_row, steps_per_game
from agents.ppo.network import PPONet, PPONetConfig
from agents.ppo.task import Task


class SB3VecEnv(VecEnv):
    """A task's vector env (``Task.make_envs``: same-step autoreset, ``action_masks()``) as an SB3 ``VecEnv``."""

    def __init__(self, venv):
        self.venv, self._actions = venv, None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._returns, self._lengths = np.zeros(venv.num_envs), np.zeros(venv.num_envs, np.int64)

    def reset(self):
        obs, _ = self.venv.reset(seed=self._seeds[0])
        self._reset_seeds()
        self._returns[:] = 0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, np.int64).reshape(self.num_envs)

    def step_wait(self):
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        self._returns += rewards
        self._lengths += 1
        out = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):
            out[i] = {"terminal_observation": infos["final_obs"][i],
                      "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                      "episode": {"r": float(self._returns[i]), "l": int(self._lengths[i])}}
            self._returns[i], self._lengths[i] = 0.0, 0
        return obs, rewards.astype(np.float32), dones, out

    def action_masks(self) -> np.ndarray:
        return self.venv.action_masks()

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.venv, attr_name)] * len(list(self._get_indices(indices)))

    def set_attr(self, attr_name, value, indices=None) -> None:
        raise AttributeError(f"SB3VecEnv cannot set {attr_name!r}: the games share one native vector env")

    def env_method(self, method_name, *args, indices=None, **kwargs):
        if method_name != "action_masks":  # the only per-env method MaskablePPO calls
            raise AttributeError(f"SB3VecEnv has no per-env method {method_name!r} (only 'action_masks')")
        return list(self.venv.action_masks()[list(self._get_indices(indices))])

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(list(self._get_indices(indices)))


class PPONetExtractor(BaseFeaturesExtractor):
    """The trunk of a :class:`PPONet` over ``obs["observation"]``, flattened; the net's heads ride along."""

    def __init__(self, observation_space, net_config: dict):
        config = PPONetConfig(**net_config)
        super().__init__(observation_space, features_dim=config.channels * config.height * config.width)
        self.net = PPONet(config)

    def forward(self, observations) -> torch.Tensor:
        return self.net.features(observations["observation"]).flatten(1)


class SpatialLogits(nn.Module):
    """The net's policy head on flattened trunk features: logits in the action encoding's order (unmasked)."""

    def __init__(self, net: PPONet):
        super().__init__()
        self.head = net.policy_head
        self.shape = (net.config.channels, net.config.height, net.config.width)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        planes = self.head(latent.view(-1, *self.shape))
        return planes.permute(0, 3, 2, 1).reshape(len(planes), -1)


class PPONetPolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` computing exactly :class:`PPONet`: its trunk, policy head and value head."""

    def __init__(self, *args, net_config: dict, **kwargs):
        kwargs.update(features_extractor_class=PPONetExtractor, features_extractor_kwargs={"net_config": net_config},
                      net_arch=[], ortho_init=False, share_features_extractor=True)
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        net = self.features_extractor.net
        self.action_net = SpatialLogits(net)  # replaces SB3's linear heads by the net's own
        self.value_net = net.value_head
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    @property
    def net(self) -> PPONet:
        return self.features_extractor.net


def make_model(settings: PPOSettings, net_config: PPONetConfig, env: VecEnv) -> MaskablePPO:
    """``MaskablePPO`` with our policy and the settings' hyperparameters (one rollout = ``train_batch``)."""
    return MaskablePPO(
        PPONetPolicy, env, learning_rate=settings.lr, n_steps=steps_per_game(settings),
        batch_size=settings.minibatch, n_epochs=settings.epochs, gamma=settings.gamma,
        gae_lambda=settings.lambda_, clip_range=settings.clip_param, ent_coef=settings.entropy_coeff,
        vf_coef=settings.vf_coeff, max_grad_norm=settings.grad_clip, seed=settings.seed, device="cpu",
        policy_kwargs={"net_config": dataclasses.asdict(net_config)}, verbose=0)


#: Our metrics' names for the numbers SB3 logs (its entropy loss is minus the entropy).
LOGGED = {"policy_loss": "train/policy_gradient_loss", "vf_loss": "train/value_loss", "entropy": "train/entropy_loss",
          "kl": "train/approx_kl", "vf_explained_var": "train/explained_variance"}


class _RolloutTimer(BaseCallback):
    """Times the rollout (sampling) part of each ``learn`` call and records the finished games."""

    def __init__(self):
        super().__init__()
        self.sample_s, self.returns, self.lengths = 0.0, [], []

    def _on_rollout_start(self) -> None:
        self._t = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.sample_s += time.perf_counter() - self._t

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            if "episode" in info:
                self.returns.append(info["episode"]["r"])
                self.lengths.append(info["episode"]["l"])
        return True


class SB3Backend(Backend):
    """MaskablePPO in :func:`~agents.ppo.common.train`; its checkpoint: SB3's parameters and counters, not the
    pickled ``model.zip``."""

    kind = "sb3"

    def __init__(self, settings: PPOSettings, task: Task):
        torch.set_num_threads(settings.threads)
        self.settings = settings
        self.envs = SB3VecEnv(task.make_envs())
        self.model = make_model(settings, task.net_config(), self.envs)
        self.net = self.model.policy.net  # restore loads SB3's parameters into it in place

    def iterate(self) -> dict:
        model, timer = self.model, _RolloutTimer()
        t = time.perf_counter()
        before = model.num_timesteps
        model.learn(total_timesteps=self.settings.train_batch, reset_num_timesteps=False, callback=timer,
                    progress_bar=False)
        row = iteration_row(model.num_timesteps - before, timer.returns, timer.lengths, time.perf_counter() - t,
                            timer.sample_s)
        row |= {ours: float(model.logger.name_to_value.get(theirs, float("nan"))) for ours, theirs in LOGGED.items()}
        row["entropy"] = -row["entropy"]
        return row

    def state(self) -> dict:
        return {"parameters": self.model.get_parameters(), "num_timesteps": self.model.num_timesteps,
                "n_updates": self.model._n_updates}

    def restore(self, state: dict) -> None:
        self.model.set_parameters(state["parameters"], exact_match=True, device="cpu")
        self.model.num_timesteps = int(state["num_timesteps"])
        self.model._n_updates = int(state["n_updates"])
