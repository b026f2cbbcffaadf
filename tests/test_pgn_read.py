"""Reading PGN: round trips, SAN against Fairy-Stockfish and python-chess, real 8x8 PGN, malformed games."""

from __future__ import annotations

import io
import random

import pytest

from minichess_envs import VARIANTS, Position
from minichess_envs.pgn import AmbiguousMoveError, IllegalMoveError, PgnStats, game_pgn, parse_san, read_pgn


def random_game(variant: str, seed: int, max_plies: int = 200) -> Position:
    rng = random.Random(seed)
    position = Position(variant)
    while not position.is_game_over() and len(position.move_stack) < max_plies:
        position.push(rng.choice(position.legal_moves))
    return position


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_our_pgn_reads_back_move_for_move(variant):
    text = "\n".join(game_pgn(random_game(variant, seed), {"Round": str(seed)}) for seed in range(6))
    stats = PgnStats()
    games = list(read_pgn(io.StringIO(text), stats=stats))
    assert stats.games == 6 and not stats.skipped
    for seed, game in enumerate(games):
        played = random_game(variant, seed)
        assert game.variant.name == variant
        assert game.moves == played.move_stack
        assert game.result == played.result()
        assert game.headers["Round"] == str(seed)
        assert game.position().fen() == played.fen()


@pytest.mark.parametrize("variant", ["gardner", "losalamos", "silverman", "petty", "3x3"])
def test_parse_san_reads_fairy_stockfish_san(variant):
    from oracles import FAIRY_VARIANTS, random_game_fens, sf

    name = FAIRY_VARIANTS[variant]
    checked = 0
    for seed in range(2):
        for fen in random_game_fens(name, 30, seed):
            position = Position(variant, fen)
            for uci in sf.legal_moves(name, fen, []):
                san = sf.get_san(name, fen, uci)
                assert parse_san(position, san).uci() == uci, (fen, san)
                checked += 1
    assert checked > (10 if variant == "3x3" else 300)


def test_parse_san_reads_python_chess_san_on_8x8():
    chess = pytest.importorskip("chess")
    rng = random.Random(3)
    checked = 0
    for _ in range(6):
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 120:
            position = Position("chess", board.fen())
            for move in board.legal_moves:
                assert parse_san(position, board.san(move)).uci() == move.uci()
                checked += 1
            board.push(rng.choice(list(board.legal_moves)))
    assert checked > 5_000


def test_parse_san_errors_name_the_problem():
    position = Position("chess", "4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1")
    with pytest.raises(AmbiguousMoveError, match="Nd2.*b1d2.*f1d2"):
        parse_san(position, "Nd2")
    assert parse_san(position, "Nbd2").uci() == "b1d2"
    with pytest.raises(IllegalMoveError, match="illegal move 'Nd4'"):
        parse_san(position, "Nd4")
    with pytest.raises(IllegalMoveError, match="not SAN or UCI"):
        parse_san(position, "hello")
    promo = Position("chess", "4k3/P7/8/8/8/8/8/4K3 w - - 0 1")
    with pytest.raises(IllegalMoveError, match="promotion piece"):
        parse_san(promo, "a8")
    assert parse_san(promo, "a8=N+").uci() == "a7a8n"
    assert parse_san(promo, "a7a8q").uci() == "a7a8q"  # UCI is accepted too
    castle = Position("chess", "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1")
    assert parse_san(castle, "0-0").uci() == "e1g1" and parse_san(castle, "O-O-O").uci() == "e1c1"


