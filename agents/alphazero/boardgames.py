"""AlphaZero on PettingZoo board games (Tic-Tac-Toe, Connect Four): self-play, training, the agent.

The loop of :mod:`agents.alphazero.train` with a :class:`~agents.games.Game` in place of a
chess position, searched by the same tree (:func:`~agents.alphazero.search.search`); the replay
buffer, the network, the loss and training steps
(:func:`~agents.alphazero.train.train_steps`) and the run machinery (:class:`agents.runs.Run`:
checkpoints, resume, metrics CSV, TensorBoard, progress) are the same objects.
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

from agents.alphazero.search import NetworkEvaluator, SearchConfig, search
from agents.games import BOARD_GAMES as GAMES
from agents.games import new_game
from agents.alphazero.network import NetConfig, PolicyValueNet
from agents.alphazero.selfplay import ReplayBuffer, Samples
from agents.alphazero.train import run_result, save_iteration, train_steps, without_removed_options
from agents.alphazero.workers import SelfPlaySchedule, check_workers, load_numpy_weights
from agents.base import Agent, check_settings, read_manifest, write_manifest
from agents.runs import Run, RunState, checkpoint_dir, cosine_rate, load_tensors, read_state
from agents.weights import load_network, save_network

KIND = "alphazero-boardgame"


@dataclasses.dataclass
class GameConfig:
    """Everything a board-game run needs; saved in its checkpoints."""

    game: str = "connect_four"  # "tictactoe" or "connect_four"
    run_dir: str = "runs/alphazero_connect4"
    seed: int = 0
    iterations: int = 20
    games_per_iteration: int = 128  # played together, one batched search per move
    temperature_plies: int = 8  # moves sampled from the visit counts; the most visited afterwards
    value_target_q: float = 0.0  # weight of the root search value in the value target (the rest: the result)
    policy_target_power: float = 1.0  # policy target in proportion to visits ** this (above 1: sharper)
    random_start_fraction: float = 0.0  # share of games that start after random moves (wider coverage)
    random_start_plies: int = 6  # such a game starts after 1 .. this many random moves
    search: SearchConfig = dataclasses.field(default_factory=SearchConfig)
    blocks: int = 3
    channels: int = 32
    policy_channels: int = 8
    buffer_size: int = 50_000
    batch_size: int = 256
    sample_reuse: float = 4.0  # training samples drawn per new self-play sample
    learning_rate: float = 2e-3
    final_learning_rate: float | None = None  # cosine decay to this by the last iteration (None: constant)
    weight_decay: float = 1e-4
    mirror: bool = True  # left-right mirror augmentation (both games are symmetric)
    symmetries: bool = False  # store every position in all the board's symmetric images (see symmetry_maps)
    threads: int = 0  # torch threads (0: torch's default)
    mixed_precision: bool = True  # bf16 autocast where it pays (agents.devices.autocast): big inference batches
    mixed_precision_training: bool = False  # the training steps under the same autocast
    workers: int = 0  # > 0: self-play in this many worker processes (agents.alphazero.workers)
    ray_address: str | None = None  # the workers as Ray actors on this cluster ("local": a new local one)
    overlap: bool = False  # workers play the next iteration's games while the learner trains (SelfPlaySchedule)

    def __post_init__(self):
        if self.game not in GAMES:
            raise ValueError(f"unknown game {self.game!r}; known: {', '.join(GAMES)}")
        check_workers(self.workers, self.ray_address, self.overlap)

    @classmethod
    def from_dict(cls, d: dict) -> GameConfig:
        d = without_removed_options(d, "an AlphaZero board-game run")
        d["search"] = SearchConfig.from_dict(d.get("search", {}))
        return cls(**d)


def make_net(game: str, blocks: int, channels: int, policy_channels: int) -> PolicyValueNet:
    g = new_game(game)
    return PolicyValueNet(NetConfig(*g.observation_shape, g.num_actions, blocks=blocks, channels=channels,
                                    policy_channels=policy_channels))


def mirror_permutation(game: str) -> np.ndarray:
    """Action permutation of the left-right mirror (the observation's width axis reversed)."""
    g = new_game(game)
    if g.num_actions == g.width:  # a column per action
        return np.arange(g.width)[::-1].copy()
    cells = np.arange(g.height * g.width).reshape(g.height, g.width)
    return cells[:, ::-1].ravel().copy()


def symmetry_maps(game: str) -> list[tuple[int, bool, np.ndarray]]:
    """The board's symmetries as ``(quarter_turns, flip, action_permutation)``: the image of an
    observation ``o`` (``(H, W, C)``) is ``np.rot90(np.fliplr(o) if flip else o, quarter_turns)`` and
    its policy ``p[action_permutation]``. Eight for a square board with an action per cell
    (Tic-Tac-Toe), the identity and the left-right mirror for a game with an action per column."""
    g = new_game(game)
    cells = np.arange(g.height * g.width).reshape(g.height, g.width)
    if g.num_actions == g.width:
        return [(0, False, np.arange(g.width)), (0, True, np.arange(g.width)[::-1].copy())]
    if g.num_actions != g.height * g.width or g.height != g.width:
        raise ValueError(f"no symmetries known for {game}")
    return [(k, flip, np.rot90(np.fliplr(cells) if flip else cells, k).ravel().copy())
            for flip in (False, True) for k in range(4)]


def symmetric_samples(game: str, samples: Samples) -> Samples:
    """Every sample in each of the board's symmetric images (:func:`symmetry_maps`), values unchanged."""
    parts = []
    for k, flip, perm in symmetry_maps(game):
        obs = samples.observations[:, :, ::-1, :] if flip else samples.observations
        parts.append(Samples(np.ascontiguousarray(np.rot90(obs, k, axes=(1, 2))), samples.masks[:, perm],
                             samples.policies[:, perm], samples.values))
    return Samples.concatenate(parts)


@dataclasses.dataclass
class GameResult:
    """A finished self-play game: its actions (from its start position) and winner (None: a draw)."""

    actions: tuple[int, ...]
    winner: int | None


def start_games(config: GameConfig, rng: np.random.Generator) -> list:
    """The iteration's start positions: the empty board, and for ``random_start_fraction`` of the
    games a position after 1 .. ``random_start_plies`` uniformly random moves (never a finished one)."""
    starts = []
    for _ in range(config.games_per_iteration):
        game = new_game(config.game)
        if rng.random() < config.random_start_fraction:
            for _ in range(int(rng.integers(1, config.random_start_plies + 1))):
                after = game.copy()
                after.step(int(rng.choice(game.legal_actions())))
                if after.is_over():
                    break
                game = after
        starts.append(game)
    return starts


def play_games(starts: list, evaluator, search_config: SearchConfig, rng: np.random.Generator,
               temperature_plies: int = 8, value_target_q: float = 0.0,
               policy_target_power: float = 1.0) -> tuple[Samples, list[GameResult]]:
    """One self-play game from each start position (copies are played), in lockstep; their samples.

    Every move: a noisy search of all unfinished games at once, then a move sampled
    in proportion to the visit counts for the first ``temperature_plies`` plies, and
    the most visited move afterwards (ties broken at random). A sample's value is
    the game's result for the player to move there, mixed with weight ``value_target_q``
    with the search's value of the position (the visit-weighted mean of the root's Q):
    the result alone is a noisy target while moves are still sampled, the search's value
    is less noisy but biased by the network. A sample's policy target is in proportion to
    the visit counts raised to ``policy_target_power`` (moves are chosen from the plain counts).
    """
    games = [start.copy() for start in starts]
    trajectories: list[list] = [[] for _ in games]
    actions: list[list[int]] = [[] for _ in games]
    active = list(range(len(games)))
    while active:
        result = search([games[i] for i in active], evaluator, search_config, rng=rng)
        visits, q, targets = result.visits, result.q, result.policy
        still = []
        for row, i in enumerate(active):
            g = games[i]
            policy = visits[row] / visits[row].sum()
            target = targets[row] if policy_target_power == 1 else visits[row] ** policy_target_power
            trajectories[i].append((g.observation(), g.legal_mask(), target / target.sum(), g.to_play(),
                                    float(policy @ q[row])))
            if g.moves < temperature_plies:
                action = int(rng.choice(len(policy), p=policy))
            else:
                best = np.flatnonzero(visits[row] == visits[row].max())
                action = int(best[rng.integers(len(best))])
            g.step(action)
            actions[i].append(action)
            if not g.is_over():
                still.append(i)
        active = still
    parts, results = [], []
    for i, trajectory in enumerate(trajectories):
        winner = games[i].winner()
        results.append(GameResult(tuple(actions[i]), winner))
        obs, masks, policies, sides, searched = zip(*trajectory)
        results_for_mover = [0.0 if winner is None else (1.0 if side == winner else -1.0) for side in sides]
        values = ((1 - value_target_q) * np.array(results_for_mover, np.float32)
                  + value_target_q * np.array(searched, np.float32)).astype(np.float32)
        parts.append(Samples(np.stack(obs).astype(np.float16), np.stack(masks), np.stack(policies).astype(np.float32),
                             values))
    return Samples.concatenate(parts), results


def learning_rate(config: GameConfig, iteration: int) -> float:
    """The learning rate of an iteration (1-based): constant, or a cosine from ``learning_rate`` at the
    first iteration to ``final_learning_rate`` at the last."""
    if config.final_learning_rate is None:
        return config.learning_rate
    return cosine_rate(config.learning_rate, config.final_learning_rate,
                       (iteration - 1) / max(config.iterations - 1, 1))


def load_checkpoint(run_dir: str) -> dict:
    """The last checkpoint of a board-game run as :func:`train` returns it; ``ValueError`` naming the problem."""
    found = checkpoint_dir(run_dir)
    if found is None:
        raise ValueError(f"no checkpoint in {run_dir}")
    return _checkpoint_state(read_state(found), load_tensors(found), found)


def _checkpoint_state(run: RunState, tensors: dict, where: str) -> dict:
    missing = {"net_config", "model", "optimizer", "buffer", "rng", "torch_rng"} - set(tensors)
    if run.kind != KIND or missing:
        raise ValueError(f"corrupt checkpoint {where}: not an AlphaZero board-game run"
                         + (f" (missing {sorted(missing)})" if missing else f" (a {run.kind} run)"))
    return {"config": run.settings, "iteration": run.iteration, "metrics": run.metrics, **tensors}


def train(config: GameConfig, evaluate: Callable | None = None, resume: bool = False, verbose: bool = True) -> dict:
    """Run (or resume) a board-game training run; returns the final checkpoint state.

    ``evaluate(net, iteration) -> dict`` is called after every iteration; its
    numbers join the metrics. The state: ``config``, ``iteration``, ``metrics``,
    ``net_config``, ``model``, ``optimizer``, ``buffer``, ``rng``, ``torch_rng``.
    """
    if config.threads:
        torch.set_num_threads(config.threads)
    may_differ = ("threads", "mixed_precision", "mixed_precision_training", "workers", "ray_address") \
        + (("iterations",) if config.final_learning_rate is None else ())
    run = Run(config.run_dir, config, KIND, resume=resume, may_differ=may_differ, verbose=verbose)
    torch.manual_seed(config.seed)  # before the network is built: its initial weights come from it
    net = make_net(config.game, config.blocks, config.channels, config.policy_channels)
    optimizer = torch.optim.AdamW(net.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    shape = (net.config.height, net.config.width, net.config.channels_in)
    buffer = ReplayBuffer(config.buffer_size, shape, net.config.num_actions)
    rng = np.random.default_rng(config.seed)
    if run.resumed:
        saved = _checkpoint_state(run.state, run.tensors(), run.checkpoint)
        net.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        buffer.restore({k: v.numpy() if isinstance(v, torch.Tensor) else v for k, v in saved["buffer"].items()})
        rng.bit_generator.state = saved["rng"]
        torch.set_rng_state(saved["torch_rng"])
    mirror_perm = mirror_permutation(config.game) if config.mirror else None
    evaluator = NetworkEvaluator(net, mixed_precision=config.mixed_precision)
    schedule = None
    progress = run.progress(config.iterations, f"alphazero {config.game}")
    tensors = None
    try:
        if config.workers > 0:
            schedule = SelfPlaySchedule.start(BoardGameSelfPlayer, config, lambda r: start_games(config, r),
                                              saved if run.resumed else None)
        for iteration in range(run.state.iteration + 1, config.iterations + 1):
            t0 = time.perf_counter()
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(config, iteration)
            if schedule is None:
                evaluator.clear()  # new weights since the last iteration
                samples, results = play_games(start_games(config, rng), evaluator, config.search, rng,
                                              **selfplay_options(config))
                games_s = time.perf_counter() - t0
            else:
                outcomes, games_s = schedule.games(net, rng)
                samples = Samples.concatenate([share_samples for share_samples, _ in outcomes])
                results = [result for _, share_results in outcomes for result in share_results]
            selfplay_s = time.perf_counter() - t0  # the learner's wait: less than games_s when they overlap
            buffer.add(symmetric_samples(config.game, samples) if config.symmetries else samples)
            steps = math.ceil(config.sample_reuse * len(samples) / config.batch_size)
            t1 = time.perf_counter()
            losses = train_steps(net, optimizer, buffer, steps, config, rng, mirror_perm,
                                 config.mixed_precision_training)
            train_s = time.perf_counter() - t1
            row = {
                "iteration": iteration, "samples": len(samples), "buffer": buffer.size, "train_steps": steps,
                **losses, "learning_rate": learning_rate(config, iteration), "selfplay_s": selfplay_s,
                "train_s": train_s, "games_s": games_s,
                "positions_per_s": len(samples) / max(games_s, 1e-9),
                "mean_game_plies": float(np.mean([len(r.actions) for r in results])),
                "first_player_wins": sum(r.winner == 0 for r in results) / len(results),
                "second_player_wins": sum(r.winner == 1 for r in results) / len(results),
            }
            if schedule is not None:
                row["worker_restarts"] = schedule.pool.restarts
            if evaluate is not None:
                t2 = time.perf_counter()
                row.update(evaluate(net, iteration))
                row["eval_s"] = time.perf_counter() - t2
            extra = schedule.checkpoint() if schedule is not None else {}
            tensors = save_iteration(run, progress, row, len(samples), net, optimizer, buffer, rng, extra)
    finally:
        progress.close()
        run.close()
        if schedule is not None:
            schedule.pool.stop()
    return run_result(run, tensors, load_checkpoint)


def selfplay_options(config: GameConfig) -> dict:
    """The self-play settings that :func:`play_games` takes as keywords."""
    return {"temperature_plies": config.temperature_plies, "value_target_q": config.value_target_q,
            "policy_target_power": config.policy_target_power}


class BoardGameSelfPlayer:
    """Self-play in a worker (:class:`~agents.alphazero.workers.SelfPlayPool`): plays a share of an
    iteration's games with the weights it is sent."""

    def __init__(self, settings: dict):
        self.config = GameConfig.from_dict(settings)
        c = self.config
        self.net = make_net(c.game, c.blocks, c.channels, c.policy_channels)
        self.evaluator = NetworkEvaluator(self.net, mixed_precision=c.mixed_precision)

    def play(self, weights: dict, starts: list, seed: int) -> tuple[Samples, list[GameResult]]:
        load_numpy_weights(self.net, weights)
        self.evaluator.clear()
        return play_games(starts, self.evaluator, self.config.search, np.random.default_rng(seed),
                          **selfplay_options(self.config))


class BoardGameAlphaZeroAgent(Agent):
    """A trained network for a board game: the move a search with ``simulations`` simulations plays
    (the most visited, or by ``search.move_choice``), or (0) the network's most probable legal move.

    ``act(observation, action_mask)`` takes PettingZoo's observation planes and
    mask (the position is rebuilt from the planes for the search); a
    :class:`~agents.games.Game` may be passed as ``position``.
    """

    def __init__(self, net: PolicyValueNet, game: str, simulations: int = 64, search: SearchConfig | None = None,
                 name: str = "alphazero"):
        self.net = net.eval()
        self.game = game
        probe = new_game(game)
        c = net.config
        if (c.height, c.width, c.channels_in, c.num_actions) != (*probe.observation_shape, probe.num_actions):
            raise ValueError(f"network for {c.height}x{c.width}x{c.channels_in} planes and {c.num_actions} actions "
                             f"does not fit {game} ({probe.observation_shape}, {probe.num_actions} actions)")
        if not isinstance(simulations, int) or simulations < 0:
            raise ValueError(f"simulations must be an integer >= 0, got {simulations!r}")
        self.simulations = simulations
        self.search = dataclasses.replace(search or SearchConfig(), simulations=simulations, dirichlet_epsilon=0.0)
        self.evaluator = NetworkEvaluator(self.net)
        self.name = name

    @classmethod
    def from_checkpoint(cls, state: dict, simulations: int = 64, name: str = "alphazero",
                        move_choice: str | None = None) -> BoardGameAlphaZeroAgent:
        """The run's network, with the run's search settings, with ``move_choice`` (:class:`SearchConfig`) where given."""
        config = state["config"]
        net = PolicyValueNet(NetConfig(**state["net_config"]))
        net.load_state_dict(state["model"])
        search = SearchConfig.from_dict(config["search"])
        if move_choice is not None:
            search = dataclasses.replace(search, move_choice=move_choice)
        return cls(net, config["game"], simulations, search, name)

    def act(self, observation, action_mask, position=None) -> int:
        game = position if position is not None else GAMES[self.game].from_observation(observation)
        return int(self.act_games([game])[0])

    def act_games(self, games) -> np.ndarray:
        """The chosen action in each game (one batched search or network call for all)."""
        if self.simulations <= 0:
            priors, _ = self.policy_value(games)
            return priors.argmax(1)
        return search(games, self.evaluator, self.search).actions

    def policy_value(self, games) -> tuple[np.ndarray, np.ndarray]:
        """The network's priors over the legal actions and its value for the player to move."""
        obs = np.stack([g.observation() for g in games])
        masks = np.stack([g.legal_mask() for g in games])
        return self.evaluator.evaluate(obs, masks)

    def save(self, path: str) -> None:
        save_network(path, self.net)
        write_manifest(path, self, game=self.game, simulations=self.simulations,
                       search=dataclasses.asdict(self.search))

    @classmethod
    def load(cls, path: str, simulations: int | None = None) -> BoardGameAlphaZeroAgent:
        manifest = read_manifest(path)
        settings = check_settings(path, manifest["settings"], {"game": str, "simulations": int, "search": dict},
                                  bounds={"simulations": (0, 10**6)})
        search = check_settings(path, settings["search"], {}, SearchConfig.saved_types())
        try:
            search = SearchConfig.from_dict(search)
        except ValueError as exc:
            raise ValueError(f"bad agent manifest {path}: {exc}") from None
        if settings["game"] not in GAMES:
            raise ValueError(f"{path}: unknown game {settings['game']!r}; known: {', '.join(GAMES)}")
        net = load_network(path, PolicyValueNet, NetConfig, "AlphaZero")
        sims = settings["simulations"] if simulations is None else simulations
        return cls(net, settings["game"], sims, search, manifest.get("name", "alphazero"))


def write_agent(run_dir: str, state: dict, simulations: int, name: str = "alphazero",
                move_choice: str | None = None) -> str:
    """Save the run's network as an agent (``agents.load(run_dir + "/agent")``)."""
    agent = BoardGameAlphaZeroAgent.from_checkpoint(state, simulations=simulations, name=name,
                                                    move_choice=move_choice)
    path = os.path.join(run_dir, "agent")
    agent.save(path)
    with open(os.path.join(path, "training.json"), "w") as f:
        json.dump({"iterations": state["iteration"], "metrics": state["metrics"][-1]}, f, indent=2, default=float)
    return path
