"""The ``minichess`` command line: variants, positions, perft, tablebases, demo games.

Usage::

    minichess --version
    minichess variants
    minichess show VARIANT [--fen FEN]
    minichess perft VARIANT DEPTH [--fen FEN] [--divide]
    minichess tablebase stats [VARIANT]
    minichess tablebase probe FEN [--variant VARIANT]
    minichess demo [--variant NAME] [--seed N]
    minichess play VARIANT [--opponent AGENT] [--color white|black|random] [--fen FEN] [--pgn PATH]
    minichess serve [--host 127.0.0.1] [--port 8000] [--runs DIR] [--agent PATH ...]
    minichess zoo list | describe NAME
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

from minichess_envs.encoding import ObservationEncoding
from minichess_envs.engine import COLOR_NAMES, FenError, Position
from minichess_envs.extras import MissingExtraError, extra_hint
from minichess_envs.variants import VARIANTS, get_variant


def _rules_summary(v) -> str:
    parts = [v.win_rule.replace("_", " ")]
    if v.double_step:
        parts.append("double step")
    if v.en_passant:
        parts.append("e.p.")
    if v.castling:
        parts.append("castling")
    if "P" in v.pieces.upper():
        parts.append("promote " + v.promotion)
    parts.append(f"stalemate {v.stalemate}")
    return ", ".join(parts)


def cmd_variants(args) -> int:
    header = ("name", "gym id", "board", "actions", "observation", "rules")
    rows = []
    for v in VARIANTS.values():
        shape = "x".join(map(str, ObservationEncoding(v).shape))
        rows.append((v.name, v.gym_id, f"{v.width}x{v.height}", str(v.num_actions), shape, _rules_summary(v)))
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def cmd_show(args) -> int:
    pos = Position(args.variant, args.fen)
    print(pos.unicode())
    print()
    print(f"FEN:      {pos.fen()}")
    print(f"to move:  {COLOR_NAMES[pos.turn]}" + ("  (in check)" if pos.is_check() else ""))
    moves = pos.legal_moves
    print(f"legal:    {len(moves)}: " + " ".join(m.uci() for m in moves))
    outcome = pos.outcome()
    if outcome:
        winner = "draw" if outcome.winner is None else f"{COLOR_NAMES[outcome.winner]} wins"
        print(f"outcome:  {outcome.termination.name.lower()}, {winner} ({outcome.result()})")
    return 0


def cmd_perft(args) -> int:
    pos = Position(args.variant, args.fen)
    start = time.perf_counter()
    if args.divide:
        counts = pos.perft_divide(args.depth)
        for uci, n in counts.items():
            print(f"{uci}: {n}")
        total = sum(counts.values())
    else:
        total = pos.perft(args.depth)
    seconds = time.perf_counter() - start
    print(f"# depth {args.depth}, {seconds:.3f} s, {total / max(seconds, 1e-9):,.0f} nodes/s", file=sys.stderr)
    print(total)
    return 0


def cmd_demo(args) -> int:
    rng = random.Random(args.seed)
    names = [args.variant] if args.variant else list(VARIANTS)
    for name in names:
        v = get_variant(name)
        pos = Position(v)
        while not pos.is_game_over() and pos.ply < v.ply_limit:
            pos.push_code(rng.choice(pos.legal_move_codes()))
        outcome = pos.outcome()
        how = outcome.termination.name.lower() if outcome else f"ply limit {v.ply_limit}"
        print(f"== {v.name} ({v.width}x{v.height}): {pos.result()} by {how} after {pos.ply} plies")
        print(pos.unicode())
        print()
    return 0


def cmd_tablebase(args) -> int:
    from minichess_envs.tablebase import VALUE_NAMES, Tablebase, cache_path

    tb = Tablebase.load(args.variant, args.white, args.black, cache_dir=args.cache_dir)
    if args.action == "stats":
        st = tb.stats()
        print(f"{tb.variant.name} tablebase: white {st['white']}, black {st['black']}, {st['positions']:,} positions")
        print(f"cache: {cache_path(tb.variant, tb.white, tb.black, args.cache_dir)}")
        print()
        print(f"{'to move':<8}{'win':>9}{'draw':>9}{'loss':>9}{'total':>9}")
        totals = {name: 0 for name in ("win", "draw", "loss")}
        for side, counts in st["by_side"].items():
            print(f"{side:<8}" + "".join(f"{counts[k]:>9,}" for k in totals) + f"{sum(counts.values()):>9,}")
            totals = {k: totals[k] + counts[k] for k in totals}
        print(f"{'all':<8}" + "".join(f"{totals[k]:>9,}" for k in totals) + f"{sum(totals.values()):>9,}")
        print()
        print(f"game over: {st['checkmates']:,} checkmates, {st['stalemates']:,} stalemates, "
              f"{st['insufficient_material']:,} insufficient material")
        plies = st["longest_mate_plies"]
        print(f"longest mate: {plies} plies (mate in {(plies + 1) // 2}), {st['longest_mate_positions']:,} positions, "
              f"e.g. {st['longest_mate_example']}")
        return 0
    pos = Position(tb.variant, " ".join(args.fen))
    value, dtm = tb.probe(pos)

    def verdict(v, d):
        return "draw" if v == 0 else f"{VALUE_NAMES[v]} in {d} {'ply' if d == 1 else 'plies'}"

    print(pos.unicode())
    print()
    print(f"FEN:      {pos.fen()}")
    print(f"value:    {verdict(value, dtm)} for {COLOR_NAMES[pos.turn]} (the side to move)")
    moves = tb.move_values(pos)
    if moves:
        print("moves:    (* = fastest / longest defence / drawing)")
    for m in sorted(moves, key=lambda m: (-m.value, m.dtm if m.value > 0 else -(m.dtm or 0), m.move.uci())):
        print(f"  {'*' if (m.value, m.dtm) == (value, dtm) else ' '} {m.move.uci():<6} {verdict(m.value, m.dtm)}")
    return 0


def _version() -> str:
    """The installed distribution's version (the package's own when run from a source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("minichess-envs")
    except PackageNotFoundError:
        from minichess_envs import __version__

        return f"{__version__} (not installed)"


