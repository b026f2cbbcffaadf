"""Rendering of positions: text (``ansi``), images (``rgb_array``) and a window (``human``).

Images are drawn with NumPy alone from piece drawings made of circles,
rectangles and polygons (antialiased), so no GUI toolkit is needed; ``human``
shows them with pygame, an optional dependency.
"""

from __future__ import annotations

import functools

import numpy as np

from minichess_envs.engine import COLOR_NAMES, Position

SQUARE_PIXELS = 48
LIGHT, DARK = np.array([240, 217, 181], np.uint8), np.array([181, 136, 99], np.uint8)
HIGHLIGHT = np.array([205, 210, 106], np.uint8)  # last move's squares, tinted toward this
INK, WHITE_FILL, BLACK_FILL = (25, 25, 25), (250, 250, 250), (45, 45, 45)  # outlines and details; piece fills

# Piece drawings in unit coordinates (x right, y down, the square is [0, 1]^2): unions of circles,
# ellipses, rectangles and polygons, rasterised with 4x4 supersampling. "details" are lines and dots
# drawn over the fill in the contrasting color (the bishop's slit, the knight's eye, the crown bands).
_BASE = ("rect", 0.20, 0.80, 0.80, 0.90)
_SKIRT = ("poly", [(0.30, 0.66), (0.70, 0.66), (0.75, 0.81), (0.25, 0.81)])
_PIECES = {
    "P": {
        "shapes": [("circle", 0.5, 0.30, 0.12), ("ellipse", 0.5, 0.47, 0.15, 0.045),
                   ("poly", [(0.41, 0.47), (0.59, 0.47), (0.69, 0.81), (0.31, 0.81)]),
                   ("rect", 0.25, 0.79, 0.75, 0.89)],
        "details": [],
    },
    "N": {
        "shapes": [("poly", [(0.32, 0.81), (0.36, 0.62), (0.28, 0.56), (0.17, 0.52), (0.14, 0.44), (0.22, 0.35),
                             (0.35, 0.25), (0.40, 0.15), (0.45, 0.07), (0.50, 0.16), (0.60, 0.18), (0.72, 0.30),
                             (0.79, 0.48), (0.78, 0.81)]), _BASE],
        "details": [("circle", 0.37, 0.32, 0.03), ("line", 0.17, 0.47, 0.23, 0.47, 0.025),
                    ("line", 0.56, 0.22, 0.70, 0.42, 0.02)],
    },
    "B": {
        "shapes": [("circle", 0.5, 0.11, 0.055), ("ellipse", 0.5, 0.37, 0.15, 0.20),
                   ("poly", [(0.37, 0.30), (0.63, 0.30), (0.5, 0.14)]), ("rect", 0.35, 0.56, 0.65, 0.62),
                   ("poly", [(0.42, 0.60), (0.58, 0.60), (0.67, 0.81), (0.33, 0.81)]), _BASE],
        "details": [("line", 0.58, 0.26, 0.47, 0.40, 0.035), ("line", 0.35, 0.59, 0.65, 0.59, 0.02)],
    },
    "R": {
        "shapes": [("rect", 0.24, 0.14, 0.36, 0.25), ("rect", 0.44, 0.14, 0.56, 0.25), ("rect", 0.64, 0.14, 0.76, 0.25),
                   ("rect", 0.24, 0.24, 0.76, 0.34), ("rect", 0.32, 0.33, 0.68, 0.73), ("rect", 0.27, 0.71, 0.73, 0.81),
                   _BASE],
        "details": [("line", 0.32, 0.34, 0.68, 0.34, 0.02), ("line", 0.32, 0.71, 0.68, 0.71, 0.02)],
    },
    "Q": {
        "shapes": [("poly", [(0.17, 0.24), (0.31, 0.56), (0.33, 0.17), (0.42, 0.52), (0.5, 0.12), (0.58, 0.52),
                             (0.67, 0.17), (0.69, 0.56), (0.83, 0.24), (0.73, 0.67), (0.27, 0.67)]),
                   ("circle", 0.17, 0.23, 0.05), ("circle", 0.33, 0.16, 0.05), ("circle", 0.5, 0.11, 0.05),
                   ("circle", 0.67, 0.16, 0.05), ("circle", 0.83, 0.23, 0.05), _SKIRT, _BASE],
        "details": [("line", 0.29, 0.66, 0.71, 0.66, 0.025)],
    },
    "K": {
        "shapes": [("rect", 0.465, 0.05, 0.535, 0.27), ("rect", 0.40, 0.10, 0.60, 0.165),
                   ("ellipse", 0.35, 0.43, 0.15, 0.14), ("ellipse", 0.65, 0.43, 0.15, 0.14),
                   ("ellipse", 0.5, 0.35, 0.08, 0.09),
                   ("poly", [(0.22, 0.44), (0.78, 0.44), (0.71, 0.67), (0.29, 0.67)]),
                   _SKIRT, _BASE],
        "details": [("line", 0.5, 0.30, 0.5, 0.62, 0.025), ("line", 0.29, 0.66, 0.71, 0.66, 0.025)],
    },
}
_SUPERSAMPLE = 4


