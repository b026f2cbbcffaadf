"""Games on disk for supervised learning: compact shards of moves, engine scores and results.

A shard stores whole games, not positions: each game's start FEN, the action
index of every move played, the engine's score of every position (from the
side to move; centipawns or mate distance), the result and, optionally, which
moves are training targets (the engine's, in a game against a random mover). Positions and
observations are rebuilt by replaying the moves through the C engine, which
is faster than parsing a FEN per position and over 10x smaller on disk
(about 3 bytes a position on Gardner; ``benchmarks/bench_dataset.py``
measures both). Shards are ``.npz`` archives
of plain arrays read with ``allow_pickle=False``, written atomically, each
with a SHA-256 in its manifest line, so a truncated or altered shard is
refused with an error that names it.

>>> writer = ShardWriter("data/gardner", "gardner")           # doctest: +SKIP
>>> writer.add_game(root_fen, actions, scores, result)        # doctest: +SKIP
>>> writer.close()                                            # doctest: +SKIP
>>> data = GameDataset("data/gardner")                        # doctest: +SKIP
>>> for batch in data.batches(256, split="train", seed=0):    # doctest: +SKIP
...     batch.observations, batch.masks, batch.actions, batch.values
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import zipfile
import zlib
from typing import Iterator, NamedTuple, Sequence

import numpy as np

from minichess_envs.checksums import sha256
from minichess_envs.engine import FenError, Position
from minichess_envs.variants import Variant, get_variant

FORMAT = "minichess-games/1"
MANIFEST = "manifest.jsonl"
#: Scores are stored in centipawns; a mate in n (n > 0: the side to move mates) as ``±(MATE_SCORE - n)``.
MATE_SCORE = 30_000
RESULT_CODES = {"1-0": 1, "0-1": -1, "1/2-1/2": 0, "*": 2}
RESULT_TEXT = {code: text for text, code in RESULT_CODES.items()}


class DatasetError(ValueError):
    """A dataset file is missing, corrupt, or not a dataset of the expected variant (the message names the
    file and the field)."""


#: A shard's arrays: the integer kinds (numpy ``dtype.kind``) each may be stored as, one-dimensional. The
#: writer's dtypes are int64, uint8, uint16, int16, int8 and uint8; any integer type holding valid values is read.
SHARD_ARRAYS = {"offsets": "iu", "root_fens": "u", "actions": "iu", "scores": "iu", "results": "i", "targets": "biu"}
#: Bytes of one game's start FEN and its separator that a shard may store (a legal 8x8 FEN is under 100).
MAX_FEN_BYTES = 1024
#: deflate expands at most 1032:1, so a member that claims more than this per compressed byte lies.
_MAX_DEFLATE_RATIO = 1032
#: The manifest fields every entry has, with their JSON types (``targets`` is optional, as in older datasets).
MANIFEST_FIELDS = {"file": str, "variant": str, "games": int, "positions": int, "sha256": str}


def score_to_int(cp: int | None = None, mate: int | None = None) -> int:
    """One int16-range score from a UCI ``score cp``/``score mate`` (mate in plies' moves, signed)."""
    if mate is not None:
        return (MATE_SCORE - abs(mate)) * (1 if mate > 0 else -1) if mate != 0 else -MATE_SCORE
    return int(np.clip(cp or 0, -(MATE_SCORE - 1000), MATE_SCORE - 1000))


def score_to_value(scores: np.ndarray, scale: float = 400.0) -> np.ndarray:
    """Map stored scores to [-1, 1]: ``tanh(cp / scale)``, mates to ±1."""
    scores = np.asarray(scores, np.float64)
    value = np.tanh(scores / scale)
    value[np.abs(scores) >= MATE_SCORE - 1000] = np.sign(scores[np.abs(scores) >= MATE_SCORE - 1000])
    return value.astype(np.float32)


class ShardWriter:
    """Collects games and writes them to ``directory`` in shards of ``games_per_shard``.

    Each shard is written to a temporary file, renamed into place, and only
    then listed (with its checksum) in the directory's manifest: a run killed
    at any moment leaves complete, listed shards and nothing half-written.
    """

    def __init__(self, directory: str, variant: str | Variant, games_per_shard: int = 1000, prefix: str = "shard"):
        self.directory = directory
        self.variant = get_variant(variant)
        self.games_per_shard = games_per_shard
        self.prefix = prefix
        os.makedirs(directory, exist_ok=True)
        _remove_stale_temporaries(directory)
        self._games: list[tuple[str, np.ndarray, np.ndarray, int]] = []
        self._next = len(list_shards(directory))

    def add_game(self, root_fen: str, actions: Sequence[int], scores: Sequence[int], result: str,
                 targets: Sequence[bool] | None = None) -> None:
        """Add one game: start FEN, action index per ply, stored score per ply, PGN result.

        :param targets: per ply, whether the position is a training example
            (default: all); the others are replayed but never trained on.
        """
        if len(actions) != len(scores) or (targets is not None and len(targets) != len(actions)):
            raise ValueError(f"{len(actions)} actions but {len(scores)} scores"
                             + ("" if targets is None else f" and {len(targets)} targets"))
        if result not in RESULT_CODES:
            raise ValueError(f"result must be one of {', '.join(RESULT_CODES)}, not {result!r}")
        game = (root_fen, np.asarray(actions, np.uint16), np.asarray(scores, np.int16), RESULT_CODES[result])
        self._games.append(game if targets is None else game + (np.asarray(targets, bool),))
        if len(self._games) >= self.games_per_shard:
            self.flush()

    def flush(self) -> str | None:
        """Write the games collected so far as one shard; its path, or ``None`` if there were none."""
        if not self._games:
            return None
        name = f"{self.prefix}-{self._next:06d}.npz"
        path = write_shard(os.path.join(self.directory, name), self.variant, self._games)
        self._games = []
        self._next += 1
        return path

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()


def write_shard(path: str, variant: Variant, games: Sequence[tuple], **facts) -> str:
    """Write ``games`` as one shard and list it in the manifest.

    Each game is ``(root FEN, actions, scores, result code)``, optionally with
    a fifth item, a bool per ply: which positions are training examples. The
    manifest's ``positions`` counts plies, ``targets`` the training examples;
    ``facts`` (JSON values, such as the shard's cost) go into its entry too, so
    they are recorded if and only if the shard is.
    """
    offsets = np.zeros(len(games) + 1, np.int64)
    offsets[1:] = np.cumsum([len(g[1]) for g in games])
    arrays = {
        "offsets": offsets,
        "root_fens": np.frombuffer("\n".join(g[0] for g in games).encode(), np.uint8),
        "actions": np.concatenate([g[1] for g in games]) if games else np.zeros(0, np.uint16),
        "scores": np.concatenate([g[2] for g in games]) if games else np.zeros(0, np.int16),
        "results": np.array([g[3] for g in games], np.int8),
    }
    if any(len(g) > 4 for g in games):
        arrays["targets"] = np.concatenate([np.asarray(g[4], bool) if len(g) > 4 else np.ones(len(g[1]), bool)
                                            for g in games]).astype(np.uint8)
    directory = os.path.dirname(path) or "."
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    entry = {"format": FORMAT, "file": os.path.basename(path), "variant": variant.name,
             "games": len(games), "positions": int(offsets[-1]),
             "targets": int(arrays["targets"].sum()) if "targets" in arrays else int(offsets[-1]),
             "sha256": sha256(path), **facts}
    with open(os.path.join(directory, MANIFEST), "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return path


def _remove_stale_temporaries(directory: str) -> None:
    for name in os.listdir(directory):
        if name.endswith(".npz.tmp"):
            os.remove(os.path.join(directory, name))


def list_shards(directory: str) -> list[dict]:
    """The manifest's entries (one per complete shard), in write order.

    A manifest line cut short by a kill is ignored, and so is a shard file the
    manifest does not list (it was written but not yet recorded).
    """
    path = os.path.join(directory, MANIFEST)
    if not os.path.exists(path):
        return []
    entries = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.endswith("\n"):
                break  # the last line was being written when the run stopped
            try:
                entry = json.loads(line)
            except (json.JSONDecodeError, RecursionError):  # RecursionError: arrays nested thousands deep
                raise DatasetError(f"{path} line {number} is not JSON: {line[:60]!r}") from None
            if not isinstance(entry, dict) or entry.get("format") != FORMAT:
                raise DatasetError(f"{path} line {number} is not a {FORMAT} manifest entry")
            _check_entry(entry, f"{path} line {number}")
            entries.append(entry)
    return entries


def _check_entry(entry: dict, where: str) -> None:
    """``DatasetError`` naming ``where`` and the field if a manifest entry lacks a field or holds a bad value."""
    for field, kind in MANIFEST_FIELDS.items():
        value = entry.get(field)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise DatasetError(f"{where}: field {field!r} must be a JSON {kind.__name__}, not {value!r}")
    file = entry["file"]
    if os.path.basename(file) != file or file in ("", ".", "..") or "\\" in file or "\0" in file:
        raise DatasetError(f"{where}: field 'file' must name a file in the dataset directory, not {file!r}")
    counts = {field: entry.get(field) for field in ("games", "positions", "targets") if field in entry}
    for field, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DatasetError(f"{where}: field {field!r} must be an integer >= 0, not {value!r}")
    if counts.get("targets", 0) > entry["positions"]:
        raise DatasetError(f"{where}: field 'targets' ({entry['targets']}) exceeds 'positions' ({entry['positions']})")
    if not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]):
        raise DatasetError(f"{where}: field 'sha256' must be 64 lowercase hex digits, not {entry['sha256'][:80]!r}")


