"""AlphaZero: the batched search, the training loop, checkpoints and the agent."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="AlphaZero needs torch: pip install -e '.[agents]'")

import agents  # noqa: E402
from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.search import SearchConfig, UniformEvaluator, search  # noqa: E402
from agents.alphazero.selfplay import GameResult  # noqa: E402
from agents.alphazero.train import Config, load_checkpoint, make_net, train, with_changes, write_agent  # noqa: E402
from agents.games import new_game  # noqa: E402
from agents.games.chess import chess_games  # noqa: E402
from agents.devices import resolve_device  # noqa: E402
from minichess_envs import Position, _core  # noqa: E402
from minichess_envs.encoding import ObservationEncoding  # noqa: E402


def mates_in(pos: Position, plies: int) -> set[str]:
    """Moves that force mate within ``plies`` plies (odd), by brute force: the test's own truth."""
    found = set()
    for move in pos.legal_moves:
        pos.push(move)
        if pos.is_checkmate() or (plies >= 3 and not pos.is_game_over() and all(
                _mated_after(pos, reply, plies - 1) for reply in pos.legal_moves)):
            found.add(move.uci())
        pos.pop()
    return found


def _mated_after(pos: Position, reply, plies: int) -> bool:
    pos.push(reply)
    ok = bool(mates_in(pos, plies - 1))
    pos.pop()
    return ok


def search_move(fen: str, variant: str, simulations: int, discount: float = 0.99) -> str:
    pos = Position(variant, fen)
    encoding = ObservationEncoding(variant, 1, False)
    visits = search(chess_games([pos], encoding), UniformEvaluator(),
                    SearchConfig(simulations=simulations, discount=discount)).visits
    return pos.action_to_move(int(visits[0].argmax())).uci()


@pytest.mark.parametrize("variant, fen, plies", [
    ("3x3", "r1k/QRq/K2 b - - 0 1", 1),  # Qxb2 mates; Rxa2 wins more slowly
    ("3x3", "kqr/2Q/KR1 w - - 0 1", 3),  # only Rxb3 wins: mate in 2
    ("gardner", "r1b1k/pp1pp/n1NP1/Pq3/R1BKQ b - - 3 7", 1),
    ("gardner", "rnbq1/1pNkp/1p1P1/P1p1P/1RBQK w - - 0 7", 3),
])
def test_search_with_uniform_priors_finds_the_mate(variant, fen, plies):
    pos = Position(variant, fen)
    expected = mates_in(pos, plies)
    assert expected and (plies == 1 or not mates_in(pos, 1))  # the position is what the test says
    assert search_move(fen, variant, 800) in expected


def test_search_prefers_the_faster_mate():
    fen = "r1k/QRq/K2 b - - 0 1"
    slow_win = "a3a2"  # Rxa2 also wins, but not at once
    pos = Position("3x3", fen)
    assert mates_in(pos, 1) == {"c2b2"} and pos.is_legal(slow_win)
    for _ in range(3):
        assert search_move(fen, "3x3", 400) == "c2b2"


def test_search_never_loses_a_won_3x3_position(tmp_path):
    from minichess_envs.tablebase import Tablebase

    tb = Tablebase.load("3x3", cache_dir=str(tmp_path))
    rng = np.random.default_rng(0)
    won = np.flatnonzero((tb.value == 1) & (tb.outcome == 0))
    rows = rng.choice(won, size=300, replace=False)
    positions = [tb.position(int(i)) for i in rows]
    encoding = ObservationEncoding("3x3", 1, False)
    visits = search(chess_games(positions, encoding), UniformEvaluator(), SearchConfig(simulations=300)).visits
    kept = 0
    for i, pos, v in zip(rows, positions, visits):
        move = pos.action_to_move(int(v.argmax()))
        value = {m.move: m.value for m in tb.move_values(pos)}[move]
        assert value != -1, f"search lost the won position {pos.fen()} with {move}"
        kept += value == 1
    # Without a value function, wins deeper than the search sees (K+R mates take 7 plies) may be drawn.
    assert kept >= 0.9 * len(rows), kept


