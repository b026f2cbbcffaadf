"""Rendering of positions: text (``ansi``), images (``rgb_array``) and a window (``human``).

Images are drawn with NumPy alone from 16x16 piece silhouettes, so no GUI
toolkit is needed; ``human`` shows them with pygame, an optional dependency.
"""

from __future__ import annotations

import numpy as np

from minichess_envs.engine import COLOR_NAMES, Position

SQUARE_PIXELS = 48
LIGHT, DARK = np.array([240, 217, 181], np.uint8), np.array([181, 136, 99], np.uint8)
HIGHLIGHT = np.array([205, 210, 106], np.uint8)  # last move's squares, tinted toward this

# Silhouettes, '#' = piece; the outline is drawn around them.
_SPRITES = {
    "P": """
................
................
................
.......##.......
......####......
......####......
.......##.......
......####......
.......##.......
......####......
.....######.....
....########....
...##########...
...##########...
................
................""",
    "N": """
................
................
.......#.#......
......######....
.....########...
....#####.####..
...######.####..
...###########..
....###..#####..
........######..
.......######...
......#######...
.....#########..
....##########..
................
................""",
    "B": """
................
................
.......##.......
......####......
.....###.##.....
.....##.###.....
.....######.....
......####......
.......##.......
......####......
.....######.....
....########....
...##########...
...##########...
................
................""",
    "R": """
................
................
...##.####.##...
...##########...
...##########...
....########....
.....######.....
.....######.....
.....######.....
.....######.....
....########....
...##########...
..############..
..############..
................
................""",
    "Q": """
................
..#....##....#..
..##..####..##..
..###.####.###..
..############..
...##########...
...##########...
....########....
.....######.....
.....######.....
....########....
...##########...
..############..
..############..
................
................""",
    "K": """
.......##.......
......####......
.......##.......
...###.##.###...
..#############.
..#############.
..#############.
...###########..
....#########...
.....#######....
.....#######....
....#########...
...###########..
...###########..
................
................""",
}


def _mask(art: str) -> np.ndarray:
    rows = [row for row in art.strip("\n").splitlines()]
    return np.array([[ch == "#" for ch in row.ljust(16, ".")[:16]] for row in rows], bool)


_MASKS = {piece: _mask(art) for piece, art in _SPRITES.items()}


def _outline(mask: np.ndarray) -> np.ndarray:
    """Pixels next to the silhouette (8-neighbourhood), not in it."""
    padded = np.pad(mask, 1)
    grown = np.zeros_like(mask)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            grown |= padded[1 + dr:1 + dr + mask.shape[0], 1 + dc:1 + dc + mask.shape[1]]
    return grown & ~mask


def render_ansi(position: Position) -> str:
    """The board in unicode with coordinates, then the last move, side to move and outcome."""
    lines = [position.unicode()]
    last = position.peek()
    status = f"{COLOR_NAMES[position.turn]} to move"
    if position.is_check():
        status += ", check"
    outcome = position.outcome()
    if outcome:
        winner = "draw" if outcome.winner is None else f"{COLOR_NAMES[outcome.winner]} wins"
        status = f"game over: {outcome.termination.name.lower()}, {winner}"
    lines.append(f"last move: {last.uci() if last else '-'}   {status}")
    return "\n".join(lines) + "\n"


def render_rgb(position: Position, square_pixels: int = SQUARE_PIXELS) -> np.ndarray:
    """An RGB image, uint8 ``(height * s, width * s, 3)``, White at the bottom."""
    if square_pixels % 16:
        raise ValueError(f"square_pixels must be a multiple of 16, got {square_pixels}")
    v = position.variant
    W, H, s = v.width, v.height, square_pixels
    scale = s // 16
    image = np.empty((H * s, W * s, 3), np.uint8)
    last = position.peek()
    marked = {last.from_square, last.to_square} if last else set()
    pieces = position.piece_map()
    for rank in range(H):
        for file in range(W):
            square = f"{'abcdefgh'[file]}{rank + 1}"
            colour = LIGHT if (rank + file) % 2 else DARK
            if square in marked:
                colour = ((colour.astype(np.uint16) + HIGHLIGHT) // 2).astype(np.uint8)
            y, x = (H - 1 - rank) * s, file * s
            cell = image[y:y + s, x:x + s]
            cell[:] = colour
            letter = pieces.get(square)
            if letter:
                mask = _MASKS[letter.upper()]
                fill, edge = ((250, 250, 250), (20, 20, 20)) if letter.isupper() else ((30, 30, 30), (235, 235, 235))
                cell[np.kron(_outline(mask), np.ones((scale, scale), bool))] = edge
                cell[np.kron(mask, np.ones((scale, scale), bool))] = fill
    return image


class HumanWindow:
    """A pygame window showing :func:`render_rgb` images (``render_mode="human"``)."""

    def __init__(self, title: str):
        try:
            import pygame
        except ImportError:
            raise ImportError(
                'render_mode="human" needs pygame: pip install pygame-ce (or use "rgb_array" / "ansi")'
            ) from None
        self.pygame = pygame
        self.title = title
        self.screen = None

    def show(self, image: np.ndarray) -> None:
        pygame = self.pygame
        if self.screen is None:
            pygame.init()
            pygame.display.set_caption(self.title)
            self.screen = pygame.display.set_mode((image.shape[1], image.shape[0]))
        pygame.event.pump()
        surface = pygame.surfarray.make_surface(image.swapaxes(0, 1))
        self.screen.blit(surface, (0, 0))
        pygame.display.flip()

    def close(self) -> None:
        if self.screen is not None:
            self.pygame.display.quit()
            self.screen = None


class Renderer:
    """What the environments' ``render`` and ``close`` do, for one render mode."""

    MODES = ("ansi", "rgb_array", "human")

    def __init__(self, mode: str | None, title: str):
        if mode is not None and mode not in self.MODES:
            raise ValueError(f"render_mode must be one of {list(self.MODES)}, not {mode!r}")
        self.mode = mode
        self.title = title
        self._window = None

    def render(self, position: Position):
        """Text for ``ansi``, an image for ``rgb_array``, a window update (``None``) for ``human``."""
        if self.mode is None:
            return None
        if self.mode == "ansi":
            return render_ansi(position)
        image = render_rgb(position)
        if self.mode == "rgb_array":
            return image
        if self._window is None:
            self._window = HumanWindow(self.title)
        self._window.show(image)
        return None

    def close(self) -> None:
        if self._window is not None:
            self._window.close()
            self._window = None
