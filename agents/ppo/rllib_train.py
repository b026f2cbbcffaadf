"""PPO with GAE in RLlib (new API stack): config builders, the training loop, the Alpha-Mini procedure,
Ray Tune sweeps. Why sampling and learning stay in this process: docs/ppo.md.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import warnings

import torch

from agents.ppo.agent import PPOAgent
from agents.ppo.common import (AGENT, Backend, PPOSettings, net_from_weights, numpy_to_torch, torch_to_numpy,
                               train, train_seconds)
from agents.ppo.task import Task, make_opponent, task_for
from agents.runs import read_json, write_csv, write_json

SINGLE_ENV = "minichess-single"  # names under which the env creators are registered with Ray Tune
AEC_ENV = "minichess-aec"
DEFAULT_MODULE = "default_policy"  # RLlib's ModuleID for a single-agent run
PLAYERS = ("player_0", "player_1")  # the AEC env's agents: White, Black


# -- environments -----------------------------------------------------------------------------


def make_single_env(config: dict):
    """RLlib env creator: ``MiniChessVectorEnv`` of ``num_envs`` games when RLlib asks for a vector env
    (``gym_env_vectorize_mode="vector_entry_point"``), else one ``MiniChessEnv``.

    ``config``: :meth:`ChessTask.env_kwargs <agents.ppo.task.ChessTask.env_kwargs>` plus ``opponent``,
    ``opponent_eps``, ``opponent_seed``.
    """
    from minichess_envs.env import MiniChessEnv
    from minichess_envs.vector import MiniChessVectorEnv

    config = dict(config)
    num_envs = config.pop("num_envs", None)
    opponent = make_opponent(PPOSettings(variant=config["variant"], opponent=config.pop("opponent", None),
                                         opponent_eps=config.pop("opponent_eps", 0.0)),
                             seed=config.pop("opponent_seed", 0))
    if num_envs is None:
        return MiniChessEnv(opponent=opponent, **config)
    return MiniChessVectorEnv(num_envs, opponent=opponent, **config)


def make_aec_env(config: dict):
    """RLlib env creator: the AEC env of ``config["variant"]`` as an RLlib ``MultiAgentEnv``."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    from minichess_envs import aec

    return PettingZooEnv(aec.env(config["variant"]))


def register_rllib_envs() -> None:
    """Register the env creators with Ray Tune (done by the config builders; harmless to repeat)."""
    from ray.tune.registry import register_env

    register_env(SINGLE_ENV, make_single_env)
    register_env(AEC_ENV, make_aec_env)


def timed_env_runner_class():
    """RLlib's ``SingleAgentEnvRunner`` that also sums the wall-clock of its ``sample`` calls.

    RLlib's own timers are exponential moving averages (coefficient 0.01), so
    they barely follow a run; these totals give exact sampling throughput.
    """
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    class TimedEnvRunner(SingleAgentEnvRunner):
        sample_seconds = 0.0
        sampled_steps = 0

        def sample(self, *args, **kwargs):
            t = time.perf_counter()
            episodes = super().sample(*args, **kwargs)
            self.sample_seconds += time.perf_counter() - t
            self.sampled_steps += sum(len(e) for e in episodes)
            return episodes

        def sampling_totals(self) -> tuple[float, int]:
            return self.sample_seconds, self.sampled_steps

    return TimedEnvRunner


def sampling_totals(algo) -> tuple[float, int]:
    """``(seconds, env steps)`` spent in ``sample`` by all of the algorithm's EnvRunners so far."""
    if algo.env_runner is not None and hasattr(algo.env_runner, "sampling_totals"):
        totals = [algo.env_runner.sampling_totals()]
    else:
        totals = algo.env_runner_group.foreach_env_runner(lambda er: er.sampling_totals(), local_env_runner=False)
    return sum(t[0] for t in totals), sum(t[1] for t in totals)


# -- configs ----------------------------------------------------------------------------------


def _training_kwargs(s: PPOSettings) -> dict:
    return dict(gamma=s.gamma, lambda_=s.lambda_, lr=s.lr, train_batch_size_per_learner=s.train_batch,
                minibatch_size=s.minibatch, num_epochs=s.epochs, entropy_coeff=s.entropy_coeff,
                clip_param=s.clip_param, vf_loss_coeff=s.vf_coeff, grad_clip=s.grad_clip, use_gae=True,
                use_critic=True)


def _module_spec(s: PPOSettings):
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from agents.ppo.rllib_module import MaskedPPOModule

    return RLModuleSpec(module_class=MaskedPPOModule,
                        model_config={"channels": s.channels, "conv_layers": s.conv_layers,
                                      "value_hidden": s.value_hidden})


