"""AlphaZero on PettingZoo board games: the games, the one search over them, the judges, training."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from agents.alphazero.network import NetConfig, PolicyValueNet
from agents.alphazero.search import SearchConfig, UniformEvaluator, search
from agents.games import ConnectFour, TicTacToe
from boards import pettingzoo_env, play

# -- the adapters play PettingZoo's games exactly ---------------------------------


def _winner_from_rewards(env) -> int | None:
    r = [env._cumulative_rewards[a] for a in env.possible_agents]
    return None if r[0] == r[1] else int(np.argmax(r))


@pytest.mark.parametrize("name, cls", [("tictactoe", TicTacToe), ("connect_four", ConnectFour)])
def test_board_adapters_match_pettingzoo_on_random_games(name, cls):
    rng = np.random.default_rng(0)
    for _ in range(60 if name == "tictactoe" else 25):
        env = pettingzoo_env(name)
        ours = cls()
        while True:
            agent = env.agent_selection
            observed = env.observe(agent)
            over = any(env.terminations.values())
            assert ours.is_over() == over
            assert env.possible_agents.index(agent) == ours.to_play()
            np.testing.assert_array_equal(ours.observation(), observed["observation"].astype(np.float32))
            if over:
                assert ours.winner() == _winner_from_rewards(env)
                assert ours.legal_actions() == [] and not ours.legal_mask().any()
                break
            np.testing.assert_array_equal(ours.legal_mask(), observed["action_mask"])
            action = int(rng.choice(np.flatnonzero(observed["action_mask"])))
            env.step(action)
            ours.step(action)


def test_board_adapters_copy_independently_and_reject_illegal_actions():
    game = play(ConnectFour, [3, 3, 3])
    other = game.copy()
    other.step(3)
    assert game.board != other.board and game.key() != other.key() and game.to_play() == 1
    assert play(ConnectFour, [3]).key() == play(ConnectFour, [3]).key()
    full = play(ConnectFour, [0] * 6)
    with pytest.raises(ValueError, match="illegal Connect Four action 0"):
        full.step(0)
    with pytest.raises(ValueError, match="illegal Tic-Tac-Toe action 9"):
        TicTacToe().step(9)
    won = play(TicTacToe, [0, 3, 1, 4, 2])
    assert won.is_over() and won.winner() == 0
    with pytest.raises(ValueError, match="the game is over"):
        won.step(5)


# -- the search on the board games --------------------------------------------------


def test_search_takes_the_win_in_one_and_blocks_the_loss_in_connect_four():
    config = SearchConfig(simulations=200, leaves_per_tree=4)
    # X has three in column 3 and moves: 3 wins at once (O threatens column 0 too)
    win = play(ConnectFour, [3, 0, 3, 0, 3, 0])
    # O to move; X holds columns 1, 2 and 4 of the bottom row: only column 3 stops the win
    block = play(ConnectFour, [1, 1, 2, 2, 4])
    result = search([win, block], UniformEvaluator(), config)
    assert int(result.visits[0].argmax()) == 3 and result.q[0, 3] > 0.98
    assert int(result.visits[1].argmax()) == 3


def test_search_in_tictactoe_blocks_and_takes_the_win_in_one():
    game = play(TicTacToe, [4, 0, 8, 2])  # X holds 4 and 8, O holds 0 and 2 and threatens 1: X must block at 1
    visits = search([game], UniformEvaluator(), SearchConfig(simulations=400)).visits
    assert int(visits[0].argmax()) == 1
    game = play(TicTacToe, [0, 3, 1, 4])  # X: 0, 1 -> X wins at 2
    result = search([game], UniformEvaluator(), SearchConfig(simulations=100))
    assert int(result.visits[0].argmax()) == 2 and result.q[0, 2] > 0.98


def test_board_games_rebuild_from_pettingzoo_observations():
    rng = np.random.default_rng(3)
    for cls, name in ((TicTacToe, "tictactoe"), (ConnectFour, "connect_four")):
        for _ in range(10):
            game = cls()
            while not game.is_over():
                rebuilt = cls.from_observation(game.observation())
                assert rebuilt.board == game.board and rebuilt.key() == game.key()
                assert rebuilt.to_play() == game.to_play() and rebuilt.result == game.result
                game.step(int(rng.choice(game.legal_actions())))
            assert cls.from_observation(game.observation()).winner() == game.winner()


# -- the judges ----------------------------------------------------------------------


def test_tictactoe_solver_knows_the_game():
    from agents.games.tictactoe import solve_tictactoe

    table = solve_tictactoe()
    assert len(table.values) == 5478  # positions reachable from the empty board, finished ones included
    assert len(table.non_terminal()) == 4520
    assert table.values[(0,) * 9] == 0  # perfect play draws
    finished = [g for g in table.games.values() if g.is_over()]
    assert sum(g.winner() == 0 for g in finished) == 626 and sum(g.winner() == 1 for g in finished) == 316
    assert sum(g.winner() is None for g in finished) == 16  # known counts of final positions
    # a fork: X (first) holds opposite corners, O the centre; O to move must take an edge, not a corner
    game = play(TicTacToe, [0, 4, 8])
    values = table.move_values(game)
    assert {a for a, v in values.items() if v == 0} == {1, 3, 5, 7} and values[2] == values[6] == -1


def test_move_scoring_counts_blunders():
    from agents.arena.evaluation import score_moves
    from agents.games.tictactoe import solve_tictactoe

    table = solve_tictactoe()
    win = play(TicTacToe, [0, 3, 1, 4])  # X wins at 2; at 8 it lets O complete 3-4-5
    draw = TicTacToe()
    scores = score_moves([win, draw, draw], [8, 4, 4], [table.move_values(win), table.move_values(draw),
                                                         table.move_values(draw)])
    assert scores["positions"] == 3 and scores["value_preserving"] == pytest.approx(2 / 3)
    assert scores["win->loss"] == 1 and scores["first player to move"]["positions"] == 3
    with pytest.raises(ValueError, match="illegal action 0"):
        score_moves([win], [0], [table.move_values(win)])


def test_bitbully_judge_agrees_with_our_alpha_beta_on_shallow_positions():
    pytest.importorskip("bitbully")
    from agents.games.connect_four import ConnectFourSolver, alpha_beta_values

    solver = ConnectFourSolver()
    rng = np.random.default_rng(5)
    checked = 0
    while checked < 12:
        game = ConnectFour()
        for _ in range(int(rng.integers(30, 38))):
            if game.is_over():
                break
            game.step(int(rng.choice(game.legal_actions())))
        if game.is_over():
            continue
        # searched to the end of the game, alpha-beta is exact: its values' signs are the solver's classes
        ours = {c: int(np.sign(v)) for c, v in alpha_beta_values(game, 42 - game.moves, exact=True).items()}
        assert ours == solver.move_values(game)
        fast = alpha_beta_values(game, 42 - game.moves)  # the player's window: the best columns stay exact
        assert {c for c, v in fast.items() if v == max(fast.values())} <= {c for c, v in ours.items()
                                                                             if v == max(ours.values())}
        checked += 1
    # the empty board: the first player wins, and only in the centre column
    values = solver.move_values(ConnectFour())
    assert values[3] == 1 and all(v < 1 for c, v in values.items() if c != 3)


def test_alpha_beta_takes_and_blocks_wins():
    from agents.games.connect_four import ConnectFourAlphaBeta

    player = ConnectFourAlphaBeta(depth=2)
    assert player.choose(play(ConnectFour, [3, 0, 3, 0, 3, 0])) == 3
    assert player.choose(play(ConnectFour, [1, 1, 2, 2, 4])) == 3


def test_judges_are_agents_that_play_from_pettingzoo_observations():
    from agents import as_agent
    from agents.games.connect_four import ConnectFourAlphaBeta
    from agents.games.tictactoe import TicTacToeSolver, solve_tictactoe

    table = solve_tictactoe()
    for judge, cls, actions in ((ConnectFourAlphaBeta(2), ConnectFour, [3, 0, 3, 0, 3, 0]),
                                (TicTacToeSolver(table), TicTacToe, [0, 4, 8])):
        assert as_agent(judge) is judge
        game, env = play(cls, actions), pettingzoo_env(cls.name)
        for action in actions:
            env.step(action)
        obs = env.observe(env.agent_selection)  # PettingZoo's own view: the judge rebuilds the game from it
        judge.reset(7)
        chosen = judge.act(obs["observation"], obs["action_mask"])
        judge.reset(7)
        assert chosen == judge.act(game.observation(), game.legal_mask(), game) and obs["action_mask"][chosen]
    assert ConnectFourAlphaBeta(2).act(None, None, play(ConnectFour, [3, 0, 3, 0, 3, 0])) == 3  # takes the win
    # the fork: O must answer on an edge (by the exact table, only those draw)
    assert TicTacToeSolver(table).act(None, None, play(TicTacToe, [0, 4, 8])) in (1, 3, 5, 7)


# -- training -------------------------------------------------------------------------


def _tiny(run_dir, **changes):
    from agents.alphazero.train import Config, with_changes

    config = with_changes(Config(), game="tictactoe", run_dir=str(run_dir), iterations=3, games_per_iteration=8,
                          random_start_fraction=0.5, random_start_plies=6,
                          search=SearchConfig(simulations=8, leaves_per_tree=2), blocks=1, channels=8,
                          policy_channels=2, batch_size=32, buffer_size=2000, threads=1)
    return with_changes(config, **changes)


def test_tiny_board_game_run_resumes_to_the_same_state(tmp_path):
    from agents.alphazero.train import train

    changes = {}
    straight = train(_tiny(tmp_path / "a", **changes), verbose=False)
    train(_tiny(tmp_path / "b", iterations=1, **changes), verbose=False)
    resumed = train(_tiny(tmp_path / "b", **changes), resume=True, verbose=False)
    assert resumed["iteration"] == 3
    for name, tensor in straight["model"].items():
        assert torch.equal(tensor, resumed["model"][name]), name
    assert [m["samples"] for m in resumed["metrics"]] == [m["samples"] for m in straight["metrics"]]
    assert len(open(tmp_path / "b" / "metrics.csv").read().strip().splitlines()) == 4
    with pytest.raises(ValueError, match="resume"):
        train(_tiny(tmp_path / "b", **changes), verbose=False)
    with pytest.raises(ValueError, match="other settings"):
        train(_tiny(tmp_path / "b", channels=16, **changes), resume=True, verbose=False)


@pytest.mark.parametrize("overlap", [False, True])
def test_self_play_in_worker_processes_resumes_to_the_same_state(tmp_path, overlap, assert_same_run):
    """Shares are played from seeds the loop draws, and games in flight at a checkpoint (overlap) are
    saved as their draws and weights: a stopped and resumed run is the run that went straight through."""
    from agents.alphazero.train import load_checkpoint, train

    straight = train(_tiny(tmp_path / "a", workers=2, overlap=overlap), verbose=False)
    assert [m["worker_restarts"] for m in straight["metrics"]] == [0, 0, 0]
    assert all(m["samples"] > 0 and m["games_s"] > 0 for m in straight["metrics"])
    train(_tiny(tmp_path / "b", iterations=1, workers=2, overlap=overlap), verbose=False)
    assert ("in_flight_rng" in load_checkpoint(str(tmp_path / "b"))) == overlap
    resumed = train(_tiny(tmp_path / "b", workers=2, overlap=overlap), resume=True, verbose=False)
    assert_same_run(straight, resumed)


@pytest.mark.parametrize("overlap", [False, True])
def test_a_killed_self_play_worker_is_replaced_and_its_games_replayed(tmp_path, started_pools, overlap,
                                                                       assert_same_run):
    """Killed between iterations (idle), or with overlap while it plays the next iteration's games."""
    import os
    import signal

    from agents.alphazero import train as train_module


    def kill_a_worker(net, iteration):
        if iteration == 1:  # lost between iterations: the next one must replace it
            os.kill(started_pools[0].workers[0].pid, signal.SIGKILL)
            started_pools[0].workers[0].join()
        return {}

    killed = train_module.train(_tiny(tmp_path / "killed", iterations=2, workers=2, overlap=overlap),
                              evaluate=kill_a_worker, verbose=False)
    assert [m["worker_restarts"] for m in killed["metrics"]] == [0, 1]
    straight = train_module.train(_tiny(tmp_path / "straight", iterations=2, workers=2, overlap=overlap),
                                verbose=False)
    # a replayed share is played from its own seed: the run is the same as one that lost nothing
    assert_same_run(straight, killed)


