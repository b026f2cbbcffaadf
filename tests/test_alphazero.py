"""AlphaZero: the batched search, the training loop, checkpoints and the agent."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="AlphaZero needs torch: pip install -e '.[agents]'")

import agents  # noqa: E402
from agents.alphazero.agent import AlphaZeroAgent  # noqa: E402
from agents.alphazero.mcts import SearchConfig, UniformEvaluator, run_search  # noqa: E402
from agents.alphazero.train import Config, load_checkpoint, make_net, train, write_agent  # noqa: E402
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
    visits, _ = run_search([pos], UniformEvaluator(), SearchConfig(simulations=simulations, discount=discount),
                           encoding)
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
    visits, q = run_search(positions, UniformEvaluator(), SearchConfig(simulations=300), encoding)
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
    config = Config(variant="3x3", run_dir=str(run_dir), iterations=2, games_per_iteration=32,
                    random_start_fraction=0.5, search=SearchConfig(simulations=16, leaves_per_tree=2),
                    blocks=1, channels=16, batch_size=64, sample_reuse=8.0, buffer_size=5000, threads=1)
    for k, v in changes.items():
        setattr(config, k, v)
    return config


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


@pytest.mark.slow
def test_two_ray_workers_complete_an_iteration(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[rllib]'")
    state = train(tiny_config(tmp_path, iterations=1, workers=2, ray_address="local"), verbose=False)
    assert state["iteration"] == 1 and state["metrics"][0]["samples"] > 0
    assert os.path.exists(tmp_path / "checkpoint" / "tensors.pt")


@pytest.mark.slow
def test_a_killed_self_play_actor_is_replaced_and_its_games_replayed(tmp_path, started_pools, assert_same_run):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[rllib]'")
    import dataclasses

    from agents.alphazero import train as train_module
    from agents.alphazero.workers import SelfPlayPool, numpy_weights, share_jobs

    def kill_an_actor(net, encoding, iteration):
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
    pool = SelfPlayPool(train_module.ChessSelfPlayer, dataclasses.asdict(pool_config), 1, "local", max_restarts=0)
    try:
        net, _ = make_net(pool_config)
        ray.kill(pool.workers[0])
        with pytest.raises(RuntimeError, match="1 self-play worker failures in one iteration"):
            pool.play(numpy_weights(net), share_jobs([Position("3x3").fen()], 1, np.random.default_rng(0)))
    finally:
        pool.stop()


def test_self_play_records_replay_to_their_results():
    from agents.alphazero.selfplay import play_games
    from agents.arena import GameRecord

    encoding = ObservationEncoding("3x3", 1, False)
    starts = [Position("3x3"), Position("3x3", "k2/1Q1/2K b - - 0 1")]  # the second is already mate
    _, records = play_games(starts, UniformEvaluator(), SearchConfig(simulations=8), encoding,
                            np.random.default_rng(0), temperature_plies=40, ply_limit=30)
    assert all(isinstance(r, GameRecord) for r in records)
    for start, record in zip(starts, records):
        assert record.start_fen == start.fen() and record.variant == "3x3" and record.plies == len(record.moves)
        game = Position("3x3", record.start_fen)
        for uci in record.moves:
            game.push_uci(uci)
        outcome = game.outcome()
        if outcome is None:
            assert (record.result, record.termination, record.plies) == ("1/2-1/2", "ply limit", 30)
        else:
            assert record.result == outcome.result()
            assert record.termination == outcome.termination.name.lower().replace("_", " ")
    assert (records[1].plies, records[1].termination, records[1].result) == (0, "checkmate", "1-0")


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


def test_replay_window_grows_as_katago_s_formula_and_sampling_stays_inside_it():
    from agents.alphazero.selfplay import ReplayBuffer, Samples, replay_window

    assert replay_window(1_000, 20_000) == 20_000
    # KataGo: c (1 + beta ((N / c)^alpha - 1) / alpha); c = 20k, N = 320k: (N / c)^0.75 = 16^0.75 = 8,
    # so 20k * (1 + 0.4 * 7 / 0.75) = 94,666.67
    assert replay_window(320_000, 20_000) == 94_666
    buffer = ReplayBuffer(10, (1,), 2)
    for start in range(0, 25, 5):  # values 0..24 added in order; the ring holds 15..24
        values = np.arange(start, start + 5, dtype=np.float32)
        buffer.add(Samples(np.zeros((5, 1), np.float16), np.ones((5, 2), np.int8), np.full((5, 2), 0.5, np.float32),
                           values))
    rng = np.random.default_rng(0)
    assert set(buffer.sample(2_000, rng, window=3).values) == {22.0, 23.0, 24.0}
    assert set(buffer.sample(2_000, rng).values) == set(np.arange(15, 25, dtype=np.float32))


def test_replay_buffer_checkpoints_compactly_and_restores_exactly_also_from_the_dense_format():
    from agents.alphazero.selfplay import ReplayBuffer, play_games

    encoding = ObservationEncoding("gardner")
    starts = [Position("gardner") for _ in range(4)]
    samples, _ = play_games(starts, UniformEvaluator(), SearchConfig(simulations=8, leaves_per_tree=2), encoding,
                            np.random.default_rng(0), temperature_plies=30, ply_limit=40)
    actions = encoding.variant.num_actions
    buffer = ReplayBuffer(len(samples) - 7, encoding.shape, actions)  # smaller than the games: the ring wraps
    buffer.add(samples)
    state = buffer.state()
    assert "policies" not in state and state["mask_bits"].shape == (buffer.size, (actions + 7) // 8)
    dense = {**{k: v for k, v in state.items() if k not in ("mask_bits", "legal_policies")},
             "masks": buffer.masks[:buffer.size].copy(), "policies": buffer.policies[:buffer.size].copy()}
    for saved in (state, dense):  # this format, and the dense arrays of checkpoints written before it
        restored = ReplayBuffer(buffer.capacity, encoding.shape, actions)
        restored.restore(saved)
        assert (restored.size, restored.next, restored.added) == (buffer.size, buffer.next, buffer.added)
        for name in ("observations", "masks", "policies", "values"):
            assert np.array_equal(getattr(restored, name), getattr(buffer, name)), name
    buffer.policies[0, np.flatnonzero(buffer.masks[0] == 0)[0]] = 0.5  # mass on an illegal move
    with pytest.raises(ValueError, match="illegal move"):
        buffer.state()


def test_playout_caps_record_only_full_searches_and_q_weight_mixes_the_root_value():
    from agents.alphazero.selfplay import play_games

    encoding = ObservationEncoding("3x3")
    search = SearchConfig(simulations=16, leaves_per_tree=2)
    starts = [Position("3x3") for _ in range(6)]

    def run(**options):
        return play_games(starts, UniformEvaluator(), search, encoding, np.random.default_rng(0), 2, 20, **options)

    none, records = run(fast_simulations=4, full_search_fraction=0.0)
    assert len(none) == 0 and sum(r.plies for r in records) > 0  # games played, nothing recorded
    every, records = run(fast_simulations=4, full_search_fraction=1.0)
    assert len(every) == sum(r.plies for r in records)
    some, records = run(fast_simulations=4, full_search_fraction=0.5)
    assert 0 < len(some) < sum(r.plies for r in records)
    results, _ = run()
    mixed, _ = run(value_q_weight=1.0)
    assert set(np.unique(results.values)) <= {-1.0, 0.0, 1.0}
    assert np.all(np.abs(mixed.values) <= 1.0) and not set(np.unique(mixed.values)) <= {-1.0, 0.0, 1.0}


def test_the_gardner_settings_take_any_change_and_keep_the_rest():
    from agents.alphazero.train import gardner_config

    default = gardner_config("run")
    wider = gardner_config("run", blocks=4, channels=64, policy_channels=32, learning_rate=1e-3)
    assert (wider.blocks, wider.channels, wider.policy_channels, wider.learning_rate) == (4, 64, 32, 1e-3)
    assert (default.blocks, default.channels, default.learning_rate) == (3, 48, 2e-3)
    assert wider.search == default.search and wider.buffer_size == default.buffer_size


class WhiteIsLost:
    """Uniform priors and a value that says White has lost every position (-1 with White to move, +1
    with Black): searches from White's side fall below any resign threshold, Black's never do."""

    def __init__(self, encoding: ObservationEncoding):
        self.black_to_move = encoding.channel_names().index("black to move")

    def __call__(self, observations, masks, keys):
        priors = masks.astype(np.float32) / np.maximum(masks.sum(1, keepdims=True), 1)
        return priors, np.where(observations[:, 0, 0, self.black_to_move] > 0.5, 1.0, -1.0).astype(np.float32)


def _replayed(record) -> list[Position]:
    """Every position of a self-play record, its start first, by replaying its moves."""
    game = Position(record.variant, record.start_fen)
    positions = [game.copy()]
    for uci in record.moves:
        game.push_uci(uci)
        positions.append(game.copy())
    return positions


def test_resigning_games_end_at_once_and_verification_games_count_false_positives():
    from agents.alphazero.selfplay import SelfPlayStats, play_games

    encoding = ObservationEncoding("gardner", 1, False)
    search = SearchConfig(simulations=16, leaves_per_tree=2)
    after_one_move = []
    for move in list(Position("gardner").legal_moves)[:6]:
        game = Position("gardner")
        game.push(move)
        after_one_move += [game, game.copy()]
    starts = [Position("gardner") for _ in range(12)] + after_one_move  # White to move, then Black

    def play(fraction, q_weight=0.0):
        stats = SelfPlayStats()
        samples, records = play_games(starts, WhiteIsLost(encoding), search, encoding, np.random.default_rng(0), 2,
                                      100, value_q_weight=q_weight, resign_threshold=-0.5,
                                      resign_check_fraction=fraction, stats=stats)
        return samples, records, stats

    # every game may resign: White gives up at its first search, at once or after Black's first move
    samples, records, stats = play(0.0)
    assert [(r.result, r.termination, r.plies) for r in records] == \
        [("0-1", "resignation", 0)] * 12 + [("0-1", "resignation", 1)] * 12
    assert (stats.games, stats.plies, stats.resigned, stats.resign_checks) == (24, 12, 24, 0)
    # a sample for every position searched, the resigning one included: Black won, White lost
    positions = [p for r in records for p in _replayed(r)]
    assert np.array_equal(samples.observations, np.stack([encoding.encode(p) for p in positions]).astype(np.float16))
    assert list(samples.values) == [1.0 if p.turn == 1 else -1.0 for p in positions]
    mixed, _, _ = play(0.0, q_weight=0.5)  # White's root value was below the threshold where it resigned
    white = np.array([p.turn == 0 for p in positions])
    assert np.all(mixed.values[white] < 0.5 * -1.0 + 0.5 * -0.5) and np.all(mixed.values[~white] <= 1.0)

    # half the games may not resign: they are played to their real end
    samples, records, stats = play(0.5)
    verified = [r for r in records if r.termination != "resignation"]
    resigned = [r for r in records if r.termination == "resignation"]
    assert 0 < len(verified) < len(records) and len(resigned) == stats.resigned
    assert all(r.result == "0-1" and r.plies == (0 if r.start_fen == starts[0].fen() else 1) for r in resigned)
    first_ply = {start.fen(): start.ply for start in starts}
    for record in verified:
        outcome = _replayed(record)[-1].outcome()
        if outcome is None:  # stopped at the ply limit, counted from the starts' own plies
            assert (first_ply[record.start_fen] + record.plies, record.result) == (100, "1/2-1/2")
        else:
            assert (record.result, record.termination) == (outcome.result(), termination_of(outcome))
    # White is the first side below the threshold in every verification game in which it had a move to search
    white_searched = [r for r in verified if any(p.turn == 0 for p in _replayed(r)[:-1])]
    assert stats.resign_checks == len(white_searched) > 0
    assert stats.resign_false_positives == sum(r.result != "0-1" for r in white_searched)
    assert 0 < stats.resign_false_positives < stats.resign_checks  # both kinds occur here
    assert stats.plies == sum(r.plies for r in records) and len(samples) == stats.plies + stats.resigned


def termination_of(outcome) -> str:
    return outcome.termination.name.lower().replace("_", " ")


def test_resignation_off_plays_exactly_the_same_games():
    from agents.alphazero.selfplay import SelfPlayStats, play_games

    encoding = ObservationEncoding("3x3")
    search = SearchConfig(simulations=16, leaves_per_tree=2)
    starts = [Position("3x3") for _ in range(8)]
    options = {"fast_simulations": 4, "full_search_fraction": 0.5, "value_q_weight": 0.25}
    before_rng, off_rng = np.random.default_rng(5), np.random.default_rng(5)
    before, before_records = play_games(starts, UniformEvaluator(), search, encoding, before_rng, 2, 30, **options)
    stats = SelfPlayStats()
    off, off_records = play_games(starts, UniformEvaluator(), search, encoding, off_rng, 2, 30, **options,
                                  resign_threshold=None, resign_check_fraction=0.5, stats=stats)
    for name in ("observations", "masks", "policies", "values"):
        assert np.array_equal(getattr(before, name), getattr(off, name)), name
    assert before_records == off_records
    assert before_rng.bit_generator.state == off_rng.bit_generator.state  # no random number drawn for it
    assert (stats.resigned, stats.resign_checks, stats.resign_false_positives) == (0, 0, 0)
    assert (stats.games, stats.plies) == (8, sum(r.plies for r in off_records))


@pytest.mark.parametrize("setting, value", [("resign_threshold", 0.0), ("resign_threshold", -1.0),
                                            ("resign_threshold", 0.5), ("resign_threshold", float("nan")),
                                            ("resign_check_fraction", -0.1), ("resign_check_fraction", 1.5)])
def test_invalid_resign_settings_are_refused_naming_the_setting(tmp_path, setting, value):
    from agents.alphazero.selfplay import play_games

    settings = {"resign_threshold": -0.9, "resign_check_fraction": 0.1, setting: value}
    with pytest.raises(ValueError, match=setting):
        play_games([Position("3x3")], UniformEvaluator(), SearchConfig(simulations=4), ObservationEncoding("3x3"),
                   np.random.default_rng(0), **settings)
    with pytest.raises(ValueError, match=setting):
        Config(**settings)
    with pytest.raises(ValueError, match=setting):  # a field set after the config was made
        train(tiny_config(tmp_path, **settings), verbose=False)
    assert not os.path.exists(tmp_path / "checkpoint")


def test_training_with_resignation_reports_it_and_resumes_by_the_usual_rules(tmp_path):
    from agents.runs import checkpoint_dir, load_tensors, read_state, save_checkpoint

    config = tiny_config(tmp_path / "on", iterations=1, resign_threshold=-0.05, resign_check_fraction=0.5)
    state = train(config, verbose=False)
    row = state["metrics"][0]
    assert 0 <= row["resign_false_positives"] <= row["resign_checks"]
    assert row["resigned_games"] + row["resign_checks"] <= config.games_per_iteration
    assert row["samples"] == row["selfplay_plies"] + row["resigned_games"]  # a resigning position is searched too
    header = open(tmp_path / "on" / "metrics.csv").readline().strip().split(",")
    assert {"resigned_games", "resign_checks", "resign_false_positives", "selfplay_plies"} <= set(header)
    with pytest.raises(ValueError, match="other settings"):
        train(tiny_config(tmp_path / "on", iterations=2, resign_threshold=-0.2, resign_check_fraction=0.5),
              resume=True, verbose=False)

    # a checkpoint written before the resign settings existed resumes with them off
    train(tiny_config(tmp_path / "old", iterations=1), verbose=False)
    found = checkpoint_dir(str(tmp_path / "old"))
    saved = read_state(found)
    for name in ("resign_threshold", "resign_check_fraction"):
        del saved.settings[name]
    save_checkpoint(str(tmp_path / "old"), saved, load_tensors(found))
    resumed = train(tiny_config(tmp_path / "old", iterations=2), resume=True, verbose=False)
    assert resumed["iteration"] == 2 and resumed["config"]["resign_threshold"] is None
    assert resumed["metrics"][1]["resigned_games"] == 0
