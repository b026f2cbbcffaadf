"""What the PPO backends share: the settings and the training loop; the task and the run directory: docs/ppo.md."""

from __future__ import annotations

import copy
import dataclasses
import os
import pkgutil
import time

import numpy as np

from agents.ppo.agent import PPOAgent
from agents.ppo.network import PPONet
from agents.ppo.task import Task, task_for
from agents.runs import Run, RunState, training_seconds
from minichess_envs.env import MATERIAL_SCALE
from minichess_envs.variants import get_variant

AGENT = "agent"


@dataclasses.dataclass
class PPOSettings:
    """One PPO run: the game, the opponent, PPO's hyperparameters and the network (every backend). The defaults are
    Alpha-Mini's (king capture on Gardner, material shaping, White against random, gamma 0.3, lambda 1, entropy 0);
    batch sizes and learning rate are ours (experiments/ppo_gardner.py)."""

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
    # self-play (native backend, board games): a pool of past selves, agents.ppo.boardgame_env.OpponentPool
    selfplay: bool = False
    selfplay_random: float = 0.2  # probability that a game is against the random player instead
    pool_every: int = 5  # a snapshot of the learner joins the pool every pool_every iterations
    pool_size: int = 16  # the newest pool_size snapshots are kept (the k-th oldest drawn with weight k)
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
        checks = {"agent_color": self.agent_color in ("white", "black", "random"),
                  "reward": self.reward in ("outcome", "material"), "gamma": 0.0 <= self.gamma <= 1.0,
                  "lambda_": 0.0 <= self.lambda_ <= 1.0, "opponent_eps": 0.0 <= self.opponent_eps <= 1.0,
                  "selfplay_random": 0.0 <= self.selfplay_random <= 1.0, "lr": self.lr > 0,
                  "material_scale": self.material_scale >= 0}
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


class Backend:
    """One PPO implementation inside :func:`train` (:data:`BACKENDS`); its methods: docs/ppo.md. The defaults here
    serve a backend that trains the plain-torch ``net`` on the games ``envs``."""

    kind = "backend"  # the run kind: "native", "rllib" or "sb3"

    def policy_net(self) -> PPONet:
        return copy.deepcopy(self.net).eval()

    def initialize(self, state_dict: dict) -> None:
        self.net.load_state_dict(state_dict)

    def close(self) -> None:
        self.envs.close()


def steps_per_game(settings: PPOSettings) -> int:
    """``train_batch / num_envs``: the steps every game plays per iteration; ``ValueError`` if it does not divide."""
    if settings.train_batch % settings.num_envs:
        raise ValueError(f"train_batch ({settings.train_batch}) must be a multiple of num_envs "
                         f"({settings.num_envs}): every game plays train_batch / num_envs steps")
    return settings.train_batch // settings.num_envs


def iteration_row(steps: int, returns: list, lengths: list, iteration_s: float, sample_s: float,
                  wins: list | None = None) -> dict:
    """A row's first columns: env steps, the games that ended (count, mean return and length, share won), timings."""
    def mean(values) -> float:
        return float(np.mean(values)) if len(values) else float("nan")

    row = {"iteration_env_steps": steps, "episodes": len(returns), "episode_return_mean": mean(returns),
           "episode_len_mean": mean(lengths)}
    if wins is not None:
        row["train_win_rate"] = mean(wins)
    return row | {"iteration_s": iteration_s, "sample_s": sample_s, "learn_s": iteration_s - sample_s,
                  "sample_steps_per_s": steps / sample_s if sample_s > 0 else float("nan")}


#: Each backend's :class:`Backend` class, imported only when a run asks for it (RLlib and SB3 are extras).
BACKENDS = {"native": "agents.ppo.native:NativeBackend", "rllib": "agents.ppo.rllib_train:RLlibBackend",
            "sb3": "agents.ppo.sb3_train:SB3Backend"}


def train(settings: PPOSettings, run_dir: str, env_steps: int | None = None, minutes: float | None = None,
          eval_games: int = 200, eval_every: int = 1, eval_seed: int = 10_000, resume: bool = False,
          verbose: bool = True, desc: str | None = None, on_iteration=None, *, backend: str = "native") -> RunState:
    """Train (or resume) a PPO run with ``backend`` (:data:`BACKENDS`) until the budget is spent; the final state.

    Every ``eval_every`` iterations (and after the last) the greedy policy plays ``eval_games`` games per color against
    random; every iteration writes the checkpoint, ``agent/`` and the metrics (:class:`agents.runs.Run`).
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown PPO backend {backend!r}: {', '.join(BACKENDS)}")
    if env_steps is None and minutes is None:
        raise ValueError("give a budget: env_steps and/or minutes")
    task = task_for(settings)
    task.check_backend(backend)
    if settings.draw_reward and backend != "native":
        raise ValueError(f"draw_reward is a shaping option of the native backend; {backend} takes the env's rewards")
    make_learner = pkgutil.resolve_name(BACKENDS[backend])  # a missing extra fails here, before any file
    run = Run(run_dir, settings, backend, resume=resume, verbose=verbose)  # settings checked before anything is built
    state, learner = run.state, None

    def spent() -> bool:
        return ((env_steps is not None and state.env_steps >= env_steps)
                or (minutes is not None and run.elapsed() >= 60 * minutes))

    if env_steps is not None:
        progress = run.progress(env_steps, desc or f"{backend} ppo {task.name} {settings.agent_color}",
                                unit="step", done=state.env_steps)
    else:
        progress = run.progress(int(60 * minutes), desc or f"{backend} ppo {task.name}", unit="s",
                                done=int(state.elapsed_s))
    try:
        learner = make_learner(settings, task)
        if run.resumed:
            learner.restore(run.tensors())
        elif settings.init_from is not None:
            learner.initialize(initial_weights(settings, task))
        while not spent():
            row = learner.iterate()
            state.iteration += 1
            state.env_steps += row["iteration_env_steps"]
            row = {"iteration": state.iteration, "env_steps": state.env_steps, **row}
            agent = task.agent(learner.policy_net(), backend)
            last = spent()
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
            progress.update(state.env_steps if env_steps is not None else int(state.elapsed_s), _summary(row))
    finally:
        progress.close()
        run.close()
        if learner is not None:
            learner.close()
    return state


def learning_curve(metrics: list[dict], color: str) -> tuple[list, list, list]:
    """(env steps, training seconds, win rate as ``color``) at the iterations that were evaluated."""
    points = [(m["env_steps"], training_seconds(metrics[:i + 1]), m[f"win_rate_{color}"])
              for i, m in enumerate(metrics) if f"win_rate_{color}" in m]
    return tuple(map(list, zip(*points))) if points else ([], [], [])


def _summary(row: dict) -> str:
    rates = [f"win {k[9:]} {v:.3f}" for k, v in row.items() if k.startswith("win_rate_")]
    return ", ".join([f"return {row['episode_return_mean']:.3f}", *rates,
                      f"{row['sample_steps_per_s']:.0f} steps/s sampling"])
