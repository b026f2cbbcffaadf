"""The AlphaZero loop for every game (self-play, replay buffer, training steps, repeated): :func:`train` runs a
:class:`Config`, checkpointing every iteration so that ``resume=True`` continues a run."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from typing import Callable

import numpy as np
import torch

from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.network import NetConfig, PolicyValueNet, loss_terms
from agents.alphazero.search import NetworkEvaluator, SearchConfig, check_number
from agents.arena import close_agents
from agents.alphazero.selfplay import ReplayBuffer, Samples, SelfPlaySchedule, play_games, symmetric_samples
from agents.devices import autocast, resolve_device
from agents.games import Game, new_game
from agents.runs import Run, RunState, checkpoint_dir, cosine_rate, load_tensors, read_state

KIND = "alphazero"  # the checkpoints' kind


@dataclasses.dataclass
class NetworkConfig:
    """The residual network (:class:`~agents.alphazero.network.NetConfig`) and what the game shows it."""

    blocks: int = 4
    channels: int = 64
    policy_channels: int = 32  # planes before the policy's linear layer
    history: int = 1  # chess variants: positions shown, the current one first; Gomoku: its history planes
    last_move: bool = False  # chess variants: planes of the last move
    threats: bool = False  # Gomoku: where a stone makes five or fours (Gomoku.threat_planes)


@dataclasses.dataclass
class SelfPlayConfig:
    """How self-play games start, are played and become training targets (:func:`play_games`)."""

    games_per_iteration: int = 256  # played together, one batched search per move
    temperature_plies: int = 8  # moves sampled from the visit counts (counted from the game's beginning)
    random_start_fraction: float = 0.0  # share of games from a random start (wider coverage)
    random_start_plies: int = 0  # such a start: after 1 .. this many random moves; 0: a random legal position
    start_fens: tuple[str, ...] = ()  # chess variants: the other games start here (default: the variant's start)
    ply_limit: int | None = None  # chess variants: games stop here as draws (default: the variant's limit)
    value_target_q: float = 0.0  # value target: (1 - w) * game result + w * the search's root value
    policy_target_power: float = 1.0  # policy target in proportion to visits ** this (above 1: sharper)
    discounted_values: bool = False  # value target: the result times search.discount per ply to the end
    sparring: str | None = None  # an agent spec (agents.spec) playing one seat, at random, in a share of the games
    sparring_fraction: float = 0.0  # that share; the partner's moves are samples of its choice

    def __post_init__(self):
        check_number("SelfPlayConfig.sparring_fraction", self.sparring_fraction, 0.0, 1.0)
        if (self.sparring is None) != (self.sparring_fraction == 0):
            raise ValueError("sparring (an agent spec) and sparring_fraction > 0 go together: "
                             f"got {self.sparring!r} and {self.sparring_fraction}")


@dataclasses.dataclass
class LearningConfig:
    """The replay buffer and the optimiser."""

    buffer_size: int = 200_000
    batch_size: int = 256
    sample_reuse: float = 4.0  # training samples drawn per new self-play sample
    learning_rate: float = 2e-3
    final_learning_rate: float | None = None  # cosine decay to this over the iterations or hours (None: constant)
    weight_decay: float = 1e-4
    mirror: bool = True  # reflect half of each batch left-right, where the game has that symmetry
    all_symmetries: bool = False  # store every sample in all the board's symmetric images
    mixed_precision_training: bool = False  # the training steps under bf16 autocast where it pays (agents.devices)


@dataclasses.dataclass
class ScaleConfig:
    """Where the work runs; none of it changes what a run computes, so it may change on resume."""

    workers: int = 0  # > 0: self-play in this many worker processes (agents.workers.WorkerPool)
    ray_address: str | None = None  # the workers as Ray actors on this cluster ("local": a new local one)
    overlap: bool = False  # workers play the next iteration's games while the learner trains
    threads: int = 0  # torch threads (0: torch's default)
    device: str = "auto"  # where the learner and the in-process search run: auto | cpu | cuda | mps
    mixed_precision_search: bool = True  # bf16 autocast of the search's network calls where it pays

    def __post_init__(self):
        check_number("ScaleConfig.workers", self.workers, 0, kind=int)
        if self.ray_address is not None and (not isinstance(self.ray_address, str) or not self.ray_address):
            raise ValueError(f"ray_address must be a Ray address, \"local\" or None, got {self.ray_address!r}")
        if self.ray_address is not None and self.workers == 0:
            raise ValueError("ray_address needs workers > 0: the Ray actors are the self-play workers")
        if self.overlap and self.workers == 0:
            raise ValueError("overlap needs workers > 0: the games of the next iteration are played in workers")


@dataclasses.dataclass
class Config:
    """Everything a run needs; saved in its checkpoints."""

    game: str = "3x3"  # a chess variant or a board game (agents.games.new_game)
    run_dir: str = "runs/alphazero"
    seed: int = 0
    iterations: int = 20
    hours: float | None = None  # stop once self-play and learning (not evaluation) have run this many hours
    init_from: str | None = None  # a saved AlphaZero agent (e.g. supervised) whose weights start the run
    network: NetworkConfig = dataclasses.field(default_factory=NetworkConfig)
    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    selfplay: SelfPlayConfig = dataclasses.field(default_factory=SelfPlayConfig)
    learning: LearningConfig = dataclasses.field(default_factory=LearningConfig)
    scale: ScaleConfig = dataclasses.field(default_factory=ScaleConfig)

    def __post_init__(self):
        start_game(self)  # an unknown game or bad game options fail here

    @classmethod
    def from_dict(cls, d: dict) -> Config:
        """The config as :func:`dataclasses.asdict` (or a checkpoint) holds it."""
        d = dict(d)
        for name, part in PARTS.items():  # SearchConfig.from_dict also reads the settings of removed options
            d[name] = part.from_dict(d.get(name, {})) if part is SearchConfig else part(**d.get(name, {}))
        d["selfplay"].start_fens = tuple(d["selfplay"].start_fens)
        return cls(**d)


PARTS = {"network": NetworkConfig, "search": SearchConfig, "selfplay": SelfPlayConfig, "learning": LearningConfig,
         "scale": ScaleConfig}


def with_changes(config: Config, **changes) -> Config:
    """``config`` with the given settings changed, each named by its field in :class:`Config` or in one of
    its parts (``blocks=3`` changes ``config.network.blocks``); ``TypeError`` for a name found nowhere."""
    top, parts = {}, {}
    for key, value in changes.items():
        if key in {f.name for f in dataclasses.fields(Config)}:
            top[key] = value
            continue
        part = next((p for p in PARTS if key in {f.name for f in dataclasses.fields(getattr(config, p))}), None)
        if part is None:
            raise TypeError(f"{key!r} is not a setting of Config or of its parts {', '.join(PARTS)}")
        parts.setdefault(part, {})[key] = value
    for part, values in parts.items():
        top[part] = dataclasses.replace(top.get(part, getattr(config, part)), **values)
    return dataclasses.replace(config, **top)


def start_game(config: Config, fen: str | None = None) -> Game:
    """The game's start (a chess variant's with the run's observation and ply limit, from ``fen`` if given)."""
    n = config.network
    return new_game(config.game, history=n.history, last_move=n.last_move, threats=n.threats,
                    ply_limit=config.selfplay.ply_limit, fen=fen)


