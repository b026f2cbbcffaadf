"""The AlphaZero loop: self-play -> replay buffer -> training steps -> new weights, repeated.

Read top to bottom: :class:`Config`, then :func:`train` runs iterations of
:func:`selfplay.play_games` and :func:`train_steps`, checkpointing every
iteration through :class:`agents.runs.Run` so that ``resume=True`` continues an
interrupted run with every finished iteration kept. Self-play runs in this
process, or with ``workers > 0`` in that many worker processes
(:class:`~agents.alphazero.workers.SelfPlayPool`; Ray actors with ``ray_address``;
a lost worker is replaced and its games replayed).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from typing import Callable

import numpy as np
import torch

from agents.alphazero.search import NetworkEvaluator, SearchConfig
from agents.alphazero.network import NetConfig, PolicyValueNet, loss_terms
from agents.alphazero.selfplay import ReplayBuffer, Samples, SelfPlayStats, play_games
from agents.alphazero.workers import SelfPlaySchedule, check_workers, load_numpy_weights
from agents.devices import autocast, resolve_device
from agents.runs import Run, RunState, checkpoint_dir, cosine_rate, load_tensors, read_state
from minichess_envs.encoding import ActionEncoding, ObservationEncoding
from minichess_envs.engine import Position
from minichess_envs.variants import get_variant


#: Options that measurements rejected and that were removed (docs/decisions.md), with the value that
#: meant "off": a saved run with one of them on cannot be continued.
REMOVED_OPTIONS = {"fast_simulations": 0, "resign_threshold": None, "window_start": 0, "value_loss_weight": 1.0,
                   "average_positions": False, "weight_average": 0.0}
#: Settings of those options that meant nothing while they were off.
REMOVED_COMPANIONS = ("full_search_fraction", "resign_check_fraction")


def without_removed_options(settings: dict, what: str) -> dict:
    """``settings`` without the removed options it holds at their "off" value; ``ValueError`` naming the
    option for one that was on."""
    settings = {k: v for k, v in settings.items() if k not in REMOVED_COMPANIONS}
    for name, off in REMOVED_OPTIONS.items():
        if name in settings:
            value = settings.pop(name)
            if value != off:
                raise ValueError(f"{what} with {name}={value!r}: that option was removed after measurements "
                                 "rejected it (docs/decisions.md)")
    return settings


@dataclasses.dataclass
class Config:
    """Everything a run needs; saved in its checkpoints."""

    variant: str = "3x3"
    run_dir: str = "runs/alphazero"
    seed: int = 0
    iterations: int = 20
    # self-play
    games_per_iteration: int = 256  # played together, one batched search per move
    random_start_fraction: float = 0.0  # share of games from random legal positions (small boards)
    start_fens: tuple[str, ...] = ()  # other games start here (default: the variant's start)
    temperature_plies: int = 8
    value_q_weight: float = 0.0  # value target: (1 - w) * game result + w * the search's root value
    ply_limit: int | None = None  # self-play games stop here as draws (default: the variant's limit)
    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    # network and observation
    blocks: int = 4
    channels: int = 64
    policy_channels: int = 32
    history: int = 1
    last_move: bool = False
    # training
    buffer_size: int = 200_000
    batch_size: int = 256
    sample_reuse: float = 4.0  # training samples drawn per new self-play sample
    learning_rate: float = 2e-3
    final_learning_rate: float | None = None  # cosine decay to this over the run's iterations or hours (None: constant)
    weight_decay: float = 1e-4
    mirror: bool = True  # left-right mirror augmentation (variants without castling)
    threads: int = 0  # torch threads (0: torch's default)
    device: str = "auto"  # where the learner and the in-process search run: auto | cpu | cuda | mps
    mixed_precision: bool = True  # bf16 autocast where it was measured to pay (agents.devices.autocast)
    hours: float | None = None  # stop once self-play and learning (not evaluation) have run this many hours
    init_from: str | None = None  # a saved AlphaZero agent (e.g. supervised) whose weights start the run
    # scaling out
    workers: int = 0  # > 0: self-play in this many worker processes (agents.alphazero.workers)
    ray_address: str | None = None  # the workers as Ray actors on this cluster ("local": a new local one)
    overlap: bool = False  # workers play the next iteration's games while the learner trains (SelfPlaySchedule)

    def __post_init__(self):
        check_workers(self.workers, self.ray_address, self.overlap)

    @classmethod
    def from_dict(cls, d: dict) -> Config:
        d = without_removed_options(d, "an AlphaZero run")
        d["search"] = SearchConfig.from_dict(d.get("search", {}))
        d["start_fens"] = tuple(d.get("start_fens", ()))
        return cls(**d)


def gardner_config(run_dir: str, iterations: int = 30, games: int = 256, simulations: int = 48, **changes) -> Config:
    """The Gardner settings of experiments/alphazero_gardner.py and supervised_gardner.py."""
    settings = dict(
        variant="gardner", run_dir=run_dir, iterations=iterations,
        games_per_iteration=games, temperature_plies=12, ply_limit=120,
        search=SearchConfig(simulations=simulations, leaves_per_tree=4, c_puct=1.5, discount=0.99,
                            dirichlet_alpha=0.3, dirichlet_epsilon=0.25),
        blocks=3, channels=48, policy_channels=8, history=1, last_move=False,
        buffer_size=150_000, sample_reuse=2.0, batch_size=256, weight_decay=1e-4, learning_rate=2e-3,
    )
    return Config(**{**settings, **changes})  # any of these settings can be changed


def make_net(config: Config) -> tuple[PolicyValueNet, ObservationEncoding]:
    variant = get_variant(config.variant)
    encoding = ObservationEncoding(variant, config.history, config.last_move)
    net_config = NetConfig(variant.height, variant.width, encoding.num_channels, variant.num_actions,
                           blocks=config.blocks, channels=config.channels, policy_channels=config.policy_channels)
    return PolicyValueNet(net_config), encoding


def initial_weights(config: Config, net: PolicyValueNet) -> dict:
    """The weights of the saved agent ``config.init_from``; ``ValueError`` if its network or observation differ."""
    from agents.alphazero.agent import AlphaZeroAgent

    agent = AlphaZeroAgent.load(config.init_from)
    ours = (config.variant, config.history, config.last_move, net.config)
    theirs = (agent.variant.name, agent.encoding.history, agent.encoding.last_move, agent.net.config)
    if ours != theirs:
        raise ValueError(f"init_from {config.init_from!r} is a network for (variant, history, last_move, shape) "
                         f"{theirs}; this run needs {ours}")
    return agent.net.state_dict()


def start_positions(config: Config, count: int, rng: np.random.Generator) -> list[Position]:
    """The games' start positions: the configured starts, and random legal ones for the curriculum."""
    variant = get_variant(config.variant)
    fens = config.start_fens or (variant.start_fen,)
    starts = []
    for k in range(count):
        if rng.random() < config.random_start_fraction:
            from minichess_envs.positions import random_position

            starts.append(random_position(variant, rng))
        else:
            starts.append(Position(variant, fens[k % len(fens)]))
    return starts