class Shard(NamedTuple):
    """One shard's arrays, checked."""

    offsets: np.ndarray
    root_fens: list[str]
    actions: np.ndarray
    scores: np.ndarray
    results: np.ndarray
    targets: np.ndarray  #: bool per ply: a training example
    path: str = ""  #: the file, for errors found while replaying its games

    @property
    def num_games(self) -> int:
        return len(self.results)


def read_shard(directory: str, entry: dict, variant: Variant) -> Shard:
    """Load and verify one shard listed in the manifest.

    Checked: the checksum; each array's header (integer dtype, one dimension, the manifest's counts, no more
    data than the file holds) before anything is allocated; then the values (offsets, result codes, actions
    below ``variant.num_actions``, scores within ±``MATE_SCORE``, 0/1 targets, start FENs the engine accepts).
    Any problem is a :class:`DatasetError` naming the file and the array.
    """
    _check_entry(entry, f"{os.path.join(directory, MANIFEST)} entry for {entry.get('file')!r}")
    path = os.path.join(directory, entry["file"])
    if not os.path.exists(path):
        raise DatasetError(f"{path} is listed in the manifest but missing")
    if sha256(path) != entry["sha256"]:
        raise DatasetError(f"{path} is corrupt: its SHA-256 does not match the manifest")
    if entry["variant"] != variant.name:
        raise DatasetError(f"{path} holds {entry['variant']!r} games, not {variant.name!r}")
    games, positions = entry["games"], entry["positions"]
    sizes = {"offsets": (games + 1,), "results": (games,), "actions": (positions,), "scores": (positions,),
             "targets": (positions,), "root_fens": games * MAX_FEN_BYTES}
    arrays = _read_arrays(path, sizes)

    def bad(field: str, problem: str) -> DatasetError:
        return DatasetError(f"{path}: {field} {problem}")

    offsets, actions, scores, results = arrays["offsets"], arrays["actions"], arrays["scores"], arrays["results"]
    targets = arrays.get("targets", np.ones(positions, np.uint8))
    if offsets[0] != 0 or np.any(offsets[1:] < offsets[:-1]) or offsets[-1] != positions:
        raise bad("offsets", f"must rise from 0 to the {positions} positions")
    if np.any((actions < 0) | (actions >= variant.num_actions)):
        raise bad("actions", f"must lie in 0..{variant.num_actions - 1} ({variant.name}'s actions)")
    if np.any((scores < -MATE_SCORE) | (scores > MATE_SCORE)):  # no cast: uint64 would wrap in int64
        raise bad("scores", f"must lie in -{MATE_SCORE}..{MATE_SCORE}")
    if not np.all(np.isin(results, list(RESULT_TEXT))):
        raise bad("results", f"must be result codes {sorted(RESULT_TEXT)}, found {sorted(set(results.tolist()))[:8]}")
    if np.any((targets != 0) & (targets != 1)):
        raise bad("targets", "must be 0 or 1")
    if "targets" in arrays and "targets" in entry and int(np.count_nonzero(targets)) != entry["targets"]:
        raise bad("targets", f"marks {np.count_nonzero(targets)} positions, the manifest {entry['targets']}")
    try:
        fens = arrays["root_fens"].tobytes().decode()
    except UnicodeDecodeError as exc:
        raise bad("root_fens", f"is not UTF-8 text: {exc}") from None
    root_fens = fens.split("\n") if games else []
    if len(root_fens) != games or (not games and fens):
        raise bad("root_fens", f"holds {len(root_fens)} FENs for {games} games")
    for fen in set(root_fens):  # a game's replay starts here: a bad one fails now, named (games share FENs)
        try:
            Position(variant, fen)
        except FenError as exc:
            raise bad("root_fens", f"game {root_fens.index(fen)}: {exc}") from None
    return Shard(offsets, root_fens, actions, scores, results, targets.astype(bool), path)


