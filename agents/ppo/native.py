"""Masked PPO with GAE, built in: the whole algorithm in this file, read top to bottom (CleanRL-style): docs/ppo.md."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch
from torch import nn

from agents.ppo.common import Backend, PPOSettings, iteration_row, steps_per_game
from agents.ppo.network import PPONet, mask_logits
from agents.ppo.boardgame_env import KINDS, OpponentPool
from agents.ppo.task import Task


@dataclasses.dataclass
class Rollout:
    """``steps`` consecutive env steps of ``num_envs`` games: arrays of shape ``(steps, num_envs, ...)``."""

    observations: torch.Tensor
    masks: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    next_values: torch.Tensor  # the value of the next observation of the same game (see collect)
    episodes: list  # (return, length, learner won, opponent kind) of each game that ended


def legal_actions(masks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(legal, valid)``, both ``(N, K)``: each row's legal actions in ascending order, padded with index 0 to the
    most any row has, and which entries are legal (softmax over them costs a few percent of the full width)."""
    rows, columns = masks.nonzero(as_tuple=True)  # row-major: each row's legal actions in ascending order
    counts = torch.bincount(rows, minlength=len(masks))
    slots = torch.arange(len(rows)) - (counts.cumsum(0) - counts)[rows]
    legal = torch.zeros(len(masks), int(counts.max()), dtype=torch.long)
    valid = torch.zeros(legal.shape, dtype=torch.bool)
    legal[rows, slots], valid[rows, slots] = columns, True
    return legal, valid


def legal_log_probs(net: PPONet, features: torch.Tensor, legal: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The policy's log-probabilities ``(N, K)`` of the :func:`legal_actions` (padding: the most negative float)."""
    return torch.log_softmax(mask_logits(net.action_logits(features, legal), valid), -1)


def sample_actions(net: PPONet, obs: dict, generator: torch.Generator):
    """Actions sampled from the masked policy, their log-probabilities and the values (inverse-CDF sampling: ``u``
    in ``(0, total]``, so the first action reaching it has a probability > 0, never the padding)."""
    features = net.features(torch.from_numpy(obs["observation"]))
    legal, valid = legal_actions(torch.from_numpy(obs["action_mask"]))
    log_probs = legal_log_probs(net, features, legal, valid)
    cdf = log_probs.exp().cumsum(-1)
    u = (1.0 - torch.rand(len(cdf), 1, generator=generator)) * cdf[:, -1:]
    column = torch.searchsorted(cdf, u)
    return legal.gather(1, column).squeeze(1), log_probs.gather(1, column).squeeze(1), net.value(features)


def collect(net: PPONet, envs, steps: int, seed: int, generator: torch.Generator, draw_reward: float = 0.0) -> Rollout:
    """Play ``steps`` steps of every game from a fresh reset; ``draw_reward`` is added when the rules draw a game.

    ``next_values[t]``, what GAE bootstraps from after step t: the next observation's value, or the final one's when
    a limit truncated the game (after a game the rules ended, the next game's first value, which :func:`gae` ignores).
    """
    n = envs.num_envs
    obs, _ = envs.reset(seed=seed)
    r = Rollout(observations=torch.empty((steps, *obs["observation"].shape)),
                masks=torch.empty((steps, *obs["action_mask"].shape), dtype=torch.bool),
                actions=torch.empty(steps, n, dtype=torch.long), log_probs=torch.empty(steps, n),
                values=torch.empty(steps, n), rewards=torch.empty(steps, n),
                terminated=torch.empty(steps, n, dtype=torch.bool), truncated=torch.empty(steps, n, dtype=torch.bool),
                next_values=torch.empty(steps, n), episodes=[])
    final_values = torch.zeros(steps, n)
    returns, lengths = np.zeros(n), np.zeros(n, np.int64)
    with torch.inference_mode():
        for t in range(steps):
            r.observations[t] = torch.from_numpy(obs["observation"])
            r.masks[t] = torch.from_numpy(obs["action_mask"])
            r.actions[t], r.log_probs[t], r.values[t] = sample_actions(net, obs, generator)
            obs, rewards, terminated, truncated, infos = envs.step(r.actions[t].numpy())
            # An ended game's info: under final_info in Gymnasium's same-step layout (our vector env), at the
            # top level in the board games' (BoardGameVectorEnv).
            end = infos.get("final_info", infos)
            if draw_reward and terminated.any():
                drawn = terminated & np.array([w is None for w in end.get("winner", [None] * n)])
                rewards = rewards + draw_reward * drawn
            truncated = truncated & ~terminated
            if truncated.any():  # bootstrap from the value of the observation the limit stopped the game at
                games = np.flatnonzero(truncated)
                final = infos["final_obs"]  # one dict per game that ended
                _, final_values[t, games] = net(torch.from_numpy(np.stack([final[i]["observation"] for i in games])),
                                                torch.from_numpy(np.stack([final[i]["action_mask"] for i in games])))
            r.rewards[t] = torch.from_numpy(rewards)
            r.terminated[t] = torch.from_numpy(terminated)
            r.truncated[t] = torch.from_numpy(truncated)
            returns += rewards
            lengths += 1
            for i in np.flatnonzero(terminated | truncated):
                won = end["winner"][i] is not None and end["winner"][i] == end["learner_color"][i]
                r.episodes.append((returns[i], int(lengths[i]), won, infos.get("opponent", [None] * n)[i]))
                returns[i], lengths[i] = 0.0, 0
        _, last_values = net(torch.from_numpy(obs["observation"]), torch.from_numpy(obs["action_mask"]))
    r.next_values = torch.where(r.truncated, final_values, torch.cat([r.values[1:], last_values[None]]))
    return r


def gae(rewards, values, next_values, terminated, truncated, gamma: float, lambda_: float):
    """Advantages and returns (advantages + values), all ``(steps, num_envs)``: ``A_t = delta_t + gamma lambda
    (1 - done_t) A_{t+1}``, ``delta_t = r_t + gamma V_next_t (1 - terminated_t) - V_t``; a truncated game keeps
    its future value, but the next step belongs to another game, so no advantage flows back across it."""
    advantages = torch.zeros_like(rewards)
    done = (terminated | truncated).float()
    deltas = rewards + gamma * next_values * (1.0 - terminated.float()) - values
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(len(rewards))):
        running = deltas[t] + gamma * lambda_ * (1.0 - done[t]) * running
        advantages[t] = running
    return advantages, advantages + values


