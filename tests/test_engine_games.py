"""Game datasets on disk and engine self-play generation."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from minichess_envs import Position, get_variant
from minichess_envs.dataset import (
    MANIFEST, MATE_SCORE, DatasetError, GameDataset, ShardWriter, list_shards, read_shard, score_to_int,
    score_to_value, write_shard,
)


def random_games(variant: str, count: int, seed: int, max_plies: int = 60):
    rng = np.random.default_rng(seed)
    games = []
    for _ in range(count):
        position = Position(variant)
        actions = []
        while position.outcome() is None and len(actions) < max_plies:
            legal = position.legal_actions()
            action = int(legal[rng.integers(len(legal))])
            actions.append(action)
            position.push_action(action)
        outcome = position.outcome()
        scores = rng.integers(-500, 500, len(actions))
        games.append((Position(variant).fen(), actions, scores, outcome.result() if outcome else "*"))
    return games


def write(directory, games, variant="gardner", per_shard=7):
    with ShardWriter(str(directory), variant, games_per_shard=per_shard) as writer:
        for game in games:
            writer.add_game(*game)


def test_scores_map_to_values():
    assert score_to_int(cp=35) == 35 and score_to_int(mate=3) == MATE_SCORE - 3 and score_to_int(mate=-2) == -(MATE_SCORE - 2)
    assert score_to_int(cp=10**6) < MATE_SCORE - 999  # a huge cp is never read as a mate
    values = score_to_value(np.array([0, 400, -400, MATE_SCORE - 5, -(MATE_SCORE - 1)]))
    assert values[0] == 0 and np.isclose(values[1], np.tanh(1)) and values[2] == -values[1]
    assert values[3] == 1 and values[4] == -1


def test_games_read_back_exactly_and_splits_partition(tmp_path):
    games = random_games("gardner", 30, seed=1)
    write(tmp_path, games)
    data = GameDataset(str(tmp_path), validation=0.3)
    assert data.num_games == 30 and data.num_positions == sum(len(g[1]) for g in games)
    read = [(fen, list(a), list(s), r) for fen, a, s, r in data.games("all")]
    assert read == [(fen, list(a), list(s), r) for fen, a, s, r in games]
    train = [tuple(a) for _, a, _, _ in data.games("train")]
    validation = [tuple(a) for _, a, _, _ in data.games("validation")]
    assert 0 < len(validation) < 30 and len(train) + len(validation) == 30
    assert sorted(train + validation) == sorted(tuple(a) for _, a, _, _ in games)


def test_batches_are_legal_deterministic_and_cover_the_split(tmp_path):
    games = random_games("gardner", 20, seed=2)
    write(tmp_path, games)
    data = GameDataset(str(tmp_path), validation=0.25)
    batches = list(data.batches(32, split="train", seed=7, shuffle_games=4))
    again = list(data.batches(32, split="train", seed=7, shuffle_games=4))
    other = list(data.batches(32, split="train", seed=8, shuffle_games=4))
    assert all(np.array_equal(a.actions, b.actions) for a, b in zip(batches, again))
    assert not all(np.array_equal(a.actions, b.actions) for a, b in zip(batches, other))
    total = sum(len(b.actions) for b in batches)
    assert total == sum(len(a) for _, a, _, _ in data.games("train"))
    assert all(len(b.actions) == 32 for b in batches[:-1])
    for b in batches:
        assert np.all(b.masks[np.arange(len(b.actions)), b.actions] == 1)  # the move played is legal
        assert b.observations.dtype == np.float32 and set(np.unique(b.results)) <= {-1.0, 0.0, 1.0}
        assert np.all(np.abs(b.scores) <= 1)


def test_result_targets_are_from_the_side_to_move(tmp_path):
    write(tmp_path, random_games("gardner", 4, seed=3, max_plies=300))
    data = GameDataset(str(tmp_path), validation=1.0)  # the validation split keeps game order
    batch, = data.batches(10_000, split="validation")
    expected = []
    for _, actions, _, result in data.games("validation"):
        white = {"1-0": 1.0, "0-1": -1.0}.get(result, 0.0)
        expected += [white if i % 2 == 0 else -white for i in range(len(actions))]
    assert list(batch.results) == expected and any(expected)


def test_corrupt_or_foreign_files_are_refused_by_name(tmp_path):
    write(tmp_path, random_games("gardner", 10, seed=4))
    shard = os.path.join(tmp_path, list_shards(str(tmp_path))[0]["file"])
    data = bytearray(open(shard, "rb").read())
    data[len(data) // 2] ^= 1
    open(shard, "wb").write(bytes(data))
    with pytest.raises(DatasetError, match=os.path.basename(shard) + " is corrupt"):
        list(GameDataset(str(tmp_path)).games())
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / MANIFEST).write_text("not json\n")
    with pytest.raises(DatasetError, match="line 1 is not JSON"):
        GameDataset(str(tmp_path / "other"))
    with pytest.raises(DatasetError, match="no dataset"):
        GameDataset(str(tmp_path / "nowhere"))


def test_interrupted_writes_leave_only_complete_listed_shards(tmp_path):
    write(tmp_path, random_games("gardner", 14, seed=5))
    with open(tmp_path / MANIFEST, "a") as f:
        f.write('{"format": "minichess-games/1", "file": "shard-0000')  # a kill mid-line
    (tmp_path / "shard-000009.npz.tmp").write_bytes(b"half a shard")
    assert [e["file"] for e in list_shards(str(tmp_path))] == ["shard-000000.npz", "shard-000001.npz"]
    ShardWriter(str(tmp_path), "gardner")
    assert not (tmp_path / "shard-000009.npz.tmp").exists()


needs_engine = pytest.mark.needs_engine("fairy-stockfish")


@needs_engine
def test_generation_is_killed_and_resumes_without_loss_or_duplicates(tmp_path):
    from agents.supervised.engine_games import GenerationSettings, generate_games

    games = 30  # enough that the kill, polled every 50 ms, lands before the last one even on a fast machine
    settings = GenerationSettings("gardner", games=games, nodes=10, games_per_chunk=1, opening_plies=2, ply_limit=24)
    script = textwrap.dedent(f"""
        from agents.supervised.engine_games import GenerationSettings, generate_games
        if __name__ == "__main__":
            generate_games({str(tmp_path / 'run')!r}, GenerationSettings(**{settings.__dict__!r}), workers=1,
                           progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=os.getcwd())
    deadline = time.time() + 60
    while time.time() < deadline and len(list_shards(str(tmp_path / "run"))) < 2:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    done_before = len(list_shards(str(tmp_path / "run")))
    assert 2 <= done_before < games, "the kill should land mid-run"
    summary = generate_games(str(tmp_path / "run"), settings, workers=1, progress=False)
    assert summary["games"] == games - done_before
    total = summary["total"]  # the killed call's shards and their cost count too
    assert total["games"] == games and total["positions"] == sum(e["positions"] for e in list_shards(str(tmp_path / "run")))
    assert total["positions_per_s_per_worker"] > 0
    files = [e["file"] for e in list_shards(str(tmp_path / "run"))]
    assert sorted(files) == [f"games-{i:06d}.npz" for i in range(games)]  # each chunk once
    generate_games(str(tmp_path / "fresh"), settings, workers=2, progress=False)
    resumed = sorted((f, tuple(a), r) for f, a, _, r in GameDataset(str(tmp_path / "run")).games())
    fresh = sorted((f, tuple(a), r) for f, a, _, r in GameDataset(str(tmp_path / "fresh")).games())
    assert resumed == fresh  # the same games as a run that was never interrupted
    assert all(e["worker_seconds"] > 0 for e in list_shards(str(tmp_path / "fresh")))  # listed with the shard
    again = generate_games(str(tmp_path / "fresh"), settings, workers=1, progress=False)
    assert again["games"] == 0 and again["total"]["games"] == games and again["total"]["positions_per_s_per_worker"] > 0
    for fen, actions, scores, _ in GameDataset(str(tmp_path / "fresh")).games():
        position = Position("gardner", fen)
        for action in actions:
            position.push_action(int(action))  # every recorded move is legal
        assert np.all(np.abs(scores) <= MATE_SCORE)