def gardner_config(run_dir: str, iterations: int = 30, games: int = 256, simulations: int = 48, **changes) -> Config:
    """The Gardner settings of experiments/alphazero_gardner.py and supervised_gardner.py, with ``changes``."""
    return with_changes(Config(
        game="gardner", run_dir=run_dir, iterations=iterations,
        network=NetworkConfig(blocks=3, channels=48, policy_channels=8),
        search=SearchConfig(simulations=simulations, leaves_per_tree=4, c_puct=1.5, discount=0.99,
                            dirichlet_alpha=0.3, dirichlet_epsilon=0.25),
        selfplay=SelfPlayConfig(games_per_iteration=games, temperature_plies=12, ply_limit=120),
        learning=LearningConfig(buffer_size=150_000, sample_reuse=2.0, batch_size=256, weight_decay=1e-4,
                                learning_rate=2e-3),
    ), **changes)


def make_net(config: Config) -> PolicyValueNet:
    """A new network for the run's game, its shape from the game's observation and actions."""
    game = start_game(config)
    n = config.network
    return PolicyValueNet(NetConfig(*game.observation_shape, game.num_actions, blocks=n.blocks, channels=n.channels,
                                    policy_channels=n.policy_channels))


def initial_weights(config: Config, net: PolicyValueNet) -> dict:
    """The weights of the saved agent ``config.init_from``; ``ValueError`` if its game, input or network differ."""
    agent = AlphaZeroAgent.load(config.init_from)
    ours = (config.game, config.network.history, config.network.last_move, config.network.threats, net.config)
    theirs = (agent.game, agent.history, agent.last_move, agent.threats, agent.net.config)
    if ours != theirs:
        raise ValueError(f"init_from {config.init_from!r} is a network for (game, history, last_move, threats, shape) "
                         f"{theirs}; this run needs {ours}")
    return agent.net.state_dict()


