"""``minichess play``: a person against an agent in the terminal, or through pipes (docs/play.md): a chess variant
(:class:`TerminalGame`) or a board game (:class:`BoardGameTerminal`)."""

from __future__ import annotations

import dataclasses
import datetime
import io
import math
import random
import sys
import time
from typing import Callable, TextIO

from agents.arena import board_outcome, chess_outcome, close_agents
from agents.base import Agent
from agents.games import SEAT_NAMES, new_game
from agents.players.uci import EngineNotFoundError
from agents.spec import LOCAL_LIMITS, board_game_kinds, check_limits, from_spec, is_board_game
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import BLACK, COLOR_NAMES, UNICODE_PIECES, WHITE, Move, Position
from minichess_envs.pgn import game_pgn, parse_san, san
from minichess_envs.players import choose_action, legal_action
from minichess_envs.variants import get_variant

RESIGNATION, TIME_FORFEIT, ABANDONED = "resignation", "time forfeit", "abandoned"
_ASCII = str.maketrans({symbol: letter for letter, symbol in UNICODE_PIECES.items()})


@dataclasses.dataclass
class Clock:
    """Seconds left for each side; ``increment`` is added after every move."""

    seconds: float
    increment: float = 0.0

    def __post_init__(self):
        self.left = [float(self.seconds), float(self.seconds)]

    def spend(self, colour: int, seconds: float) -> bool:
        """Charge a move's thinking time; ``False`` if the flag fell."""
        self.left[colour] -= seconds
        if self.left[colour] < 0:
            return False
        self.left[colour] += self.increment
        return True

    def text(self) -> str:
        left = [max(0.0, s) for s in self.left]
        return "   ".join(f"{COLOR_NAMES[c]} {int(left[c] // 60)}:{left[c] % 60:04.1f}" for c in (WHITE, BLACK))


def parse_clock(text: str) -> Clock:
    """``"5"`` (minutes each) or ``"5+3"`` (minutes, plus seconds per move)."""
    minutes, _, increment = text.partition("+")
    try:
        clock = Clock(float(minutes) * 60, float(increment or 0))
    except ValueError:
        raise ValueError(f"bad clock {text!r}: expected MINUTES or MINUTES+SECONDS, e.g. 5+3") from None
    # float() reads "nan" and "inf": a NaN clock never runs out, an infinite one cannot be shown
    if not (math.isfinite(clock.seconds) and math.isfinite(clock.increment)):
        raise ValueError(f"bad clock {text!r}: the time must be a finite number")
    if clock.seconds <= 0 or clock.increment < 0:
        raise ValueError(f"bad clock {text!r}: the time must be positive")
    return clock


def board_text(position: Position, flipped: bool = False, unicode: bool = True) -> str:
    """The board with rank and file labels, White at the bottom unless ``flipped``."""
    text = position.unicode() if unicode else position.unicode(empty=".").translate(_ASCII)
    if not flipped:
        return text
    *ranks, files = text.splitlines()  # "5 r n b q k" and "  a b c d e": one character a square
    return "\n".join([rank[:2] + rank[:1:-1] for rank in reversed(ranks)] + ["  " + files[:1:-1]])


def _can_print_unicode(stream: TextIO) -> bool:
    try:
        "♔·".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def move_number(position: Position) -> str:
    """``"3."`` with White to move, ``"3..."`` with Black."""
    return f"{position.fullmove_number}{'.' if position.turn == WHITE else '...'}"


def loss(colour: int) -> str:
    """The result when ``colour`` loses."""
    return "0-1" if colour == WHITE else "1-0"


def chess_pgn(position: Position, headers: dict, names: tuple[str, str], result: str, termination: str | None) -> str:
    """The game's PGN: ``headers`` (``Event``), the players' ``names``, the result and how the game ended."""
    headers = {**headers, "White": names[0], "Black": names[1], "Result": result}
    return game_pgn(position, {**headers, "Termination": termination} if termination else headers)


