"""PPO: the masking network, the saved agents, run directories, and short RLlib / SB3 runs (slow)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PPO needs torch: pip install -e '.[agents]'")

import agents  # noqa: E402
from agents import RandomAgent  # noqa: E402
from agents.arena import play_game  # noqa: E402
from agents.ppo.agent import EpsilonRandomAgent, PPOAgent  # noqa: E402
from agents.ppo.common import PPOSettings, train  # noqa: E402
from agents.ppo.task import task_for  # noqa: E402
from agents.ppo.network import PPONet, PPONetConfig, mask_logits  # noqa: E402
from minichess_envs import Position  # noqa: E402
from minichess_envs.encoding import ObservationEncoding  # noqa: E402
from minichess_envs.positions import random_walk_positions  # noqa: E402
from minichess_envs.variants import get_variant  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small_net(variant: str = "3x3", seed: int = 0) -> PPONet:
    torch.manual_seed(seed)
    v = get_variant(variant)
    return PPONet(PPONetConfig(*ObservationEncoding(v).shape, v.num_actions, channels=8, conv_layers=1,
                               value_hidden=16))


def random_positions(variant: str, count: int, seed: int = 0) -> list[Position]:
    return random_walk_positions(variant, count, np.random.default_rng(seed), max_plies=31)


# -- the network ------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["3x3", "gardner"])
def test_policy_logits_follow_the_action_layout(variant):
    """Logit (file * height + rank) * planes + plane is the head's output at (rank, file): the from-square."""
    net = small_net(variant)
    v = get_variant(variant)
    obs = torch.rand(3, *ObservationEncoding(v).shape)
    mask = torch.ones(3, v.num_actions, dtype=torch.int8)
    features = net.features(obs)
    planes = net.policy_head(features)
    logits = net.policy_logits(features, mask)
    P = net.config.num_planes
    for file in range(v.width):
        for rank in range(v.height):
            for plane in (0, P // 2, P - 1):
                a = (file * v.height + rank) * P + plane
                assert torch.allclose(logits[:, a], planes[:, plane, rank, file])


def test_actions_start_on_the_movers_pieces():
    """The observation's row is the mover's rank and its column the file, as the policy head assumes."""
    from minichess_envs.encoding import ActionEncoding

    for variant in ("3x3", "gardner"):
        encoding, actions = ObservationEncoding(variant), ActionEncoding(variant)
        own = len([t for t in "PNBRQK" if t in get_variant(variant).pieces.upper()])
        for pos in random_positions(variant, 40):
            obs = encoding.encode(pos)
            for a in pos.legal_actions():
                file, rank, *_ = actions.decode(a)
                assert obs[rank, file, :own].sum() == 1


def test_masked_actions_have_probability_zero_and_are_never_sampled():
    logits = torch.randn(64, 297) * 10
    mask = torch.rand(64, 297) < 0.05
    mask[:, 0] = True
    masked = mask_logits(logits, mask)
    probs = torch.softmax(masked, -1)
    assert (probs[~mask] == 0).all()
    dist = torch.distributions.Categorical(logits=masked)
    draws = dist.sample((500,))  # (500, 64)
    assert mask.gather(1, draws.T).all()
    assert torch.isfinite(dist.entropy()).all() and torch.isfinite(dist.log_prob(draws)).all()


def test_an_all_illegal_row_stays_finite():
    """Terminal observations carry an empty mask; the value is still computed there (GAE bootstrap)."""
    net = small_net()
    logits, value = net(torch.rand(2, 3, 3, 12), torch.zeros(2, 297, dtype=torch.int8))
    assert torch.isfinite(torch.softmax(logits, -1)).all() and torch.isfinite(value).all()


# -- agents -----------------------------------------------------------------------------------


def test_ppo_agent_saves_loads_and_plays_legal_games(tmp_path):
    agent = PPOAgent(small_net("gardner"), "gardner", name="ppo-test")
    agent.save(str(tmp_path / "a"))
    loaded = agents.load(str(tmp_path / "a"))
    assert isinstance(loaded, PPOAgent) and loaded.name == "ppo-test"
    positions = random_positions("gardner", 20)
    enc = ObservationEncoding("gardner")
    obs = np.stack([enc.encode(p) for p in positions])
    masks = np.stack([p.action_mask() for p in positions])
    batch = loaded.act_batch(obs, masks)
    assert np.array_equal(batch, agent.act_batch(obs, masks))
    assert all(masks[i, a] for i, a in enumerate(batch))
    assert [loaded.act(o, m) for o, m in zip(obs, masks)] == list(batch)
    for seed in range(3):
        record = play_game(loaded, RandomAgent(), "gardner", seed=seed)  # raises on an illegal move
        assert record.plies > 0


def test_sampling_agent_is_seeded_and_legal():
    agent = PPOAgent(small_net(), "3x3", sample=True, seed=1)
    positions = random_positions("3x3", 30)
    enc = ObservationEncoding("3x3")
    obs = np.stack([enc.encode(p) for p in positions])
    masks = np.stack([p.action_mask() for p in positions])
    agent.reset(5)
    first = agent.act_batch(obs, masks)
    agent.reset(5)
    assert np.array_equal(first, agent.act_batch(obs, masks))
    assert all(masks[i, a] for i, a in enumerate(first))


def test_ppo_agent_encodes_positions_when_observations_differ():
    agent = PPOAgent(small_net(), "3x3")
    pos = Position("3x3")
    other = ObservationEncoding("3x3", last_move=False).encode(pos)  # 10 channels, not 12
    action = agent.act(other, pos.action_mask(), pos)
    assert pos.action_mask()[action]
    with pytest.raises(ValueError, match="planes this network reads"):
        agent.act(other, pos.action_mask())


def test_ppo_agent_rejects_a_network_of_another_variant():
    with pytest.raises(ValueError, match="does not fit"):
        PPOAgent(small_net("3x3"), "gardner")


def test_corrupt_weights_name_the_file(tmp_path):
    PPOAgent(small_net(), "3x3").save(str(tmp_path))
    (tmp_path / "weights.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt PPO weights"):
        agents.load(str(tmp_path))


def test_by_color_agent_dispatches_on_the_side_to_move(tmp_path):
    from agents.ppo.agent import ByColorAgent

    white, black = PPOAgent(small_net("gardner", 1), "gardner"), PPOAgent(small_net("gardner", 2), "gardner")
    pair = ByColorAgent(white, black, "gardner")
    positions = random_positions("gardner", 40)
    enc = ObservationEncoding("gardner")
    obs = np.stack([enc.encode(p) for p in positions])
    masks = np.stack([p.action_mask() for p in positions])
    expected = [(white if p.turn == 0 else black).act(o, m) for p, o, m in zip(positions, obs, masks)]
    assert list(pair.act_batch(obs, masks)) == expected  # the color read from the observation
    assert list(pair.act_batch(obs, masks, positions)) == expected  # ... or from the positions
    pair.save(str(tmp_path / "pair"))
    loaded = agents.load(str(tmp_path / "pair"))
    assert list(loaded.act_batch(obs, masks)) == expected
    play_game(loaded, RandomAgent(), "gardner", seed=0)
    play_game(RandomAgent(), loaded, "gardner", seed=0)


def test_epsilon_random_agent():
    inner = PPOAgent(small_net(), "3x3")
    positions = random_positions("3x3", 200)
    enc = ObservationEncoding("3x3")
    obs = np.stack([enc.encode(p) for p in positions])
    masks = np.stack([p.action_mask() for p in positions])
    assert np.array_equal(EpsilonRandomAgent(inner, 0.0).act_batch(obs, masks), inner.act_batch(obs, masks))
    mixed = EpsilonRandomAgent(inner, 0.5, seed=3).act_batch(obs, masks)
    again = EpsilonRandomAgent(inner, 0.5, seed=3).act_batch(obs, masks)
    assert np.array_equal(mixed, again)
    assert all(masks[i, a] for i, a in enumerate(mixed))
    differs = (mixed != inner.act_batch(obs, masks)).mean()
    assert 0.1 < differs < 0.6  # half the moves are random; some of those coincide with the policy's
    with pytest.raises(ValueError, match="eps"):
        EpsilonRandomAgent(inner, 1.5)


# -- settings and run directories ---------------------------------------------------------------


def test_settings_reject_bad_values(tmp_path):
    with pytest.raises(ValueError, match="agent_color"):
        PPOSettings(agent_color="green")
    with pytest.raises(ValueError, match="minibatch"):
        PPOSettings(train_batch=100, minibatch=200)
    with pytest.raises(ValueError, match="not a saved agent"):
        PPOSettings(opponent=str(tmp_path))
    with pytest.raises(ValueError, match="unknown PPO settings"):
        PPOSettings.from_dict({"gama": 0.3})
    with pytest.raises(ValueError):
        PPOSettings(variant="no-such-variant")


def test_importing_agents_needs_neither_ray_nor_sb3(tmp_path):
    PPOAgent(small_net(), "3x3").save(str(tmp_path))
    code = ("import sys, agents, agents.ppo; agents.load(sys.argv[1]); "
            "bad = [m for m in ('ray', 'stable_baselines3', 'sb3_contrib') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=ROOT)


# -- training runs (slow) ---------------------------------------------------------------------

TINY = dict(variant="3x3", start="random", agent_color="random", train_batch=256, minibatch=64, epochs=2,
            num_envs=8, channels=8, conv_layers=1, value_hidden=16)


def assert_legal(masks: np.ndarray, actions: np.ndarray) -> None:
    masks, actions = np.asarray(masks), np.asarray(actions).reshape(-1)
    assert len(actions) == len(masks) > 0
    illegal = np.flatnonzero(masks[np.arange(len(actions)), actions] == 0)
    assert not len(illegal), f"illegal actions sampled at rows {illegal[:10]}"


def _legal_game_from_saved_agent(path: str, variant: str = "3x3") -> None:
    agent = agents.load(path)
    assert isinstance(agent, PPOAgent)
    for seed in range(4):
        play_game(agent, RandomAgent(), variant, seed=seed)  # illegal="raise": an illegal move fails the test
        play_game(RandomAgent(), agent, variant, seed=seed)


def _resumes_the_saved_policy(backend_class, settings, run: str) -> None:
    """A backend restored from the run's checkpoint (tensors only) holds the policy saved as the agent,
    and the run wrote TensorBoard logs."""
    from agents.runs import checkpoint_dir, load_tensors

    saved = agents.load(os.path.join(run, "agent")).net.state_dict()
    backend = backend_class(settings, task_for(settings))
    try:
        backend.restore(load_tensors(checkpoint_dir(run)))
        restored = backend.policy_net().state_dict()
    finally:
        backend.close()
    assert saved.keys() == restored.keys()
    for name in saved:
        assert torch.equal(saved[name], restored[name]), name
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(os.path.join(run, "tensorboard")))


def test_rllib_ppo_runs_masks_exactly_resumes_and_saves_an_agent(tmp_path):
    pytest.importorskip("ray.rllib", reason="needs ray[rllib]: pip install -e '.[rllib]'")
    from agents.ppo import rllib_train

    settings = PPOSettings(**TINY)  # the env raises IllegalMoveError on an illegal action
    run = str(tmp_path / "rllib")
    state = train(settings, run, env_steps=2 * settings.train_batch, eval_games=20, verbose=False, backend="rllib")
    assert state.iteration == 2 and state.env_steps >= 2 * settings.train_batch
    assert {"win_rate_white", "win_rate_black", "sample_steps_per_s"} <= set(state.metrics[-1])
    state = train(settings, run, env_steps=3 * settings.train_batch, eval_games=0, resume=True, verbose=False,
                  backend="rllib")
    assert state.iteration == 3 and len(state.metrics) == 3
    _legal_game_from_saved_agent(os.path.join(run, "agent"))
    _resumes_the_saved_policy(rllib_train.RLlibBackend, settings, run)

    # every action the exploring policy samples is legal in the observation it was sampled in
    algo = rllib_train.build(settings)
    try:
        for explore in (True, False):
            episodes = algo.env_runner.sample(num_timesteps=600, explore=explore)
            for episode in episodes:
                obs = episode.get_observations()
                masks = obs["action_mask"] if isinstance(obs, dict) else np.stack([o["action_mask"] for o in obs])
                assert_legal(masks[:len(episode)], episode.get_actions())
    finally:
        algo.stop()


def test_rllib_multi_agent_on_the_aec_env_masks_exactly():
    pytest.importorskip("ray.rllib", reason="needs ray[rllib]: pip install -e '.[rllib]'")
    from agents.ppo import rllib_train

    settings = PPOSettings(**{**TINY, "start": "default", "agent_color": "white"})
    algo = rllib_train.build(settings, multi_agent=True)
    try:
        for _ in range(2):  # both players' modules learn
            algo.train()
        episodes = algo.env_runner.sample(num_timesteps=400, explore=True)
        checked = 0
        for episode in episodes:
            for agent_id, sa in episode.agent_episodes.items():
                if len(sa) == 0:
                    continue
                obs = sa.get_observations()
                masks = obs["action_mask"] if isinstance(obs, dict) else np.stack([o["action_mask"] for o in obs])
                assert_legal(masks[:len(sa)], sa.get_actions())
                checked += len(sa)
        assert checked > 0
    finally:
        algo.stop()


def test_sb3_maskable_ppo_masks_exactly_resumes_and_saves_an_agent(tmp_path):
    pytest.importorskip("sb3_contrib", reason="needs sb3-contrib: pip install -e '.[sb3]'")
    from agents.ppo import sb3_train

    settings = PPOSettings(**TINY)
    run = str(tmp_path / "sb3")
    state = train(settings, run, env_steps=2 * settings.train_batch, eval_games=20, verbose=False, backend="sb3")
    assert state.iteration == 2 and state.env_steps == 2 * settings.train_batch
    state = train(settings, run, env_steps=3 * settings.train_batch, eval_games=0, resume=True, verbose=False,
                  backend="sb3")
    assert state.iteration == 3
    _legal_game_from_saved_agent(os.path.join(run, "agent"))
    _resumes_the_saved_policy(sb3_train.SB3Backend, settings, run)

    # the last rollout: every stored action is legal under the stored mask
    task = task_for(settings)
    env = sb3_train.SB3VecEnv(task.make_envs())
    model = sb3_train.make_model(settings, task.net_config(), env)
    model.learn(settings.train_batch)
    buffer = model.rollout_buffer  # (flattened by training) every step of every game of the rollout
    obs = {k: v.reshape(-1, *env.observation_space[k].shape) for k, v in buffer.observations.items()}
    assert len(obs["action_mask"]) == settings.train_batch
    assert_legal(obs["action_mask"], buffer.actions.astype(np.int64))
    # the exported network is the policy's: same greedy actions as SB3's own predict
    obs = {k: v[:64] for k, v in obs.items()}
    masks = obs["action_mask"].astype(bool)
    sb3_actions, _ = model.predict(obs, deterministic=True, action_masks=masks)
    ours = PPOAgent(copy.deepcopy(model.policy.net), "3x3").act_batch(obs["observation"], masks)
    assert np.array_equal(np.asarray(sb3_actions).reshape(-1), ours)


def test_alpha_mini_procedure_runs_two_steps(tmp_path):
    pytest.importorskip("sb3_contrib", reason="needs sb3-contrib: pip install -e '.[sb3]'")
    from agents.ppo.rllib_train import AlphaMiniConfig, alpha_mini

    settings = PPOSettings(**{**TINY, "start": "default", "variant": "gardner-kingcapture", "train_batch": 128,
                              "num_envs": 8, "minibatch": 64})
    rows = alpha_mini(settings, AlphaMiniConfig(steps=2, env_steps_per_policy=128, eval_games=10),
                      str(tmp_path), backend="sb3", verbose=False)
    assert [r["step"] for r in rows] == [1, 2]
    for k in (1, 2):
        for color in ("white", "black"):
            saved = json.load(open(tmp_path / f"{color}_{k}" / "checkpoint" / "state.json"))["settings"]
            assert saved["agent_color"] == color
            if k == 2:  # trained against the other color's step-1 policy with random moves mixed in
                other = "black" if color == "white" else "white"
                assert saved["opponent"] == str(tmp_path / f"{other}_1" / "agent")
                assert saved["opponent_eps"] == 0.5
                assert saved["init_from"] == str(tmp_path / f"{color}_1" / "agent")
    assert (tmp_path / "steps.csv").exists()


def test_an_agent_sees_a_chess_game_as_it_was_trained_whatever_the_games_encoding():
    """A game observed without the last-move planes is re-observed with the planes the network reads."""
    from agents.games import new_game
    from minichess_envs.players import choose_actions

    encoding = ObservationEncoding("gardner", 1, True)
    torch.manual_seed(0)
    net = PPONet(PPONetConfig(*encoding.shape, get_variant("gardner").num_actions, channels=8, conv_layers=1,
                              value_hidden=16))
    agent = PPOAgent(net, "gardner", last_move=True)
    games = [new_game("gardner").random_start(np.random.default_rng(i), 6) for i in range(8)]
    assert games[0].observation_shape != encoding.shape
    expected = [agent.act(encoding.encode(g.position), g.position.action_mask()) for g in games]
    assert choose_actions(agent, games) == expected


def test_a_sampling_ppo_agent_plays_in_arena_workers_as_in_the_main_process():
    """Spawned arena workers get the agent, its sampling generator included, and play the same games."""
    from agents.arena import play_match

    agent = PPOAgent(small_net("3x3"), "3x3", sample=True, seed=4)
    here = play_match(agent, RandomAgent(1), "3x3", 4, seed=2)
    there = play_match(agent, RandomAgent(1), "3x3", 4, seed=2, workers=2)
    assert [g.moves for g in there.games] == [g.moves for g in here.games]