def test_real_8x8_pgn_with_comments_nags_and_variations():
    chess_pgn = pytest.importorskip("chess.pgn")
    import chess

    rng = random.Random(5)
    out, expected = io.StringIO(), []
    for i in range(40):
        board, game = chess.Board(), chess.pgn.Game()
        game.headers["Event"] = f"fixture {i}"
        node = game
        while not board.is_game_over() and board.ply() < 120:
            move = rng.choice(list(board.legal_moves))
            if node is not game and rng.random() < 0.1:  # a side line with its own comment
                side = node.parent.add_variation(rng.choice(list(node.parent.board().legal_moves)))
                side.comment = "also possible"
            node = node.add_variation(move)
            if rng.random() < 0.1:
                node.comment = "[%eval 0.31] [%clk 0:02:59]"
            if rng.random() < 0.05:
                node.nags.add(rng.choice([1, 2, 3, 4, 5, 6]))
            board.push(move)
        game.headers["Result"] = board.result(claim_draw=True)
        expected.append(([m.uci() for m in game.mainline_moves()], game.headers["Result"]))
        print(game, file=out, end="\n\n")
    stats = PgnStats()
    games = list(read_pgn(io.StringIO(out.getvalue()), stats=stats))
    assert [([m.uci() for m in g.moves], g.result) for g in games] == expected
    assert stats.games == 40 and not stats.skipped


LICHESS_STYLE = """\
% an escape line is ignored
[Event "Rated Blitz game"]
[Site "https://example.org/abcd"]
[White "a"]
[Black "b"]
[Result "1-0"]
[TimeControl "180+0"]

1. e4 { [%clk 0:03:00] } 1... e5 { [%clk 0:03:00] } 2. Nf3!? Nc6 $6 3. Bc4 (3. Bb5 a6 { a [bracketed] comment
spanning lines } 4. Ba4) 3... Nf6?! 4. Ng5 d5 5. exd5 Na5 ; a rest-of-line comment
6.Bb5+ c6 7. dxc6 bxc6 8. Qf3 1-0

[Event "no tags needed"]

1. d4 d5 *
"""


def test_lichess_style_export_reads_right():
    chess = pytest.importorskip("chess.pgn")
    games = list(read_pgn(io.StringIO(LICHESS_STYLE)))
    theirs = []
    f = io.StringIO(LICHESS_STYLE)
    while (game := chess.read_game(f)) is not None:
        theirs.append([m.uci() for m in game.mainline_moves()])
    assert [[m.uci() for m in g.moves] for g in games] == theirs
    assert games[0].result == "1-0" and games[0].headers["TimeControl"] == "180+0"
    assert games[1].result == "*"


MALFORMED = """\
[Variant "no-such-variant"]

1. e4 *

[Variant "gardner"]
[SetUp "1"]
[FEN "rnbqk/ppppp/6/PPPPP/RNBQK w - - 0 1"]

1. a3 *

[Variant "gardner"]

1. a3 b3 2. e5 *

[Event "ok"]
[Variant "gardner"]

1. a3 b3 *

[Event broken tag

1. e4 *

[Variant "gardner"]

1. a3 (1. b3 b3 *

[Variant "gardner"]

1. a3 { never closed

[Event "still read"]

1. e4 e5 1/2-1/2
"""


def test_malformed_games_are_skipped_and_counted():
    stats = PgnStats()
    games = list(read_pgn(io.StringIO(MALFORMED), stats=stats))
    assert [g.headers.get("Event") for g in games] == ["ok", "still read"]
    assert [m.uci() for m in games[0].moves] == ["a2a3", "b4b3"]
    assert games[1].variant.name == "chess" and games[1].result == "1/2-1/2"
    assert stats.games == 2
    assert dict(stats.skipped) == {
        "unknown variant": 1, "bad FEN": 1, "illegal move": 1, "malformed tag": 1,
        "unbalanced variation": 1, "unterminated comment": 1,
    }
    assert "2 games read; skipped" in str(stats)


def test_reading_streams_one_game_at_a_time(tmp_path):
    import tracemalloc

    one = game_pgn(random_game("gardner", 0, max_plies=40)) + "\n"

    def lines(n):  # a stream of n games that never exists in memory as a whole
        for _ in range(n):
            yield from io.StringIO(one)

    tracemalloc.start()
    for _ in read_pgn(lines(20)):
        pass
    _, small = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    count = sum(1 for _ in read_pgn(lines(200)))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 200
    assert peak < 2 * small + 200_000  # flat: reading 10x more games does not hold more