def test_the_worker_pool_bounds_retries_and_names_a_players_error(tmp_path):
    import os
    import signal

    from agents.alphazero.train import ScaleConfig, SelfPlayer, make_net
    from agents.alphazero.selfplay import numpy_weights, share_jobs
    from agents.games import TicTacToe
    from agents.workers import WorkerPool

    config = _tiny(tmp_path)
    weights = numpy_weights(make_net(config))
    jobs = share_jobs([(TicTacToe(), None), (TicTacToe(), None)], 1, np.random.default_rng(0))  # (start, sparring seat)
    pool = WorkerPool(SelfPlayer, dataclasses.asdict(config), 1, max_restarts=0)
    try:
        samples, results = pool.play(weights, jobs)[0]
        assert len(results) == 2 and len(samples) == sum(len(r.actions) for r in results)
        again = pool.play(weights, jobs * 2)  # more jobs than workers: each takes the next when done
        assert [len(r) for _, r in again] == [2, 2] and [r.actions for r in again[1][1]] == [r.actions for r in results]
        wrong = {**weights, "unexpected": np.zeros(1, np.float32)}
        with pytest.raises(RuntimeError, match="(?s)worker 0 failed.*unexpected"):
            pool.play(wrong, jobs)
        os.kill(pool.workers[0].pid, signal.SIGKILL)
        pool.workers[0].join()
        with pytest.raises(RuntimeError, match="1 worker failures in one submission, more than "
                                               "max_restarts=0"):
            pool.play(weights, jobs)
    finally:
        pool.stop()
    for make in (lambda: ScaleConfig(workers=-1), lambda: ScaleConfig(workers=1.5),
                 lambda: ScaleConfig(ray_address=""), lambda: ScaleConfig(workers=0, overlap=True)):
        with pytest.raises(ValueError, match="workers|ray_address"):
            make()