def selfplay_options(config: Config) -> dict:
    """The self-play settings that :func:`play_games` takes as keywords."""
    return {"value_q_weight": config.value_q_weight}


def train_steps(net: PolicyValueNet, optimizer, buffer: ReplayBuffer, steps: int, config: Config,
                rng: np.random.Generator, mirror_perm: np.ndarray | None, mixed_precision: bool = False) -> dict:
    """``steps`` minibatch updates on samples drawn uniformly from the buffer, each minimising the policy
    loss plus the value loss; mean losses.
    ``mixed_precision``: the network's forward and backward passes under bf16 autocast where it pays
    (:func:`agents.devices.autocast`); weights, optimizer and losses stay float32."""
    net.train()
    totals = {"policy_loss": 0.0, "value_loss": 0.0}
    for _ in range(steps):
        batch = buffer.sample(config.batch_size, rng)
        obs, masks, policies = batch.observations.astype(np.float32), batch.masks, batch.policies
        if mirror_perm is not None:  # reflect half the batch left-right: files reversed, actions permuted
            flip = rng.random(len(obs)) < 0.5
            obs[flip] = obs[flip][:, :, ::-1, :]
            masks = masks.copy()
            policies = policies.copy()
            masks[flip] = masks[flip][:, mirror_perm]
            policies[flip] = policies[flip][:, mirror_perm]
        device = next(net.parameters()).device
        with autocast(device, mixed_precision, batch=len(obs)):
            policy_loss, value_loss = loss_terms(net, *(torch.from_numpy(np.ascontiguousarray(x)).to(device)
                                                        for x in (obs, masks, policies, batch.values)))
        optimizer.zero_grad()
        (policy_loss + value_loss).backward()
        optimizer.step()
        totals["policy_loss"] += policy_loss.item()
        totals["value_loss"] += value_loss.item()
    return {k: v / max(steps, 1) for k, v in totals.items()}