def start_games(config: Config, rng: np.random.Generator) -> list[tuple[Game, int | None]]:
    """An iteration's starts: the game's (or the FENs in turn), for ``random_start_fraction`` a random one; each
    with the seat its sparring partner plays (``None``: self-play)."""
    s = config.selfplay
    starts = []
    for k in range(s.games_per_iteration):
        game = start_game(config, s.start_fens[k % len(s.start_fens)] if s.start_fens else None)
        if rng.random() < s.random_start_fraction:
            game = game.random_start(rng, s.random_start_plies)
        seat = int(rng.integers(2)) if s.sparring_fraction and rng.random() < s.sparring_fraction else None
        starts.append((game, seat))
    return starts


def sparring_partner(config: Config):
    """The agent of ``selfplay.sparring`` for the run's game, or ``None``."""
    from agents.spec import from_spec  # the learner needs the specs' players only when it spars

    spec = config.selfplay.sparring
    return None if spec is None else from_spec(spec, config.game, seed=config.seed)


def self_play(config: Config, starts: list[tuple[Game, int | None]], evaluator: NetworkEvaluator,
              rng: np.random.Generator, opponent=None):
    """:func:`play_games` from ``starts`` with the run's settings, the evaluator's cache emptied (new weights)."""
    evaluator.clear()
    s = config.selfplay
    games, seats = zip(*starts)
    return play_games(list(games), evaluator, config.search, rng, s.temperature_plies, s.value_target_q,
                      s.policy_target_power, s.discounted_values, opponent, seats)


def train_steps(net: PolicyValueNet, optimizer, buffer: ReplayBuffer, steps: int, batch_size: int,
                rng: np.random.Generator, mirror_perm: np.ndarray | None, mixed_precision: bool = False) -> dict:
    """``steps`` minibatch updates on samples drawn uniformly from the buffer; their mean losses. ``mixed_precision``:
    forward and backward under bf16 autocast where it pays (weights, optimizer and losses stay float32)."""
    net.train()
    totals = {"policy_loss": 0.0, "value_loss": 0.0}
    for _ in range(steps):
        batch = buffer.sample(batch_size, rng)
        obs, masks, policies = batch.observations.astype(np.float32), batch.masks, batch.policies
        if mirror_perm is not None:  # reflect half the batch left-right: files reversed, actions permuted
            flip = rng.random(len(obs)) < 0.5
            obs[flip] = obs[flip][:, :, ::-1, :]
            masks, policies = masks.copy(), policies.copy()
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
    """The run's last checkpoint as :func:`train` returns it; ``ValueError`` naming the problem."""
    found = checkpoint_dir(run_dir)
    if found is None:
        raise ValueError(f"no checkpoint in {run_dir}")
    return _checkpoint_state(read_state(found), load_tensors(found), found)