def single_agent_config(s: PPOSettings):
    """``PPOConfig`` for the learner against the random player (or ``s.opponent``) on our single-agent env,
    sampled through the C-stepped vector env (RLlib calls our creator with ``num_envs``)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    task = task_for(s)
    task.check_backend("rllib")
    register_rllib_envs()
    env_config = {**task.env_kwargs(), "opponent": s.opponent, "opponent_eps": s.opponent_eps,
                  "opponent_seed": s.seed + 1}
    return (PPOConfig()
            .environment(SINGLE_ENV, env_config=env_config)
            .env_runners(num_env_runners=s.env_runners, num_envs_per_env_runner=s.num_envs,
                         gym_env_vectorize_mode="vector_entry_point", env_runner_cls=timed_env_runner_class())
            .learners(num_learners=0)
            .training(**_training_kwargs(s))
            .rl_module(rl_module_spec=_module_spec(s))
            .debugging(seed=s.seed, log_level="ERROR"))


def agent_to_module(agent_id, episode=None, **kwargs):
    """Policy mapping of the multi-agent config: each player has its own module (White, Black)."""
    return agent_id


def multi_agent_config(s: PPOSettings, train: tuple[str, ...] = PLAYERS):
    """``PPOConfig`` for the AEC env (``minichess/<variant>_v0``) through RLlib's multi-agent API.

    Modules ``player_0`` (White) and ``player_1`` (Black), both masking; ``train``
    names the ones that learn (the others keep their weights). Rewards are the
    AEC env's: +1 / 0 / -1 at the end, no material shaping.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

    unknown = set(train) - set(PLAYERS)
    if unknown:
        raise ValueError(f"unknown players {sorted(unknown)}: the AEC env's agents are {PLAYERS}")
    register_rllib_envs()
    return (PPOConfig()
            .environment(AEC_ENV, env_config={"variant": s.variant})
            .env_runners(num_env_runners=s.env_runners, num_envs_per_env_runner=1)
            .learners(num_learners=0)
            .multi_agent(policies=set(PLAYERS), policy_mapping_fn=agent_to_module, policies_to_train=list(train))
            .training(**_training_kwargs(s))
            .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={p: _module_spec(s) for p in PLAYERS}))
            .debugging(seed=s.seed, log_level="ERROR"))


def init_ray(num_cpus: int | None = None) -> None:
    """Start a quiet local Ray instance if none is running."""
    import ray

    if not ray.is_initialized():
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR, configure_logging=True)
    for name in ("ray", "ray.rllib", "ray.tune"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # RLlib re-registers its own env id whenever it builds an EnvRunner; gymnasium warns each time
    warnings.filterwarnings("ignore", message=".*Overriding environment rllib-.*already in registry")


def build(s: PPOSettings, multi_agent: bool = False):
    """The RLlib ``Algorithm`` for the settings (single-agent unless ``multi_agent``)."""
    init_ray()
    torch.set_num_threads(s.threads)
    config = multi_agent_config(s) if multi_agent else single_agent_config(s)
    return config.build_algo()


def policy_net(algo, s: PPOSettings, module_id: str = DEFAULT_MODULE):
    """A plain-torch copy of a module's current weights, taken from the learner."""
    weights = algo.learner_group.get_weights(module_ids=[module_id])[module_id]
    return net_from_weights(task_for(s).net_config(), weights, prefix="net.")


def set_policy_weights(algo, state_dict: dict, module_id: str = DEFAULT_MODULE) -> None:
    """Load plain :class:`PPONet` weights into the learner's module and sync them to the EnvRunners."""
    algo.learner_group.set_weights({module_id: {"net." + k: v for k, v in state_dict.items()}})
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, inference_only=True)


# -- the training loop ------------------------------------------------------------------------


def iteration_row(result: dict, sample_s: float, module_id: str = DEFAULT_MODULE) -> dict:
    """The numbers we keep from one ``algo.train()`` result (``sample_s``: its sampling wall-clock)."""
    runners = result.get("env_runners", {})
    learner = result.get("learners", {}).get(module_id, {})
    steps = int(runners.get("num_env_steps_sampled", 0))
    iteration_s = float(result.get("time_this_iter_s", float("nan")))
    return {
        "iteration_env_steps": steps,
        "episodes": int(runners.get("num_episodes", 0)),
        "episode_return_mean": float(runners.get("episode_return_mean", float("nan"))),
        "episode_len_mean": float(runners.get("episode_len_mean", float("nan"))),
        "iteration_s": iteration_s,
        "sample_s": sample_s,
        "learn_s": iteration_s - sample_s,  # the learner update, weight sync and RLlib's bookkeeping
        "sample_steps_per_s": steps / sample_s if sample_s > 0 else float("nan"),
        "policy_loss": float(learner.get("policy_loss", float("nan"))),
        "vf_loss": float(learner.get("vf_loss", float("nan"))),
        "entropy": float(learner.get("entropy", float("nan"))),
        "kl": float(learner.get("mean_kl_loss", float("nan"))),
        "vf_explained_var": float(learner.get("vf_explained_var", float("nan"))),
    }