def load_checkpoint(run_dir: str) -> dict:
    """The last checkpoint of the run in ``run_dir`` as :func:`train` returns it; ``ValueError`` naming
    the problem (no checkpoint, a corrupt or foreign file)."""
    found = checkpoint_dir(run_dir)
    if found is None:
        raise ValueError(f"no checkpoint in {run_dir}")
    return _checkpoint_state(read_state(found), load_tensors(found), found)


def _checkpoint_state(run: RunState, tensors: dict, where: str) -> dict:
    missing = {"net_config", "model", "optimizer", "buffer", "rng", "torch_rng"} - set(tensors)
    if run.kind != "alphazero" or missing:
        raise ValueError(f"corrupt checkpoint {where}: not an AlphaZero run"
                         + (f" (missing {sorted(missing)})" if missing else f" (a {run.kind} run)"))
    return {"config": run.settings, "iteration": run.iteration, "metrics": run.metrics, **tensors}


def checkpoint_tensors(net: PolicyValueNet, optimizer, buffer: ReplayBuffer, rng: np.random.Generator) -> dict:
    """What a self-play loop's checkpoint holds: network, optimizer, replay buffer and both generators."""
    return {"net_config": dataclasses.asdict(net.config), "model": {k: v.cpu() for k, v in net.state_dict().items()},
            "optimizer": optimizer.state_dict(),
            "buffer": {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in buffer.state().items()},
            "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state()}


def save_iteration(run: Run, progress, row: dict, samples: int, net, optimizer, buffer: ReplayBuffer,
                   rng: np.random.Generator, extra: dict | None = None) -> dict:
    """End a self-play iteration: counters, checkpoint (with the ``extra`` tensors), metrics and progress
    bar; returns the checkpoint's tensors."""
    run.state.iteration = row["iteration"]
    run.state.env_steps += samples
    tensors = {**checkpoint_tensors(net, optimizer, buffer, rng), **(extra or {})}
    run.save(row, tensors)
    # a run bounded by hours counts its bar in seconds of self-play and learning, else in iterations
    progress.update(int(row["training_s"]) if progress.unit == "s" else row["iteration"], progress_text(row))
    return tensors


def run_result(run: Run, tensors: dict | None, load: Callable[[str], dict]) -> dict:
    """What a self-play loop returns: its last checkpoint's state (read back with ``load`` if nothing was
    left to run)."""
    if tensors is None:
        return load(run.run_dir)
    return {"config": run.state.settings, "iteration": run.state.iteration, "metrics": run.state.metrics, **tensors}


def training_progress(run: Run, config, desc: str):
    """The loop's progress bar: in seconds of self-play and learning against ``config.hours`` when the run
    has an hour budget (its ETA then means something), else in iterations."""
    if config.hours is not None:
        done = sum(m["selfplay_s"] + m["train_s"] for m in run.state.metrics)
        return run.progress(int(3600 * config.hours), desc, unit="s", done=int(done))
    return run.progress(config.iterations, desc)


def learning_rate(config: Config, iteration: int, trained_s: float) -> float:
    """The learning rate of an iteration (1-based) that starts after ``trained_s`` seconds of self-play and
    learning: constant, or a cosine to ``final_learning_rate`` over the hour budget (if any) or the iterations."""
    if config.final_learning_rate is None:
        return config.learning_rate
    if config.hours is not None:
        t = trained_s / (3600 * config.hours)
    else:
        t = (iteration - 1) / max(config.iterations - 1, 1)
    return cosine_rate(config.learning_rate, config.final_learning_rate, t)


def progress_text(row: dict) -> str:
    """An iteration's losses, speed and scores for the progress bar."""
    return (f"loss {row['policy_loss']:.3f}/{row['value_loss']:.3f}, {row['positions_per_s']:.0f} pos/s"
            + "".join(f", {k} {v:.3f}" for k, v in row.items() if k.startswith("score_")))


def train(config: Config, evaluate: Callable | None = None, resume: bool = False, verbose: bool = True) -> dict:
    """Run (or resume) a training run; returns the final checkpoint state.

    ``evaluate(net, encoding, iteration) -> dict`` is called after every
    iteration; its numbers join the metrics (CSV, TensorBoard, checkpoint).
    The state: ``config``, ``iteration``, ``metrics`` (one row per iteration),
    ``net_config``, ``model``, ``optimizer``, ``buffer``, ``rng``, ``torch_rng``.
    """
    if config.threads:
        torch.set_num_threads(config.threads)
    device = resolve_device(config.device)
    # where the work runs may change when resuming, and the budget unless the learning rate decays over it
    budget = ("iterations", "hours") if config.final_learning_rate is None else ()
    run = Run(config.run_dir, config, "alphazero", resume=resume,
              may_differ=budget + ("workers", "ray_address", "device", "mixed_precision"), verbose=verbose)
    torch.manual_seed(config.seed)  # before the network is built: its initial weights come from it
    net, encoding = make_net(config)
    net.to(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    buffer = ReplayBuffer(config.buffer_size, encoding.shape, encoding.variant.num_actions)
    rng = np.random.default_rng(config.seed)
    if config.init_from is not None and not run.resumed:
        net.load_state_dict(initial_weights(config, net))
    if run.resumed:
        saved = _checkpoint_state(run.state, run.tensors(), run.checkpoint)
        net.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        buffer.restore({k: v.numpy() if isinstance(v, torch.Tensor) else v for k, v in saved["buffer"].items()})
        rng.bit_generator.state = saved["rng"]
        torch.set_rng_state(saved["torch_rng"])
    variant = encoding.variant
    mirror_perm = ActionEncoding(variant).mirror_permutation if config.mirror and not variant.castling else None
    evaluator = NetworkEvaluator(net, mixed_precision=config.mixed_precision)
    schedule = None
    progress = training_progress(run, config, f"alphazero {config.variant}")
    tensors = None
    try:
        if config.workers > 0:
            schedule = SelfPlaySchedule.start(
                ChessSelfPlayer, config,
                lambda r: [start.fen() for start in start_positions(config, config.games_per_iteration, r)],
                saved if run.resumed else None)
        for iteration in range(run.state.iteration + 1, config.iterations + 1):
            trained_s = sum(m["selfplay_s"] + m["train_s"] for m in run.state.metrics)
            if config.hours is not None and trained_s >= config.hours * 3600:
                break
            t0 = time.perf_counter()
            if schedule is None:
                evaluator.clear()  # new weights since the last iteration
                stats = SelfPlayStats()
                samples, records = play_games(start_positions(config, config.games_per_iteration, rng), evaluator,
                                              config.search, encoding, rng, config.temperature_plies,
                                              config.ply_limit, stats=stats, **selfplay_options(config))
                games_s = time.perf_counter() - t0
            else:
                outcomes, games_s = schedule.games(net, rng)
                samples, records, stats = merge_outcomes(outcomes)
            selfplay_s = time.perf_counter() - t0  # the learner's wait: less than games_s when they overlap
            buffer.add(samples)
            steps = math.ceil(config.sample_reuse * len(samples) / config.batch_size)
            rate = learning_rate(config, iteration, trained_s)
            for group in optimizer.param_groups:
                group["lr"] = rate
            t1 = time.perf_counter()
            losses = train_steps(net, optimizer, buffer, steps, config, rng, mirror_perm)
            train_s = time.perf_counter() - t1
            row = {
                "iteration": iteration, "samples": len(samples), "buffer": buffer.size, "train_steps": steps,
                **losses, "learning_rate": rate, "selfplay_s": selfplay_s, "train_s": train_s,
                "training_s": trained_s + selfplay_s + train_s,  # self-play and learning, evaluation left out
                "games_s": games_s,
                "positions_per_s": len(samples) / max(games_s, 1e-9),  # recorded positions (samples)
                "selfplay_plies": stats.plies,
                "mean_game_plies": float(np.mean([r.plies for r in records])),
                "white_wins": sum(r.result == "1-0" for r in records) / len(records),
                "black_wins": sum(r.result == "0-1" for r in records) / len(records),
            }
            if schedule is not None:
                row["worker_restarts"] = schedule.pool.restarts
            if evaluate is not None:
                t2 = time.perf_counter()
                row.update(evaluate(net, encoding, iteration))
                row["eval_s"] = time.perf_counter() - t2
            tensors = save_iteration(run, progress, row, len(samples), net, optimizer, buffer, rng,
                                     schedule.checkpoint() if schedule is not None else None)
    finally:
        progress.close()
        run.close()
        if schedule is not None:
            schedule.pool.stop()
    return run_result(run, tensors, load_checkpoint)


class ChessSelfPlayer:
    """Self-play in a worker (:class:`~agents.alphazero.workers.SelfPlayPool`): plays a share of an
    iteration's games on the CPU with the weights it is sent."""

    def __init__(self, settings: dict):
        self.config = Config.from_dict(settings)
        self.net, self.encoding = make_net(self.config)
        self.evaluator = NetworkEvaluator(self.net, mixed_precision=self.config.mixed_precision)

    def play(self, weights: dict, start_fens: list[str], seed: int) -> tuple[Samples, list, SelfPlayStats]:
        load_numpy_weights(self.net, weights)
        self.evaluator.clear()
        starts = [Position(self.encoding.variant, fen) for fen in start_fens]
        stats = SelfPlayStats()
        samples, records = play_games(starts, self.evaluator, self.config.search, self.encoding,
                                      np.random.default_rng(seed), self.config.temperature_plies,
                                      self.config.ply_limit, stats=stats, **selfplay_options(self.config))
        return samples, records, stats


def merge_outcomes(outcomes: list) -> tuple[Samples, list, SelfPlayStats]:
    """The workers' shares of an iteration as one: samples, records and counts, in share order."""
    stats = SelfPlayStats()
    for _, _, share_stats in outcomes:
        stats.add(share_stats)
    return (Samples.concatenate([samples for samples, _, _ in outcomes]),
            [record for _, records, _ in outcomes for record in records], stats)


def write_agent(run_dir: str, state: dict, simulations: int, name: str = "alphazero",
                move_choice: str | None = None) -> str:
    """Save the run's network as an agent (``agents.load(run_dir + "/agent")``)."""
    from agents.alphazero.agent import AlphaZeroAgent

    agent = AlphaZeroAgent.from_checkpoint(state, simulations=simulations, name=name, move_choice=move_choice)
    path = os.path.join(run_dir, "agent")
    agent.save(path)
    with open(os.path.join(path, "training.json"), "w") as f:
        json.dump({"iterations": state["iteration"], "metrics": state["metrics"][-1]}, f, indent=2, default=float)
    return path