def test_a_folder_from_before_shards_carried_their_cost_uses_its_generation_record(tmp_path):
    import json

    from agents.supervised.engine_games import generation_total

    write_shard(str(tmp_path / "games-000000.npz"), get_variant("gardner"),
                [(get_variant("gardner").start_fen, np.array([0, 1], np.uint16), np.zeros(2, np.int16), 0)])
    manifest = tmp_path / "manifest.jsonl"
    entry = json.loads(manifest.read_text())
    assert "worker_seconds" not in entry  # such a shard's cost is unknown
    assert generation_total(str(tmp_path))["positions_per_s_per_worker"] is None
    (tmp_path / "generation.json").write_text(json.dumps(
        {"games": 1, "positions": 2, "targets": 2, "worker_seconds": 4.0, "complete": True}))
    assert generation_total(str(tmp_path))["positions_per_s_per_worker"] == 0.5
    (tmp_path / "generation.json").write_text(json.dumps(
        {"games": 3, "positions": 2, "targets": 2, "worker_seconds": 4.0, "complete": True}))
    assert generation_total(str(tmp_path))["positions_per_s_per_worker"] is None  # it covers other shards


def test_a_missing_engine_says_how_to_install_it(tmp_path, monkeypatch):
    import agents.players.uci
    from agents.supervised.engine_games import GenerationSettings, generate_games

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(agents.players.uci, "SEARCH_DIRS", ())
    with pytest.raises(FileNotFoundError, match="apt install fairy-stockfish"):
        generate_games(str(tmp_path / "out"), GenerationSettings("gardner", games=1), progress=False)