def cmd_play(args) -> int:
    from agents.play.terminal import run  # agents sit above the environments: imported only here

    return run(args)


def cmd_serve(args) -> int:
    # A module missing for the web app (starlette, uvicorn) names the [play] extra; main prints it in one line.
    with extra_hint("minichess serve", extra="play"):
        from agents.play.web import serve

        return serve(args)


def cmd_zoo(args) -> int:
    from agents import zoo  # reads the cards only: no network is built

    if args.action == "describe":
        print(zoo.describe(args.name))
        return 0
    for name in zoo.names():
        c = zoo.card(name)
        best = zoo.strength_text(c.strength[0]) if c.strength else "not rated"
        print(f"{name:24} {c.game:14} {c.algorithm:10} {best}")
    return 0


AGENT_FORMS = ("random, greedy, minimax[:DEPTH], fairy-stockfish[:NODES], stockfish[:NODES], perfect (3x3); board "
               "games: random, alpha-beta[:DEPTH], openspiel-mcts[:SIMULATIONS], perfect (where solved); "
               "zoo:NAME[:casual] (minichess zoo list)")


def _depth(text: str) -> int:
    try:
        depth = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"depth must be an integer, not {text!r}") from None
    if not 0 <= depth <= 64:
        raise argparse.ArgumentTypeError(f"depth {depth} is outside 0..64")
    return depth