def _checkpoint_state(run: RunState, tensors: dict, where: str) -> dict:
    missing = {"net_config", "model", "optimizer", "buffer", "rng", "torch_rng"} - set(tensors)
    if run.kind != KIND or missing:
        raise ValueError(f"corrupt checkpoint {where}: not an AlphaZero run"
                         + (f" (missing {sorted(missing)})" if missing else f" (a {run.kind} run)"))
    return {"config": run.settings, "iteration": run.iteration, "metrics": run.metrics, **tensors}


def learning_rate(config: Config, iteration: int, trained_s: float) -> float:
    """The learning rate of an iteration (1-based) starting after ``trained_s`` seconds of self-play and learning:
    constant, or a cosine to ``final_learning_rate`` over the hour budget (if any) or the iterations."""
    lr, hours = config.learning, config.hours
    if lr.final_learning_rate is None:
        return lr.learning_rate
    t = trained_s / (3600 * hours) if hours is not None else (iteration - 1) / max(config.iterations - 1, 1)
    return cosine_rate(lr.learning_rate, lr.final_learning_rate, t)


def train(config: Config, evaluate: Callable | None = None, resume: bool = False, verbose: bool = True) -> dict:
    """Run (or resume) a training run; the final checkpoint state (:func:`load_checkpoint`). ``evaluate(net,
    iteration) -> dict`` is called after every iteration; its numbers join the metrics."""
    if config.scale.threads:
        torch.set_num_threads(config.scale.threads)
    device = resolve_device(config.scale.device)
    # the budget may change when resuming, unless the learning rate decays over it; where the work runs may
    budget = ("iterations", "hours") if config.learning.final_learning_rate is None else ()
    run = Run(config.run_dir, config, KIND, resume=resume, may_differ=budget + ("scale",), verbose=verbose)
    torch.manual_seed(config.seed)  # before the network is built: its initial weights come from it
    net = make_net(config).to(device)
    game = start_game(config)
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.learning.learning_rate,
                                  weight_decay=config.learning.weight_decay)
    buffer = ReplayBuffer(config.learning.buffer_size, game.observation_shape, game.num_actions)
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
    mirror_perm = next((perm for k, flip, perm in game.symmetries() if flip and not k and config.learning.mirror), None)
    evaluator = NetworkEvaluator(net, mixed_precision=config.scale.mixed_precision_search)
    schedule = tensors = None
    desc, trained_s = f"alphazero {config.game}", sum(m["selfplay_s"] + m["train_s"] for m in run.state.metrics)
    # with an hour budget the bar counts seconds of self-play and learning (its ETA then means something)
    progress = run.progress(int(3600 * config.hours), desc, unit="s", done=int(trained_s)) \
        if config.hours is not None else run.progress(config.iterations, desc)
    opponent = None
    try:
        if config.scale.workers > 0:
            schedule = SelfPlaySchedule(SelfPlayer, config, lambda r: start_games(config, r),
                                        saved if run.resumed else None)
        else:
            opponent = sparring_partner(config)
        for iteration in range(run.state.iteration + 1, config.iterations + 1):
            if config.hours is not None and trained_s >= config.hours * 3600:
                break
            t0 = time.perf_counter()
            rate = learning_rate(config, iteration, trained_s)
            for group in optimizer.param_groups:
                group["lr"] = rate
            if schedule is None:
                samples, results = self_play(config, start_games(config, rng), evaluator, rng, opponent)
                games_s = time.perf_counter() - t0
            else:
                outcomes, games_s = schedule.games(net, rng)
                samples = Samples.concatenate([share_samples for share_samples, _ in outcomes])
                results = [result for _, share_results in outcomes for result in share_results]
            selfplay_s = time.perf_counter() - t0  # the learner's wait: less than games_s when they overlap
            buffer.add(symmetric_samples(samples, game.symmetries()) if config.learning.all_symmetries else samples)
            steps = math.ceil(config.learning.sample_reuse * len(samples) / config.learning.batch_size)
            t1 = time.perf_counter()
            losses = train_steps(net, optimizer, buffer, steps, config.learning.batch_size, rng, mirror_perm,
                                 config.learning.mixed_precision_training)
            train_s = time.perf_counter() - t1
            row = {"iteration": iteration, "samples": len(samples), "buffer": buffer.size, "train_steps": steps,
                   **losses, "learning_rate": rate, "selfplay_s": selfplay_s, "train_s": train_s,
                   "training_s": trained_s + selfplay_s + train_s,  # self-play and learning, evaluation left out
                   "games_s": games_s, "positions_per_s": len(samples) / max(games_s, 1e-9),
                   "mean_game_plies": float(np.mean([len(r.actions) for r in results])),
                   "first_player_wins": sum(r.winner == 0 for r in results) / len(results),
                   "second_player_wins": sum(r.winner == 1 for r in results) / len(results)}
            sparred = [r for r in results if r.opponent_seat is not None]
            if sparred:  # the learner's score against its sparring partner
                row["sparring_score"] = float(np.mean([0.5 if r.winner is None else float(r.winner != r.opponent_seat)
                                                       for r in sparred]))
            if schedule is not None:
                row["worker_restarts"] = schedule.pool.restarts
                if schedule.pool.ray:  # the cluster's nodes that have run self-play so far
                    row["worker_nodes"] = len(schedule.pool.nodes)
            if evaluate is not None:
                t2 = time.perf_counter()
                row.update(evaluate(net, iteration))
                row["eval_s"] = time.perf_counter() - t2
            run.state.iteration = iteration
            run.state.env_steps += len(samples)
            tensors = {"net_config": dataclasses.asdict(net.config),
                       "model": {k: v.cpu() for k, v in net.state_dict().items()}, "optimizer": optimizer.state_dict(),
                       "buffer": {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                                  for k, v in buffer.state().items()},
                       "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                       **(schedule.checkpoint() if schedule is not None else {})}
            run.save(row, tensors)
            trained_s += selfplay_s + train_s
            progress.update(int(row["training_s"]) if progress.unit == "s" else iteration,
                            f"loss {row['policy_loss']:.3f}/{row['value_loss']:.3f}, {row['positions_per_s']:.0f} pos/s"
                            + "".join(f", {k} {v:.3f}" for k, v in row.items() if k.startswith("score_")))
    finally:
        progress.close()
        run.close()
        if schedule is not None:
            schedule.pool.stop()
        close_agents([opponent])
    if tensors is None:  # nothing left to run: the last checkpoint
        return load_checkpoint(run.run_dir)
    return _checkpoint_state(run.state, tensors, run.run_dir)


class SelfPlayer:
    """Self-play in a worker (:class:`~agents.alphazero.selfplay.SelfPlaySchedule`): a share of an iteration's games."""

    def __init__(self, settings: dict):
        torch.set_num_threads(1)  # one process per core
        self.config = Config.from_dict(settings)
        self.net = make_net(self.config)
        self.evaluator = NetworkEvaluator(self.net, mixed_precision=self.config.scale.mixed_precision_search)
        self.opponent = sparring_partner(self.config)

    def play(self, weights: dict, job: tuple[list[tuple[Game, int | None]], int]) -> tuple[Samples, list]:
        starts, seed = job
        self.net.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in weights.items()})
        return self_play(self.config, starts, self.evaluator, np.random.default_rng(seed), self.opponent)

    def close(self) -> None:
        close_agents([self.opponent])


def write_agent(run_dir: str, state: dict, simulations: int, name: str = "alphazero", **play) -> str:
    """Save the run's network as an agent (``agents.load(run_dir + "/agent")``) searching with ``simulations`` and
    the run's search settings, those in ``play`` changed (:meth:`AlphaZeroAgent.from_checkpoint`)."""
    agent = AlphaZeroAgent.from_checkpoint(state, simulations=simulations, name=name, **play)
    path = os.path.join(run_dir, "agent")
    agent.save(path)
    with open(os.path.join(path, "training.json"), "w") as f:
        json.dump({"iterations": state["iteration"], "metrics": state["metrics"][-1]}, f, indent=2, default=float)
    return path