def test_saved_board_game_agent_plays_in_the_pettingzoo_env(tmp_path):
    import agents
    from agents.alphazero.agent import AlphaZeroAgent
    from agents.alphazero.train import train, write_agent

    state = train(_tiny(tmp_path, game="connect_four", iterations=1, games_per_iteration=2), verbose=False)
    path = write_agent(str(tmp_path), state, simulations=8)
    agent = agents.load(path)
    assert isinstance(agent, AlphaZeroAgent) and agent.simulations == 8
    raw = AlphaZeroAgent.load(path, simulations=0)
    env = pettingzoo_env("connect_four")
    for _ in range(10):
        obs = env.observe(env.agent_selection)
        for player in (agent, raw):
            assert obs["action_mask"][player.act(obs["observation"], obs["action_mask"])] == 1
        env.step(agent.act(obs["observation"], obs["action_mask"]))
        if any(env.terminations.values()):
            break
    with pytest.raises(ValueError, match="does not fit tictactoe"):
        AlphaZeroAgent(agent.net, "tictactoe")


def test_symmetric_images_of_tictactoe_positions_are_positions_of_the_same_value():
    from agents.alphazero.selfplay import Samples, symmetric_samples
    from agents.games import ConnectFour
    from agents.games.tictactoe import solve_tictactoe

    table = solve_tictactoe()
    rng = np.random.default_rng(0)
    games = [table.non_terminal()[i] for i in rng.choice(4520, size=40, replace=False)]
    policies = rng.random((40, 9)).astype(np.float32)
    samples = Samples(np.stack([g.observation() for g in games]).astype(np.float16),
                      np.stack([g.legal_mask() for g in games]), policies, np.arange(40, dtype=np.float32))
    images = symmetric_samples(samples, TicTacToe.symmetries())
    assert len(TicTacToe.symmetries()) == 8 and len(images) == 8 * 40
    seen = set()
    for j in range(len(images)):
        g = games[j % 40]
        image = TicTacToe.from_observation(images.observations[j].astype(np.float32))
        # an image is a real position: same marks moved by the symmetry, same mover, same legal moves and value
        assert sorted(image.board) == sorted(g.board) and image.to_play() == g.to_play()
        assert np.array_equal(image.legal_mask(), images.masks[j])
        assert table.values[tuple(image.board)] == table.values[tuple(g.board)]
        perm = TicTacToe.symmetries()[j // 40][2]
        assert all(image.board[i] == g.board[perm[i]] for i in range(9))
        assert np.array_equal(images.policies[j], policies[j % 40][perm]) and images.values[j] == j % 40
        # the image's moves keep their values: the move at cell i is the original's move at perm[i]
        values = table.move_values(g)
        assert table.move_values(image) == {i: values[int(perm[i])] for i in image.legal_actions()}
        seen.add((j % 40, tuple(image.board)))
    assert len(seen) > 40 * 2  # most positions have several distinct images
    mirror = ConnectFour.symmetries()
    assert [list(p) for _, _, p in mirror] == [list(range(7)), list(range(6, -1, -1))]


def test_value_target_mixes_the_result_with_the_search_value():
    from agents.alphazero.selfplay import play_games

    # X to move can win at once (cell 2): the search value of the first position is near +1,
    # while a result-only target is exactly the game's result
    start = play(TicTacToe, [0, 3, 1, 4])
    config = SearchConfig(simulations=64, leaves_per_tree=1, dirichlet_epsilon=0.0)
    only_result, results = play_games([start], UniformEvaluator(), config, np.random.default_rng(0), 0)
    assert results[0].actions == (2,) and only_result.values.tolist() == [1.0]
    result = search([start], UniformEvaluator(), config)
    visits, q = result.visits, result.q
    searched = float((visits[0] / visits[0].sum()) @ q[0])
    assert 0.5 < searched < 1.0
    mixed, _ = play_games([start], UniformEvaluator(), config, np.random.default_rng(0), 0, value_target_q=0.25)
    assert mixed.values[0] == pytest.approx(0.75 * 1.0 + 0.25 * searched, abs=1e-6)
    # policy targets: the visit shares, or sharpened in proportion to visits ** power; the move is the same
    assert np.allclose(only_result.policies[0], visits[0] / visits[0].sum())
    sharp, results = play_games([start], UniformEvaluator(), config, np.random.default_rng(0), 0,
                                policy_target_power=2.0)
    assert results[0].actions == (2,)
    assert np.allclose(sharp.policies[0], visits[0] ** 2 / (visits[0] ** 2).sum())
    assert sharp.policies[0, 2] > only_result.policies[0, 2]


def test_discounted_value_targets_follow_the_search_backup():
    from agents.alphazero.selfplay import play_games

    # the winning move's value in the search (the terminal child's -1 backed up once) is the discount itself, and
    # so is the discounted target of the position it is played from
    start = play(TicTacToe, [0, 3, 1, 4])
    config = SearchConfig(simulations=64, leaves_per_tree=1, dirichlet_epsilon=0.0, discount=0.9)
    samples, results = play_games([start], UniformEvaluator(), config, np.random.default_rng(0), 0,
                                  discounted_values=True)
    assert results[0].actions == (2,)
    assert samples.values.tolist() == pytest.approx([search([start], UniformEvaluator(), config).q[0, 2]])
    assert samples.values[0] == pytest.approx(0.9)
    # a whole game: each position's target is minus the discount times the next one's (the search's negamax
    # backup), the last one the discount times the mover's result
    samples, results = play_games([TicTacToe()], UniformEvaluator(), config, np.random.default_rng(1), 9,
                                  discounted_values=True)
    values, plies = samples.values.tolist(), len(results[0].actions)
    assert results[0].winner is not None and len(values) == plies
    assert values[-1] == pytest.approx(0.9)
    assert values[:-1] == pytest.approx([-0.9 * v for v in values[1:]])


def test_a_sparring_partner_moves_for_its_seat_and_its_moves_are_samples_of_its_choice(tmp_path):
    from agents.alphazero.selfplay import play_games
    from agents.alphazero.train import SelfPlayConfig, train
    from agents.games.tictactoe import TicTacToeSolver, solve_tictactoe

    table = solve_tictactoe()
    config = SearchConfig(simulations=16, leaves_per_tree=2, discount=0.9)
    starts = [TicTacToe() for _ in range(8)]
    seats = [0, 1, None, 1, 0, None, 0, 1]
    samples, results = play_games(starts, UniformEvaluator(), config, np.random.default_rng(0), 2,
                                  discounted_values=True, opponent=TicTacToeSolver(seed=1), opponent_seats=seats)
    row = 0  # the samples follow the games' plies in order
    for result, seat in zip(results, seats):
        assert result.opponent_seat == seat
        game = TicTacToe()
        for ply, action in enumerate(result.actions):
            if game.to_play() == seat:  # the partner's move: a perfect one, the sample's whole policy target
                assert table.move_values(game)[action] == max(table.move_values(game).values())
                assert samples.policies[row][action] == 1.0
            row += 1
            game.step(action)
        assert seat is None or result.winner != 1 - seat  # perfect play never loses
    assert len(samples) == row
    # discounted targets count the partner's plies too: |value| is the discount per ply to the end, or 0 (a draw)
    magnitudes = sorted({round(abs(v), 6) for v in samples.values.tolist()})
    assert set(magnitudes) <= {0.0} | {round(0.9 ** k, 6) for k in range(1, 10)}
    with pytest.raises(ValueError, match="no opponent"):
        play_games(starts, UniformEvaluator(), config, np.random.default_rng(0), opponent_seats=seats)
    for bad in (dict(sparring="perfect"), dict(sparring_fraction=0.5), dict(sparring="perfect", sparring_fraction=2)):
        with pytest.raises(ValueError, match="sparring"):
            SelfPlayConfig(**bad)
    state = train(_tiny(tmp_path / "run", iterations=2, sparring="perfect", sparring_fraction=1.0), verbose=False)
    assert all(0 <= m["sparring_score"] <= 0.5 for m in state["metrics"])  # the learner never beats perfect play
    state = train(_tiny(tmp_path / "workers", iterations=1, sparring="perfect", sparring_fraction=0.5, workers=1),
                  verbose=False)  # a worker process makes its own partner
    assert 0 <= state["metrics"][0]["sparring_score"] <= 0.5


def _random_connect_four_samples(count: int):
    """``count`` samples of random Connect Four positions with random policy and value targets."""
    from agents.alphazero.selfplay import Samples

    rng = np.random.default_rng(0)
    games = [play(ConnectFour, list(rng.integers(0, 7, size=int(n)))) for n in rng.integers(0, 9, size=count)]
    return Samples(np.stack([g.observation() for g in games]).astype(np.float16),
                   np.stack([g.legal_mask() for g in games]),
                   rng.dirichlet(np.ones(7), size=count).astype(np.float32), rng.uniform(-1, 1, count).astype(np.float32))


def test_mixed_precision_training_keeps_float32_weights_and_close_losses():
    from agents.alphazero.selfplay import ReplayBuffer
    from agents.alphazero.train import train_steps
    from agents.devices import cpu_has_native_bf16

    samples = _random_connect_four_samples(256)
    losses = {}
    for bf16 in (False, True):
        torch.manual_seed(0)
        net = PolicyValueNet(NetConfig(6, 7, 2, 7, blocks=1, channels=16, policy_channels=2))
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
        buffer = ReplayBuffer(len(samples), samples.observations.shape[1:], 7)
        buffer.add(samples)
        losses[bf16] = train_steps(net, optimizer, buffer, 1, 128, np.random.default_rng(1),
                                   None, mixed_precision=bf16)
        assert all(p.dtype == torch.float32 for p in net.parameters())
    for name in ("policy_loss", "value_loss"):
        assert losses[True][name] == pytest.approx(losses[False][name], rel=0.03), name
    if cpu_has_native_bf16():  # autocast engaged: bf16 arithmetic rounds differently
        assert losses[True] != losses[False]


