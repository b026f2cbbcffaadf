"""What the RLlib and stable-baselines3 runs share: settings, opponents, evaluation, checkpoints, metrics.

A run directory holds ``checkpoint/`` (the backend's own checkpoint plus
``state.json``: settings, iteration, env steps, wall-clock and every metrics
row), ``agent/`` (the policy as a :class:`~agents.ppo.agent.PPOAgent`) and
``metrics.csv``. A checkpoint is written to ``checkpoint.new/`` and swapped in
by renames, so an interrupted run resumes from its last whole iteration.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import time

import numpy as np

from agents.evaluation import versus_random
from agents.ppo.agent import EpsilonRandomAgent, PPOAgent
from agents.ppo.network import PPONet, PPONetConfig
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.variants import get_variant

CHECKPOINT = "checkpoint"
STATE = "state.json"
AGENT = "agent"


@dataclasses.dataclass
class PPOSettings:
    """One PPO run: the game, the opponent, PPO's hyperparameters and the network (both backends).

    The defaults are the seed's setting (Alpha-Mini): Gardner won by capturing
    the king, material shaping, White against the random player, gamma 0.3,
    lambda 1.0, entropy 0. Batch sizes and learning rate are ours (see
    experiments/ppo_gardner.py for why).
    """

    variant: str = "gardner-kingcapture"
    agent_color: str = "white"  # "white", "black" or "random"
    reward: str = "material"  # "outcome" or "material"
    start: str = "default"  # or "random" (small boards) or a FEN
    opponent: str | None = None  # a saved agent's directory; None: the env's random player
    opponent_eps: float = 0.0  # with an opponent: probability that it plays a random move instead
    init_from: str | None = None  # a saved PPO agent whose weights start the policy (else random init)
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
    vectorize: str = "native"  # "native": our C-stepped vector env; "sync": gymnasium's SyncVectorEnv
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
            "vectorize": self.vectorize in ("native", "sync"),
            "gamma": 0.0 <= self.gamma <= 1.0,
            "lambda_": 0.0 <= self.lambda_ <= 1.0,
            "opponent_eps": 0.0 <= self.opponent_eps <= 1.0,
            "lr": self.lr > 0,
        }
        for name in ("train_batch", "minibatch", "epochs", "num_envs", "channels", "conv_layers", "value_hidden",
                     "threads"):
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

    @classmethod
    def from_dict(cls, d: dict) -> PPOSettings:
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown PPO settings {sorted(unknown)}")
        return cls(**d)

    def env_kwargs(self) -> dict:
        """Keyword arguments of ``MiniChessEnv`` / ``MiniChessVectorEnv`` (the opponent is built separately).

        ``illegal_action="raise"``: the masked policies never choose an illegal
        action, so one is a bug to surface, not a loss to learn from.
        """
        return {"variant": self.variant, "agent_color": self.agent_color, "reward": self.reward, "start": self.start,
                "illegal_action": "raise"}

    def net_config(self) -> PPONetConfig:
        variant = get_variant(self.variant)
        encoding = ObservationEncoding(variant)
        return PPONetConfig.for_variant(variant, encoding.num_channels, channels=self.channels,
                                        conv_layers=self.conv_layers, value_hidden=self.value_hidden)

    def eval_colors(self) -> list[str]:
        return ["white", "black"] if self.agent_color == "random" else [self.agent_color]


def make_opponent(settings: PPOSettings, seed: int = 0):
    """The opponent of the single-agent env: ``None`` (random player) or the saved agent, eps-mixed."""
    if settings.opponent is None:
        return None
    from agents import load

    inner = load(settings.opponent)
    if settings.opponent_eps > 0:
        return EpsilonRandomAgent(inner, settings.opponent_eps, seed=seed)
    return inner


def initial_weights(settings: PPOSettings) -> dict | None:
    """The state dict of ``settings.init_from`` (a saved :class:`PPOAgent` of the same shape), or ``None``."""
    if settings.init_from is None:
        return None
    agent = PPOAgent.load(settings.init_from)
    if agent.net.config != settings.net_config():
        raise ValueError(f"init_from {settings.init_from!r} has network {agent.net.config}, "
                         f"the settings ask for {settings.net_config()}")
    return agent.net.state_dict()


def make_agent(net: PPONet, settings: PPOSettings, backend: str, name: str = "ppo") -> PPOAgent:
    return PPOAgent(net, settings.variant, 1, True, name=name, backend=backend)


def net_from_weights(settings: PPOSettings, state_dict: dict, prefix: str = "") -> PPONet:
    """A :class:`PPONet` from a backend's weights, keys optionally under ``prefix`` (numpy or torch values)."""
    import torch

    net = PPONet(settings.net_config())
    weights = {k[len(prefix):]: torch.as_tensor(np.asarray(v)) for k, v in state_dict.items() if k.startswith(prefix)}
    net.load_state_dict(weights)
    return net


def evaluate(agent, settings: PPOSettings, games: int, seed: int = 10_000, colors: list[str] | None = None) -> dict:
    """Win rates against the random player, per colour (``versus_random``; deterministic agent)."""
    row = {}
    for color in colors or settings.eval_colors():
        match = versus_random(agent, settings.variant, games=games, color=color, seed=seed)
        lo, hi = match.win_interval
        row.update({f"win_rate_{color}": match.win_rate, f"win_low_{color}": lo, f"win_high_{color}": hi,
                    f"draws_{color}": match.draws / match.games, f"losses_{color}": match.losses / match.games})
    return row