def _read_arrays(path: str, sizes: dict) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path``, each header checked against :data:`SHARD_ARRAYS` and ``sizes``
    (a shape, or a most number of elements) before its data is allocated; read without pickle."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            unknown = sorted(set(members) - {f"{name}.npy" for name in SHARD_ARRAYS})
            if unknown:
                raise DatasetError(f"{path}: unknown arrays {unknown[:5]} (expected {', '.join(SHARD_ARRAYS)})")
            arrays = {}
            for name, kinds in SHARD_ARRAYS.items():
                info = members.get(f"{name}.npy")
                if info is None:
                    if name == "targets":  # optional: every position is a training example
                        continue
                    raise DatasetError(f"{path}: no {name!r} array")
                _check_header(archive, info, os.path.getsize(path), path, name, kinds, sizes[name])
                with archive.open(info) as f:
                    arrays[name] = np.lib.format.read_array(f, allow_pickle=False)
            return arrays
    except DatasetError:
        raise
    except (OSError, ValueError, EOFError, RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error) as exc:
        raise DatasetError(f"{path} is not a readable shard: {type(exc).__name__}: {exc}") from None


def _check_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file_size: int, path: str, name: str,
                  kinds: str, size) -> None:
    """``DatasetError`` unless member ``info`` is a plain ``.npy`` of a 1-D integer array of ``size``."""
    def bad(problem: str) -> DatasetError:
        return DatasetError(f"{path}: {name} {problem}")

    if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise bad("is encrypted or compressed other than by deflate (numpy writes neither)")
    # The claimed sizes are bounded by the bytes on disk, so no header can make the reader allocate more
    # than the file can hold (numpy allocates the whole array before reading it).
    limit = info.compress_size * (_MAX_DEFLATE_RATIO if info.compress_type == zipfile.ZIP_DEFLATED else 1)
    if info.compress_size > file_size or info.file_size > limit + 1024:
        raise bad(f"claims {info.file_size} bytes, more than the file holds")
    with archive.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise bad(f"has .npy format version {version}, expected 1.0 or 2.0")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read_header(f)
        header_bytes = f.tell()
    if dtype.kind not in kinds or dtype.names is not None or dtype.subdtype is not None or dtype.itemsize > 8:
        raise bad(f"has dtype {dtype.str if dtype.names is None else dtype.descr}, expected integers "
                  f"(kinds {kinds!r})")
    if len(shape) != 1 or (shape != size if isinstance(size, tuple) else shape[0] > size):
        raise bad(f"has shape {shape}, expected {size if isinstance(size, tuple) else f'at most ({size},)'} "
                  "from the manifest")
    if header_bytes + shape[0] * dtype.itemsize != info.file_size:
        raise bad(f"holds {info.file_size - header_bytes} bytes of data, its header {shape[0] * dtype.itemsize}")


