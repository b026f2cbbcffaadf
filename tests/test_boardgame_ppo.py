"""The built-in PPO on the PettingZoo board games (their task, agents/ppo/task.py): the vector env, the linear
policy head, exact masking, resume bit for bit, the saved agent, clear errors, and a short Tic-Tac-Toe run
judged by the solver."""

from __future__ import annotations

import csv
import importlib.util
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PPO needs torch: pip install -e '.[agents]'")

import agents  # noqa: E402
from agents.games import BOARD_GAMES as GAMES  # noqa: E402
from agents.games import new_game  # noqa: E402
from agents.arena import play_match  # noqa: E402
from agents.arena.evaluation import score_moves  # noqa: E402
from agents.games.tictactoe import solve_tictactoe  # noqa: E402
from agents.ppo import native  # noqa: E402
from agents.ppo.agent import PPOAgent  # noqa: E402
from agents.ppo.boardgame_env import BoardGameVectorEnv  # noqa: E402
from agents.ppo.common import PPOSettings, train  # noqa: E402
from agents.ppo.network import PPONet, PPONetConfig  # noqa: E402
from agents.ppo.boardgame_env import PAST_SELF, RANDOM  # noqa: E402
from agents.ppo.task import BoardGameTask, task_for  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def net_config_for(game: str, channels: int = 8, conv_layers: int = 1, value_hidden: int = 16) -> PPONetConfig:
    return task_for(PPOSettings(game=game, channels=channels, conv_layers=conv_layers,
                                value_hidden=value_hidden)).net_config()


def marks(observation: np.ndarray) -> tuple[int, int]:
    """Stones of the player to move and of the other player in PettingZoo's planes."""
    return int(observation[..., 0].sum()), int(observation[..., 1].sum())


# -- the vector env -------------------------------------------------------------------------------


@pytest.mark.parametrize("game", ["tictactoe", "connect_four"])
def test_vector_env_plays_whole_games_and_rewards_the_learner_by_the_winner(game):
    envs = task_for(PPOSettings(game=game, agent_color="random", num_envs=16)).make_envs()
    assert isinstance(envs, BoardGameVectorEnv) and envs.random_share == 1.0  # no self-play: random only
    obs, _ = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    seats, results = set(), set()
    for _ in range(200):
        # the learner is to move in every game: it has as many stones as the opponent (it moves first)
        # or one fewer (the opponent opened)
        for o, m in zip(obs["observation"], obs["action_mask"]):
            mine, theirs = marks(o)
            assert theirs - mine in (0, 1) and m.any()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        assert not truncated.any()
        for i in np.flatnonzero(terminated):
            # the final board, rebuilt from its planes alone, is over with the winner the info names
            final = GAMES[game].from_observation(infos["final_obs"][i]["observation"])
            assert final.is_over() and not infos["final_obs"][i]["action_mask"].any()
            winner = None if final.winner() is None else ("first", "second")[final.winner()]
            assert infos["winner"][i] == winner
            learner = infos["learner_color"][i]
            assert rewards[i] == (0.0 if winner is None else 1.0 if winner == learner else -1.0)
            seats.add(learner)
            results.add(rewards[i])
            assert sum(marks(obs["observation"][i])) <= 1  # a new game in its place (same-step autoreset)
        assert (rewards[~terminated] == 0).all()
    assert seats == {"first", "second"} and results == {-1.0, 0.0, 1.0}


def test_vector_env_fixed_seat_and_the_past_self_as_opponent():
    config = net_config_for("connect_four", channels=4, conv_layers=1, value_hidden=8)
    envs = BoardGameVectorEnv("connect_four", 8, config, learner_seat="second", random_share=0.5)
    past = PPONet(config)
    with torch.no_grad():  # a past self that always wants column 3 while it is open
        past.policy_head[-1].bias.copy_(torch.tensor([0, 0, 0, 60.0, 0, 0, 0]))
    envs.set_past_self(past.state_dict())
    obs, _ = envs.reset(seed=1)
    assert (envs.kinds == PAST_SELF).any() and (envs.kinds == RANDOM).any()
    for kind, o in zip(envs.kinds, obs["observation"]):
        if kind == PAST_SELF:  # the opponent's first stone (the second plane, the learner to move) is in column 3
            assert np.flatnonzero(o[..., 1].any(0)).tolist() == [3]
    kinds = set()
    for _ in range(60):
        assert all(marks(o)[1] - marks(o)[0] == 1 for o in obs["observation"])  # the learner sits second
        obs, _, terminated, _, infos = envs.step([np.flatnonzero(m)[-1] for m in obs["action_mask"]])
        kinds |= {infos["opponent"][i] for i in np.flatnonzero(terminated)}
    assert kinds == {"random", "past_self"}
    with pytest.raises(ValueError, match="not legal"):
        envs.step(np.full(8, 9))
    with pytest.raises(ValueError, match="learner_seat"):
        BoardGameVectorEnv("tictactoe", 2, config, learner_seat="white")