def clipped_policy_loss(log_ratio: torch.Tensor, advantages: torch.Tensor, clip: float) -> torch.Tensor:
    """PPO's clipped surrogate as a loss: ``mean(max(-A r, -A clip(r, 1 - clip, 1 + clip)))``, r the ratio."""
    ratio = log_ratio.exp()
    return torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip, 1 + clip)).mean()


def ppo_update(net: PPONet, optimizer, batch: dict, settings: PPOSettings, generator: torch.Generator) -> dict:
    """``epochs`` passes over the batch in shuffled minibatches; the losses' means of the last pass. ``batch`` holds
    the rollout's tensors, :func:`legal_actions`' ``legal`` and ``valid``, and ``taken``, the played column."""
    size, minibatch, clip = len(batch["observations"]), settings.minibatch, settings.clip_param
    for _ in range(settings.epochs):
        stats = []
        order = torch.randperm(size, generator=generator)
        shuffled = {k: v[order] for k, v in batch.items()}  # one gather per epoch; minibatches are slices
        for start in range(0, size - minibatch + 1, minibatch):
            mb = {k: v[start:start + minibatch] for k, v in shuffled.items()}
            features = net.features(mb["observations"])
            values = net.value(features)
            log_probs = legal_log_probs(net, features, mb["legal"], mb["valid"])
            new_log_prob = log_probs.gather(1, mb["taken"][:, None]).squeeze(1)
            entropy = -(log_probs.exp() * torch.where(mb["valid"], log_probs, 0.0)).sum(-1).mean()
            log_ratio = new_log_prob - mb["log_probs"]
            adv = mb["advantages"]
            policy_loss = clipped_policy_loss(log_ratio, (adv - adv.mean()) / (adv.std() + 1e-8), clip)
            # Value loss clipped around the rollout's values, as PPO's reference implementation does.
            clipped = mb["values"] + (values - mb["values"]).clamp(-clip, clip)
            vf_loss = 0.5 * torch.max((values - mb["returns"]) ** 2, (clipped - mb["returns"]) ** 2).mean()
            loss = policy_loss + settings.vf_coeff * vf_loss - settings.entropy_coeff * entropy
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), settings.grad_clip)
            optimizer.step()
            with torch.no_grad():
                ratio = log_ratio.exp()
                kl = ((ratio - 1) - log_ratio).mean()  # the low-variance estimator of KL(old || new)
                clip_fraction = ((ratio - 1).abs() > clip).float().mean()
                stats.append(torch.stack([policy_loss, vf_loss, entropy, kl, clip_fraction]))
    return dict(zip(("policy_loss", "vf_loss", "entropy", "kl", "clip_fraction"), torch.stack(stats).mean(0).tolist()))


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> float:
    var = returns.var().item()
    return float("nan") if var == 0 else 1.0 - (returns - values).var().item() / var