def _coverage(shapes, size: int, grow: float = 0.0) -> np.ndarray:
    """Fraction of each of ``size x size`` pixels covered by the union of ``shapes`` grown by ``grow``."""
    n = size * _SUPERSAMPLE
    c = (np.arange(n) + 0.5) / n
    x, y = c[None, :], c[:, None]
    inside = np.zeros((n, n), bool)
    for kind, *p in shapes:
        if kind == "circle":
            cx, cy, r = p
            inside |= (x - cx) ** 2 + (y - cy) ** 2 <= (r + grow) ** 2
        elif kind == "ellipse":
            cx, cy, rx, ry = p
            inside |= ((x - cx) / (rx + grow)) ** 2 + ((y - cy) / (ry + grow)) ** 2 <= 1
        elif kind == "rect":
            x0, y0, x1, y1 = p
            inside |= (x >= x0 - grow) & (x <= x1 + grow) & (y >= y0 - grow) & (y <= y1 + grow)
        elif kind == "line":  # a segment with half-width w
            x0, y0, x1, y1, w = p
            dx, dy = x1 - x0, y1 - y0
            t = np.clip(((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy), 0, 1)
            inside |= (x - x0 - t * dx) ** 2 + (y - y0 - t * dy) ** 2 <= (w + grow) ** 2
        else:  # polygon, even-odd rule; grown by its distance to the edges
            points = p[0]
            poly = np.zeros((n, n), bool)
            near = np.zeros((n, n), bool)
            for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1]):
                crosses = (y0 > y) != (y1 > y)
                with np.errstate(divide="ignore", invalid="ignore"):
                    at = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
                poly ^= crosses & (x < at)
                if grow:
                    dx, dy = x1 - x0, y1 - y0
                    t = np.clip(((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy), 0, 1)
                    near |= (x - x0 - t * dx) ** 2 + (y - y0 - t * dy) ** 2 <= grow ** 2
            inside |= poly | near
    return inside.reshape(size, _SUPERSAMPLE, size, _SUPERSAMPLE).mean(axis=(1, 3))


@functools.lru_cache(maxsize=64)
def _sprite(letter: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, premultiplied rgb)`` of one piece (``"Q"`` white, ``"q"`` black) on a ``size`` pixel square.

    Layers: the outline (the drawing grown by about a 32nd of the square), the
    fill, then the details, in the contrasting color.
    """
    drawing = _PIECES[letter.upper()]
    edge = max(1.0, size / 32) / size  # outline width, in square units
    white = letter.isupper()
    layers = [(_coverage(drawing["shapes"], size, grow=edge), INK),
              (_coverage(drawing["shapes"], size), WHITE_FILL if white else BLACK_FILL),
              (_coverage(drawing["details"], size), INK if white else WHITE_FILL)]
    alpha, rgb = np.zeros((size, size, 1)), np.zeros((size, size, 3))
    for coverage, color in layers:
        a = coverage[..., None]
        rgb = rgb * (1 - a) + np.asarray(color, np.float64) * a
        alpha = alpha * (1 - a) + a
    return alpha, rgb


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
    if not isinstance(square_pixels, int) or square_pixels < 16:
        raise ValueError(f"square_pixels must be an integer >= 16, got {square_pixels!r}")
    v = position.variant
    W, H, s = v.width, v.height, square_pixels
    image = np.empty((H * s, W * s, 3), np.uint8)
    last = position.peek()
    marked = {last.from_square, last.to_square} if last else set()
    pieces = position.piece_map()
    for rank in range(H):
        for file in range(W):
            square = f"{'abcdefgh'[file]}{rank + 1}"
            color = LIGHT if (rank + file) % 2 else DARK
            if square in marked:
                color = ((color.astype(np.uint16) + HIGHLIGHT) // 2).astype(np.uint8)
            y, x = (H - 1 - rank) * s, file * s
            cell = image[y:y + s, x:x + s]
            cell[:] = color
            letter = pieces.get(square)
            if letter:
                alpha, rgb = _sprite(letter, s)
                cell[:] = (cell * (1 - alpha) + rgb + 0.5).astype(np.uint8)
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