# -- run directories --------------------------------------------------------------------------


@dataclasses.dataclass
class RunState:
    """Progress of a run, saved with each checkpoint."""

    settings: dict
    backend: str
    iteration: int = 0
    env_steps: int = 0
    elapsed_s: float = 0.0
    metrics: list = dataclasses.field(default_factory=list)


def checkpoint_dir(run_dir: str) -> str | None:
    """The run's last whole checkpoint (or ``None``), recovering from a swap cut short by a crash."""
    path = os.path.join(run_dir, CHECKPOINT)
    if os.path.exists(os.path.join(path, STATE)):
        return path
    old = path + ".old"
    if os.path.exists(os.path.join(old, STATE)):
        return old
    return None


def save_checkpoint(run_dir: str, state: RunState, write_backend) -> str:
    """Write ``write_backend(directory)`` and ``state.json`` to a new directory, then swap it in."""
    path = os.path.join(run_dir, CHECKPOINT)
    new, old = path + ".new", path + ".old"
    shutil.rmtree(new, ignore_errors=True)
    os.makedirs(new)
    write_backend(new)
    with open(os.path.join(new, STATE), "w") as f:
        json.dump(dataclasses.asdict(state), f, indent=1, default=float)
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(path):
        os.replace(path, old)
    os.replace(new, path)
    shutil.rmtree(old, ignore_errors=True)
    return path


def load_state(checkpoint: str) -> RunState:
    file = os.path.join(checkpoint, STATE)
    try:
        with open(file) as f:
            return RunState(**json.load(f))
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"corrupt run state {file}: {exc}") from None


def start_or_resume(run_dir: str, settings: PPOSettings, backend: str, resume: bool) -> tuple[RunState, str | None]:
    """A fresh :class:`RunState`, or the saved one with its checkpoint when resuming.

    Refuses to overwrite a run without ``resume`` and to resume with other settings.
    """
    os.makedirs(run_dir, exist_ok=True)
    found = checkpoint_dir(run_dir)
    if found is None:
        return RunState(dataclasses.asdict(settings), backend), None
    if not resume:
        raise ValueError(f"{run_dir} already holds a run: pass resume=True (--resume) to continue it, "
                         "or use another directory")
    state = load_state(found)
    if state.backend != backend:
        raise ValueError(f"{run_dir} is a {state.backend} run; cannot resume it with {backend}")
    if state.settings != dataclasses.asdict(settings):
        diff = {k: (v, state.settings.get(k)) for k, v in dataclasses.asdict(settings).items()
                if state.settings.get(k) != v}
        raise ValueError(f"{run_dir} was run with other settings; resume with the same ones "
                         f"(now vs saved: {diff})")
    return state, found


def write_csv(path: str, rows: list[dict]) -> None:
    """Rewrite a CSV file from all rows, atomically (a resumed run never duplicates rows)."""
    if not rows:
        return
    keys = list(dict.fromkeys(k for row in rows for k in row))
    with open(path + ".tmp", "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=keys)
        out.writeheader()
        out.writerows(rows)
    os.replace(path + ".tmp", path)


def write_json(path: str, data) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1, default=float)
    os.replace(path + ".tmp", path)


def read_json(path: str):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


class Budget:
    """When to stop: after ``env_steps`` env steps, or ``minutes`` of wall-clock, whichever comes first."""

    def __init__(self, env_steps: int | None, minutes: float | None):
        if env_steps is None and minutes is None:
            raise ValueError("give a budget: env_steps and/or minutes")
        self.env_steps, self.minutes = env_steps, minutes

    def spent(self, state: RunState) -> bool:
        return ((self.env_steps is not None and state.env_steps >= self.env_steps)
                or (self.minutes is not None and state.elapsed_s >= 60 * self.minutes))


class Progress:
    """A progress bar over the budget: env steps, else seconds (tqdm when installed, plain lines otherwise)."""

    def __init__(self, desc: str, budget: Budget, state: RunState, verbose: bool = True):
        self.desc, self.budget, self.bar, self.verbose = desc, budget, None, verbose
        self.by_steps = budget.env_steps is not None
        if not verbose:
            return
        try:
            from tqdm import tqdm

            total = budget.env_steps if self.by_steps else int(60 * budget.minutes)
            self.bar = tqdm(total=total, desc=desc, initial=min(self._done(state), total),
                            unit="step" if self.by_steps else "s", unit_scale=self.by_steps, dynamic_ncols=True)
        except ImportError:
            pass

    def _done(self, state: RunState) -> int:
        return state.env_steps if self.by_steps else int(state.elapsed_s)

    def update(self, state: RunState, info: str) -> None:
        if not self.verbose:
            return
        if self.bar is None:
            print(f"{self.desc} it {state.iteration}, {state.env_steps:,} steps: {info}", flush=True)
            return
        self.bar.set_postfix_str(info, refresh=False)
        self.bar.update(min(self._done(state), self.bar.total) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Stopwatch:
    """Wall-clock of a run that continues across resumes."""

    def __init__(self, already: float):
        self.start = time.perf_counter() - already

    def __call__(self) -> float:
        return time.perf_counter() - self.start
