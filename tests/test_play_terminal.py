"""`minichess play` driven through its stdin and stdout, as a script or another program would.

The test keeps its own copy of the game: it plays its moves into it and reads
the agent's replies off the transcript, so what the program prints is checked
against the rules at every move, and the saved PGN against the game played.
"""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys

import pytest

from agents import MinimaxAgent
from agents.play.terminal import Clock, TerminalGame, board_text, parse_clock
from minichess_envs import Position
from minichess_envs.engine import BLACK, WHITE
from minichess_envs.pgn import PgnStats, parse_san, read_pgn, san

PROMPT = "your move: "
LAST = re.compile(r"last move: \d+\.(?:\.\.)? (\S+) \((.+)\)")


def read_game(text: str):
    """The one game in PGN ``text``, read by our reader (which skips games it cannot read)."""
    stats = PgnStats()
    games = list(read_pgn(io.StringIO(text), stats=stats))
    assert len(games) == 1, str(stats)
    return games[0]


class Session:
    """``minichess play ARGS`` in a subprocess; :meth:`until_prompt` reads up to the next prompt."""

    def __init__(self, *args: str):
        env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minichess_envs.cli", "play", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8", env=env,
        )
        self.transcript = ""

    def until_prompt(self) -> str | None:
        """Output up to and including the next prompt; ``None`` (all the rest read) when the program ends."""
        out = []
        while True:
            ch = self.proc.stdout.read(1)
            if not ch:
                self.transcript += "".join(out)
                self.rest = "".join(out)
                return None
            out.append(ch)
            if ch == " " and "".join(out[-len(PROMPT):]) == PROMPT:
                text = "".join(out)
                self.transcript += text
                return text

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close(self) -> int:
        self.proc.stdin.close()
        self.transcript += self.proc.stdout.read()
        return self.proc.wait(timeout=30)


def replies(text: str, agent: str) -> list[str]:
    """The SAN of the agent's moves announced in ``text``."""
    return [m.group(1) for m in LAST.finditer(text) if m.group(2) == agent]


def play_through(args: list[str], variant: str, human: int, agent: str, seed: int, fen: str | None = None,
                 use_uci_every: int = 2):
    """Play a whole game as ``human`` with random legal moves; returns (our copy of the game, transcript, pgn path)."""
    rng = random.Random(seed)
    ours = Position(variant, fen)
    session = Session(*args)
    moves = 0
    while True:
        text = session.until_prompt()
        chunk = text if text is not None else session.rest
        for reply in replies(chunk, agent):
            assert ours.turn != human, f"the agent moved out of turn:\n{session.transcript}"
            ours.push(parse_san(ours, reply))  # the agent's move, as printed, must be legal
        if text is None:
            break
        assert ours.turn == human and not ours.is_game_over(), session.transcript
        move = rng.choice(ours.legal_moves)
        session.send(move.uci() if moves % use_uci_every == 0 else san(ours, move))
        ours.push(move)
        moves += 1
    assert session.close() == 0, session.transcript
    assert "Traceback" not in session.transcript
    path = re.search(r"game saved to (.+)", session.transcript).group(1).strip()
    return ours, session.transcript, path


@pytest.mark.parametrize("variant, colour, seed", [("3x3", "white", 0), ("3x3", "black", 1), ("gardner", "white", 2)])
def test_a_whole_game_against_random_through_pipes(tmp_path, variant, colour, seed):
    pgn = tmp_path / "game.pgn"
    human = WHITE if colour == "white" else BLACK
    ours, transcript, path = play_through(
        [variant, "--opponent", "random", "--color", colour, "--seed", str(seed), "--pgn", str(pgn)],
        variant, human, "random", seed)
    assert path == str(pgn)
    outcome = ours.outcome()
    ended = outcome.result() if outcome else "1/2-1/2"  # otherwise the ply limit adjudicated a draw
    assert outcome or ours.ply == ours.variant.ply_limit
    assert f"game over: {ended}" in transcript
    game = read_game(pgn.read_text())
    assert game.position().move_stack == ours.move_stack
    assert game.headers["Result"] == ended
    assert game.headers["White" if human == WHITE else "Black"] == "you"
    assert game.headers["Black" if human == WHITE else "White"] == "random"


