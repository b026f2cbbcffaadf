"""The built-in PPO backend: GAE by hand, the clipped loss, exact masking, self-play, a tiny run that learns
and resumes bit for bit, and every backend's saved agent loading with ``agents.load``."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PPO needs torch: pip install -e '.[agents]'")

import agents  # noqa: E402
from agents.arena.evaluation import versus_random  # noqa: E402
from agents.ppo import native  # noqa: E402
from agents.ppo.agent import PPOAgent  # noqa: E402
from agents.ppo.common import PPOSettings, train  # noqa: E402
from agents.ppo.network import PPONet  # noqa: E402
from agents.ppo.boardgame_env import OpponentPool  # noqa: E402
from agents.ppo.task import task_for  # noqa: E402
from agents.players.random_agent import RandomAgent  # noqa: E402
from minichess_envs import Position  # noqa: E402
from minichess_envs.encoding import ObservationEncoding  # noqa: E402

T, F = True, False


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- GAE ------------------------------------------------------------------------------------------


def test_gae_on_a_hand_worked_trajectory_tells_terminal_from_truncated():
    # One game's steps: step 1 ends by the rules (terminal), step 3 by a limit (truncated; the value of
    # its final observation is 4.0). gamma 0.5, lambda 0.8, so gamma * lambda = 0.4.
    rewards = torch.tensor([[1.0], [2.0], [0.0], [3.0]])
    values = torch.tensor([[0.5], [1.0], [2.0], [1.5]])
    next_values = torch.tensor([[1.0], [7.0], [1.5], [4.0]])  # 7.0 after the terminal step must be ignored
    terminated = torch.tensor([[F], [T], [F], [F]])
    truncated = torch.tensor([[F], [F], [F], [T]])
    advantages, returns = native.gae(rewards, values, next_values, terminated, truncated, 0.5, 0.8)
    # by hand, backwards:
    a3 = 3.0 + 0.5 * 4.0 - 1.5  # truncated: bootstraps from its final observation, nothing flows in
    a2 = (0.0 + 0.5 * 1.5 - 2.0) + 0.4 * a3
    a1 = 2.0 - 1.0  # terminal: no future value, nothing flows in
    a0 = (1.0 + 0.5 * 1.0 - 0.5) + 0.4 * a1
    assert advantages[:, 0].tolist() == pytest.approx([a0, a1, a2, a3])
    assert returns[:, 0].tolist() == pytest.approx([a0 + 0.5, a1 + 1.0, a2 + 2.0, a3 + 1.5])

    # the same last step ended by the rules instead: no bootstrap
    advantages, _ = native.gae(rewards, values, next_values, torch.tensor([[F], [T], [F], [T]]),
                               torch.tensor([[F]] * 4), 0.5, 0.8)
    assert advantages[3, 0].item() == pytest.approx(3.0 - 1.5)
    assert advantages[3, 0].item() != pytest.approx(a3)


def test_gae_with_lambda_one_is_the_discounted_return_minus_the_value():
    rng = np.random.default_rng(0)
    rewards = torch.tensor(rng.normal(size=(6, 1)), dtype=torch.float32)
    values = torch.tensor(rng.normal(size=(6, 1)), dtype=torch.float32)
    next_values = torch.cat([values[1:], torch.tensor([[0.0]])])
    terminated = torch.tensor([[F]] * 5 + [[T]])
    advantages, _ = native.gae(rewards, values, next_values, terminated, torch.zeros(6, 1, dtype=torch.bool),
                               0.9, 1.0)
    discounted = [sum(0.9 ** (k - t) * rewards[k, 0].item() for k in range(t, 6)) for t in range(6)]
    assert advantages[:, 0].tolist() == pytest.approx([d - values[t, 0].item() for t, d in enumerate(discounted)],
                                                      abs=1e-5)


def test_collect_bootstraps_truncated_games_from_their_final_observation():
    import gymnasium as gym

    settings = PPOSettings(variant="3x3", agent_color="white", channels=8, conv_layers=1, value_hidden=16)
    torch.manual_seed(0)
    net = PPONet(task_for(settings).net_config()).eval()
    envs = gym.make_vec("MiniChess-3x3-v0", num_envs=4, vectorization_mode="vector_entry_point",
                        autoreset_mode="SameStep", max_episode_steps=3, illegal_action="raise")
    finals = []
    step = envs.step

    def recording_step(actions):
        out = step(actions)
        finals.append(out[-1].get("final_obs"))
        return out

    envs.step = recording_step
    rollout = native.collect(net, envs, 7, seed=1, generator=torch.Generator().manual_seed(0))
    assert rollout.truncated.any()
    with torch.inference_mode():
        for t in range(7):
            for i in range(4):
                if rollout.truncated[t, i]:
                    final = finals[t][i]
                    _, v = net(torch.from_numpy(final["observation"][None]),
                               torch.from_numpy(final["action_mask"][None]))
                    assert rollout.next_values[t, i].item() == pytest.approx(v.item())
                elif t < 6 and not rollout.terminated[t, i]:
                    assert rollout.next_values[t, i] == rollout.values[t + 1, i]


def test_draw_reward_is_added_exactly_where_the_rules_drew_a_game():
    settings = PPOSettings(variant="3x3", agent_color="random", reward="outcome", num_envs=8, channels=8,
                           conv_layers=1, value_hidden=16)
    torch.manual_seed(0)
    net = PPONet(task_for(settings).net_config()).eval()
    envs = task_for(settings).make_envs()
    plain = native.collect(net, envs, 40, seed=5, generator=torch.Generator().manual_seed(0))
    shaped = native.collect(net, envs, 40, seed=5, generator=torch.Generator().manual_seed(0), draw_reward=-0.5)
    assert torch.equal(plain.actions, shaped.actions)  # the same games
    drawn = plain.terminated & (plain.rewards == 0)  # outcome rewards: a finished game scores 0 only as a draw
    assert drawn.any()
    assert torch.equal(shaped.rewards, plain.rewards - 0.5 * drawn.float())


# -- the clipped loss and masking -----------------------------------------------------------------


def test_clipped_policy_loss_is_the_formula_and_flat_outside_the_clip_range():
    log_ratio = torch.log(torch.tensor([0.5, 1.1, 1.5, 0.7, 1.5])).requires_grad_()
    adv = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0])
    loss = native.clipped_policy_loss(log_ratio, adv, 0.2)
    # min(r A, clip(r) A) per sample, negated
    expected = -np.mean([min(0.5, 0.8), min(1.1, 1.1), min(1.5, 1.2), min(-0.7, -0.8), min(-1.5, -1.2)])
    assert loss.item() == pytest.approx(expected)
    loss.backward()
    grad = log_ratio.grad.tolist()
    assert grad[2] == 0.0 and grad[3] == 0.0  # past the range in the advantage's direction: no push
    assert grad[0] != 0.0 and grad[1] != 0.0 and grad[4] != 0.0


def positions_with_few_moves(variant: str, count: int, most: int = 3, seed: int = 0) -> list[Position]:
    """Positions reached by random play with at most ``most`` legal moves."""
    rng = np.random.default_rng(seed)
    found, pos = [], Position(variant)
    while len(found) < count:
        if pos.is_game_over():
            pos = Position(variant)
        if 0 < pos.num_legal_moves() <= most:
            found.append(pos.copy())
        actions = pos.legal_actions()
        pos.push_action(actions[rng.integers(len(actions))])
    return found


@pytest.mark.parametrize("variant", ["3x3", "gardner"])
def test_sampling_never_picks_an_illegal_action(variant):
    settings = PPOSettings(variant=variant, channels=8, conv_layers=1, value_hidden=16)
    torch.manual_seed(0)
    net = PPONet(task_for(settings).net_config()).eval()
    with torch.no_grad():  # a policy that wants illegal moves: large logits on every action
        net.policy_head.bias.fill_(50.0)
        net.policy_head.weight.normal_(0, 5.0)
    positions = positions_with_few_moves(variant, 40)
    encoding = ObservationEncoding(variant)
    obs = {"observation": np.stack([encoding.encode(p) for p in positions]),
           "action_mask": np.stack([p.action_mask() for p in positions])}
    generator = torch.Generator().manual_seed(0)
    seen = np.zeros_like(obs["action_mask"], dtype=bool)
    with torch.inference_mode():
        for _ in range(100):
            actions, log_probs, _ = native.sample_actions(net, obs, generator)
            assert obs["action_mask"][np.arange(len(positions)), actions.numpy()].all()
            assert torch.isfinite(log_probs).all()
            seen[np.arange(len(positions)), actions.numpy()] = True
    assert (seen <= obs["action_mask"].astype(bool)).all()


def test_opponent_pool_keeps_the_newest_and_draws_with_a_recency_bias():
    pool = OpponentPool(size=3)
    for it in range(1, 6):
        pool.add(it, {"w": torch.tensor([float(it)])})
    assert [it for it, _ in pool.snapshots] == [3, 4, 5]
    draws = [pool.draw(np.random.default_rng(s))[0] for s in range(2000)]
    assert [draws.count(it) / 2000 for it in (3, 4, 5)] == pytest.approx([1 / 6, 2 / 6, 3 / 6], abs=0.03)
    with pytest.raises(ValueError, match="empty"):
        OpponentPool(4).draw(np.random.default_rng(0))


# -- tiny runs ------------------------------------------------------------------------------------

TINY = dict(variant="gardner-kingcapture", agent_color="white", reward="material", train_batch=512,
            minibatch=128, epochs=2, num_envs=16, channels=8, conv_layers=1, value_hidden=16, lr=2e-3, threads=1)


def test_a_tiny_run_beats_random_play_and_saves_a_loadable_agent(tmp_path):
    settings = PPOSettings(**TINY)
    run = str(tmp_path / "native")
    state = train(settings, run, env_steps=8 * settings.train_batch, eval_games=0, verbose=False)
    assert state.iteration == 8 and state.env_steps == 8 * settings.train_batch
    row = state.metrics[-1]
    assert {"policy_loss", "vf_loss", "entropy", "kl", "sample_steps_per_s"} <= set(row)
    agent = agents.load(os.path.join(run, "agent"))
    assert isinstance(agent, PPOAgent) and agent.backend == "native"
    trained = versus_random(agent, settings.variant, games=200, color="white", seed=0)
    baseline = versus_random(RandomAgent(0), settings.variant, games=200, color="white", seed=0)
    assert trained.win_rate > baseline.win_rate + 0.1, (trained, baseline)
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(os.path.join(run, "tensorboard")))


BOARD_TINY = dict(agent_color="random", gamma=0.99, lambda_=0.95, lr=1e-3, entropy_coeff=0.01, train_batch=256,
                  minibatch=64, epochs=2, num_envs=16, channels=8, conv_layers=1, value_hidden=16, pool_every=1)


@pytest.mark.parametrize("settings", [
    PPOSettings(**{**TINY, "train_batch": 256, "minibatch": 64, "agent_color": "random"}),
    PPOSettings(game="tictactoe", **BOARD_TINY),
    PPOSettings(game="connect_four", selfplay=True, **BOARD_TINY)], ids=["gardner", "tictactoe", "connect_four"])
def test_a_resumed_run_ends_bit_identical_to_an_uninterrupted_one(tmp_path, settings):
    from agents.runs import checkpoint_dir, load_tensors, read_state

    whole, parts = str(tmp_path / "whole"), str(tmp_path / "parts")
    train(settings, whole, env_steps=3 * 256, eval_games=4, verbose=False)
    train(settings, parts, env_steps=2 * 256, eval_games=4, verbose=False)
    state = train(settings, parts, env_steps=3 * 256, eval_games=4, resume=True, verbose=False)
    assert state.iteration == 3
    a = agents.load(os.path.join(whole, "agent")).net.state_dict()
    b = agents.load(os.path.join(parts, "agent")).net.state_dict()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    ta, tb = load_tensors(checkpoint_dir(whole)), load_tensors(checkpoint_dir(parts))
    for key in ("exp_avg", "exp_avg_sq"):
        for i in ta["optimizer"]["state"]:
            assert torch.equal(ta["optimizer"]["state"][i][key], tb["optimizer"]["state"][i][key])
    if settings.selfplay:
        assert ta["pool"]["iterations"] == tb["pool"]["iterations"] == [1, 2, 3]
    rows = [read_state(checkpoint_dir(d)).metrics[-1] for d in (whole, parts)]
    assert {k: v for k, v in rows[0].items() if k.startswith("win_rate")} == \
        {k: v for k, v in rows[1].items() if k.startswith("win_rate")}


def test_settings_check_the_self_play_options():
    with pytest.raises(ValueError, match="selfplay_random"):
        PPOSettings(selfplay=True, selfplay_random=1.5)
    with pytest.raises(ValueError, match="pool_every"):
        PPOSettings(pool_every=0)


def test_the_pool_of_past_selves_is_refused_on_chess_and_board_games_by_the_library_backends(tmp_path):
    with pytest.raises(ValueError, match="docs/decisions.md"):  # measured and removed on chess
        PPOSettings(**TINY, selfplay=True)
    for kind in ("rllib", "sb3"):
        with pytest.raises(ValueError, match=f"tictactoe trains with the native backend, not {kind}"):
            train(PPOSettings(game="tictactoe", selfplay=True), str(tmp_path / kind), env_steps=1, backend=kind)


# -- every backend's agent loads with agents.load --------------------------------------------------

LIBRARY_TINY = dict(variant="3x3", start="random", agent_color="random", train_batch=256, minibatch=64, epochs=1,
                    num_envs=8, channels=8, conv_layers=1, value_hidden=16)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["rllib", "sb3"])
def test_library_backends_agents_load_as_the_native_ones_do(tmp_path, backend):
    if backend == "rllib":
        pytest.importorskip("ray.rllib", reason="needs ray[rllib]: pip install -e '.[rllib]'")
    else:
        pytest.importorskip("sb3_contrib", reason="needs sb3-contrib: pip install -e '.[sb3]'")
    settings = PPOSettings(**LIBRARY_TINY)
    train(settings, str(tmp_path / backend), env_steps=settings.train_batch, eval_games=0, verbose=False,
          backend=backend)
    train(settings, str(tmp_path / "native"), env_steps=settings.train_batch, eval_games=0, verbose=False)
    loaded = {name: agents.load(str(tmp_path / name / "agent")) for name in (backend, "native")}
    assert {a.backend for a in loaded.values()} == {backend, "native"}
    assert loaded[backend].net.config == loaded["native"].net.config  # one network, whichever backend trained it
    positions = positions_with_few_moves("3x3", 20, most=6)
    encoding = ObservationEncoding("3x3")
    obs = np.stack([encoding.encode(p) for p in positions])
    masks = np.stack([p.action_mask() for p in positions])
    for agent in loaded.values():
        actions = agent.act_batch(obs, masks)
        assert masks[np.arange(len(positions)), actions].all()


def random_play_positions(variant: str, count: int, seed: int = 0) -> list[Position]:
    """Positions of random games (not over), one per ply."""
    rng = np.random.default_rng(seed)
    found, pos = [], Position(variant)
    while len(found) < count:
        if pos.is_game_over():
            pos = Position(variant)
        found.append(pos.copy())
        actions = pos.legal_actions()
        pos.push_action(actions[rng.integers(len(actions))])
    return found


def observations(variant: str, positions: list[Position]) -> dict:
    encoding = ObservationEncoding(variant)
    return {"observation": np.stack([encoding.encode(p) for p in positions]),
            "action_mask": np.stack([p.action_mask() for p in positions])}


def test_sampling_draws_each_legal_action_with_its_masked_softmax_probability():
    settings = PPOSettings(variant="gardner", channels=8, conv_layers=1, value_hidden=16)
    torch.manual_seed(3)
    net = PPONet(task_for(settings).net_config()).eval()
    with torch.no_grad():  # a policy far from uniform over the legal moves
        net.policy_head.weight.normal_(0, 1.0)
    obs = observations("gardner", random_play_positions("gardner", 4, seed=2))
    draws = 4000
    obs_many = {k: np.repeat(v, draws, axis=0) for k, v in obs.items()}
    with torch.inference_mode():
        logits, values = net(torch.from_numpy(obs["observation"]), torch.from_numpy(obs["action_mask"]))
        expected = torch.softmax(logits, -1)  # the full-width masked policy
        actions, log_probs, sampled_values = native.sample_actions(net, obs_many, torch.Generator().manual_seed(0))
    actions = actions.view(4, draws)
    assert torch.allclose(sampled_values.view(4, draws), values[:, None].expand(4, draws), atol=1e-5)
    for row in range(4):
        frequencies = torch.bincount(actions[row], minlength=expected.shape[1]).double() / draws
        legal = obs["action_mask"][row].astype(bool)
        assert frequencies[~torch.from_numpy(legal)].sum() == 0
        # 4,000 draws: a frequency's standard error is at most 0.008
        assert torch.allclose(frequencies, expected[row].double(), atol=0.03)
        chosen = log_probs.view(4, draws)[row]
        assert torch.allclose(chosen, expected[row].log()[actions[row]], atol=1e-4)


@pytest.mark.parametrize("variant", ["3x3", "gardner"])
def test_legal_action_log_probs_and_entropy_equal_the_full_width_masked_policy(variant):
    settings = PPOSettings(variant=variant, channels=8, conv_layers=2, value_hidden=16)
    torch.manual_seed(0)
    net = PPONet(task_for(settings).net_config())
    with torch.no_grad():
        net.policy_head.weight.normal_(0, 0.5)
    obs = observations(variant, random_play_positions(variant, 64))
    x, masks = torch.from_numpy(obs["observation"]), torch.from_numpy(obs["action_mask"]).bool()
    legal, valid = native.legal_actions(masks)
    assert valid.sum() == masks.sum()
    assert torch.equal(torch.zeros_like(masks).scatter(1, legal, valid), masks)  # exactly the legal actions
    features = net.features(x)
    compact = native.legal_log_probs(net, features, legal, valid)
    full = torch.log_softmax(net(x, masks)[0], -1)
    assert torch.allclose(compact[valid], full.gather(1, legal)[valid], atol=1e-5)
    assert (compact[~valid].exp() == 0).all()
    entropy = -(compact.exp() * torch.where(valid, compact, 0.0)).sum(-1)
    full_entropy = -(full.exp() * torch.where(masks, full, 0.0)).sum(-1)
    assert torch.allclose(entropy, full_entropy, atol=1e-5)
    # the gradient reaches the policy head through the legal actions only, as it does through the full softmax
    compact.gather(1, torch.zeros(len(legal), 1, dtype=torch.long)).sum().backward()
    compact_grad = net.policy_head.weight.grad.clone()
    net.zero_grad()
    full.gather(1, legal[:, :1]).sum().backward()
    assert torch.allclose(compact_grad, net.policy_head.weight.grad, atol=1e-5)


@pytest.mark.parametrize("variant", ["3x3", "gardner"])
def test_action_logits_are_the_full_logits_at_those_actions(variant):
    settings = PPOSettings(variant=variant, channels=8, conv_layers=1, value_hidden=16)
    torch.manual_seed(0)
    net = PPONet(task_for(settings).net_config())
    config = task_for(settings).net_config()
    features = net.features(torch.rand(5, config.height, config.width, config.channels_in))
    actions = torch.randint(0, config.num_actions, (5, 9))
    assert torch.equal(net.action_logits(features, actions), net.unmasked_logits(features).gather(1, actions))