class NativeBackend(Backend):
    """This file's PPO in :func:`~agents.ppo.common.train`; its checkpoint: net, optimizer, iteration and pool."""

    kind = "native"

    def __init__(self, settings: PPOSettings, task: Task):
        self.steps = steps_per_game(settings)
        torch.set_num_threads(settings.threads)
        self.settings = settings
        torch.manual_seed(settings.seed)  # the initial weights
        self.net = PPONet(task.net_config())
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=settings.lr, eps=1e-5)
        self.envs = task.make_envs()
        self.pool = OpponentPool(settings.pool_size) if settings.selfplay else None
        self.iteration = 0

    def iterate(self) -> dict:
        s, self.iteration = self.settings, self.iteration + 1
        seed = s.seed * 1_000_003 + self.iteration * s.num_envs  # the iteration's games and streams: fresh ones
        generator = torch.Generator().manual_seed(seed)
        row = {}
        if self.pool is not None:  # this iteration's past self (none before the first snapshot)
            row = {"pool_size": len(self.pool.snapshots), "past_self_iteration": float("nan")}
            if self.pool.snapshots:
                row["past_self_iteration"], weights = self.pool.draw(np.random.default_rng(seed))
                self.envs.set_past_self(weights)
        t = time.perf_counter()
        self.net.eval()
        rollout = collect(self.net, self.envs, self.steps, seed, generator, s.draw_reward)
        sample_s = time.perf_counter() - t
        advantages, returns = gae(rollout.rewards, rollout.values, rollout.next_values, rollout.terminated,
                                  rollout.truncated, s.gamma, s.lambda_)
        legal, valid = legal_actions(rollout.masks.flatten(0, 1))
        actions = rollout.actions.flatten()
        batch = {"observations": rollout.observations.flatten(0, 1), "log_probs": rollout.log_probs.flatten(),
                 "values": rollout.values.flatten(), "advantages": advantages.flatten(), "returns": returns.flatten(),
                 "legal": legal, "valid": valid, "taken": ((legal == actions[:, None]) & valid).int().argmax(1)}
        self.net.train()
        losses = ppo_update(self.net, self.optimizer, batch, s, generator)
        self.net.eval()
        if self.pool is not None and (self.iteration == 1 or self.iteration % s.pool_every == 0):
            self.pool.add(self.iteration, self.net.state_dict())
        episodes = rollout.episodes
        returns, lengths, wins, _ = zip(*episodes) if episodes else ((), (), (), ())
        row.update(iteration_row(len(batch["observations"]), returns, lengths, time.perf_counter() - t, sample_s, wins),
                   **losses, vf_explained_var=explained_variance(batch["values"], batch["returns"]))
        if self.pool is not None:
            for kind in KINDS:
                games = [e for e in episodes if e[3] == kind]
                row[f"games_vs_{kind}"] = len(games)
                row[f"train_win_rate_vs_{kind}"] = float(np.mean([e[2] for e in games])) if games else float("nan")
        return row

    def state(self) -> dict:
        state = {"net": self.net.state_dict(), "optimizer": self.optimizer.state_dict(), "iteration": self.iteration}
        if self.pool is not None:
            state["pool"] = self.pool.state()
        return state

    def restore(self, state: dict) -> None:
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.iteration = int(state["iteration"])
        if self.pool is not None:
            self.pool.restore(state["pool"])