def test_search_rejects_misuse():
    pos = Position("gardner")
    search = _core.Search(pos.rules, 2)
    search.set_root(0, pos)
    obs = np.zeros((8, 5, 5, 16), np.float32)
    masks = np.zeros((8, 1225), np.int8)
    keys = np.zeros(8, np.uint64)
    n = search.select(4, 10, obs, masks, keys)
    assert n == 1 and masks[0].sum() == 7  # the root, once
    with pytest.raises(RuntimeError, match="select called twice"):
        search.select(4, 10, obs, masks, keys)
    with pytest.raises(ValueError, match="priors"):
        search.backup(np.zeros((1, 10), np.float32), np.zeros(1, np.float32))
    with pytest.raises(IndexError):
        search.set_root(5, pos)
    with pytest.raises(ValueError, match="another variant"):
        search.set_root(1, Position("chess"))


def tiny_config(run_dir, **changes) -> Config:
    config = with_changes(Config(), game="3x3", run_dir=str(run_dir), iterations=2, games_per_iteration=32,
                          random_start_fraction=0.5, search=SearchConfig(simulations=16, leaves_per_tree=2),
                          blocks=1, channels=16, batch_size=64, sample_reuse=8.0, buffer_size=5000, threads=1)
    return with_changes(config, **changes)


def test_tiny_training_run_learns_and_resumes_to_the_same_state(tmp_path):
    straight = train(tiny_config(tmp_path / "a", iterations=4), verbose=False)
    losses = [m["policy_loss"] + m["value_loss"] for m in straight["metrics"]]
    assert losses[-1] < losses[0]
    # an interrupted run: two iterations, then resume to four
    train(tiny_config(tmp_path / "b", iterations=2), verbose=False)
    resumed = train(tiny_config(tmp_path / "b", iterations=4), resume=True, verbose=False)
    assert resumed["iteration"] == 4
    for name, tensor in straight["model"].items():
        assert torch.equal(tensor, resumed["model"][name]), name
    assert [m["samples"] for m in resumed["metrics"]] == [m["samples"] for m in straight["metrics"]]
    lines = open(tmp_path / "b" / "metrics.csv").read().strip().splitlines()
    assert len(lines) == 5  # header + one row per iteration, none duplicated by the resume


def test_checkpoint_errors_name_the_problem(tmp_path):
    train(tiny_config(tmp_path, iterations=1), verbose=False)
    with pytest.raises(ValueError, match="resume"):
        train(tiny_config(tmp_path, iterations=1), verbose=False)
    with pytest.raises(ValueError, match="other settings"):
        train(tiny_config(tmp_path, iterations=2, channels=32), resume=True, verbose=False)
    path = tmp_path / "checkpoint" / "tensors.pt"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="corrupt checkpoint"):
        load_checkpoint(str(tmp_path))


def test_trained_run_loads_as_an_agent_and_plays_legally(tmp_path):
    state = train(tiny_config(tmp_path, iterations=1), verbose=False)
    path = write_agent(str(tmp_path), state, simulations=8)
    agent = agents.load(path)
    assert isinstance(agent, AlphaZeroAgent) and agent.simulations == 8
    rng = np.random.default_rng(0)
    pos = Position("3x3")
    while not pos.is_game_over() and pos.ply < 30:
        action = agent.act(None, pos.action_mask(), pos) if pos.turn == 0 else rng.choice(pos.legal_actions())
        pos.push_action(int(action))
    raw = AlphaZeroAgent.load(path, simulations=0)
    assert raw.act(None, Position("3x3").action_mask(), Position("3x3")) in Position("3x3").legal_actions()
    (tmp_path / "agent" / "weights.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt AlphaZero weights"):
        agents.load(path)