def _plies(text: str) -> int:
    """``--ply-limit``: a positive integer (0 or less would end every game before its first move)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 9 or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer number of plies, not {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="minichess", description="Small-board chess: rules, perft and demos.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("variants", help="list the variant catalogue").set_defaults(run=cmd_variants)
    p = sub.add_parser("show", help="print a position, its legal moves and outcome")
    p.add_argument("variant")
    p.add_argument("--fen", help="position (default: the variant's start)")
    p.set_defaults(run=cmd_show)
    p = sub.add_parser("perft", help="count the leaves of the legal-move tree")
    p.add_argument("variant")
    p.add_argument("depth", type=_depth)
    p.add_argument("--fen", help="position (default: the variant's start)")
    p.add_argument("--divide", action="store_true", help="print the count below each legal move")
    p.set_defaults(run=cmd_perft)
    p = sub.add_parser("demo", help="play a random game of every variant")
    p.add_argument("--variant", help="only this variant")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_demo)
    p = sub.add_parser("tablebase", help="exact values of small variants: table stats, probe a position")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--white", help="White's army, e.g. KQR (default: one of each piece type)")
    common.add_argument("--black", help="Black's army, e.g. kqr (default: as White)")
    common.add_argument("--cache-dir", help="where tables are cached (default: $MINICHESS_CACHE, "
                        "else $XDG_CACHE_HOME/minichess-envs or ~/.cache/minichess-envs)")
    tsub = p.add_subparsers(dest="action", required=True)
    q = tsub.add_parser("stats", parents=[common], help="positions by side to move and value, the longest mate")
    q.add_argument("variant", nargs="?", default="3x3")
    q = tsub.add_parser("probe", parents=[common], help="value and DTM of a position and of each legal move")
    q.add_argument("fen", nargs="+", help="the position (quoted, or as separate words)")
    q.add_argument("--variant", default="3x3")
    p.set_defaults(run=cmd_tablebase)
    p = sub.add_parser("play", help="play against an agent in the terminal (moves in SAN or UCI, also piped)")
    p.add_argument("variant", help="a chess variant, or a board game: tictactoe, connect_four, gomoku (9x9), "
                   "gomoku15, gomoku4k4, gomoku<size>[k<length>], checkers")
    p.add_argument("--opponent", default="random",
                   help=f"the agent: {AGENT_FORMS}, or a saved agent's directory (default: random)")
    p.add_argument("--color", "--colour", choices=("white", "black", "first", "second", "random"),
                   help="your colour in chess (default: white), your seat in a board game (default: first)")
    p.add_argument("--fen", help="start position (default: the variant's start)")
    p.add_argument("--pgn", help="where to save the game (default: minichess-VARIANT-DATE-TIME.pgn in the "
                   "current directory; '-' prints it)")
    p.add_argument("--hint", help="the agent that 'hint' asks (default: perfect on 3x3, else minimax:2)")
    p.add_argument("--clock", help="time control: MINUTES or MINUTES+SECONDS per move, e.g. 5+3")
    p.add_argument("--ply-limit", type=_plies, help="adjudicate a draw after this many plies (default: the variant's)")
    p.add_argument("--seed", type=int, help="seed of the agent and of --color random")
    p.add_argument("--ascii", action="store_true", help="letters instead of chess symbols")
    p.set_defaults(run=cmd_play)
    p = sub.add_parser("serve", help="the local web app: play, watch agents, replay PGN (needs the [play] extra)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--runs", default="runs", help="saved agents found under this directory are offered "
                   "(default: ./runs)")
    p.add_argument("--agent", action="append", default=[], metavar="PATH",
                   help="a saved agent's directory to offer (repeatable)")
    p.add_argument("--ply-limit", type=_plies, help="adjudicate a draw after this many plies (default: the variant's)")
    p.set_defaults(run=cmd_serve)
    p = sub.add_parser("zoo", help="the trained agents shipped in the package: list them, or describe one's card")
    p.add_argument("action", choices=("list", "describe"))
    p.add_argument("name", nargs="?", help="the entry to describe")
    p.set_defaults(run=cmd_zoo)
    args = parser.parse_args(argv)
    if args.command == "zoo" and (args.action == "describe") != (args.name is not None):
        parser.error("zoo: 'describe' takes an entry's name, 'list' none")
    try:
        status = args.run(args)
        sys.stdout.flush()  # here, so that a closed pipe is caught below and not at exit
        return status
    except BrokenPipeError:
        # The reader stopped early (`minichess ... | head -1`): stop quietly, and
        # point stdout at /dev/null so the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    # Bad input, or an extra to install (a saved agent that needs torch): one clear line, no traceback.
    except (FenError, ValueError, OverflowError, OSError, MissingExtraError) as exc:
        print(f"minichess: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