# -- the network and masking ----------------------------------------------------------------------


def positions_with_few_moves(game: str, count: int, seed: int = 0) -> list:
    """Games going on with 1 to 3 legal actions, from random play."""
    rng, out = np.random.default_rng(seed), []
    while len(out) < count:
        g = new_game(game)
        while not g.is_over():
            if len(g.legal_actions()) <= 3:
                out.append(g.copy())
            g.step(int(rng.choice(g.legal_actions())))
    return out[:count]


@pytest.mark.parametrize("game", ["tictactoe", "connect_four"])
def test_sampling_never_picks_an_illegal_action(game):
    torch.manual_seed(0)
    net = PPONet(net_config_for(game, channels=8, conv_layers=1, value_hidden=16)).eval()
    with torch.no_grad():  # a policy that wants illegal moves: large logits everywhere
        net.policy_head[-1].bias.fill_(50.0)
        net.policy_head[-1].weight.normal_(0, 5.0)
    games = positions_with_few_moves(game, 40)
    obs = {"observation": np.stack([g.observation() for g in games]),
           "action_mask": np.stack([g.legal_mask() for g in games])}
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for _ in range(100):
            actions, log_probs, _ = native.sample_actions(net, obs, generator)
            assert obs["action_mask"][np.arange(len(games)), actions.numpy()].all()
            assert torch.isfinite(log_probs).all()


def test_linear_head_gathers_the_full_logits_and_chess_keeps_the_spatial_head():
    torch.manual_seed(0)
    net = PPONet(net_config_for("connect_four", channels=8, conv_layers=1, value_hidden=16))
    games = positions_with_few_moves("connect_four", 10)
    features = net.features(torch.from_numpy(np.stack([g.observation() for g in games])))
    actions = torch.randint(0, 7, (10, 4))
    assert net.unmasked_logits(features).shape == (10, 7)
    assert torch.equal(net.action_logits(features, actions), net.unmasked_logits(features).gather(1, actions))
    # the chess config (no policy_head given) builds the same spatial head, with the same weight names
    chess = PPONet(PPONetConfig(5, 5, 10, 1225, channels=8, conv_layers=1, value_hidden=16))
    assert isinstance(chess.policy_head, torch.nn.Conv2d)
    assert {"policy_head.weight", "policy_head.bias"} <= set(chess.state_dict())
    with pytest.raises(ValueError, match="policy_head"):
        PPONetConfig(3, 3, 2, 9, policy_head="columns")
    with pytest.raises(ValueError, match="do not split into planes"):
        PPONet(PPONetConfig(6, 7, 2, 7))  # why the linear head exists


# -- runs -----------------------------------------------------------------------------------------

TINY = dict(agent_color="random", gamma=0.99, lambda_=0.95, lr=1e-3, entropy_coeff=0.01, train_batch=256,
            minibatch=64, epochs=2, num_envs=16, channels=8, conv_layers=1, value_hidden=16, pool_every=1)


