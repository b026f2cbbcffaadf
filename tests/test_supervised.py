"""Supervised training from game datasets: the masked loss, learning, resume."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.supervised import SupervisedSettings, policy_loss, train_supervised  # noqa: E402
from minichess_envs import Position  # noqa: E402
from minichess_envs.dataset import ShardWriter  # noqa: E402


def test_masked_loss_ignores_illegal_logits_and_is_cross_entropy_when_all_are_legal():
    torch.manual_seed(0)
    logits = torch.randn(6, 10, requires_grad=True)
    masks = torch.ones(6, 10, dtype=torch.int8)
    masks[:, 5:] = 0
    actions = torch.tensor([0, 1, 2, 3, 4, 0])
    policy_loss(logits, masks, actions).backward()
    assert torch.all(logits.grad[:, 5:] == 0) and torch.all(logits.grad[:, :5] != 0)
    changed = logits.detach().clone()
    changed[:, 5:] += 100.0  # illegal logits do not change the loss
    assert torch.isclose(policy_loss(changed, masks, actions), policy_loss(logits.detach(), masks, actions))
    all_legal = torch.ones(6, 10, dtype=torch.int8)
    expected = torch.nn.functional.cross_entropy(logits.detach(), actions)
    assert torch.isclose(policy_loss(logits.detach(), all_legal, actions), expected)


def test_the_draw_move_loss_is_the_unlikelihood_of_the_marked_moves_over_the_legal_ones():
    from agents.supervised import draw_move_loss

    torch.manual_seed(0)
    logits = torch.randn(4, 8, requires_grad=True)
    masks = torch.ones(4, 8, dtype=torch.int8)
    masks[:, 6:] = 0
    draws = torch.zeros(4, 8, dtype=torch.int8)
    draws[0, 1] = draws[0, 2] = draws[2, 5] = 1  # rows 1 and 3 have no drawing move: not averaged in
    loss = draw_move_loss(logits, masks, draws)
    p = torch.softmax(logits.detach()[:, :6], 1)
    expected = -(torch.log(1 - p[0, 1] - p[0, 2]) + torch.log(1 - p[2, 5])) / 2
    assert torch.isclose(loss, expected)
    loss.backward()
    assert torch.all(logits.grad[:, 6:] == 0) and torch.all(logits.grad[[1, 3]] == 0)
    assert logits.grad[0, 1] > 0 and logits.grad[0, 2] > 0 and logits.grad[0, 0] < 0  # away from the draws
    none = draw_move_loss(logits, masks, torch.zeros_like(draws))
    assert none.item() == 0.0


def teacher_games(tmp_path, count=60, seed=0):
    """Games in which one fixed rule picks every move (the lowest legal action): a policy that can be learned."""
    rng = np.random.default_rng(seed)
    with ShardWriter(str(tmp_path / "data"), "3x3", games_per_shard=20) as writer:
        for _ in range(count):
            position = Position("3x3")
            for _ in range(int(rng.integers(0, 4))):  # a few random plies so the games differ
                if position.outcome() is None:
                    legal = position.legal_actions()
                    position.push_action(int(legal[rng.integers(len(legal))]))
            if position.outcome() is not None:
                continue
            root, actions = position.fen(), []
            while position.outcome() is None and len(actions) < 30:
                actions.append(int(min(position.legal_actions())))
                position.push_action(actions[-1])
            outcome = position.outcome()
            writer.add_game(root, actions, [0] * len(actions), outcome.result() if outcome else "*")
    return str(tmp_path / "data")


def metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def test_the_cosine_schedule_falls_from_the_peak_to_zero_over_its_cycle():
    from agents.supervised import scheduled_rate

    cosine = SupervisedSettings(data="unused", epochs=8, lr_schedule="cosine")
    assert scheduled_rate(cosine, 1e-3, 0.0) == 1e-3
    assert scheduled_rate(cosine, 1e-3, 4.0) == pytest.approx(5e-4)  # cos(pi / 2) = 0: half way, half the rate
    assert scheduled_rate(cosine, 1e-3, 8.0) == pytest.approx(0.0, abs=1e-12)
    rates = [scheduled_rate(cosine, 1e-3, t / 10) for t in range(81)]
    assert all(a >= b for a, b in zip(rates, rates[1:]))
    # a cycle over epoch 8 alone (a DAgger round): the peak again at its start, half of it in its middle
    assert scheduled_rate(cosine, 2e-4, 7.0, start=7) == 2e-4
    assert scheduled_rate(cosine, 2e-4, 7.5, start=7) == pytest.approx(1e-4)
    constant = SupervisedSettings(data="unused", epochs=8)
    assert {scheduled_rate(constant, 1e-3, t) for t in (0.0, 3.3, 8.0)} == {1e-3}
    with pytest.raises(ValueError, match="lr_schedule"):
        SupervisedSettings(data="unused", lr_schedule="step")


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_a_tiny_run_learns_and_resumes_to_the_same_state(tmp_path, monkeypatch, schedule):
    data = teacher_games(tmp_path)
    settings = SupervisedSettings(data=data, epochs=4, blocks=1, channels=16, batch_size=64, learning_rate=3e-3,
                                  validation=0.2, threads=1, lr_schedule=schedule)
    whole = train_supervised(str(tmp_path / "whole"), settings, verbose=False)
    rows = metrics(tmp_path / "whole")
    assert float(rows[-1]["train_policy_loss"]) < 0.5 * float(rows[0]["train_policy_loss"])
    assert float(rows[-1]["validation_top1"]) > 0.5  # far above chance over ~10 legal moves
    rates = [float(r["learning_rate"]) for r in rows]  # the rate of each epoch's last batch
    if schedule == "constant":
        assert rates == [3e-3] * 4
    else:
        assert rates[0] < 3e-3 and all(a > b for a, b in zip(rates, rates[1:])) and rates[-1] < 3e-4

    import dataclasses

    import agents.supervised

    evaluated = agents.supervised.held_out_metrics

    def stop_in_epoch_3(net, data, settings, *args):  # a kill during epoch 3: epochs 1 and 2 are saved
        if os.path.exists(tmp_path / "split" / "metrics.csv") and len(metrics(tmp_path / "split")) == 2:
            raise KeyboardInterrupt
        return evaluated(net, data, settings, *args)

    monkeypatch.setattr(agents.supervised, "held_out_metrics", stop_in_epoch_3)
    with pytest.raises(KeyboardInterrupt):
        train_supervised(str(tmp_path / "split"), settings, verbose=False)
    monkeypatch.setattr(agents.supervised, "held_out_metrics", evaluated)
    with pytest.raises(ValueError, match="resume=True"):
        train_supervised(str(tmp_path / "split"), settings, verbose=False)
    with pytest.raises(ValueError, match="learning_rate"):
        train_supervised(str(tmp_path / "split"), dataclasses.replace(settings, learning_rate=1e-2), resume=True,
                         verbose=False)
    resumed = train_supervised(str(tmp_path / "split"), settings, resume=True, verbose=False)
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    assert metrics(tmp_path / "split") == [dict(r, elapsed_s=s["elapsed_s"]) for r, s in
                                           zip(rows, metrics(tmp_path / "split"))]
    assert sorted(os.listdir(tmp_path / "whole" / "agents")) == [f"epoch-{e:03d}" for e in range(5)]


def test_saved_agents_load_and_play(tmp_path):
    from agents import load

    data = teacher_games(tmp_path, count=10)
    train_supervised(str(tmp_path / "run"), SupervisedSettings(data=data, epochs=1, blocks=1, channels=8,
                                                               simulations=0, threads=1), verbose=False)
    agent = load(str(tmp_path / "run" / "agent"))
    position = Position("3x3")
    action = agent.act(None, position.action_mask(), position)
    assert position.action_mask()[action] == 1


def test_the_ppo_network_trains_too_and_starts_a_ppo_run(tmp_path):
    from agents import load
    from agents.ppo.agent import PPOAgent
    from agents.ppo.common import PPOSettings, initial_weights

    data = teacher_games(tmp_path, count=20)
    settings = SupervisedSettings(data=data, epochs=3, network="ppo", ppo_channels=8, ppo_conv_layers=1,
                                  last_move=True, batch_size=64, learning_rate=3e-3, validation=0.2, threads=1)
    train_supervised(str(tmp_path / "run"), settings, verbose=False)
    rows = metrics(tmp_path / "run")
    assert float(rows[-1]["train_policy_loss"]) < float(rows[0]["train_policy_loss"])
    agent = load(str(tmp_path / "run" / "agent"))
    assert isinstance(agent, PPOAgent)
    ppo = PPOSettings(variant="3x3", init_from=str(tmp_path / "run" / "agent"), channels=8, conv_layers=1)
    weights = initial_weights(ppo)
    assert all(torch.equal(weights[k], v) for k, v in agent.net.state_dict().items())


def test_alphazero_self_play_starts_from_a_supervised_network(tmp_path):
    from agents.alphazero.search import SearchConfig
    from agents.alphazero.train import Config, initial_weights, make_net, train, with_changes

    data = teacher_games(tmp_path, count=20)
    train_supervised(str(tmp_path / "sup"), SupervisedSettings(data=data, epochs=1, blocks=1, channels=16,
                                                               threads=1), verbose=False)
    agent = str(tmp_path / "sup" / "agent")
    config = with_changes(Config(), game="3x3", run_dir=str(tmp_path / "az"), iterations=1, games_per_iteration=8,
                          search=SearchConfig(simulations=8, leaves_per_tree=2), blocks=1, channels=16,
                          batch_size=32, buffer_size=2000, threads=1, init_from=agent)
    supervised = torch.load(os.path.join(agent, "weights.pt"), weights_only=True)["model"]
    start = initial_weights(config, make_net(config))
    assert all(torch.equal(start[k], v) for k, v in supervised.items())
    state = train(config, verbose=False)
    assert state["iteration"] == 1
    config = with_changes(config, channels=8, run_dir=str(tmp_path / "other"))
    with pytest.raises(ValueError, match="init_from .* is a network for"):
        train(config, verbose=False)


ENGINES = all(shutil.which(e) or shutil.which(e, path="/usr/games") for e in ("fairy-stockfish", "stockfish"))


@pytest.mark.slow
@pytest.mark.skipif(not ENGINES, reason="needs fairy-stockfish and stockfish (apt install fairy-stockfish stockfish)")
@pytest.mark.parametrize("script,args", [
    ("supervised_gardner", ["--preset", "quick"]),  # 12 games, 1 epoch, 1 DAgger round, 1 self-play iteration
    ("supervised_chess", ["--preset", "quick"]),  # 4 games, 1 epoch, 1 DAgger round, search 2 in the tournament
])
def test_the_supervised_experiments_run_end_to_end_and_resume(tmp_path, script, args):
    import json

    import agents

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root, "MPLBACKEND": "Agg"}
    command = [sys.executable, f"experiments/{script}.py", "--out", str(tmp_path / "out"), "--workers", "1", *args]
    for extra in ([], ["--resume"]):  # the second run finds every stage done and reports again
        done = subprocess.run(command + extra, cwd=root, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        out = tmp_path / "out"
        assert (out / "report.md").stat().st_size > 0
        assert len((out / "pretraining.csv").read_text().splitlines()) == 1 + 2  # the epoch, then DAgger's
        assert set(json.loads((out / "stages.json").read_text())) >= {"pretraining", "dagger", "tournament"}
        assert agents.load(str(out / "pretrain" / "agent")).game == script.split("_")[1]
        if script == "supervised_chess":  # epochs 0-2 and Stockfish at 1 node, rated
            assert len((out / "tournament.csv").read_text().splitlines()) == 1 + 4
        else:  # the pretrained network and both self-play runs against minimax and the three ladder levels
            rows = list(csv.DictReader(open(out / "matches.csv")))
            assert len(rows) == 3 * 4 and {r["player"] for r in rows} == {"pretrained", "scratch"}


FAIRY = shutil.which("fairy-stockfish") or shutil.which("fairy-stockfish", path="/usr/games")


@pytest.mark.skipif(not FAIRY, reason="needs fairy-stockfish (apt install fairy-stockfish)")
def test_dagger_labels_the_positions_the_policy_met_and_resumes(tmp_path):
    from agents.arena.evaluation import versus_random
    from agents.supervised.engine_games import GenerationSettings, generate_games
    from agents.runs import read_state
    from agents.supervised import dagger, raw_policy
    from minichess_envs.dataset import GameDataset, list_shards

    data = str(tmp_path / "data")
    generate_games(data, GenerationSettings("gardner", games=4, nodes=10, games_per_chunk=2, ply_limit=20),
                   workers=1, progress=False)
    settings = SupervisedSettings(data=data, epochs=1, blocks=1, channels=8, policy_channels=4, batch_size=32,
                                  last_move=False, simulations=4, threads=1)
    run = str(tmp_path / "run")
    train_supervised(run, settings, verbose=False)
    rounds = dagger(run, settings, rounds=1, games=3, nodes=10, workers=1, verbose=False)
    assert read_state(os.path.join(run, "checkpoint")).iteration == 2
    assert [r["round"] for r in rounds] == [1]
    # the labelled positions are exactly the ones the epoch-1 policy moved in, from the same seeds
    expected = []
    for color in ("white", "black"):
        visited = []
        match = versus_random(raw_policy(os.path.join(run, "agents", "epoch-001"), settings), "gardner", games=3,
                              color=color, seed=2_000_000, visited=visited)
        assert rounds[0][color] == {"wins": match.wins, "draws": match.draws, "losses": match.losses}
        expected += [fen for fens, _ in visited for fen in fens]
    labelled = [(fen, actions) for fen, actions, _, _ in GameDataset(data).games()
                if Position("gardner", fen).fen() in set(expected) and len(actions) == 1]
    shards = [e for e in list_shards(data) if e["file"].startswith("dagger-r1-")]
    assert sum(e["games"] for e in shards) == len(expected) == rounds[0]["positions"]
    assert sorted(f for f, _ in labelled) == sorted(expected)
    for fen, actions in labelled:
        assert int(actions[0]) in Position("gardner", fen).legal_actions()
    # a finished round is not played again; a further round adds its own shards and epoch
    assert dagger(run, settings, rounds=1, games=3, nodes=10, workers=1, verbose=False) == rounds
    assert len(list_shards(data)) == 2 + len(shards)
    two = dagger(run, settings, rounds=2, games=3, nodes=10, learning_rate=3e-4, workers=1, verbose=False)
    assert [r["round"] for r in two] == [1, 2] and read_state(os.path.join(run, "checkpoint")).iteration == 3
    saved = torch.load(os.path.join(run, "checkpoint", "tensors.pt"), weights_only=True)
    assert saved["optimizer"]["param_groups"][0]["lr"] == 3e-4  # the round's rate, not the run's 1e-3
    assert any(e["file"].startswith("dagger-r2-") for e in list_shards(data))


def test_the_draw_penalty_steers_the_policy_off_moves_that_draw_when_winning(tmp_path):
    chess = pytest.importorskip("chess")
    from minichess_envs.dataset import GameDataset

    rng = np.random.default_rng(0)
    games = []
    for fen in ["7k/8/6K1/8/8/8/8/5Q2 w - - 0 1", "k7/8/1K6/8/8/8/8/1R6 w - - 0 1"]:
        board = chess.Board(fen)
        position = Position("chess", fen)
        safe, drawing = [], []
        for move in board.legal_moves:
            board.push(move)
            (drawing if board.is_stalemate() else safe).append(position.move_to_action(move.uci()))
            board.pop()
        for _ in range(40):
            # half the examples play a stalemating move at a score of 0 (nothing is marked there), half a safe
            # move at a winning score (the stalemating moves are marked): imitation alone splits the policy
            games.append((fen, [int(rng.choice(drawing))], [0], "*"))
            games.append((fen, [int(rng.choice(safe))], [900], "*"))
    with ShardWriter(str(tmp_path / "data"), "chess", games_per_shard=200) as writer:
        for game in games:
            writer.add_game(*game)
    p_draw = {}
    for penalty in (0.0, 4.0):
        settings = SupervisedSettings(data=str(tmp_path / "data"), epochs=6, blocks=1, channels=8, policy_channels=4,
                                      batch_size=16, learning_rate=1e-2, validation=0.25, threads=1,
                                      draw_penalty=penalty)
        net = train_supervised(str(tmp_path / f"run{penalty}"), settings, verbose=False)
        batch = next(GameDataset(settings.data, last_move=False, winning_cp=300).batches(1000, split="all"))
        marked = torch.from_numpy(batch.draws).any(1)
        with torch.no_grad():
            logits, _ = net(torch.from_numpy(batch.observations[marked.numpy()]))
            masks = torch.from_numpy(batch.masks[marked.numpy()])
            probabilities = torch.softmax(logits.masked_fill(masks == 0, float("-inf")), 1)
        p_draw[penalty] = (probabilities * torch.from_numpy(batch.draws)[marked]).sum(1).mean().item()
        assert ("validation_top_move_draws" in metrics(tmp_path / f"run{penalty}")[-1]) == bool(penalty)
    # The loss's optimum over a stalemating mass p is p = 1 / (2 + penalty): 1/2 without the penalty, 1/6 with 4
    assert p_draw[0.0] > 0.2 and p_draw[4.0] < 0.6 * p_draw[0.0], p_draw