class Console:
    """A person at ``stdin`` and ``stdout`` (in seat ``human``: 0 White or the first player) playing ``agent`` in
    ``rules``, a chess variant or a board game as :func:`~agents.spec.from_spec` takes it: what a terminal game says and
    reads, and the commands of both kinds of game. A subclass plays the moves (:meth:`choose`, :meth:`play`,
    :meth:`human_move`, :meth:`undo`), names them (:meth:`move_name`, :meth:`legal_names`) and shows the game
    (:meth:`show`, ``HELP``)."""

    HELP: str

    def __init__(self, rules, agent: Agent, human: int, hint: str, seed: int | None, stdin: TextIO | None,
                 stdout: TextIO | None):
        self.rules = rules
        self.agent = agent
        self.human = human
        it = getattr(agent, "name", "agent")
        self.names = ("you", it) if human == 0 else (it, "you")
        self.hint_spec = hint
        self._hint_agent = None
        self.seed = seed
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.result, self.termination = "*", None
        if hasattr(agent, "reset"):
            agent.reset(seed)

    def say(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def read(self, prompt: str) -> str | None:
        """One line of input (``None`` at its end)."""
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            self.say()
            return None
        if not self.stdin.isatty():
            # echo piped input, so a transcript reads like a session ("?" for bytes that were not text: any
            # terminal can show it)
            self.say(line.rstrip("\n").replace("\ufffd", "?"))
        return line

    def finish(self, result: str, termination: str) -> None:
        self.result, self.termination = result, termination

    def agent_turn(self) -> None:
        try:
            move = self.choose(self.agent)
        except Exception as exc:  # an engine that died, a broken checkpoint, a missing extra: end the game, keep it
            self.say(f"error: {self.names[1 - self.human]} failed to move: {type(exc).__name__}: {exc}")
            return self.finish("*", ABANDONED)
        self.play(move)
        if self.termination is None:
            self.show()

    def human_turn(self, prompt: str) -> None:
        """Read a line: a command (:meth:`command`) or the person's move (:meth:`human_move`)."""
        line = self.read(prompt)
        if line is None:
            self.say("(end of input: the game stops here)")
            return self.finish("*", ABANDONED)
        word = line.strip()
        if not word:
            return
        if "\ufffd" in word:  # bytes that were not text (see _lenient): say so, the game goes on
            return self.say("? that line is not UTF-8 text: type a move or 'help'")
        if not self.command(word.lower()):
            self.human_move(word)

    def command(self, command: str) -> bool:
        """Do what ``command`` (in lower case) says; ``False`` if it is no command."""
        if command in ("help", "?"):
            self.say(self.HELP)
        elif command == "moves":
            self.say("legal moves: " + self.legal_names())
        elif command == "board":
            self.show()
        elif command == "undo":
            self.undo()
        elif command == "hint":
            self.hint()
        elif command == "resign":
            self.finish(loss(self.human), RESIGNATION)
        elif command in ("quit", "exit"):
            self.finish("*", ABANDONED)
        else:
            return False
        return True

    def hint(self) -> None:
        try:
            if self._hint_agent is None:
                self._hint_agent = from_spec(self.hint_spec, self.rules, seed=self.seed)
            move = self.choose(self._hint_agent)
        except (ValueError, OSError, RuntimeError, ImportError) as exc:  # ImportError: a MissingExtraError too
            return self.say(f"? no hint: {exc}")
        self.say(f"hint ({self._hint_agent.name}): {self.move_name(move)}")


class TerminalGame(Console):
    """One chess game between a person (reading ``stdin``) and ``agent``; :meth:`run` plays it. ``hint`` is the spec
    of the agent whose move ``hint`` suggests; ``now`` is the clock's time source (seconds)."""

    HELP = """\
Type a move in SAN (Nf3, exd5, O-O, c5=Q) or UCI (g1f3), or a command:
  moves   list the legal moves        hint    suggest a move
  undo    take back your last move    flip    turn the board around
  board   show the board again        resign  give up the game
  quit    stop here (the game is saved unfinished)   help    this text"""

    def __init__(self, variant: str, agent: Agent, human: int = WHITE, *, fen: str | None = None,
                 hint: str | None = None, clock: Clock | None = None, ply_limit: int | None = None,
                 seed: int | None = None, unicode: bool | None = None, stdin: TextIO | None = None,
                 stdout: TextIO | None = None, now: Callable[[], float] = time.monotonic):
        self.variant = get_variant(variant)
        self.position = Position(self.variant, fen)
        if ply_limit is not None and (not isinstance(ply_limit, int) or isinstance(ply_limit, bool) or ply_limit < 1):
            raise ValueError(f"the ply limit must be a positive integer, not {ply_limit!r}")
        self.ply_limit = self.variant.ply_limit if ply_limit is None else ply_limit
        super().__init__(self.variant, agent, human, hint or ("perfect" if self.variant.name == "3x3" else "minimax:2"),
                         seed, stdin, stdout)
        self.encoding = ObservationEncoding(self.variant)
        self.clock = clock
        self.unicode = _can_print_unicode(self.stdout) if unicode is None else unicode
        self.now = now
        self.flipped = human == BLACK
        self.shown = -1  # the ply of the board last printed
        self._thinking_since = (-1, 0.0)  # (ply, time) the side to move began its turn

    def show(self) -> None:
        self.shown = self.position.ply
        self.say()
        self.say(board_text(self.position, self.flipped, self.unicode))
        status = []
        if self.position.ply:
            last = self.position.pop()
            who = "you" if self.position.turn == self.human else self.names[1 - self.human]
            status.append(f"last move: {move_number(self.position)} {san(self.position, last)} ({who})")
            self.position.push(last)
        if self.position.is_check() and not self.position.is_game_over():
            status.append("check")
        if self.clock:
            status.append(self.clock.text())
        if status:
            self.say("   ".join(status))

    def legal_names(self) -> str:
        return " ".join(san(self.position, move) for move in self.position.legal_moves)

    def move_name(self, move: Move) -> str:
        return san(self.position, move)

    def choose(self, agent: Agent) -> Move:
        return self.position.action_to_move(choose_action(agent, self.position, self.encoding))

    def run(self) -> str:
        """Play until the game ends; returns the result (``"*"`` if abandoned)."""
        self.say(f"{self.variant.name} ({self.variant.width}x{self.variant.height}): you play "
                 f"{COLOR_NAMES[self.human]} against {self.names[1 - self.human]}. Type 'help' for commands.")
        self.show()
        while self.termination is None:
            if self._thinking_since[0] != self.position.ply:  # commands and bad input do not stop the clock
                self._thinking_since = (self.position.ply, self.now())
            result, termination = chess_outcome(self.position, self.ply_limit)
            if termination:
                self.finish(result, termination)
            elif self.position.turn == self.human:
                self.human_turn(f"{move_number(self.position)} your move: ")
            else:
                self.agent_turn()
        if self.shown != self.position.ply:
            self.show()
        winner = {"1-0": "white wins", "0-1": "black wins", "1/2-1/2": "draw", "*": "unfinished"}[self.result]
        self.say(f"game over: {self.result} ({winner}, {self.termination})")
        return self.result

    def play(self, move: Move) -> None:
        """Play ``move`` for the side to move, unless its flag falls."""
        if self.clock and not self.clock.spend(self.position.turn, self.now() - self._thinking_since[1]):
            return self.finish(loss(self.position.turn), TIME_FORFEIT)
        self.position.push(move)

    def command(self, command: str) -> bool:
        if command == "flip":
            self.flipped = not self.flipped
            command = "board"  # shown turned around
        return super().command(command)

    def human_move(self, word: str) -> None:
        try:
            move = parse_san(self.position, word)  # SAN or UCI
        except ValueError as exc:  # IllegalMoveError and AmbiguousMoveError are ValueErrors
            return self.say(f"? {exc}")
        self.play(move)

    def undo(self) -> None:
        """Take back the person's last move and the agent's reply to it."""
        stack = self.position.move_stack
        # the person's moves are the plies played with the person to move
        mine = [i for i in range(len(stack)) if (self.position.turn + len(stack) - i) % 2 == self.human]
        if not mine:
            return self.say("? nothing to undo: you have not moved yet")
        while self.position.ply > mine[-1]:
            self.position.pop()
        self.show()

    def pgn(self) -> str:
        return chess_pgn(self.position, {"Event": "minichess play"}, self.names, self.result, self.termination)


def board_game_text(game) -> str:
    """A board game's :meth:`~agents.games.Game.cells` with column letters and row numbers counted from the bottom
    (as Gomoku's move names); checkers numbers its empty dark squares 1-32 instead (as its move names)."""
    rows, labels = game.cells(), getattr(game, "square_labels", lambda: None)()
    width = max([2] + [len(label) + 1 for row in labels or [] for label in row])
    lines = []
    for r, row in enumerate(rows):
        cells = [piece or (labels[r][c] if labels else ".") or " " for c, piece in enumerate(row)]
        lines.append(("" if labels else f"{len(rows) - r:>2} ") + "".join(cell.rjust(width) for cell in cells))
    if not labels:
        lines.append("   " + "".join("abcdefghijklmnopqrs"[c].rjust(width) for c in range(len(rows[0]))))
    return "\n".join(lines)


class BoardGameTerminal(Console):
    """One game of board game ``name`` (``agents.games.new_game``) between a person (reading ``stdin``, moving
    ``human``: 0 first, 1 second) and ``agent``; :meth:`run` plays it. ``hint`` is the spec of the agent whose
    move ``hint`` suggests (default: the game's exact solver or alpha-beta depth 2)."""

    HELP = """\
Type a move by its name (see 'moves'), or a command:
  moves   list the legal moves        hint    suggest a move
  undo    take back your last move    board   show the board again
  resign  give up the game            quit    stop here
  help    this text"""

    def __init__(self, name: str, agent: Agent, human: int = 0, *, hint: str | None = None, seed: int | None = None,
                 stdin: TextIO | None = None, stdout: TextIO | None = None):
        self.name = name
        self.game = new_game(name)
        self.history = []  # the game before each move, for undo
        self.moves: list[str] = []
        super().__init__(name, agent, human, hint or ("alpha-beta:2" if "alpha-beta" in board_game_kinds(name)
                                                      else "perfect"), seed, stdin, stdout)

    def show(self) -> None:
        self.say()
        self.say(board_game_text(self.game))
        if self.moves:
            self.say(f"last move: {self.moves[-1]} ({self.names[self.history[-1].to_play()]})")

    def legal_names(self) -> str:
        return " ".join(self.game.action_name(action) for action in self.game.legal_actions())

    def move_name(self, action: int) -> str:
        return self.game.action_name(action)

    def choose(self, agent: Agent) -> int:
        return choose_action(agent, self.game)

    def run(self) -> str:
        """Play until the game ends; returns the result, the first player's points first (``"*"`` if abandoned)."""
        pieces = " and ".join(f"{SEAT_NAMES[p]} ({self.names[p]})" for p in (0, 1))
        self.say(f"{self.name}: {pieces}; you move {SEAT_NAMES[self.human]}. Type 'help' for commands.")
        self.show()
        while self.termination is None:
            if self.game.is_over():
                self.finish(*board_outcome(self.game))
                winner = self.game.winner()
                self.say(f"game over: {self.result} ({'draw' if winner is None else self.names[winner] + ' won'})")
            elif self.game.to_play() == self.human:
                self.human_turn(f"your move ({SEAT_NAMES[self.human]}): ")
            else:
                self.agent_turn()
        if self.termination == RESIGNATION:
            self.say(f"game over: {self.result} (you resigned)")
        self.say("moves: " + " ".join(self.moves))
        return self.result

    def play(self, action: int) -> None:
        self.history.append(self.game.copy())
        self.moves.append(self.game.action_name(action))
        self.game.step(action)

    def human_move(self, word: str) -> None:
        word = word.lower()
        try:
            action = legal_action(self.game, word, "you")
        except ValueError:  # IllegalMoveError
            return self.say(f"? {word!r} is no legal move here; legal moves: {self.legal_names()}")
        self.play(action)
        if self.game.to_play() == self.human and not self.game.is_over():  # a jump goes on: show where
            self.show()

    def undo(self) -> None:
        """Take back the person's last move (a whole multi-jump) and the agent's replies after it."""
        starts = [i for i, before in enumerate(self.history)  # where the person's turns began
                  if before.to_play() == self.human and (i == 0 or self.history[i - 1].to_play() != self.human)]
        if not starts:
            return self.say("? nothing to undo: you have not moved yet")
        self.game = self.history[starts[-1]]
        del self.history[starts[-1]:], self.moves[starts[-1]:]
        self.show()


def _lenient(stream: TextIO) -> TextIO:
    """``stream`` reading undecodable bytes as U+FFFD: under strict UTF-8 one bad line would end the game."""
    try:
        stream.reconfigure(errors="replace")
    except (AttributeError, io.UnsupportedOperation, ValueError):  # not a TextIOWrapper, or already read from
        pass
    return stream


def _flag(flag: str, check, value):
    """``check(value)``, its ``ValueError`` (or :class:`EngineNotFoundError`, as plainly the user's) naming ``flag``."""
    try:
        return check(value)
    except (ValueError, EngineNotFoundError) as exc:
        raise ValueError(f"{flag}: {exc}") from None


def run(args) -> int:
    """``minichess play`` (``args`` from :func:`minichess_envs.cli.main`) of a chess variant, or of a board game (the
    chess flags refused, the moves printed at the end)."""
    board = is_board_game(args.variant)
    if board:
        for flag, value in (("--fen", args.fen), ("--clock", args.clock), ("--ply-limit", args.ply_limit),
                            ("--pgn", args.pgn)):
            if value is not None:
                raise ValueError(f"{flag} applies to chess variants, not {args.variant}")
        if args.color in ("white", "black"):
            raise ValueError(f"--color: a board game's seats are first and second (or random), not {args.color}")
    elif args.color in ("first", "second"):
        raise ValueError(f"--color: a chess variant's colours are white and black, not {args.color}")
    if args.color == "random":
        human = random.Random(args.seed).choice((0, 1))
    else:
        human = 1 if args.color in ("black", "second") else 0  # White or the first player by default
    rules = args.variant if board else get_variant(args.variant)
    clock = _flag("--clock", parse_clock, args.clock) if args.clock is not None else None
    if args.hint is not None:
        _flag("--hint", lambda spec: check_limits(spec, LOCAL_LIMITS), args.hint)  # before the game, not at 'hint'
    agent = _flag("--opponent", lambda spec: from_spec(spec, rules, seed=args.seed, limits=LOCAL_LIMITS), args.opponent)
    if board:
        game = BoardGameTerminal(rules, agent, human, hint=args.hint, seed=args.seed, stdin=_lenient(sys.stdin))
    else:
        if args.fen is not None:
            _flag("--fen", lambda fen: Position(rules, fen), args.fen)  # a bad FEN fails here, before the game starts
        game = _flag("--ply-limit", lambda limit: TerminalGame(
            rules, agent, human, fen=args.fen, hint=args.hint, ply_limit=limit, clock=clock, seed=args.seed,
            unicode=False if args.ascii else None, stdin=_lenient(sys.stdin)), args.ply_limit)
    try:
        game.run()
    except KeyboardInterrupt:
        game.say("\n(interrupted: the game stops here)")
        game.finish("*", ABANDONED)
    finally:
        close_agents([agent])
    if board:
        return 0
    text = game.pgn()
    if args.pgn == "-":
        game.say()
        game.say(text.rstrip())
        return 0
    path = args.pgn or f"minichess-{rules.name}-{datetime.datetime.now():%Y%m%d-%H%M%S}.pgn"
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        game.say(f"could not save the game to {path}: {exc}")
        game.say(text.rstrip())
        return 1
    game.say(f"game saved to {path}")
    return 0