class Batch(NamedTuple):
    """Training arrays for a batch of positions."""

    observations: np.ndarray  #: float32 (n, height, width, channels), from the side to move
    masks: np.ndarray  #: int8 (n, num_actions), the legal moves
    actions: np.ndarray  #: int64 (n,), the move played
    results: np.ndarray  #: float32 (n,), the game result from the side to move (+1 / 0 / -1)
    scores: np.ndarray  #: float32 (n,), the engine's score mapped to [-1, 1] (:func:`score_to_value`)
    #: int8 (n, num_actions) or None: the legal moves that end the game in a draw at once (stalemate,
    #: insufficient material, repetition, no progress), marked only where the engine scores the side to
    #: move at least :attr:`GameDataset.winning_cp` and the move played does not draw (None when that is unset)
    draws: np.ndarray | None = None


@dataclasses.dataclass
class GameDataset:
    """The games of one dataset directory, split into train and validation by game.

    :param directory: where :class:`ShardWriter` wrote the shards.
    :param validation: share of games held out (decided per game from a hash
        of its shard and index, so it never changes as shards are added).
    :param history, last_move: the observation settings (as the envs' ``history``/``last_move``).
    :param winning_cp: if set, batches also carry :attr:`Batch.draws` for positions the engine scores
        at least this for the side to move (a mate counts as more than any centipawn score).
    """

    directory: str
    validation: float = 0.05
    history: int = 1
    last_move: bool = True
    winning_cp: int | None = None

    def __post_init__(self):
        self.entries = list_shards(self.directory)
        if not self.entries:
            raise DatasetError(f"no dataset at {self.directory!r}: {MANIFEST} lists no shards")
        names = {e["variant"] for e in self.entries}
        if len(names) != 1:
            raise DatasetError(f"{self.directory} mixes variants: {', '.join(sorted(names))}")
        try:
            self.variant = get_variant(names.pop())
        except ValueError as exc:
            raise DatasetError(f"{os.path.join(self.directory, MANIFEST)}: field 'variant': {exc}") from None

    @property
    def num_games(self) -> int:
        return sum(e["games"] for e in self.entries)

    @property
    def num_positions(self) -> int:
        """Training examples (all positions, but those of a random mover)."""
        return sum(e.get("targets", e["positions"]) for e in self.entries)

    def _in_split(self, entry: dict, count: int, split: str) -> np.ndarray:
        key = int.from_bytes(hashlib.sha256(entry["file"].encode()).digest()[:4], "little")
        u = np.random.default_rng(key).random(count)
        if split == "all":
            return np.ones(count, bool)
        return u < self.validation if split == "validation" else u >= self.validation

    def games(self, split: str = "all") -> Iterator[tuple[str, np.ndarray, np.ndarray, str]]:
        """``(root_fen, actions, scores, result)`` per game of the split (``train``, ``validation`` or ``all``)."""
        _check_split(split)
        for entry in self.entries:
            shard = read_shard(self.directory, entry, self.variant)
            keep = self._in_split(entry, shard.num_games, split)
            for g in np.flatnonzero(keep):
                a, b = shard.offsets[g], shard.offsets[g + 1]
                yield shard.root_fens[g], shard.actions[a:b], shard.scores[a:b], RESULT_TEXT[int(shard.results[g])]

    def batches(self, batch_size: int, split: str = "train", seed: int = 0, shuffle_games: int = 256,
                score_scale: float = 400.0, drop_last: bool = False) -> Iterator[Batch]:
        """Batches of positions, shuffled deterministically from ``seed``.

        Shards are visited in a seeded order and positions are shuffled within
        a buffer of ``shuffle_games`` games, so memory stays flat however
        large the dataset is. Games with result ``*`` give result target 0.
        Only a shard's training examples are yielded (see :meth:`ShardWriter.add_game`).
        ``split``: ``train`` (shuffled), ``validation`` or ``all`` (in file order).
        """
        _check_split(split)
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(self.entries)) if split == "train" else range(len(self.entries))
        buffer: list[tuple] = []
        pending: list[np.ndarray] = []
        for i in order:
            entry = self.entries[i]
            shard = read_shard(self.directory, entry, self.variant)
            keep = np.flatnonzero(self._in_split(entry, shard.num_games, split))
            if split == "train":
                keep = rng.permutation(keep)
            for g in keep:
                buffer.append(self._encode_game(shard, int(g), score_scale))
                if len(buffer) >= shuffle_games:
                    yield from self._emit(buffer, batch_size, rng, split == "train", pending)
                    buffer = []
        if buffer:
            yield from self._emit(buffer, batch_size, rng, split == "train", pending)
        if pending and not drop_last:
            yield Batch(*pending)

    def _emit(self, buffer, batch_size, rng, shuffle, pending):
        columns = [np.concatenate(c) for c in zip(*buffer)]
        n = len(columns[0])
        index = rng.permutation(n) if shuffle else np.arange(n)
        columns = [c[index] for c in columns]
        if pending:  # the rest of the previous buffer goes first
            columns = [np.concatenate([p, c]) for p, c in zip(pending, columns)]
            n = len(columns[0])
            pending.clear()
        full = n - n % batch_size
        for start in range(0, full, batch_size):
            yield Batch(*(c[start:start + batch_size] for c in columns))
        if full < n:
            pending.extend(c[full:] for c in columns)

    def _encode_game(self, shard: Shard, g: int, score_scale: float) -> tuple:
        a, b = shard.offsets[g], shard.offsets[g + 1]
        actions = shard.actions[a:b].astype(np.int64)
        position = Position(self.variant, shard.root_fens[g])
        white_moves_first = position.turn == 0
        observations, masks = [], np.empty((len(actions), self.variant.num_actions), np.int8)
        keep, scores = shard.targets[a:b], shard.scores[a:b]
        draws = None if self.winning_cp is None else np.zeros(masks.shape, np.int8)
        for i, action in enumerate(actions):
            observations.append(position.observation(self.history, self.last_move))
            position.write_action_mask(masks[i])
            if draws is not None and keep[i] and scores[i] >= self.winning_cp:
                mark_drawing_moves(position, int(action), draws[i])
            try:
                position.push_action(int(action))
            except ValueError:  # IllegalMoveError: legality is known only by replaying, so it is checked here
                raise DatasetError(f"{shard.path}: actions: game {g} ply {i}: {int(action)} is not a legal move "
                                   f"in {position.fen()}") from None
        code = int(shard.results[g])
        white_result = 0.0 if code in (0, 2) else float(code)
        mover_is_white = (np.arange(len(actions)) % 2 == 0) == white_moves_first
        results = np.where(mover_is_white, white_result, -white_result).astype(np.float32) + 0.0  # no -0.0
        observations = np.stack(observations) if observations else np.zeros(
            (0, *position.observation(self.history, self.last_move).shape), np.float32)
        values = score_to_value(scores, score_scale)
        columns = (observations[keep], masks[keep], actions[keep], results[keep], values[keep])
        return columns if draws is None else (*columns, draws[keep])