def test_a_whole_game_against_a_saved_agent(tmp_path):
    saved = tmp_path / "agent"
    MinimaxAgent(1, seed=3, name="saved-minimax").save(str(saved))
    pgn = tmp_path / "game.pgn"
    ours, transcript, _ = play_through(
        ["gardner", "--opponent", str(saved), "--color", "black", "--seed", "5", "--pgn", str(pgn)],
        "gardner", BLACK, "saved-minimax", 5)
    assert ours.ply > 0 and "game over:" in transcript
    game = read_game(pgn.read_text())
    assert game.headers["White"] == "saved-minimax"
    assert game.position().move_stack == ours.move_stack
    # Every move of the saved agent is one its depth-1 search ranks best (it plays on a copy of our game).
    check = Position("gardner")
    agent = MinimaxAgent(1)
    for move in ours.move_stack:
        if check.turn == WHITE:
            assert check.move_code(move) in agent.best_moves(check)
        check.push(move)


def test_8x8_pgn_reads_in_python_chess(tmp_path):
    chess_pgn = pytest.importorskip("chess.pgn")
    pgn = tmp_path / "game.pgn"
    ours, _, _ = play_through(["chess", "--opponent", "random", "--seed", "4", "--ply-limit", "40",
                               "--pgn", str(pgn)], "chess", WHITE, "random", 4)
    with open(pgn) as f:
        game = chess_pgn.read_game(f)
    assert not game.errors
    board = game.end().board()
    assert [m.uci() for m in game.mainline_moves()] == [m.uci() for m in ours.move_stack]
    assert board.board_fen() == ours.fen().split()[0]


