"""Datasets and agent files from strangers (issue 34): bad values are refused at load, naming the file and field.

Each regression test crafts what someone else's dataset or agent folder could hold, with its own matching
manifest and checksum, so only the checks of values can refuse it. The fuzz tests assert that loading
raises nothing but the documented error (:class:`DatasetError`; ``ValueError`` for agents).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agents
from agents import GreedyAgent, MinimaxAgent, RandomAgent
from minichess_envs import Position
from minichess_envs.checksums import sha256
from minichess_envs.dataset import MANIFEST, DatasetError, GameDataset, ShardWriter, list_shards

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def make_dataset(directory, games: int = 3, seed: int = 0) -> str:
    """A real gardner dataset: ``games`` games of random legal moves, scored 0, the last game unfinished."""
    rng = np.random.default_rng(seed)
    with ShardWriter(str(directory), "gardner", games_per_shard=games) as writer:
        for _ in range(games):
            position = Position("gardner")
            actions = []
            for _ in range(int(rng.integers(1, 12))):
                legal = position.legal_actions()
                if not legal:
                    break
                actions.append(int(rng.choice(legal)))
                position.push_action(actions[-1])
            writer.add_game(position.variant.start_fen, actions, [0] * len(actions), "*")
    return str(directory)


def load_all(directory) -> None:
    """Everything a training run reads: the manifest, every shard, every game replayed into batches."""
    data = GameDataset(str(directory), validation=0.0)
    for _ in data.batches(4, split="all"):
        pass


def shard_path(directory) -> str:
    return os.path.join(str(directory), list_shards(str(directory))[0]["file"])


def rewrite(directory, members: dict[str, bytes] | None = None, **arrays) -> None:
    """Replace arrays (or raw ``.npy`` members) of the first shard and fix its manifest line to match, as the
    author of a crafted dataset would."""
    path = shard_path(directory)
    with np.load(path) as z:
        contents = {f"{k}.npy": _npy(z[k]) for k in z.files}
    contents.update({f"{k}.npy": _npy(v) for k, v in arrays.items()})
    contents.update(members or {})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    fix_manifest(directory)


def fix_manifest(directory, **changes) -> None:
    file = os.path.join(str(directory), MANIFEST)
    entry = json.loads(open(file).read().splitlines()[0])
    entry["sha256"] = sha256(os.path.join(str(directory), entry["file"]))
    entry.update(changes)
    with open(file, "w") as f:
        f.write(json.dumps(entry) + "\n")


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asanyarray(array), allow_pickle=True)
    return buffer.getvalue()


def npy_header_only(shape: tuple, descr: str = "<u2") -> bytes:
    """A ``.npy`` whose header claims ``shape`` and that holds no data at all."""
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


@pytest.fixture
def dataset(tmp_path):
    return make_dataset(tmp_path / "data")


def refused(directory, *fields: str) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        load_all(directory)
    message = str(info.value)
    assert str(directory) in message, message
    assert any(field in message for field in fields), message
    return info.value


# -- shards: values (each was loaded and trained on at a29ea6f) ---------------------------------------------


def test_a_real_dataset_loads(dataset):
    load_all(dataset)


def test_result_codes_other_than_the_documented_ones_are_refused(dataset):
    rewrite(dataset, results=np.array([5, 1, 0], np.int8))  # +-5 training targets at a29ea6f
    refused(dataset, "results")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 0.5])
def test_scores_that_are_not_integers_are_refused(dataset, bad):
    with np.load(shard_path(dataset)) as z:
        scores = z["scores"].astype(np.float64)
    scores[0] = bad
    rewrite(dataset, scores=scores)
    refused(dataset, "scores")


@pytest.mark.parametrize("dtype, bad", [(np.int32, 40_000), (np.int32, -40_000), (np.uint64, 2**63)])
def test_scores_beyond_a_mate_are_refused(dataset, dtype, bad):
    with np.load(shard_path(dataset)) as z:
        scores = z["scores"].astype(dtype)
    scores[-1] = bad
    rewrite(dataset, scores=scores)
    refused(dataset, "scores")


def test_float_actions_are_refused_not_truncated(dataset):
    with np.load(shard_path(dataset)) as z:
        actions = z["actions"].astype(np.float32) + 0.5
    rewrite(dataset, actions=actions)
    refused(dataset, "actions")


def test_negative_actions_are_refused(dataset):
    with np.load(shard_path(dataset)) as z:
        actions = z["actions"].astype(np.int32)
    actions[0] = -1
    rewrite(dataset, actions=actions)
    refused(dataset, "actions")


def test_structured_dtypes_are_refused(dataset):
    with np.load(shard_path(dataset)) as z:
        n = z["scores"].size
    rewrite(dataset, scores=np.zeros(n, dtype=[("a", "<i2")]))
    refused(dataset, "scores")


def test_an_object_array_is_refused_and_its_pickle_never_runs(dataset, tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    with np.load(shard_path(dataset)) as z:
        n = z["results"].size
    rewrite(dataset, results=np.array([Payload()] * n, dtype=object))
    refused(dataset, "results")
    assert not marker.exists()


def test_a_header_claiming_a_trillion_elements_is_refused_before_allocating(dataset):
    # a29ea6f allocated first and raised MemoryError
    fix_manifest(dataset)
    rewrite(dataset, members={"actions.npy": npy_header_only((10**12,)), "scores.npy": npy_header_only((10**12,), "<i2"),
                              "targets.npy": npy_header_only((10**12,), "|u1")},
            offsets=np.array([0, 1, 2, 10**12]))
    fix_manifest(dataset, positions=10**12, targets=10**12)
    refused(dataset, "actions", "offsets")


def test_a_zip_member_claiming_more_than_deflate_can_expand_is_refused(dataset):
    path = shard_path(dataset)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    # the central directory's "uncompressed size" of the first member, set to 4 GB - 1
    directory = data.rindex(b"PK\x01\x02")
    first = data.index(b"PK\x01\x02")
    assert first <= directory
    data[first + 24:first + 28] = struct.pack("<I", 2**32 - 1)
    with open(path, "wb") as f:
        f.write(bytes(data))
    fix_manifest(dataset)
    refused(dataset, "more than the file holds", "not a readable shard")


@pytest.mark.parametrize("fens, field", [
    (b"\xff\xfe", "root_fens"),
    (b"", "root_fens"),
    ("\n".join(["rnbqk/ppppp/5/PPPPP w - - 0 1"] * 3).encode(), "root_fens"),
    ("\n".join(["rnbqk/ppppp/5/PPPPP/RNBQK w - - 0 1"] * 2).encode(), "root_fens"),  # 2 FENs for 3 games
])
def test_start_fens_that_are_not_text_or_not_legal_are_refused(dataset, fens, field):
    rewrite(dataset, root_fens=np.frombuffer(fens, np.uint8))
    refused(dataset, field)


def test_an_illegal_move_is_refused_naming_the_game_and_ply(dataset):
    with np.load(shard_path(dataset)) as z:
        actions = z["actions"].copy()
    actions[0] = 0  # a1's first plane: a rook move from a1 to a2, blocked by the pawn
    rewrite(dataset, actions=actions)
    error = refused(dataset, "actions")
    assert "game 0 ply 0" in str(error)


@pytest.mark.parametrize("payload", [b"not a zip at all", b"\x93NUMPY\x01\x00v\x00{'descr': '<u2'}"])
def test_a_shard_that_is_no_archive_is_refused(dataset, payload):
    with open(shard_path(dataset), "wb") as f:
        f.write(payload)
    fix_manifest(dataset)
    refused(dataset, "not a readable shard")


@pytest.mark.parametrize("flip, cut", [(None, 0), (None, 4), (None, 40), (0, None), (30, None),
                                       (62, None)])
def test_truncated_or_altered_shards_with_a_matching_checksum_are_refused(dataset, flip, cut):
    # found by the byte fuzz below: EOFError, BadZipFile and others escaped at a29ea6f
    path = shard_path(dataset)
    data = bytearray(open(path, "rb").read())
    if flip is not None:
        data[flip] ^= 1
    with open(path, "wb") as f:
        f.write(bytes(data if cut is None else data[:cut]))
    fix_manifest(dataset)
    refused(dataset, "not a readable shard", "npy", "offsets", "unknown arrays", "no ")


# -- manifests -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("changes, field", [
    ({"file": None}, "'file'"),  # None: the field is removed
    ({"variant": None}, "'variant'"),
    ({"file": 5}, "'file'"),
    ({"file": "../elsewhere.npz"}, "'file'"),
    ({"file": ""}, "'file'"),  # the directory itself: IsADirectoryError at a29ea6f (found by the fuzz below)
    ({"variant": "no-such-variant"}, "'variant'"),
    ({"variant": ""}, "'variant'"),
    ({"variant": []}, "'variant'"),
    ({"games": -1}, "'games'"),
    ({"games": True}, "'games'"),
    ({"positions": "12"}, "'positions'"),
    ({"targets": 10**9}, "'targets'"),
    ({"sha256": "x" * 64}, "'sha256'"),
])
def test_manifest_fields_missing_or_of_the_wrong_type_are_refused_naming_the_field(dataset, changes, field):
    file = os.path.join(dataset, MANIFEST)
    entry = json.loads(open(file).read())
    for key, value in changes.items():
        if value is None:
            del entry[key]
        else:
            entry[key] = value
    with open(file, "w") as f:
        f.write(json.dumps(entry) + "\n")
    error = refused(dataset, field)  # KeyError or TypeError at a29ea6f, naming no file
    assert MANIFEST in str(error)


def test_counts_that_disagree_with_the_manifest_are_refused(dataset):
    fix_manifest(dataset, games=2)
    refused(dataset, "offsets", "results")


def test_a_manifest_line_nested_thousands_deep_is_refused(dataset):
    with open(os.path.join(dataset, MANIFEST), "w") as f:
        f.write("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(DatasetError, match="line 1 is not JSON"):
        GameDataset(dataset)


# -- fuzz ------------------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda children: st.lists(children, max_size=3)
                           | st.dictionaries(st.text(max_size=8), children, max_size=3), max_leaves=8)
FIELDS = ["format", "file", "variant", "games", "positions", "targets", "sha256"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("pristine") / "data", games=4, seed=1)


def fresh_copy(pristine, tmp_path, name: str) -> str:
    target = tmp_path / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(pristine, target)
    return str(target)


@FUZZ
@given(changes=st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, min_size=1, max_size=3),
       removed=st.sets(st.sampled_from(FIELDS), max_size=2))
def test_fuzzed_manifest_entries_raise_only_dataset_errors(pristine, tmp_path, changes, removed):
    directory = fresh_copy(pristine, tmp_path, "manifest")
    file = os.path.join(directory, MANIFEST)
    entry = json.loads(open(file).read())
    entry.update(changes)
    for key in removed:
        entry.pop(key, None)
    with open(file, "w") as f:
        f.write(json.dumps(entry) + "\n")
    try:
        load_all(directory)
    except DatasetError:
        pass


@FUZZ
@given(line=st.binary(max_size=200))
def test_fuzzed_manifest_bytes_raise_only_dataset_errors(pristine, tmp_path, line):
    directory = fresh_copy(pristine, tmp_path, "manifest-bytes")
    with open(os.path.join(directory, MANIFEST), "wb") as f:
        f.write(line + b"\n")
    try:
        load_all(directory)
    except DatasetError:
        pass


ARRAY_NAMES = ["offsets", "root_fens", "actions", "scores", "results", "targets"]
DTYPES = ["<i1", "<u1", "<i2", "<u2", ">i4", "<i8", "<u8", "<f4", "<f8", "?", "<c8", "|S3", "<U2", "<M8[s]"]


@FUZZ
@given(name=st.sampled_from(ARRAY_NAMES), dtype=st.sampled_from(DTYPES),
       values=st.lists(st.integers(-2**15, 2**16), max_size=40), shape2d=st.booleans())
def test_fuzzed_shard_arrays_raise_only_dataset_errors(pristine, tmp_path, name, dtype, values, shape2d):
    directory = fresh_copy(pristine, tmp_path, "arrays")
    array = np.array(values, dtype=np.int64).astype(dtype)
    if shape2d and array.size % 2 == 0:
        array = array.reshape(2, -1)
    rewrite(directory, **{name: array})
    try:
        load_all(directory)
    except DatasetError:
        pass


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)), min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 10**6)))
def test_fuzzed_shard_bytes_with_a_matching_checksum_raise_only_dataset_errors(pristine, tmp_path, flips, cut):
    directory = fresh_copy(pristine, tmp_path, "bytes")
    path = shard_path(directory)
    data = bytearray(open(path, "rb").read())
    for offset, bit in flips:
        data[offset % len(data)] ^= 1 << bit
    if cut is not None:
        data = data[:cut % len(data)]
    with open(path, "wb") as f:
        f.write(bytes(data))
    fix_manifest(directory)
    try:
        load_all(directory)
    except DatasetError:
        pass


# -- agent files -----------------------------------------------------------------------------------------


def write_manifest(directory, manifest) -> str:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "agent.json"), "w") as f:
        f.write(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return str(directory)


def test_an_agent_manifest_nested_thousands_deep_is_a_value_error_naming_the_file(tmp_path):
    directory = write_manifest(tmp_path, '{"format": 1, "settings": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ValueError, match="nested too deeply") as info:  # RecursionError at a29ea6f
        agents.load(directory)
    assert str(tmp_path / "agent.json") in str(info.value)


def test_an_oversized_agent_manifest_is_refused_unread(tmp_path):
    directory = write_manifest(tmp_path, json.dumps({"format": 1, "class": "agents.players.greedy:GreedyAgent",
                                                      "settings": {}, "pad": "x" * (2 << 20)}))
    with pytest.raises(ValueError, match="longer than") as info:
        agents.load(directory)
    assert str(tmp_path / "agent.json") in str(info.value)


@pytest.mark.parametrize("depth", [9, 10**9])
def test_a_minimax_depth_beyond_the_bound_is_refused_at_load(tmp_path, depth):
    from agents.players.minimax import MAX_DEPTH

    MinimaxAgent(2).save(str(tmp_path))
    manifest = json.loads((tmp_path / "agent.json").read_text())
    manifest["settings"]["depth"] = depth  # 10**9 loaded at a29ea6f and never returned a move
    write_manifest(tmp_path, manifest)
    with pytest.raises(ValueError, match=f"'depth' must lie in 1..{MAX_DEPTH}") as info:
        agents.load(str(tmp_path))
    assert str(tmp_path / "agent.json") in str(info.value)
    manifest["settings"]["depth"] = MAX_DEPTH
    write_manifest(tmp_path, manifest)
    assert agents.load(str(tmp_path)).depth == MAX_DEPTH


def test_check_settings_refuses_non_finite_floats_and_values_out_of_bounds(tmp_path):
    from agents.base import check_settings

    for value in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="'c_puct' must be finite"):
            check_settings(str(tmp_path), {"c_puct": value}, {"c_puct": float})
    bounds = {"simulations": (1, 10**6), "c_puct": (0, None)}
    with pytest.raises(ValueError, match=r"'simulations' must lie in 1..1000000, got 1000000000000"):
        check_settings(str(tmp_path), {"simulations": 10**12}, {"simulations": int}, bounds=bounds)
    with pytest.raises(ValueError, match=r"'c_puct' must lie in 0..inf, got -1"):
        check_settings(str(tmp_path), {"c_puct": -1.0}, {"c_puct": float}, bounds=bounds)
    assert check_settings(str(tmp_path), {"simulations": 10**6, "c_puct": 0}, {"simulations": int, "c_puct": float},
                          bounds=bounds) == {"simulations": 10**6, "c_puct": 0}
    assert check_settings(str(tmp_path), {"seed": None}, {}, {"seed": (int, None)}, bounds={"seed": (0, None)})


def test_nan_or_infinite_weights_are_refused_naming_the_file_and_tensor(tmp_path):
    torch = pytest.importorskip("torch")
    from agents.ppo.network import PPONet, PPONetConfig
    from agents.weights import WEIGHTS, load_network, save_network
    from minichess_envs.encoding import ObservationEncoding
    from minichess_envs.variants import get_variant

    variant = get_variant("3x3")
    config = PPONetConfig(*ObservationEncoding(variant, 1, True).shape, variant.num_actions, channels=4,
                          conv_layers=1, value_hidden=8)
    net = PPONet(config)
    name, tensor = next((k, v) for k, v in net.state_dict().items() if v.is_floating_point())
    for bad in (float("nan"), float("inf")):
        with torch.no_grad():
            tensor.view(-1)[0] = bad
        save_network(str(tmp_path), net)  # saved with its checksum: only the values are wrong
        with pytest.raises(ValueError, match=f"tensor '{name}' holds 1 NaN or infinite") as info:
            load_network(str(tmp_path), PPONet, PPONetConfig, "PPO")  # loaded silently at a29ea6f
        assert str(tmp_path / WEIGHTS) in str(info.value)


AGENT_CLASSES = ["agents.players.random_agent:RandomAgent", "agents.players.greedy:GreedyAgent", "agents.players.minimax:MinimaxAgent",
                 "agents.players.perfect:PerfectAgent"]
SETTING_NAMES = ["seed", "name", "depth", "variant", "simulations", "c_puct"]


@FUZZ
@given(manifest=st.fixed_dictionaries(
    {"format": st.sampled_from([1, 1, 1, 2, "1", None]), "class": st.sampled_from(AGENT_CLASSES + ["os:system", 3]),
     "settings": st.dictionaries(st.sampled_from(SETTING_NAMES), JSON_VALUES, max_size=3)},
    optional={"name": JSON_VALUES}))
def test_fuzzed_agent_manifests_raise_only_value_errors(tmp_path, manifest):
    directory = write_manifest(tmp_path / "agent", manifest)
    try:
        agent = agents.load(directory)
    except ValueError as exc:
        assert "agent.json" in str(exc)
        return
    if isinstance(agent, MinimaxAgent):  # a loaded search agent must also move, within its bound
        assert 1 <= agent.depth <= 8
    assert isinstance(agent, (RandomAgent, GreedyAgent, MinimaxAgent)) or type(agent).__name__ == "PerfectAgent"


@FUZZ
@given(text=st.binary(max_size=300))
def test_fuzzed_agent_manifest_bytes_raise_only_value_errors(tmp_path, text):
    os.makedirs(tmp_path / "raw", exist_ok=True)
    (tmp_path / "raw" / "agent.json").write_bytes(text)
    try:
        agents.load(str(tmp_path / "raw"))
    except ValueError as exc:
        assert "agent.json" in str(exc)