def _check_split(split: str) -> None:
    if split not in ("train", "validation", "all"):
        raise ValueError(f"split must be 'train', 'validation' or 'all', not {split!r}")


def mark_drawing_moves(position: Position, played: int, row: np.ndarray) -> None:
    """Set ``row[action] = 1`` for each legal move of ``position`` that ends the game in a draw at once.

    Nothing is marked if ``played`` draws too, or if every legal move does: there is then no better move
    to prefer. ``position`` is left as it was.
    """
    legal = position.legal_actions()
    for action in legal:
        position.push_action(int(action))
        reason, winner = position.outcome_code()
        position.pop_code()
        if reason and winner < 0:
            row[action] = 1
    if row[played] or row[legal].all():
        row[:] = 0


def import_pgn(source, directory: str, variant: str | Variant | None = None, games_per_shard: int = 1000,
               min_plies: int = 1):
    """Write the games of a PGN file (path or text stream) into a dataset directory.

    Games of another variant than the first game read (or ``variant``) are
    skipped, as are games shorter than ``min_plies``; PGN has no engine
    scores, so the stored scores are 0 (train the value on results). Returns
    the reader's :class:`~minichess_envs.pgn.PgnStats` (games read, skipped by reason).
    """
    from minichess_envs.pgn import PgnStats, read_pgn

    stats = PgnStats()
    writer = None
    for game in read_pgn(source, variant, stats):
        if writer is None:
            writer = ShardWriter(directory, variant or game.variant, games_per_shard, prefix="pgn")
        if game.variant.name != writer.variant.name:
            stats.skipped[f"not {writer.variant.name}"] += 1
            continue
        if len(game.moves) < min_plies:
            stats.skipped["too short"] += 1
            continue
        position = Position(game.variant, game.root_fen)
        actions = []
        for move in game.moves:
            actions.append(position.move_to_action(move))
            position.push(move)
        writer.add_game(game.root_fen, actions, [0] * len(actions), game.result)
    if writer is not None:
        writer.close()
    return stats
