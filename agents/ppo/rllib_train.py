"""PPO with GAE in RLlib (new API stack): configs, the backend, the Alpha-Mini procedure, Tune sweeps: docs/ppo.md."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import warnings

import numpy as np
import torch

from agents.ppo.agent import PPOAgent
from agents.ppo.common import AGENT, Backend, PPOSettings, train
from agents.ppo.network import PPONet
from agents.ppo.task import Task, make_opponent, task_for
from agents.runs import read_json, training_seconds, write_csv, write_json
from agents.workers import cluster_cpus

SINGLE_ENV = "minichess-single"  # names under which the env creators are registered with Ray Tune
AEC_ENV = "minichess-aec"
DEFAULT_MODULE = "default_policy"  # RLlib's ModuleID for a single-agent run
PLAYERS = ("player_0", "player_1")  # the AEC env's agents: White, Black


def make_single_env(config: dict):
    """RLlib env creator: ``MiniChessVectorEnv`` of ``num_envs`` games if given, else one ``MiniChessEnv``;
    ``config``: ``ChessTask.env_kwargs()`` plus ``opponent``, ``opponent_eps``, ``opponent_seed``."""
    from minichess_envs.env import MiniChessEnv
    from minichess_envs.vector import MiniChessVectorEnv
    config = dict(config)
    num_envs = config.pop("num_envs", None)
    opponent = make_opponent(config.pop("opponent", None), config.pop("opponent_eps", 0.0),
                             config.pop("opponent_seed", 0))
    if num_envs is None:
        return MiniChessEnv(opponent=opponent, **config)
    return MiniChessVectorEnv(num_envs, opponent=opponent, **config)


def timed_env_runner_class():
    """RLlib's ``SingleAgentEnvRunner`` summing its ``sample`` calls' wall-clock (RLlib's timers are averages)."""
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    class TimedEnvRunner(SingleAgentEnvRunner):
        sample_seconds = 0.0

        def sample(self, *args, **kwargs):
            t = time.perf_counter()
            episodes = super().sample(*args, **kwargs)
            self.sample_seconds += time.perf_counter() - t
            return episodes

    return TimedEnvRunner


def sampling_seconds(algo) -> float:
    """Seconds spent sampling so far: the local EnvRunner's, or with remote ones (which sample at once, while the
    local one idles) the slowest's."""
    group = algo.env_runner_group
    if group is not None and group.num_remote_env_runners() > 0:
        return max(group.foreach_env_runner(lambda er: er.sample_seconds, local_env_runner=False), default=0.0)
    return algo.env_runner.sample_seconds


def _ppo_config(s: PPOSettings, env: str, env_config: dict):
    """``PPOConfig`` on ``env`` (both env creators registered) with the settings' hyperparameters and seed."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.tune.registry import register_env
    from minichess_envs import aec
    register_env(SINGLE_ENV, make_single_env)
    register_env(AEC_ENV, lambda config: PettingZooEnv(aec.env(config["variant"])))
    return (PPOConfig()
            .environment(env, env_config=env_config)
            .learners(num_learners=0)
            .training(gamma=s.gamma, lambda_=s.lambda_, lr=s.lr, train_batch_size_per_learner=s.train_batch,
                      minibatch_size=s.minibatch, num_epochs=s.epochs, entropy_coeff=s.entropy_coeff,
                      clip_param=s.clip_param, vf_loss_coeff=s.vf_coeff, grad_clip=s.grad_clip, use_gae=True,
                      use_critic=True)
            .debugging(seed=s.seed, log_level="ERROR"))


def _module_spec(s: PPOSettings):
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from agents.ppo.rllib_module import NET_SIZES, MaskedPPOModule
    return RLModuleSpec(module_class=MaskedPPOModule, model_config={k: getattr(s, k) for k in NET_SIZES})


def single_agent_config(s: PPOSettings):
    """``PPOConfig`` for the learner against the random player (or ``s.opponent``) on our single-agent env,
    sampled through the C-stepped vector env (RLlib calls our creator with ``num_envs``)."""
    task = task_for(s)
    task.check_backend("rllib")
    env_config = {**task.env_kwargs(), "opponent": s.opponent, "opponent_eps": s.opponent_eps,
                  "opponent_seed": s.seed + 1}
    return (_ppo_config(s, SINGLE_ENV, env_config)
            .env_runners(num_env_runners=s.env_runners, num_envs_per_env_runner=s.num_envs,
                         gym_env_vectorize_mode="vector_entry_point", env_runner_cls=timed_env_runner_class())
            .rl_module(rl_module_spec=_module_spec(s)))


def multi_agent_config(s: PPOSettings, train: tuple[str, ...] = PLAYERS):
    """``PPOConfig`` for the AEC env through RLlib's multi-agent API: modules ``player_0`` (White) and ``player_1``
    (Black), those in ``train`` learning; the AEC env's rewards (+1 / 0 / -1 at the end, no shaping)."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    unknown = set(train) - set(PLAYERS)
    if unknown:
        raise ValueError(f"unknown players {sorted(unknown)}: the AEC env's agents are {PLAYERS}")
    return (_ppo_config(s, AEC_ENV, {"variant": s.variant})
            .env_runners(num_env_runners=s.env_runners, num_envs_per_env_runner=1)
            .multi_agent(policies=set(PLAYERS), policy_mapping_fn=lambda agent_id, episode=None, **kwargs: agent_id,
                         policies_to_train=list(train))  # one module per player
            .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={p: _module_spec(s) for p in PLAYERS})))


