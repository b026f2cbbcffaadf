"""What the PPO backends share (built-in, RLlib, stable-baselines3): the settings and the training loop.

What depends on the game is the run's :class:`~agents.ppo.task.Task`; the run directory: docs/ppo.md.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import time

import numpy as np

from agents.ppo.agent import PPOAgent
from agents.ppo.network import PPONet, PPONetConfig
from agents.ppo.task import Task, task_for
from agents.runs import Run, RunState
from minichess_envs.env import MATERIAL_SCALE
from minichess_envs.variants import get_variant

AGENT = "agent"


@dataclasses.dataclass
class PPOSettings:
    """One PPO run: the game, the opponent, PPO's hyperparameters and the network (every backend).

    The defaults are Alpha-Mini's setting: Gardner won by capturing
    the king, material shaping, White against the random player, gamma 0.3,
    lambda 1.0, entropy 0. Batch sizes and learning rate are ours (see
    experiments/ppo_gardner.py for why).
    """

    variant: str = "gardner-kingcapture"
    # a board game ("tictactoe", "connect_four") instead of the variant (agents.ppo.task.BoardGameTask): the
    # reward is the game's result, agent_color is the learner's seat ("white": first, "black": second)
    game: str | None = None
    agent_color: str = "white"  # "white", "black" or "random"
    reward: str = "material"  # "outcome" or "material"
    material_scale: float = MATERIAL_SCALE  # reward per pawn of material lead gained (reward="material")
    draw_reward: float = 0.0  # native: added to the reward when the rules end a game drawn (stalemate, repetition...)
    start: str = "default"  # or "random" (small boards) or a FEN
    opponent: str | None = None  # a saved agent's directory; None: the env's random player
    opponent_eps: float = 0.0  # with an opponent: probability that it plays a random move instead
    init_from: str | None = None  # a saved PPO agent whose weights start the policy (else random init)
    # self-play (native backend, board games): a pool of past selves, see agents/ppo/selfplay.py
    selfplay: bool = False
    selfplay_random: float = 0.2  # probability that a game is against the random player instead
    pool_every: int = 5  # a snapshot of the learner joins the pool every pool_every iterations
    pool_size: int = 16  # the newest pool_size snapshots are kept
    pool_sampling: str = "recent"  # "uniform" or "recent" (the k-th oldest drawn with weight k)
    # PPO with GAE
    gamma: float = 0.3
    lambda_: float = 1.0
    lr: float = 3e-4
    train_batch: int = 4000  # env steps (learner moves) per iteration
    minibatch: int = 256
    epochs: int = 4
    entropy_coeff: float = 0.0
    clip_param: float = 0.2
    vf_coeff: float = 0.5
    grad_clip: float = 0.5
    # sampling
    num_envs: int = 32  # games stepped together (one batched forward pass)
    env_runners: int = 0  # RLlib remote EnvRunners (0: sample in this process)
    # network (agents.ppo.network.PPONetConfig)
    channels: int = 32
    conv_layers: int = 3
    value_hidden: int = 128
    seed: int = 0
    threads: int = 1  # torch threads; 1 is fastest on a small shared machine (see docs/benchmarks.md)

    def __post_init__(self):
        get_variant(self.variant)  # an unknown name fails here, with the catalogue listed
        checks = {
            "agent_color": self.agent_color in ("white", "black", "random"),
            "reward": self.reward in ("outcome", "material"),
            "gamma": 0.0 <= self.gamma <= 1.0,
            "lambda_": 0.0 <= self.lambda_ <= 1.0,
            "opponent_eps": 0.0 <= self.opponent_eps <= 1.0,
            "selfplay_random": 0.0 <= self.selfplay_random <= 1.0,
            "pool_sampling": self.pool_sampling in ("uniform", "recent"),
            "lr": self.lr > 0,
            "material_scale": self.material_scale >= 0,
        }
        for name in ("train_batch", "minibatch", "epochs", "num_envs", "channels", "conv_layers", "value_hidden",
                     "threads", "pool_every", "pool_size"):
            checks[name] = isinstance(getattr(self, name), int) and getattr(self, name) >= 1
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError("bad PPO settings: " + ", ".join(f"{n}={getattr(self, n)!r}" for n in bad))
        if self.minibatch > self.train_batch:
            raise ValueError(f"minibatch ({self.minibatch}) is larger than train_batch ({self.train_batch})")
        for name in ("opponent", "init_from"):
            path = getattr(self, name)
            if path is not None and not os.path.exists(os.path.join(path, "agent.json")):
                raise ValueError(f"{name} {path!r} is not a saved agent (no agent.json there)")
        task_for(self)  # what the game refuses (an unknown board game, chess settings on one...) fails here

    @classmethod
    def from_dict(cls, d: dict) -> PPOSettings:
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown PPO settings {sorted(unknown)}")
        return cls(**d)

    def eval_colors(self) -> list[str]:
        return ["white", "black"] if self.agent_color == "random" else [self.agent_color]


def initial_weights(settings: PPOSettings, task: Task | None = None) -> dict | None:
    """The state dict of ``settings.init_from`` (a saved :class:`PPOAgent` of the same shape), or ``None``."""
    if settings.init_from is None:
        return None
    task = task or task_for(settings)
    agent = PPOAgent.load(settings.init_from)
    if agent.net.config != task.net_config():
        raise ValueError(f"init_from {settings.init_from!r} has network {agent.net.config}, "
                         f"the settings ask for {task.net_config()}")
    return agent.net.state_dict()


def net_from_weights(config: PPONetConfig, state_dict: dict, prefix: str = "") -> PPONet:
    """A :class:`PPONet` from a backend's weights, keys optionally under ``prefix`` (numpy or torch values)."""
    import torch

    net = PPONet(config)
    weights = {k[len(prefix):]: torch.as_tensor(np.asarray(v)) for k, v in state_dict.items() if k.startswith(prefix)}
    net.load_state_dict(weights)
    return net


