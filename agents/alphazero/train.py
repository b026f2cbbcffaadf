"""The AlphaZero loop: self-play -> replay buffer -> training steps -> new weights, repeated.

Read top to bottom: :class:`Config`, then :func:`train` runs iterations of
:func:`selfplay.play_games` and :func:`train_steps`, checkpointing every
iteration atomically so that ``resume=True`` continues an interrupted run with
every finished iteration kept. Self-play runs in this process, or in Ray
actors with ``workers > 0`` (``ray_address`` joins an existing cluster).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import time
from typing import Callable

import numpy as np
import torch

from agents.alphazero.mcts import NetworkEvaluator, SearchConfig
from agents.alphazero.network import NetConfig, PolicyValueNet, loss_terms
from agents.alphazero.selfplay import ReplayBuffer, Samples, play_games
from minichess_envs.encoding import ActionEncoding, ObservationEncoding
from minichess_envs.engine import Position
from minichess_envs.variants import get_variant

CHECKPOINT = "checkpoint.pt"


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
    weight_decay: float = 1e-4
    mirror: bool = True  # left-right mirror augmentation (variants without castling)
    threads: int = 0  # torch threads (0: torch's default)
    # scaling out
    workers: int = 0
    ray_address: str | None = None

    @classmethod
    def from_dict(cls, d: dict) -> Config:
        d = dict(d)
        d["search"] = SearchConfig(**d.get("search", {}))
        d["start_fens"] = tuple(d.get("start_fens", ()))
        return cls(**d)


def make_net(config: Config) -> tuple[PolicyValueNet, ObservationEncoding]:
    variant = get_variant(config.variant)
    encoding = ObservationEncoding(variant, config.history, config.last_move)
    net_config = NetConfig(variant.height, variant.width, encoding.num_channels, variant.num_actions,
                           blocks=config.blocks, channels=config.channels, policy_channels=config.policy_channels)
    return PolicyValueNet(net_config), encoding


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


def train_steps(net: PolicyValueNet, optimizer, buffer: ReplayBuffer, steps: int, config: Config,
                rng: np.random.Generator, mirror_perm: np.ndarray | None) -> dict:
    """``steps`` minibatch updates on samples drawn uniformly from the buffer; mean losses."""
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
        policy_loss, value_loss = loss_terms(net, torch.from_numpy(obs), torch.from_numpy(masks),
                                             torch.from_numpy(policies), torch.from_numpy(batch.values))
        optimizer.zero_grad()
        (policy_loss + value_loss).backward()
        optimizer.step()
        totals["policy_loss"] += policy_loss.item()
        totals["value_loss"] += value_loss.item()
    return {k: v / max(steps, 1) for k, v in totals.items()}


def save_checkpoint(path: str, **state) -> None:
    """``torch.save`` to a temporary file, then rename: a crash never leaves half a checkpoint."""
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str) -> dict:
    """A checkpoint written by :func:`save_checkpoint`; ``ValueError`` naming the problem otherwise."""
    if not os.path.exists(path):
        raise ValueError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # truncated or foreign files raise many kinds of errors
        raise ValueError(f"corrupt checkpoint {path}: {type(exc).__name__}: {exc}") from None
    missing = {"config", "net_config", "model", "iteration"} - set(state if isinstance(state, dict) else ())
    if missing:
        raise ValueError(f"corrupt checkpoint {path}: missing {sorted(missing)}")
    return state


class Progress:
    """A progress bar (tqdm when installed, plain lines otherwise)."""

    def __init__(self, total: int, desc: str, initial: int = 0):
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, initial=initial, unit="it", dynamic_ncols=True)
        except ImportError:
            self.bar = None
        self.total, self.desc, self.count = total, desc, initial

    def update(self, info: str) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.set_postfix_str(info, refresh=False)
            self.bar.update(1)
        else:
            print(f"{self.desc} {self.count}/{self.total}: {info}", flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def train(config: Config, evaluate: Callable | None = None, resume: bool = False, verbose: bool = True) -> dict:
    """Run (or resume) a training run; returns the final checkpoint state.

    ``evaluate(net, encoding, iteration) -> dict`` is called after every
    iteration; its numbers join the metrics (CSV, TensorBoard, checkpoint).
    """
    os.makedirs(config.run_dir, exist_ok=True)
    if config.threads:
        torch.set_num_threads(config.threads)
    path = os.path.join(config.run_dir, CHECKPOINT)
    torch.manual_seed(config.seed)  # before the network is built: its initial weights come from it
    net, encoding = make_net(config)
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    buffer = ReplayBuffer(config.buffer_size, encoding.shape, encoding.variant.num_actions)
    rng = np.random.default_rng(config.seed)
    metrics: list[dict] = []
    first = 0
    if resume and os.path.exists(path):
        state = load_checkpoint(path)
        saved = Config.from_dict(state["config"])
        if dataclasses.replace(saved, iterations=config.iterations, workers=config.workers,
                               ray_address=config.ray_address) != config:
            raise ValueError(f"{path} was written with other settings; resume with the same ones "
                             f"(or start a new run_dir): saved {state['config']}")
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        buffer.restore(state["buffer"])
        rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        metrics = state["metrics"]
        first = state["iteration"]
        if verbose:
            print(f"resuming {config.run_dir} after iteration {first}", flush=True)
    elif os.path.exists(path) and not resume:
        raise ValueError(f"{path} exists: pass resume=True (--resume) to continue it, or use another run_dir")
    variant = encoding.variant
    mirror_perm = ActionEncoding(variant).mirror_permutation if config.mirror and not variant.castling else None
    evaluator = NetworkEvaluator(net)
    workers = _start_workers(config) if config.workers > 0 else None
    writer = _tensorboard(config.run_dir)
    progress = Progress(config.iterations, f"alphazero {config.variant}", initial=first)
    started = time.perf_counter() - (metrics[-1]["elapsed_s"] if metrics else 0.0)
    state = None
    try:
        for iteration in range(first + 1, config.iterations + 1):
            t0 = time.perf_counter()
            starts = start_positions(config, config.games_per_iteration, rng)
            if workers is None:
                evaluator.clear()  # new weights since the last iteration
                samples, records = play_games(starts, evaluator, config.search, encoding, rng,
                                              config.temperature_plies, config.ply_limit)
            else:
                samples, records = _play_on_workers(workers, net, starts, config, rng)
            selfplay_s = time.perf_counter() - t0
            buffer.add(samples)
            steps = math.ceil(config.sample_reuse * len(samples) / config.batch_size)
            t1 = time.perf_counter()
            losses = train_steps(net, optimizer, buffer, steps, config, rng, mirror_perm)
            train_s = time.perf_counter() - t1
            row = {
                "iteration": iteration, "samples": len(samples), "buffer": buffer.size, "train_steps": steps,
                **losses, "selfplay_s": selfplay_s, "train_s": train_s,
                "positions_per_s": len(samples) / max(selfplay_s, 1e-9),
                "mean_game_plies": float(np.mean([r.plies for r in records])),
                "white_wins": sum(r.result == "1-0" for r in records) / len(records),
                "black_wins": sum(r.result == "0-1" for r in records) / len(records),
            }
            if evaluate is not None:
                t2 = time.perf_counter()
                row.update(evaluate(net, encoding, iteration))
                row["eval_s"] = time.perf_counter() - t2
            row["elapsed_s"] = time.perf_counter() - started
            metrics.append(row)
            state = {"config": dataclasses.asdict(config), "net_config": dataclasses.asdict(net.config),
                     "model": net.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration,
                     "buffer": buffer.state(), "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                     "metrics": metrics}
            save_checkpoint(path, **state)
            _write_metrics(config.run_dir, metrics, writer)
            progress.update(f"loss {row['policy_loss']:.3f}/{row['value_loss']:.3f}, "
                            f"{row['positions_per_s']:.0f} pos/s"
                            + "".join(f", {k} {v:.3f}" for k, v in row.items() if k.startswith("score_")))
    finally:
        progress.close()
        if writer is not None:
            writer.close()
        if workers is not None:
            import ray

            for w in workers:
                ray.kill(w)
    return state if state is not None else load_checkpoint(path)


def _write_metrics(run_dir: str, metrics: list[dict], writer) -> None:
    """Rewrite metrics.csv from all rows (a resumed run never duplicates rows); log the last to TensorBoard."""
    keys = list(dict.fromkeys(k for row in metrics for k in row))
    tmp = os.path.join(run_dir, "metrics.csv.tmp")
    with open(tmp, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=keys)
        out.writeheader()
        out.writerows(metrics)
    os.replace(tmp, os.path.join(run_dir, "metrics.csv"))
    if writer is not None:
        row = metrics[-1]
        for k, v in row.items():
            if isinstance(v, (int, float)) and k != "iteration":
                writer.add_scalar(k, v, row["iteration"])
        writer.flush()


def _tensorboard(run_dir: str):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is optional: metrics.csv has everything
        return None
    return SummaryWriter(os.path.join(run_dir, "tensorboard"))


# -- Ray: self-play in actors -------------------------------------------------------


def _start_workers(config: Config):
    import ray

    if not ray.is_initialized():
        ray.init(address=config.ray_address, ignore_reinit_error=True, include_dashboard=False,
                 log_to_driver=False)
    actor = ray.remote(num_cpus=1)(SelfPlayWorker)
    return [actor.remote(dataclasses.asdict(config), k) for k in range(config.workers)]


class SelfPlayWorker:
    """A Ray actor: plays its share of the self-play games with the weights it is sent."""

    def __init__(self, config: dict, index: int):
        torch.set_num_threads(1)
        self.config = Config.from_dict(config)
        self.net, self.encoding = make_net(self.config)
        self.evaluator = NetworkEvaluator(self.net)

    def play(self, weights: dict, start_fens: list[str], seed: int) -> tuple[Samples, list]:
        self.net.load_state_dict(weights)
        self.evaluator.clear()
        starts = [Position(self.encoding.variant, fen) for fen in start_fens]
        return play_games(starts, self.evaluator, self.config.search, self.encoding, np.random.default_rng(seed),
                          self.config.temperature_plies, self.config.ply_limit)


def _play_on_workers(workers, net, starts, config: Config, rng: np.random.Generator):
    import ray

    weights = ray.put({k: v.cpu() for k, v in net.state_dict().items()})
    shares = np.array_split(np.arange(len(starts)), len(workers))
    futures = [w.play.remote(weights, [starts[i].fen() for i in share], int(rng.integers(2**31)))
               for w, share in zip(workers, shares) if len(share)]
    results = ray.get(futures)
    samples = Samples.concatenate([s for s, _ in results])
    records = [r for _, rs in results for r in rs]
    return samples, records


def write_agent(run_dir: str, state: dict, simulations: int, name: str = "alphazero") -> str:
    """Save the run's network as an agent (``agents.load(run_dir + "/agent")``)."""
    from agents.alphazero.agent import AlphaZeroAgent

    agent = AlphaZeroAgent.from_checkpoint(state, simulations=simulations, name=name)
    path = os.path.join(run_dir, "agent")
    agent.save(path)
    with open(os.path.join(path, "training.json"), "w") as f:
        json.dump({"iterations": state["iteration"], "metrics": state["metrics"][-1]}, f, indent=2, default=float)
    return path