def init_ray(num_cpus: int | None = None) -> None:
    """Start a quiet local Ray instance if none is running."""
    import ray
    if not ray.is_initialized():
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        # "local": a new instance, never a cluster a `ray start` left on this machine (connect_ray joins those)
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR, configure_logging=True)
    for name in ("ray", "ray.rllib", "ray.tune"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # RLlib re-registers its own env id whenever it builds an EnvRunner; gymnasium warns each time
    warnings.filterwarnings("ignore", message=".*Overriding environment rllib-.*already in registry")


def build(s: PPOSettings, multi_agent: bool = False):
    """The RLlib ``Algorithm`` for the settings (single-agent unless ``multi_agent``), with no more env runners than
    the Ray cluster has CPUs (a node lost for good: RLlib would wait for the missing runners for ever)."""
    init_ray()
    room = cluster_cpus()
    if s.env_runners > room:
        print(f"RLlib: {s.env_runners} env runners asked for, the Ray cluster has {room} CPUs: sampling with "
              f"{room}", flush=True)
        s = dataclasses.replace(s, env_runners=room)
    torch.set_num_threads(s.threads)
    return (multi_agent_config(s) if multi_agent else single_agent_config(s)).build_algo()


#: Our metrics' names for the learner's results.
LEARNER_RESULTS = {"policy_loss": "policy_loss", "vf_loss": "vf_loss", "entropy": "entropy", "kl": "mean_kl_loss",
                   "vf_explained_var": "vf_explained_var"}


def result_row(result: dict, sample_s: float, module_id: str = DEFAULT_MODULE) -> dict:
    """Our row of one ``algo.train()`` result, ``sample_s`` its sampling wall-clock (``learn_s``: all the rest)."""
    runners, learner = result.get("env_runners", {}), result.get("learners", {}).get(module_id, {})
    steps, iteration_s = int(runners.get("num_env_steps_sampled", 0)), float(result.get("time_this_iter_s", "nan"))
    row = {"iteration_env_steps": steps, "episodes": int(runners.get("num_episodes", 0)),
           **{k: float(runners.get(k, "nan")) for k in ("episode_return_mean", "episode_len_mean")},
           "iteration_s": iteration_s, "sample_s": sample_s, "learn_s": iteration_s - sample_s,
           "sample_steps_per_s": steps / sample_s if sample_s > 0 else float("nan")}
    return row | {ours: float(learner.get(theirs, "nan")) for ours, theirs in LEARNER_RESULTS.items()}


class RLlibBackend(Backend):
    """RLlib's PPO ``Algorithm`` in :func:`~agents.ppo.common.train`; its checkpoint is the learner's
    state (module weights, optimizer) as tensors, not RLlib's pickled checkpoint."""

    kind = "rllib"

    def __init__(self, settings: PPOSettings, task: Task):
        self.net_config = task.net_config()
        self.algo = build(settings)

    def iterate(self) -> dict:
        sampled_before = sampling_seconds(self.algo)
        result = self.algo.train()
        return result_row(result, max(sampling_seconds(self.algo) - sampled_before, 0.0))  # 0: a runner restarted

    def policy_net(self) -> PPONet:
        weights = self.algo.learner_group.get_weights(module_ids=[DEFAULT_MODULE])[DEFAULT_MODULE]
        net = PPONet(self.net_config)
        net.load_state_dict({k[4:]: torch.as_tensor(np.asarray(v)) for k, v in weights.items() if k.startswith("net.")})
        return net

    def initialize(self, state_dict: dict) -> None:
        self.algo.learner_group.set_weights({DEFAULT_MODULE: {"net." + k: v for k, v in state_dict.items()}})
        self._sync_runners()

    def state(self) -> dict:
        learner = self.algo.learner_group.get_state(not_components=["learner/metrics_logger"])
        return {"learner_group": _map_leaves(learner, lambda x: torch.from_numpy(np.ascontiguousarray(x))
                                             if isinstance(x, np.ndarray) else x)}

    def restore(self, state: dict) -> None:
        learner = _map_leaves(state["learner_group"], lambda x: x.numpy() if isinstance(x, torch.Tensor) else x)
        self.algo.learner_group.set_state(learner)
        self._sync_runners()

    def _sync_runners(self) -> None:
        self.algo.env_runner_group.sync_weights(from_worker_or_learner_group=self.algo.learner_group,
                                                inference_only=True)

    def close(self) -> None:
        self.algo.stop()


def _map_leaves(tree, convert):
    """``tree`` (nested dicts, lists and tuples) with ``convert`` applied to every leaf."""
    if isinstance(tree, dict):
        return {k: _map_leaves(v, convert) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map_leaves(v, convert) for v in tree)
    return convert(tree)


@dataclasses.dataclass
class AlphaMiniConfig:
    """Alpha-Mini's iterative procedure (its figure 1) at our budget."""

    steps: int = 8  # k = 1..steps
    env_steps_per_policy: int = 40_000  # per color and step (Alpha-Mini: 25k-50k)
    eps: float = 0.5  # the opponent's random-move probability
    eval_games: int = 200  # per color, against the random player, after every step (Alpha-Mini's figure 3)
    warm_start: bool = True  # policy k starts from policy k-1's weights ("builds on itself")


def alpha_mini(settings: PPOSettings, config: AlphaMiniConfig, run_dir: str, backend: str = "rllib",
               verbose: bool = True) -> list[dict]:
    """White and black policies: at step k each color trains against the other's policy k-1 playing a random move
    with probability ``config.eps`` (step 1: the random player); then both play the random player (``steps.csv``).

    Policy k of a color is ``<run_dir>/<color>_<k>/agent``; a finished one is not retrained on a rerun.
    """
    os.makedirs(run_dir, exist_ok=True)
    rows, previous, clock = [], {"white": None, "black": None}, time.perf_counter()
    for k in range(1, config.steps + 1):
        row = {"step": k}
        for color, other in (("white", "black"), ("black", "white")):
            sub = os.path.join(run_dir, f"{color}_{k}")
            s = dataclasses.replace(settings, agent_color=color, seed=settings.seed + 100 * k,
                                    opponent=previous[other], opponent_eps=config.eps if previous[other] else 0.0,
                                    init_from=previous[color] if config.warm_start else settings.init_from)
            done_file = os.path.join(sub, "done.json")
            if not os.path.exists(done_file):
                state = train(s, sub, env_steps=config.env_steps_per_policy, eval_games=0, resume=True,
                              verbose=verbose, desc=f"alpha-mini {k}/{config.steps} {color}", backend=backend)
                write_json(done_file, {"env_steps": state.env_steps, "elapsed_s": state.elapsed_s})
            done = read_json(done_file)
            agent = PPOAgent.load(os.path.join(sub, AGENT))
            row.update({f"{color}_{key}": value for key, value in
                        task_for(s).evaluate_vs_random(agent, config.eval_games, sides=[color]).items()})
            row[f"{color}_env_steps"], row[f"{color}_train_s"] = done["env_steps"], done["elapsed_s"]
        previous = {c: os.path.join(run_dir, f"{c}_{k}", AGENT) for c in ("white", "black")}
        row["elapsed_s"] = time.perf_counter() - clock
        rows.append(row)
        write_csv(os.path.join(run_dir, "steps.csv"), rows)
        if verbose:
            print(f"alpha-mini step {k}: white vs random {row['white_win_rate_white']:.3f}, "
                  f"black vs random {row['black_win_rate_black']:.3f}", flush=True)
    return rows


def sweep_trial(config: dict) -> None:
    """One (gamma, lambda) point as a Ray Tune trial: train, report each iteration, then evaluate (seed 0)."""
    from ray import tune
    settings = dataclasses.replace(PPOSettings.from_dict(config["settings"]), gamma=config["point"]["gamma"],
                                   lambda_=config["point"]["lambda"])
    run_dir = os.path.join(config["out"], f"gamma{settings.gamma:g}_lambda{settings.lambda_:g}")
    state = train(settings, run_dir, env_steps=config["steps"], eval_games=config["eval_games"], eval_every=5,
                  resume=True, verbose=False, backend=config["backend"],
                  on_iteration=lambda row: tune.report({k: v for k, v in row.items() if isinstance(v, (int, float))}))
    # judged as White (Alpha-Mini's table) when the policy learnt both colours
    agent, color, games = PPOAgent.load(os.path.join(run_dir, AGENT)), settings.eval_colors()[0], config["final_games"]
    final = task_for(settings).evaluate_vs_random(agent, games, seed=0, sides=[color])
    tune.report({"final_win_rate": final[f"win_rate_{color}"], "final_win_low": final[f"win_low_{color}"],
                 "final_win_high": final[f"win_high_{color}"], "final_games": games, "env_steps": state.env_steps,
                 "train_s": training_seconds(state.metrics), "done": True})


def run_sweep(settings: PPOSettings, points: list[tuple[float, float]], out: str, env_steps: int,
              eval_games: int = 200, final_games: int = 1000, concurrency: int = 2, backend: str = "rllib",
              verbose: bool = True) -> list[dict]:
    """A grid of (gamma, lambda) ``points`` as Ray Tune trials (one CPU each, ``concurrency`` at a time).

    Each trial trains in ``<out>/gamma<g>_lambda<l>/`` (resumed when there; Tune's records in ``<out>/tune/``), then
    plays ``final_games`` greedy games against random; one row per finished trial, in the order of ``points`` (a
    failed one is printed, left out).
    """
    from ray import tune
    out = os.path.abspath(out)  # trials run in their own working directories
    os.makedirs(out, exist_ok=True)
    init_ray(num_cpus=os.cpu_count())
    param_space = {"point": tune.grid_search([{"gamma": g, "lambda": lam} for g, lam in points]),
                   "settings": dataclasses.asdict(settings), "out": out, "backend": backend, "steps": env_steps,
                   "eval_games": eval_games, "final_games": final_games}
    tuner = tune.Tuner(tune.with_resources(sweep_trial, {"cpu": 1}), param_space=param_space,
                       tune_config=tune.TuneConfig(max_concurrent_trials=concurrency),
                       run_config=tune.RunConfig(name="ppo_gamma_lambda", storage_path=os.path.join(out, "tune"),
                                                 verbose=1 if verbose else 0))
    rows = []
    for result in tuner.fit():
        if result.error or not result.metrics or "final_win_rate" not in result.metrics:
            print(f"trial {(result.config or {}).get('point')} failed: {result.error}", flush=True)
            continue
        point, m = result.config["point"], result.metrics
        rows.append({"gamma": point["gamma"], "lambda": point["lambda"], "win_rate": m["final_win_rate"],
                     "win_low": m["final_win_low"], "win_high": m["final_win_high"], "games": m["final_games"],
                     "env_steps": m["env_steps"], "train_s": m["train_s"]})
    order = [tuple(p) for p in points]
    return sorted(rows, key=lambda r: order.index((r["gamma"], r["lambda"])))