# -- the training loop the backends share ------------------------------------------------------------


class Backend:
    """One PPO implementation inside :func:`train` (``native.NativeBackend``, ``rllib_train.RLlibBackend``,
    ``sb3_train.SB3Backend``), built as ``Backend(settings, task)``."""

    kind = "backend"  # the run kind in the checkpoint: "native", "rllib" or "sb3"

    def iterate(self) -> dict:
        """One PPO iteration (``train_batch`` env steps, then the update); its row, with ``iteration_env_steps``."""
        raise NotImplementedError

    def policy_net(self) -> PPONet:
        """A plain-torch copy of the current policy."""
        raise NotImplementedError

    def initialize(self, state_dict: dict) -> None:
        """Start from these :class:`PPONet` weights (``init_from``)."""
        raise NotImplementedError

    def state(self) -> dict:
        """Everything a resume needs (weights, optimizer, counters): tensors and plain data only."""
        raise NotImplementedError

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state`'s output."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the library's resources."""


class Budget:
    """When to stop: after ``env_steps`` env steps, or ``minutes`` of wall-clock, whichever comes first."""

    def __init__(self, env_steps: int | None, minutes: float | None):
        if env_steps is None and minutes is None:
            raise ValueError("give a budget: env_steps and/or minutes")
        self.env_steps, self.minutes = env_steps, minutes

    def spent(self, env_steps: int, elapsed_s: float) -> bool:
        return ((self.env_steps is not None and env_steps >= self.env_steps)
                or (self.minutes is not None and elapsed_s >= 60 * self.minutes))


#: Each backend's :class:`Backend` class, imported only when a run asks for it (RLlib and SB3 are extras).
BACKENDS = {"native": "agents.ppo.native:NativeBackend", "rllib": "agents.ppo.rllib_train:RLlibBackend",
            "sb3": "agents.ppo.sb3_train:SB3Backend"}


def train(settings: PPOSettings, run_dir: str, env_steps: int | None = None, minutes: float | None = None,
          eval_games: int = 200, eval_every: int = 1, eval_seed: int = 10_000, resume: bool = False,
          verbose: bool = True, desc: str | None = None, on_iteration=None, *, backend: str = "native") -> RunState:
    """Train (or resume) a PPO run with ``backend`` (:data:`BACKENDS`) until the budget is spent; the final state.

    After every iteration the deterministic policy plays ``eval_games`` games per color against the random player
    (every ``eval_every`` iterations, and after the last), and the checkpoint, ``agent/``, ``metrics.csv`` and
    TensorBoard are written (:class:`agents.runs.Run`). ``on_iteration(row)`` sees each row.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown PPO backend {backend!r}: {', '.join(BACKENDS)}")
    budget = Budget(env_steps, minutes)
    task = task_for(settings)
    task.check_backend(backend)
    if settings.draw_reward and backend != "native":
        raise ValueError(f"draw_reward is a shaping option of the native backend; {backend} takes the env's rewards")
    module, name = BACKENDS[backend].split(":")
    make_learner = getattr(importlib.import_module(module), name)  # a missing extra fails here, before any file
    run = Run(run_dir, settings, backend, resume=resume, verbose=verbose)  # settings checked before anything is built
    state, learner = run.state, None
    if budget.env_steps is not None:
        progress = run.progress(budget.env_steps, desc or f"{backend} ppo {task.name} {settings.agent_color}",
                                unit="step", done=state.env_steps)
    else:
        progress = run.progress(int(60 * budget.minutes), desc or f"{backend} ppo {task.name}", unit="s",
                                done=int(state.elapsed_s))
    try:
        learner = make_learner(settings, task)
        if run.resumed:
            learner.restore(run.tensors())
        elif settings.init_from is not None:
            learner.initialize(initial_weights(settings, task))
        while not budget.spent(state.env_steps, run.elapsed()):
            row = learner.iterate()
            state.iteration += 1
            state.env_steps += row["iteration_env_steps"]
            row = {"iteration": state.iteration, "env_steps": state.env_steps, **row}
            agent = task.agent(learner.policy_net(), backend)
            last = budget.spent(state.env_steps, run.elapsed())
            if eval_games and (state.iteration % eval_every == 0 or last):
                t = time.perf_counter()
                row.update(task.evaluate_vs_random(agent, eval_games, eval_seed))
                row["eval_s"] = time.perf_counter() - t
            t = time.perf_counter()
            run.save(row, learner.state())
            agent.save(os.path.join(run_dir, AGENT))
            row["checkpoint_s"] = time.perf_counter() - t  # in the files from the next checkpoint on
            if on_iteration is not None:
                on_iteration(row)
            progress.update(state.env_steps if budget.env_steps is not None else int(state.elapsed_s), _summary(row))
    finally:
        progress.close()
        run.close()
        if learner is not None:
            learner.close()
    return state


def train_seconds(metrics: list[dict]) -> float:
    """A run's training wall-clock (sampling, learning, checkpoints) from its metrics rows, the learning-curve
    games (``eval_s``) left out."""
    if not metrics:
        return 0.0
    return metrics[-1]["elapsed_s"] - sum(m.get("eval_s", 0.0) for m in metrics)


def learning_curve(metrics: list[dict], color: str) -> tuple[list, list, list]:
    """(env steps, training seconds, win rate as ``color``) at the iterations that were evaluated."""
    steps, seconds, rates, evals = [], [], [], 0.0
    for m in metrics:
        evals += m.get("eval_s", 0.0)
        if f"win_rate_{color}" in m:
            steps.append(m["env_steps"])
            seconds.append(m["elapsed_s"] - evals)
            rates.append(m[f"win_rate_{color}"])
    return steps, seconds, rates


def _summary(row: dict) -> str:
    rates = [f"win {k[9:]} {v:.3f}" for k, v in row.items() if k.startswith("win_rate_")]
    return ", ".join([f"return {row['episode_return_mean']:.3f}", *rates,
                      f"{row['sample_steps_per_s']:.0f} steps/s sampling"])


def numpy_to_torch(tree):
    """Numpy arrays in a nested dict/list as torch tensors (for ``torch.save`` with ``weights_only`` loading)."""
    import torch

    if isinstance(tree, dict):
        return {k: numpy_to_torch(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(numpy_to_torch(v) for v in tree)
    return torch.from_numpy(np.ascontiguousarray(tree)) if isinstance(tree, np.ndarray) else tree


def torch_to_numpy(tree):
    """The inverse of :func:`numpy_to_torch`."""
    import torch

    if isinstance(tree, dict):
        return {k: torch_to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(torch_to_numpy(v) for v in tree)
    return tree.numpy() if isinstance(tree, torch.Tensor) else tree