def test_the_saved_agent_loads_without_pickle_and_plays_legal_moves(tmp_path):
    settings = PPOSettings(game="connect_four", **TINY)
    train(settings, str(tmp_path / "run"), env_steps=256, eval_games=0, verbose=False)
    path = str(tmp_path / "run" / "agent")
    manifest = json.load(open(os.path.join(path, "agent.json")))
    assert manifest["class"] == "agents.ppo.agent:PPOAgent"  # the one PPO agent, chess's too
    assert manifest["settings"]["game"] == "connect_four" and manifest["settings"]["backend"] == "native"
    torch.load(os.path.join(path, "weights.pt"), weights_only=True)  # tensors and plain data only
    agent = agents.load(path)
    assert isinstance(agent, PPOAgent) and agent.net.config.policy_head == "linear"
    # in PettingZoo's own env, from its observations
    pytest.importorskip("pettingzoo")
    from boards import pettingzoo_env

    env = pettingzoo_env("connect_four")
    for _ in range(42):
        obs = env.observe(env.agent_selection)
        action = agent.act(obs["observation"], obs["action_mask"])
        assert obs["action_mask"][action] == 1
        env.step(action)
        if any(env.terminations.values()):
            break
    # as a batched player of the judges: the most probable legal action, on games near their end too
    games = positions_with_few_moves("connect_four", 30)
    for g, a in zip(games, agent(games)):
        assert a in g.legal_actions()
    logits = agent.net.unmasked_logits(agent.net.features(torch.from_numpy(games[0].observation()[None])))[0]
    legal = games[0].legal_actions()
    assert agent([games[0]])[0] == legal[int(logits[legal].argmax())]
    with pytest.raises(ValueError, match="does not fit tictactoe"):
        PPOAgent(agent.net, "tictactoe")


