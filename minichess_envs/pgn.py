"""Standard Algebraic Notation and PGN export for games on any board.

>>> pos = Position("gardner")
>>> san(pos, "b1c3")
'Nc3'
>>> pos.push_uci("b1c3")
>>> print(game_pgn(pos, {"White": "random"}))  # doctest: +ELLIPSIS
[Event "?"]
...
"""

from __future__ import annotations

import datetime

from minichess_envs.engine import FILES, WHITE, Move, Position

STANDARD_START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def san(position: Position, move: Move | str) -> str:
    """SAN of a legal move in ``position`` (``Nf3``, ``exd5``, ``O-O``, ``c5=Q+``, ``Qh4#``)."""
    if isinstance(move, str):
        move = Move.from_uci(move)
    code = position.move_code(move)  # raises IllegalMoveError for illegal moves
    piece = position.piece_at(move.from_square).upper()
    if position.is_castling(move):
        text = "O-O" if FILES.index(move.to_square[0]) > FILES.index(move.from_square[0]) else "O-O-O"
    else:
        capture = position.is_capture(move)
        if piece == "P":
            text = (move.from_square[0] + "x" if capture else "") + move.to_square
            if move.promotion:
                text += "=" + move.promotion.upper()
        else:
            # Disambiguate among other pieces of the same type that can reach the square.
            rivals = [
                m.from_square for m in position.legal_moves
                if m.to_square == move.to_square and m.from_square != move.from_square
                and position.piece_at(m.from_square).upper() == piece
            ]
            prefix = ""
            if rivals:
                if all(r[0] != move.from_square[0] for r in rivals):
                    prefix = move.from_square[0]
                elif all(r[1:] != move.from_square[1:] for r in rivals):
                    prefix = move.from_square[1:]
                else:
                    prefix = move.from_square
            text = piece + prefix + ("x" if capture else "") + move.to_square
    position.push_code(code)
    try:
        if position.is_checkmate():
            text += "#"
        elif position.is_check():
            text += "+"
    finally:
        position.pop()
    return text


def game_pgn(position: Position, headers: dict[str, str] | None = None) -> str:
    """PGN of the game that led to ``position`` (from its root), with ``FEN``/``SetUp``/``Variant`` tags.

    ``headers`` adds or overrides tags (``White``, ``Black``, ``Event``, ...). The
    result is taken from the position's outcome (``*`` while it goes on, unless
    ``headers["Result"]`` says otherwise, e.g. for a truncated game).
    """
    v = position.variant
    root = Position(v, position.root_fen)
    tags = {
        "Event": "?",
        "Site": "?",
        "Date": datetime.date.today().strftime("%Y.%m.%d"),
        "Round": "?",
        "White": "?",
        "Black": "?",
        "Result": position.result(),
    }
    if v.name != "chess":  # Fairy-Stockfish's name where it has one, so that FSF-based tools read it
        tags["Variant"] = v.fairy_stockfish or v.name
    if v.name != "chess" or root.fen() != STANDARD_START:
        tags["SetUp"] = "1"
        tags["FEN"] = root.fen()
    tags.update(headers or {})
    tokens = []
    for i, move in enumerate(position.move_stack):
        if root.turn == WHITE:
            tokens.append(f"{root.fullmove_number}.")
        elif i == 0:
            tokens.append(f"{root.fullmove_number}...")
        tokens.append(san(root, move))
        root.push(move)
    tokens.append(tags["Result"])
    lines, line = [], ""
    for token in tokens:  # wrap movetext at 80 columns, as the PGN standard asks
        if line and len(line) + 1 + len(token) > 80:
            lines.append(line)
            line = token
        else:
            line = f"{line} {token}" if line else token
    lines.append(line)
    header = "\n".join(f'[{key} "{_escape(str(value))}"]' for key, value in tags.items())
    return header + "\n\n" + "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')