class RLlibBackend(Backend):
    """RLlib's PPO ``Algorithm`` in :func:`~agents.ppo.common.train`; its checkpoint is the learner's
    state (module weights, optimizer) as tensors, not RLlib's pickled checkpoint."""

    kind = "rllib"

    def __init__(self, settings: PPOSettings, task: Task):
        self.settings = settings
        self.algo = build(settings)

    def iterate(self) -> dict:
        sampled_before = sampling_totals(self.algo)[0]
        result = self.algo.train()
        return iteration_row(result, sampling_totals(self.algo)[0] - sampled_before)

    def policy_net(self):
        return policy_net(self.algo, self.settings)

    def initialize(self, state_dict: dict) -> None:
        set_policy_weights(self.algo, state_dict)

    def state(self) -> dict:
        learner = self.algo.learner_group.get_state(not_components=["learner/metrics_logger"])
        return {"learner_group": numpy_to_torch(learner)}

    def restore(self, state: dict) -> None:
        self.algo.learner_group.set_state(torch_to_numpy(state["learner_group"]))
        self.algo.env_runner_group.sync_weights(from_worker_or_learner_group=self.algo.learner_group,
                                                inference_only=True)

    def close(self) -> None:
        self.algo.stop()


def train_multi_agent(settings: PPOSettings, iterations: int, train_players: tuple[str, ...] = PLAYERS,
                      verbose: bool = False) -> tuple[object, list[dict]]:
    """A few iterations of the multi-agent config (both players learning by default).

    Returns the ``Algorithm`` (caller stops it) and one row per iteration per
    module. The AEC path is here to show RLlib's multi-agent API on our env;
    the Alpha-Mini procedure uses the single-agent env, which has material shaping.
    """
    init_ray()
    torch.set_num_threads(settings.threads)
    algo = multi_agent_config(settings, train_players).build_algo()
    rows = []
    for it in range(1, iterations + 1):
        result = algo.train()
        for p in PLAYERS:
            learner = result.get("learners", {}).get(p, {})
            rows.append({"iteration": it, "module": p,
                         "env_steps": int(result.get("env_runners", {}).get("num_env_steps_sampled", 0)),
                         "module_return_mean": float(result.get("env_runners", {}).get(
                             "module_episode_return_mean", {}).get(p, float("nan"))),
                         "policy_loss": float(learner.get("policy_loss", float("nan")))})
        if verbose:
            print(rows[-2:], flush=True)
    return algo, rows


# -- the Alpha-Mini procedure -----------------------------------------------------------------


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
    """White and black policies; at step k white trains against black k-1 and black against white k-1.

    Each opponent is the previous policy of the other color (deterministic)
    playing a uniformly random legal move with probability ``config.eps``
    (:class:`~agents.ppo.agent.EpsilonRandomAgent`, seeded). At step 1 the
    opponents are Alpha-Mini's random initial policies; we use the uniformly
    random player, which an untrained network is close to. Policies are saved
    as ``<run_dir>/white_<k>/agent`` and ``black_<k>/agent``; a finished
    policy is not retrained when the procedure is run again (it resumes).
    After every step both new policies play ``config.eval_games`` games against
    the random player as their color (rows in ``<run_dir>/steps.csv``).
    ``backend`` trains them (:data:`~agents.ppo.common.BACKENDS`).
    """
    os.makedirs(run_dir, exist_ok=True)
    rows = []
    previous = {"white": None, "black": None}
    clock = time.perf_counter()
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


# -- sweeps with Ray Tune ---------------------------------------------------------------------


def sweep_trial(config: dict) -> None:
    """One (gamma, lambda) point as a Ray Tune trial: train, report each iteration, then a final evaluation
    of ``config["final_games"]`` games against the random player (seed 0)."""
    from ray import tune

    import agents
    from agents.arena.evaluation import versus_random

    settings = dataclasses.replace(PPOSettings.from_dict(config["settings"]), gamma=config["point"]["gamma"],
                                   lambda_=config["point"]["lambda"])
    run_dir = os.path.join(config["out"], f"gamma{settings.gamma:g}_lambda{settings.lambda_:g}")
    state = train(settings, run_dir, env_steps=config["steps"], eval_games=config["eval_games"], eval_every=5,
                  resume=True, verbose=False, backend=config["backend"],
                  on_iteration=lambda row: tune.report({k: v for k, v in row.items() if isinstance(v, (int, float))}))
    match = versus_random(agents.load(os.path.join(run_dir, AGENT)), settings.variant, games=config["final_games"],
                          color=settings.agent_color, seed=0)
    lo, hi = match.win_interval
    tune.report({"final_win_rate": match.win_rate, "final_win_low": lo, "final_win_high": hi,
                 "final_games": match.games, "env_steps": state.env_steps, "train_s": train_seconds(state.metrics),
                 "done": True})


def run_sweep(settings: PPOSettings, points: list[tuple[float, float]], out: str, env_steps: int,
              eval_games: int = 200, final_games: int = 1000, concurrency: int = 2, backend: str = "rllib",
              verbose: bool = True) -> list[dict]:
    """A grid of (gamma, lambda) ``points`` as Ray Tune trials (one CPU each, ``concurrency`` at a time).

    Each trial trains ``settings`` at its point for ``env_steps`` env steps with ``backend``
    (:data:`~agents.ppo.common.BACKENDS`) in ``<out>/gamma<g>_lambda<l>/`` (resumed when there), then plays
    ``final_games`` greedy games against the random player. Tune's records go to ``<out>/tune/``.
    Returns one row per finished trial, in the order of ``points`` (a failed trial is printed and left out).
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