def test_saved_agent_searches_with_the_play_time_changes_and_the_run_s_other_settings(tmp_path):
    state = train(tiny_config(tmp_path, iterations=1), verbose=False)
    path = write_agent(str(tmp_path), state, simulations=8, root="gumbel", gumbel_considered=4)
    search = agents.load(path).search
    run = SearchConfig.from_dict(state["config"]["search"])
    assert (search.root, search.gumbel_considered, search.simulations) == ("gumbel", 4, 8)
    assert run.root == "puct"  # the run's own settings stay as they were, but for the changed ones
    assert dataclasses.replace(search, root=run.root, gumbel_considered=run.gumbel_considered,
                               simulations=run.simulations) == run
    with pytest.raises(ValueError, match="is PUCT's"):  # checked as any search settings are
        AlphaZeroAgent.from_checkpoint(state, 8, root="gumbel", move_choice="lcb")
    with pytest.raises(TypeError):
        AlphaZeroAgent.from_checkpoint(state, 8, rooot="gumbel")


@pytest.mark.parametrize("overlap", [False, True])
def test_self_play_in_two_worker_processes_resumes_to_the_same_state(tmp_path, overlap, assert_same_run):
    """Shares are played from seeds the loop draws, and games in flight at a checkpoint (overlap) are
    saved as their draws and weights: a stopped and resumed run is the run that went straight through."""
    straight = train(tiny_config(tmp_path / "a", workers=2, overlap=overlap), verbose=False)
    assert [m["worker_restarts"] for m in straight["metrics"]] == [0, 0]
    assert all(m["samples"] > 0 for m in straight["metrics"])
    train(tiny_config(tmp_path / "b", iterations=1, workers=2, overlap=overlap), verbose=False)
    assert ("in_flight_rng" in load_checkpoint(str(tmp_path / "b"))) == overlap
    resumed = train(tiny_config(tmp_path / "b", workers=2, overlap=overlap), resume=True, verbose=False)
    assert_same_run(straight, resumed)


def test_two_ray_workers_complete_an_iteration(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[rllib]'")
    state = train(tiny_config(tmp_path, iterations=1, workers=2, ray_address="local"), verbose=False)
    assert state["iteration"] == 1 and state["metrics"][0]["samples"] > 0
    assert os.path.exists(tmp_path / "checkpoint" / "tensors.pt")


def test_a_killed_self_play_actor_is_replaced_and_its_games_replayed(tmp_path, started_pools, assert_same_run):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[rllib]'")
    import dataclasses

    from agents.alphazero import train as train_module
    from agents.alphazero.selfplay import numpy_weights, share_jobs
    from agents.workers import WorkerPool

    def kill_an_actor(net, iteration):
        if iteration == 1:
            ray.kill(started_pools[0].workers[0])  # lost between iterations: the next one must replace it
        return {}

    config = tiny_config(tmp_path / "killed", iterations=2, workers=2, ray_address="local")
    state = train(config, evaluate=kill_an_actor, verbose=False)
    assert state["iteration"] == 2 and [m["worker_restarts"] for m in state["metrics"]] == [0, 1]
    straight = train(tiny_config(tmp_path / "straight", iterations=2, workers=2, ray_address="local"), verbose=False)
    # a replayed share is played from its own seed: the run is the same as one that lost nothing
    assert_same_run(straight, state)

    # retries are bounded: with none allowed, a lost actor ends the run with a clear error
    pool_config = tiny_config(tmp_path / "pool", workers=1, ray_address="local")
    pool = WorkerPool(train_module.SelfPlayer, dataclasses.asdict(pool_config), 1, "local", max_restarts=0)
    try:
        net = make_net(pool_config)
        ray.kill(pool.workers[0])
        with pytest.raises(RuntimeError, match="1 worker failures in one submission"):
            pool.play(numpy_weights(net), share_jobs([(new_game("3x3"), None)], 1, np.random.default_rng(0)))
    finally:
        pool.stop()


def test_self_play_results_replay_to_their_winners():
    from agents.alphazero.selfplay import play_games

    starts = [new_game("3x3", ply_limit=30), new_game("3x3", fen="k2/1Q1/2K b - - 0 1")]  # the second is mate
    samples, results = play_games(starts, UniformEvaluator(), SearchConfig(simulations=8), np.random.default_rng(0),
                                  temperature_plies=40)
    for start, result in zip(starts, results):
        game = Position("3x3", start.position.fen())
        for action in result.actions:
            game.push_action(action)
        outcome = game.outcome()  # the engine's own verdict on the replayed game
        if outcome is None:
            assert len(result.actions) == 30 and result.winner is None
        else:
            assert result.winner == outcome.winner
    assert results[1] == GameResult((), 0)  # already mated: no move, White won
    assert len(samples) == len(results[0].actions)  # a sample for every searched position


def test_devices_resolve_and_refuse_clearly(monkeypatch):
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="sees no CUDA GPU"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="no usable Apple MPS"):
        resolve_device("mps")