def test_pgn_files_import_into_a_dataset(tmp_path):
    import io

    from minichess_envs.dataset import import_pgn
    from minichess_envs.pgn import game_pgn

    games = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        position = Position("chess")
        while position.outcome() is None and position.ply < 40:
            legal = position.legal_actions()
            position.push_action(int(legal[rng.integers(len(legal))]))
        games.append(position)
    text = "".join(game_pgn(p) + "\n" for p in games)
    text += '[Variant "gardner"]\n\n1. a3 *\n\n'  # another variant: skipped and counted
    stats = import_pgn(io.StringIO(text), str(tmp_path / "pgn"), games_per_shard=5)
    assert stats.games == 13 and dict(stats.skipped) == {"not chess": 1}
    data = GameDataset(str(tmp_path / "pgn"), validation=0.0)
    assert data.variant.name == "chess" and data.num_games == 12
    for (fen, actions, scores, result), played in zip(data.games(), games):
        replay = Position("chess", fen)
        for action in actions:
            replay.push_action(int(action))
        assert replay.fen() == played.fen() and result == played.result() and not np.any(scores)


def test_positions_that_are_not_targets_are_replayed_but_never_batched(tmp_path):
    games = random_games("gardner", 12, seed=5)
    rng = np.random.default_rng(0)
    targets = [rng.random(len(g[1])) < 0.5 for g in games]
    with ShardWriter(str(tmp_path), "gardner", games_per_shard=5) as writer:
        for game, chosen in zip(games, targets):
            writer.add_game(*game, targets=chosen)
    data = GameDataset(str(tmp_path), validation=0.0)
    assert data.num_positions == sum(int(t.sum()) for t in targets)
    assert sum(e["positions"] for e in list_shards(str(tmp_path))) == sum(len(g[1]) for g in games)
    expected = []  # (observation, action) of every target position, by replaying the games ourselves
    for (fen, actions, _, _), chosen in zip(games, targets):
        position = Position("gardner", fen)
        for action, keep in zip(actions, chosen):
            if keep:
                expected.append((position.observation(1, True).tobytes(), int(action)))
            position.push_action(int(action))
    batched = [(o.tobytes(), int(a)) for b in data.batches(16, split="train", shuffle_games=3)
               for o, a in zip(b.observations, b.actions)]
    assert sorted(batched) == sorted(expected)
    with pytest.raises(ValueError, match="targets"):
        ShardWriter(str(tmp_path / "bad"), "gardner").add_game(*games[0], targets=[True])


def test_generation_settings_refuse_a_share_outside_0_1():
    from agents.supervised.engine_games import GenerationSettings

    with pytest.raises(ValueError, match="share in"):
        GenerationSettings("gardner", random_opponent=1.5)


@needs_engine
def test_games_against_a_random_mover_learn_only_the_engines_moves(tmp_path):
    from agents.supervised.engine_games import GenerationSettings, generate_games

    settings = GenerationSettings("gardner", games=4, nodes=10, opening_plies=2, ply_limit=30, random_opponent=1.0,
                                  seed=4)
    summary = generate_games(str(tmp_path), settings, workers=1, progress=False)
    data = GameDataset(str(tmp_path), validation=0.0)
    shard = read_shard(str(tmp_path), list_shards(str(tmp_path))[0], data.variant)
    assert summary["targets"] == data.num_positions == int(shard.targets.sum()) < summary["positions"]
    for g, (fen, actions, scores, _) in enumerate(data.games()):
        flags = shard.targets[shard.offsets[g]:shard.offsets[g + 1]]
        assert len(set(flags[0::2])) == len(set(flags[1::2])) == 1 and flags[0] != flags[1]  # one random side
        assert not np.any(scores[~flags])  # the random mover has no engine score
        position = Position("gardner", fen)
        for action in actions:
            position.push_action(int(action))  # every move is legal