def test_bad_game_names_and_settings_give_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown board game 'chess'; known: tictactoe, connect_four"):
        PPOSettings(game="chess")
    with pytest.raises(ValueError, match="unknown board game 'go'"):
        BoardGameVectorEnv("go", 2, net_config_for("tictactoe"))
    with pytest.raises(ValueError, match="opponent and start are chess settings"):
        PPOSettings(game="tictactoe", start="random")
    with pytest.raises(ValueError, match="tictactoe trains with the native backend, not sb3"):
        train(PPOSettings(game="tictactoe"), str(tmp_path / "r"), env_steps=1, backend="sb3")
    path = tmp_path / "agent"
    PPOAgent(PPONet(net_config_for("tictactoe", 4, 1, 8)), "tictactoe").save(str(path))
    manifest = json.load(open(path / "agent.json"))
    manifest["settings"]["game"] = "go"
    (path / "agent.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="unknown game 'go'"):
        agents.load(str(path))
    manifest["settings"]["game"] = "chess"  # a game, but not this network's
    (path / "agent.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="does not fit chess"):
        agents.load(str(path))


def test_an_agent_saved_by_the_old_board_game_class_loads_as_the_one_ppo_agent(tmp_path):
    """``agents.boardgame_ppo:BoardGamePPOAgent`` wrote ``{"game", "backend"}``: it plays as it did."""
    torch.manual_seed(0)
    net = PPONet(net_config_for("connect_four", 4, 1, 8))
    path = tmp_path / "old"
    PPOAgent(net, "connect_four", backend="native").save(str(path))
    manifest = json.load(open(path / "agent.json"))
    manifest["class"] = "agents.boardgame_ppo:BoardGamePPOAgent"
    manifest["settings"] = {"game": "connect_four", "backend": "native"}
    (path / "agent.json").write_text(json.dumps(manifest))
    agent = agents.load(str(path))
    assert isinstance(agent, PPOAgent) and agent.game == "connect_four" and agent.backend == "native"
    games = positions_with_few_moves("connect_four", 20, seed=3) + [new_game("connect_four")]
    with torch.no_grad():  # the most probable legal action of the network's own logits
        logits = net.unmasked_logits(net.features(torch.from_numpy(np.stack([g.observation() for g in games]))))
    expected = [max(g.legal_actions(), key=lambda a: logits[i, a].item()) for i, g in enumerate(games)]
    assert agent(games).tolist() == expected


def test_the_task_names_the_game_and_evaluates_each_seat_against_random():
    task = task_for(PPOSettings(game="tictactoe", channels=4, conv_layers=1, value_hidden=8))
    assert isinstance(task, BoardGameTask) and task.name == "tictactoe"
    config = task.net_config()
    assert (config.height, config.width, config.channels_in, config.num_actions) == (3, 3, 2, 9)
    assert isinstance(task.agent(PPONet(config), "native"), PPOAgent)
    table = solve_tictactoe()

    class Perfect:  # the solver's best move: it never loses, in either seat
        name = "perfect"

        def act(self, observation, action_mask, position=None) -> int:
            return max(table.move_values(position).items(), key=lambda kv: kv[1])[0]

    row = task.evaluate_vs_random(Perfect(), games=200, seed=7)
    assert row["losses_first"] == row["losses_second"] == 0 and row["win_rate_first"] > 0.9
    # the random player against itself: the known rates of random Tic-Tac-Toe
    agent = agents.RandomAgent(11)
    row = task.evaluate_vs_random(agent, games=400, seed=7)
    for seat in ("first", "second"):
        assert row[f"win_low_{seat}"] <= row[f"win_rate_{seat}"] <= row[f"win_high_{seat}"]
        assert row[f"win_rate_{seat}"] + row[f"draws_{seat}"] + row[f"losses_{seat}"] == pytest.approx(1.0)
    assert row["win_low_first"] <= 0.585 <= row["win_high_first"]  # random vs random: 58.5% first-player wins
    assert row["win_low_second"] <= 0.288 <= row["win_high_second"]  # and 28.8% second-player wins


def test_the_experiment_writes_its_report(tmp_path):
    from experiments import ppo_boardgames

    solver = importlib.util.find_spec("bitbully") is not None
    for game in ("tictactoe", "connect_four"):
        out = str(tmp_path / game)
        assert ppo_boardgames.main(["--preset", "quick", "--game", game, "--out", out]) == 0
        metrics = list(csv.DictReader(open(os.path.join(out, "metrics.csv"))))
        assert len(metrics) == 1 and int(metrics[0]["env_steps"]) >= 512 and "win_rate_first" in metrics[0]
        assert isinstance(agents.load(os.path.join(out, "agent")), PPOAgent)
        matches = list(csv.DictReader(open(os.path.join(out, "matches.csv"))))
        opponents = {"random"} | ({"alpha-beta depth 2"} if game == "connect_four" else set())
        assert {m["opponent"] for m in matches} == opponents
        assert {m["player moves"] for m in matches} == {"first", "second"}
        assert all(int(m["games"]) == (10 if m["opponent"] == "random" else 2) for m in matches)
        judged = game == "tictactoe" or solver
        assert os.path.exists(os.path.join(out, "scores.csv")) == judged
        assert os.path.exists(os.path.join(out, "report.md"))
    if solver:
        rows = list(csv.DictReader(open(os.path.join(tmp_path, "connect_four", "scores.csv"))))
        assert [int(r["positions"]) for r in rows if r["to move"] == "all"] == [10, 10]
    with pytest.raises(SystemExit):
        ppo_boardgames.main(["--game", "chess"])


# -- learning ---------------------------------------------------------------------------------------


def test_a_short_tictactoe_run_beats_the_random_players_baseline(tmp_path):
    """Judged by independent truth: the solver's values on all 4,520 positions, and the random player's
    own results in the same matches."""
    settings = PPOSettings(game="tictactoe", agent_color="random", gamma=0.99, lambda_=0.95, lr=1e-3,
                           entropy_coeff=0.01, train_batch=2048, minibatch=256, num_envs=64, channels=16,
                           conv_layers=2, value_hidden=32)
    run = str(tmp_path / "run")
    train(settings, run, env_steps=20 * 2048, eval_games=0, verbose=False)
    agent = agents.load(os.path.join(run, "agent"))
    table = solve_tictactoe()
    positions = table.non_terminal()
    values = [table.move_values(g) for g in positions]
    trained = score_moves(positions, agent(positions), values)["value_preserving"]
    rng = np.random.default_rng(0)
    baseline = score_moves(positions, [rng.choice(g.legal_actions()) for g in positions], values)["value_preserving"]
    assert trained > baseline + 0.05, (trained, baseline)  # 0.68 against 0.58 at seeds 0 and 1; SE about 0.007
    for first in (True, False):
        seats = "first" if first else "second"
        ours = play_match(agent, agents.RandomAgent(5), "tictactoe", 200, 1, seats=seats).tally()
        theirs = play_match(agents.RandomAgent(4), agents.RandomAgent(5), "tictactoe", 200, 1, seats=seats,
                            names=("random 4", "random 5")).tally()
        assert ours.losses == min(ours.losses, theirs.losses) and ours.wins > theirs.wins + 40, (ours, theirs)