# -- the Termination tag: the PGN standard's values (section 9.8.1) ---------------------------------------


def test_termination_tags_are_the_standard_values_python_chess_reads():
    chess_pgn = pytest.importorskip("chess.pgn", reason="python-chess reads the PGN: pip install chess")
    from agents import RandomAgent
    from agents.arena import play_game
    from minichess_envs.env import MiniChessEnv
    from minichess_envs.pgn import TERMINATIONS

    fools_mate = Position("chess")
    for uci in ("f2f3", "e7e5", "g2g4", "d8h4"):
        fools_mate.push_uci(uci)
    mated = chess_pgn.read_game(io.StringIO(game_pgn(fools_mate, {"Termination": "checkmate"})))
    assert not mated.errors and mated.end().board().is_checkmate()
    assert mated.headers["Termination"] == "normal" and mated.end().comment == "checkmate"  # the reason kept

    # the arena adjudicates a draw at the ply limit; an environment truncates (no result)
    stopped = play_game(RandomAgent(0), RandomAgent(1), "gardner", seed=0, ply_limit=4)
    assert stopped.termination == "ply limit" and stopped.result == "1/2-1/2"
    env = MiniChessEnv("gardner", ply_limit=2)
    obs, _ = env.reset(seed=0)
    env.step(int(obs["action_mask"].nonzero()[0][0]))
    truncated = env.unwrapped.to_pgn()
    expected = {stopped.pgn: "adjudication", truncated: "unterminated"}
    for seed in range(30):  # random games end by the rules: "normal"
        record = play_game(RandomAgent(seed), RandomAgent(seed + 1), "3x3", seed=seed)
        if record.termination != "ply limit":
            expected[record.pgn] = "normal"
    assert "normal" in expected.values()
    for text, value in expected.items():
        headers = chess_pgn.read_headers(io.StringIO(text))
        assert headers["Termination"] == value and value in TERMINATIONS, text


def test_every_reason_recorded_here_maps_to_a_standard_value():
    from agents.arena import ILLEGAL_MOVE, PLY_LIMIT
    from agents.play import terminal
    from minichess_envs import Termination
    from minichess_envs.pgn import TERMINATIONS, termination_tag

    reasons = [t.name.lower().replace("_", " ") for t in Termination]
    reasons += [ILLEGAL_MOVE, PLY_LIMIT, terminal.RESIGNATION, terminal.TIME_FORFEIT, terminal.ABANDONED,
                "truncated at the ply limit"]
    for reason in reasons:
        for result in ("1-0", "1/2-1/2", "*"):
            assert termination_tag(reason, result) in TERMINATIONS, reason
    assert termination_tag(PLY_LIMIT, "1/2-1/2") == "adjudication" and termination_tag(PLY_LIMIT, "*") == "unterminated"
    assert termination_tag(ILLEGAL_MOVE) == "rules infraction" and termination_tag("Time forfeit") == "time forfeit"
    assert termination_tag("my own words") == "my own words"  # not ours to rename


def test_older_files_with_our_old_termination_words_still_read():
    old = ('[Event "minichess-envs arena: gardner"]\n[Result "1-0"]\n[Variant "gardner"]\n[SetUp "1"]\n'
           '[FEN "rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"]\n[Termination "checkmate"]\n\n1. Nc3 1-0\n\n'
           '[Event "x"]\n[Result "1/2-1/2"]\n[Variant "gardner"]\n[Termination "ply limit"]\n\n1. Nc3 1/2-1/2\n')
    stats = PgnStats()
    first, second = read_pgn(io.StringIO(old), stats=stats)
    assert stats.games == 2 and not stats.skipped
    assert first.headers["Termination"] == "checkmate" and first.termination == "normal"
    assert second.termination == "adjudication"
    rewritten = game_pgn(first.position(), {"Termination": first.headers["Termination"], "Result": first.result})
    assert '[Termination "normal"]' in rewritten and "{checkmate} 1-0" in rewritten