def run_script(*lines: str, args=("gardner", "--opponent", "random", "--seed", "0"), tmp_path=None):
    pgn = os.path.join(tmp_path, "game.pgn")
    proc = subprocess.run([sys.executable, "-m", "minichess_envs.cli", "play", *args, "--pgn", pgn],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, encoding="utf-8",
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"}, timeout=60)
    return proc, pgn


def test_illegal_and_ambiguous_input_is_explained(tmp_path):
    fen = "4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1"  # knights on b1 and f1 both reach d2
    proc, pgn = run_script("Nd2", "Ke3", "e4", "e1e3", "Zz9", "quit",
                           args=("chess", "--fen", fen, "--opponent", "random"), tmp_path=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0 and "Traceback" not in out + proc.stderr
    assert "ambiguous move 'Nd2'" in out and ": b1d2, f1d2" in out
    assert "illegal move 'Ke3'" in out  # a king moves one square
    assert "illegal move 'e4'" in out  # no pawns
    assert "illegal move 'e1e3'" in out
    assert "cannot read move 'Zz9'" in out
    game = read_game(open(pgn).read())
    assert game.position().ply == 0 and game.headers["Result"] == "*"


def test_promotion_without_a_piece_asks_for_one(tmp_path):
    proc, pgn = run_script("c5", "c4c5", "c5=N", "quit", args=("gardner", "--fen", "k4/2P2/5/5/4K w - - 0 1"),
                           tmp_path=tmp_path)
    assert proc.stdout.count("needs its promotion piece (e.g. c5=Q)") == 2  # c5 and c4c5
    assert read_game(open(pgn).read()).moves[0].uci() == "c4c5n"


def test_undo_takes_back_your_move_and_the_reply(tmp_path):
    proc, pgn = run_script("undo", "a3", "undo", "b3", "quit", tmp_path=tmp_path)
    assert "nothing to undo" in proc.stdout
    game = read_game(open(pgn).read())
    stack = [m.uci() for m in game.position().move_stack]
    assert stack[0] == "b2b3" and len(stack) == 2  # a3 and its reply were taken back


def test_resign_hint_flip_and_moves(tmp_path):
    proc, pgn = run_script("moves", "hint", "flip", "resign", args=("3x3", "--opponent", "random"),
                           tmp_path=tmp_path)
    out = proc.stdout
    start = Position("3x3")
    listed = re.search(r"legal moves: (.+)", out).group(1).split()
    assert sorted(listed) == sorted(san(start, m) for m in start.legal_moves)
    hinted = re.search(r"hint \(perfect\): (\S+)", out).group(1)
    # the tablebase's hint keeps the start position's value (a draw) for White
    from minichess_envs.tablebase import Tablebase

    tb = Tablebase.load("3x3")
    value = {m.move: m.value for m in tb.move_values(start)}[parse_san(start, hinted)]
    assert value == tb.probe(start)[0]
    assert "1 ♖ ♕ ♔" in out  # flipped: h-side (c file) on the left
    game = read_game(open(pgn).read())
    assert game.headers["Result"] == "0-1" and game.headers["Termination"] == "normal"


def test_bad_opponent_and_fen_are_one_line_errors(tmp_path):
    for args, message in [(("gardner", "--opponent", "minimax:x"), "depth must be a positive integer"),
                          (("gardner", "--opponent", "nonsense"), "unknown agent 'nonsense'"),
                          (("gardner", "--opponent", "perfect"), "3x3 only"),
                          (("3x3", "--opponent", "stockfish"), "stockfish plays only standard chess"),
                          (("gardner", "--fen", "bad fen"), "bad FEN")]:
        proc, _ = run_script("quit", args=args, tmp_path=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_the_clock_forfeits_a_slow_player():
    class SlowTyping(io.StringIO):
        """Each line takes the person 200 s to type."""

        time = 0.0

        def readline(self, *args):
            SlowTyping.time += 200
            return super().readline(*args)

    # 400 s on the first move with a 5 minute clock, half of it on a move that is not legal
    game = TerminalGame("gardner", MinimaxAgent(1), WHITE, clock=parse_clock("5+2"),
                        stdin=SlowTyping("b4\nb3\n"), stdout=io.StringIO(), now=lambda: SlowTyping.time)
    assert game.run() == "0-1" and game.termination == "time forfeit"
    assert game.position.ply == 0
    clock = Clock(10, 1)
    assert clock.spend(WHITE, 4) and clock.left[WHITE] == 7
    with pytest.raises(ValueError, match="bad clock"):
        parse_clock("five")


def test_board_text_flips():
    pos = Position("gardner")
    assert board_text(pos, unicode=False).splitlines()[0] == "5 r n b q k"
    assert board_text(pos, flipped=True, unicode=False).splitlines()[0] == "1 K Q B N R"
    assert board_text(pos, flipped=True, unicode=False).splitlines()[-1] == "  e d c b a"


def test_a_line_that_is_not_utf8_is_answered_and_the_game_is_kept(tmp_path):
    pgn = os.path.join(tmp_path, "game.pgn")
    proc = subprocess.run([sys.executable, "-m", "minichess_envs.cli", "play", "gardner", "--seed", "0", "--ascii",
                           "--pgn", pgn], input=b"b3\n\xff\xfe\xc3(\n\x80b4?\nquit\n", capture_output=True,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8:strict", "PYTHONUTF8": "1"}, timeout=60)
    out = proc.stdout.decode("utf-8")
    assert proc.returncode == 0 and "Traceback" not in out + proc.stderr.decode(), proc.stderr
    assert out.count("not UTF-8 text") == 2
    game = read_game(open(pgn).read())
    assert [m.uci() for m in game.position().move_stack][0] == "b2b3" and game.headers["Result"] == "*"


@pytest.mark.parametrize("args, message", [
    (("--clock", "nan"), "--clock: bad clock 'nan': the time must be a finite number"),
    (("--clock", "inf"), "--clock: bad clock 'inf': the time must be a finite number"),
    (("--clock", "5+nan"), "--clock: bad clock '5+nan': the time must be a finite number"),
    (("--clock", "-1"), "--clock: bad clock '-1': the time must be positive"),
    (("--ply-limit", "-1"), "argument --ply-limit: must be a positive integer"),
    (("--ply-limit", "0"), "argument --ply-limit: must be a positive integer"),
    (("--opponent", "MINIMAX:9"), "--opponent: minimax depth 9 is more than the command line allows (8)"),
    (("--opponent", " Minimax:12 "), "--opponent: minimax depth 12 is more than the command line allows (8)"),
    (("--hint", "minimax:²"), "--hint: agent 'minimax:²': the depth must be a positive integer"),
])
def test_bad_flags_are_refused_naming_the_flag(tmp_path, args, message):
    proc, pgn = run_script("quit", args=("gardner", *args), tmp_path=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not os.path.exists(pgn)  # refused before the game


def test_ply_limit_and_clock_checked_in_the_library_too():
    with pytest.raises(ValueError, match="ply limit must be a positive integer"):
        TerminalGame("gardner", MinimaxAgent(1), ply_limit=-1)
    for text in ("nan", "inf", "-inf", "1+inf"):
        with pytest.raises(ValueError, match="finite"):
            parse_clock(text)


# -- board games ----------------------------------------------------------------------------------------------


def play_board_game(name: str, opponent: str, human: int, seed: int):
    """A whole game of ``name`` through :class:`BoardGameTerminal`, the person playing random legal moves by name,
    each checked against our own copy of the game; returns (our copy, transcript, result)."""
    from agents.games import new_game
    from agents.play.terminal import BoardGameTerminal
    from agents.spec import from_spec

    rng, ours = random.Random(seed), new_game(name)

    class Person(io.StringIO):
        """Reads the agent's moves off the transcript, then answers with a random legal move's name."""

        seen = 0

        def catch_up(self):
            for line in out.getvalue()[self.seen:].splitlines():
                if line.startswith("last move: ") and line.endswith(f"({agent.name})"):
                    names = [ours.action_name(a) for a in ours.legal_actions()]
                    ours.step(ours.legal_actions()[names.index(line.split()[2])])  # as printed, it must be legal
            self.seen = len(out.getvalue())

        def readline(self):
            self.catch_up()
            assert ours.to_play() == human and not ours.is_over(), out.getvalue()
            action = rng.choice(ours.legal_actions())
            name = ours.action_name(action)
            ours.step(action)
            return name + "\n"

    out, person = io.StringIO(), Person()
    agent = from_spec(opponent, name, seed=seed)
    game = BoardGameTerminal(name, agent, human, seed=seed, stdin=person, stdout=out)
    result = game.run()
    person.catch_up()
    return game, ours, out.getvalue(), result


@pytest.mark.parametrize("name, opponent, human, seed", [
    ("tictactoe", "perfect", 0, 0), ("tictactoe", "perfect", 1, 1), ("connect_four", "random", 1, 2),
    ("gomoku7k4", "alpha-beta:1", 0, 3), ("checkers", "random", 0, 4)])
def test_a_whole_board_game_by_move_names(name, opponent, human, seed):
    game, ours, transcript, result = play_board_game(name, opponent, human, seed)
    assert ours.is_over() and "Traceback" not in transcript
    assert result == {None: "1/2-1/2", 0: "1-0", 1: "0-1"}[ours.winner()]
    if opponent == "perfect":  # Tic-Tac-Toe is a draw: the solver never loses
        assert ours.winner() in (None, 1 - human), transcript
    assert transcript.splitlines()[-1] == "moves: " + " ".join(game.moves) and len(game.moves) == ours.plies


def test_board_game_commands_undo_a_whole_multi_jump():
    from agents.games import Checkers
    from agents.play.terminal import BoardGameTerminal

    # the first player's man on 9 jumps 14 and then 23 (a double jump), the second player to move after it
    script = io.StringIO("moves\n9x18\nboard\n18x27\nundo\nmoves\nnonsense\nresign\n")
    out = io.StringIO()
    game = BoardGameTerminal("checkers", RandomAgentStub(), 0, stdin=script, stdout=out)
    game.game = Checkers.from_squares(first_men=[9, 1], second_men=[14, 23, 32], to_play=0)
    assert game.run() == "0-1"
    text = out.getvalue()
    assert text.count("\nlegal moves: 9x18\n") == 2  # again after the undo
    assert "'nonsense' is no legal move here; legal moves: 9x18" in text
    assert game.moves == [] and game.game.to_play() == 0  # the whole jump taken back, the agent's reply too


class RandomAgentStub:
    """Plays the first legal action (the reply the undo must take back too)."""

    name = "first legal"

    def act(self, observation, action_mask, position=None):
        return position.legal_actions()[0]


@pytest.mark.parametrize("args, message", [
    (("checkers", "--opponent", "minimax:2"), "--opponent: 'minimax' plays chess variants, not checkers"),
    (("checkers", "--color", "white"), "--color: a board game's seats are first and second"),
    (("connect_four", "--fen", "x"), "--fen applies to chess variants, not connect_four"),
    (("gardner", "--color", "second"), "--color: a chess variant's colours are white and black, not second"),
    (("tictactoe", "--opponent", "alpha-beta:3"), "tictactoe has no 'alpha-beta' player"),
])
def test_board_game_flags_are_refused_naming_the_flag(args, message):
    proc = subprocess.run([sys.executable, "-m", "minichess_envs.cli", "play", *args], input="quit\n",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