@needs_engine
def test_engine_labels_are_written_whole_and_an_interrupted_set_completes_without_duplicates(tmp_path):
    from agents.supervised.engine_games import GenerationSettings, label_positions

    fens, results = [], []
    for fen, actions, _, result in random_games("gardner", 4, seed=3, max_plies=12):
        position = Position("gardner", fen)
        for action in actions:
            if position.outcome() is None and position.fen() not in fens:
                fens.append(position.fen())
                results.append(result)
            position.push_action(action)
    fens, results = fens[:11], results[:11]
    settings = GenerationSettings("gardner", games=len(fens), nodes=10, games_per_chunk=3)
    directory = str(tmp_path / "labels")
    label_positions(directory, fens, results, settings, prefix="dagger-r1", workers=1, progress=False)
    lines = open(os.path.join(directory, MANIFEST)).read().splitlines(keepends=True)
    assert len(lines) == 4
    with open(os.path.join(directory, MANIFEST), "w") as f:  # as if killed before the last two chunks were listed
        f.writelines(lines[:2])
    again = label_positions(directory, fens, results, settings, prefix="dagger-r1", workers=2, progress=False)
    assert again["positions"] == 11 - 6
    files = sorted(e["file"] for e in list_shards(directory))
    assert files == [f"dagger-r1-{i:06d}.npz" for i in range(4)]
    games = sorted(GameDataset(directory).games(), key=lambda g: fens.index(g[0]))
    assert [g[0] for g in games] == fens and [g[3] for g in games] == results
    for fen, actions, scores, _ in games:
        assert len(actions) == 1 and int(actions[0]) in Position("gardner", fen).legal_actions()
        assert abs(int(scores[0])) <= MATE_SCORE
    with pytest.raises(ValueError, match="11 positions but 10 results"):
        label_positions(directory, fens, results[:10], settings, prefix="x", workers=1, progress=False)


def test_moves_that_draw_at_once_are_marked_where_the_engine_says_winning_as_python_chess_finds_them(tmp_path):
    chess = pytest.importorskip("chess")
    fens = ["7k/8/6K1/8/8/8/8/5Q2 w - - 0 1",  # several queen moves stalemate
            "k7/8/8/8/8/8/1r6/K1B5 w - - 0 1",  # taking the rook leaves too little material to mate
            "k7/8/1K6/8/8/8/8/1R6 w - - 0 1"]  # Rb1-b7 stalemates; most rook moves do not
    games, expected = [], []
    for fen in fens:
        board = chess.Board(fen)
        drawing = set()
        for move in board.legal_moves:
            board.push(move)
            if board.is_stalemate() or board.is_insufficient_material():
                drawing.add(move.uci())
            board.pop()
        assert drawing, fen
        played = next(m.uci() for m in board.legal_moves if m.uci() not in drawing)
        position = Position("chess", fen)
        games.append((fen, [position.move_to_action(played)], [500], "*"))  # winning: marked
        expected.append(sorted(position.move_to_action(m) for m in drawing))
        games.append((fen, [position.move_to_action(played)], [200], "*"))  # not winning enough: none marked
        expected.append([])
        games.append((fen, [position.move_to_action(sorted(drawing)[0])], [500], "*"))  # the move played draws
        expected.append([])
    write(tmp_path, games, variant="chess", per_shard=100)
    batch, = GameDataset(str(tmp_path), validation=1.0, winning_cp=300).batches(100, split="validation")
    assert [sorted(np.flatnonzero(row)) for row in batch.draws] == expected
    assert GameDataset(str(tmp_path), validation=1.0).batches(100, split="validation").__next__().draws is None


def square_or_die_once(flag: str, x: int) -> int:
    """A job whose worker process dies the first time it runs job 3 (the flag file records it)."""
    if x == 3 and not os.path.exists(flag):
        open(flag, "w").close()
        os._exit(9)
    return x * x


def test_a_lost_generation_worker_is_replaced_and_its_chunk_run_again(tmp_path):
    from agents.supervised.engine_games import _run_jobs

    flag = str(tmp_path / "died")
    results = list(_run_jobs(square_or_die_once, [(flag, x) for x in range(6)], workers=2, ray_address=None))
    assert os.path.exists(flag) and sorted(results) == [x * x for x in range(6)]