@pytest.mark.parametrize("device", ["cpu", "auto"])
def test_tiny_training_on_a_device_resumes_to_the_same_state(tmp_path, device, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # "auto" means the CPU here, GPU or not
    straight = train(tiny_config(tmp_path / "a", iterations=2, device=device), verbose=False)
    train(tiny_config(tmp_path / "b", iterations=1, device=device), verbose=False)
    resumed = train(tiny_config(tmp_path / "b", iterations=2, device=device), resume=True, verbose=False)
    for name, tensor in straight["model"].items():
        assert tensor.device.type == "cpu" and torch.equal(tensor, resumed["model"][name]), name


def test_hours_budget_stops_training_and_a_resume_with_more_hours_goes_on(tmp_path):
    # a budget below one iteration's time: the first iteration runs, the second would pass the budget
    state = train(tiny_config(tmp_path, iterations=5, hours=1e-9), verbose=False)
    assert state["iteration"] == 1
    assert state["metrics"][-1]["training_s"] == pytest.approx(
        state["metrics"][-1]["selfplay_s"] + state["metrics"][-1]["train_s"])
    state = train(tiny_config(tmp_path, iterations=3, hours=1.0), resume=True, verbose=False)
    assert state["iteration"] == 3
    times = [m["training_s"] for m in state["metrics"]]
    assert times == sorted(times) and times[-1] < 3600


def test_the_learning_rate_decays_on_a_cosine_over_the_iterations_or_the_hour_budget(tmp_path):
    from agents.alphazero.train import learning_rate

    # over 5 iterations: the peak at the first, the final rate at the last, the midpoint half way between
    config = tiny_config(tmp_path, iterations=5, learning_rate=1e-3, final_learning_rate=1e-4)
    rates = [learning_rate(config, i, 0.0) for i in range(1, 6)]
    assert rates[0] == pytest.approx(1e-3) and rates[4] == pytest.approx(1e-4)
    assert rates[2] == pytest.approx(5.5e-4)  # cos(pi / 2) = 0
    assert rates == sorted(rates, reverse=True)
    # over 2 hours: the share of the budget already spent decides, whatever the iteration
    hours = tiny_config(tmp_path, iterations=1_000_000, hours=2.0, learning_rate=1e-3, final_learning_rate=0.0)
    assert learning_rate(hours, 500, 3600.0) == pytest.approx(5e-4)
    assert learning_rate(hours, 900, 7200.0) == pytest.approx(0.0, abs=1e-15)
    assert learning_rate(tiny_config(tmp_path, learning_rate=1e-3), 3, 99.0) == 1e-3  # no final rate: constant
    # a run uses and records it; with a decaying rate its iteration budget is part of the schedule
    state = train(tiny_config(tmp_path / "run", iterations=3, learning_rate=1e-3, final_learning_rate=1e-4),
                  verbose=False)
    assert [m["learning_rate"] for m in state["metrics"]] == pytest.approx([1e-3, 5.5e-4, 1e-4])
    assert state["optimizer"]["param_groups"][0]["lr"] == pytest.approx(1e-4)
    with pytest.raises(ValueError, match="iterations"):
        train(tiny_config(tmp_path / "run", iterations=4, learning_rate=1e-3, final_learning_rate=1e-4),
              resume=True, verbose=False)


def test_an_hour_budget_counts_the_progress_bar_in_seconds_of_training(tmp_path, capsys):
    pytest.importorskip("tqdm")
    # 1 iteration against half an hour: the bar's total is the budget's 1,800 seconds, not the iterations
    train(tiny_config(tmp_path / "hours", iterations=1, hours=0.5), verbose=True)
    assert "/1800 [" in capsys.readouterr().err
    train(tiny_config(tmp_path / "iterations", iterations=1), verbose=True)
    assert "1/1 [" in capsys.readouterr().err


def test_replay_buffer_checkpoints_compactly_and_restores_exactly():
    from agents.alphazero.selfplay import ReplayBuffer, play_games

    starts = [new_game("gardner", ply_limit=40) for _ in range(4)]
    encoding = starts[0].encoding
    samples, _ = play_games(starts, UniformEvaluator(), SearchConfig(simulations=8, leaves_per_tree=2),
                            np.random.default_rng(0), temperature_plies=30)
    actions = encoding.variant.num_actions
    buffer = ReplayBuffer(len(samples) - 7, encoding.shape, actions)  # smaller than the games: the ring wraps
    buffer.add(samples)
    state = buffer.state()
    assert "policies" not in state and state["mask_bits"].shape == (buffer.size, (actions + 7) // 8)
    restored = ReplayBuffer(buffer.capacity, encoding.shape, actions)
    restored.restore(state)
    assert (restored.size, restored.next, restored.added) == (buffer.size, buffer.next, buffer.added)
    for name in ("observations", "masks", "policies", "values"):
        assert np.array_equal(getattr(restored, name), getattr(buffer, name)), name
    buffer.policies[0, np.flatnonzero(buffer.masks[0] == 0)[0]] = 0.5  # mass on an illegal move
    with pytest.raises(ValueError, match="illegal move"):
        buffer.state()


def test_every_move_is_a_sample_and_q_weight_mixes_the_root_value():
    from agents.alphazero.selfplay import play_games

    config = SearchConfig(simulations=16, leaves_per_tree=2)
    starts = [new_game("3x3", ply_limit=20) for _ in range(6)]

    def run(**options):
        return play_games(starts, UniformEvaluator(), config, np.random.default_rng(0), 2, **options)

    results, records = run()
    assert len(results) == sum(len(r.actions) for r in records) > 0
    mixed, _ = run(value_target_q=1.0)
    assert set(np.unique(results.values)) <= {-1.0, 0.0, 1.0}
    assert np.all(np.abs(mixed.values) <= 1.0) and not set(np.unique(mixed.values)) <= {-1.0, 0.0, 1.0}


def test_the_gardner_settings_take_any_change_and_keep_the_rest():
    from agents.alphazero.train import gardner_config

    default = gardner_config("run")
    wider = gardner_config("run", blocks=4, channels=64, policy_channels=32, learning_rate=1e-3)
    assert (wider.network.blocks, wider.network.channels, wider.network.policy_channels,
            wider.learning.learning_rate) == (4, 64, 32, 1e-3)
    assert (default.network.blocks, default.network.channels, default.learning.learning_rate) == (3, 48, 2e-3)
    assert wider.search == default.search and wider.learning.buffer_size == default.learning.buffer_size
    with pytest.raises(TypeError, match="'blokcs' is not a setting"):
        gardner_config("run", blokcs=4)
