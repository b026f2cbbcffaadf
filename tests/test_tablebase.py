"""The 3x3 tablebase, position enumeration, PerfectAgent and agent scores.

Independent truth: the research figures of docs/variants-research.md §2.9 (own
generator, cross-checked with Fairy-Stockfish), Fairy-Stockfish's checkmate and
stalemate verdicts, hand-checked mates, and a brute-force minimax written here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import agents
from agents import RandomAgent
from agents.players.perfect import PerfectAgent
from minichess_envs import FenError, Position, Termination, get_variant
from minichess_envs.positions import (
    PROBE_POSITIONS,
    START_POSITIONS,
    legal_positions,
    make_position,
    materials,
    non_terminal_positions,
    placement_count,
    random_position,
)
from minichess_envs.positions import _check, _placements
from minichess_envs.tablebase import (
    FORMAT_VERSION,
    CacheWarning,
    Tablebase,
    cache_path,
    default_cache_dir,
    TablebaseTooLarge,
    estimate,
    fitting_armies,
    probe_targets,
    score_agent,
)

START = "kqr/3/KQR w - - 0 1"
LONGEST = "1k1/r1R/QKq w - - 0 1"  # research example: mate in 5


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tablebase-cache"))


@pytest.fixture(scope="module")
def tb(cache):
    return Tablebase.load("3x3", cache_dir=cache)


# -- brute force, independent of the table ----------------------------------------


def wins_within(pos, plies: int) -> bool:
    """Can the side to move force checkmate within ``plies`` plies?"""
    if plies <= 0 or pos.outcome_code()[0]:
        return False
    for code in pos.legal_move_codes():
        pos.push_code(code)
        ok = loses_within(pos, plies - 1)
        pos.pop_code()
        if ok:
            return True
    return False


def loses_within(pos, plies: int) -> bool:
    """Is the side to move checkmated within ``plies`` plies whatever it plays?"""
    reason = pos.outcome_code()[0]
    if reason == Termination.CHECKMATE:
        return True
    if reason or plies <= 0:
        return False
    for code in pos.legal_move_codes():
        pos.push_code(code)
        ok = wins_within(pos, plies - 1)
        pos.pop_code()
        if not ok:
            return False
    return True


def children(pos):
    """(uci, child position) for every legal move."""
    out = []
    for move in pos.legal_moves:
        child = pos.copy(stack=False)
        child.push(move)
        out.append((move.uci(), child.copy(stack=False)))
    return out


# -- research figures ---------------------------------------------------------------


def test_counts_match_the_research_figures(tb):
    # docs/variants-research.md §2.9: own generator + Fairy-Stockfish agreement.
    st = tb.stats()
    assert st["positions"] == len(legal_positions("3x3")) == 32_152
    assert st["checkmates"] == 6_768 and st["stalemates"] == 424
    wins = sum(s["win"] for s in st["by_side"].values())
    losses = sum(s["loss"] for s in st["by_side"].values())
    draws = sum(s["draw"] for s in st["by_side"].values())
    assert (wins, losses, draws) == (11_720, 12_792, 7_640)
    assert st["longest_mate_plies"] == 9 and st["longest_mate_positions"] == 112
    assert tb.probe(LONGEST) == (1, 9)
    assert tb.probe(st["longest_mate_example"]) == (1, 9)


def test_research_mating_line_is_optimal_for_both_sides(tb):
    pos = Position("3x3", LONGEST)
    line = "c2c1 a2c2 a1a3 b3a3 b1c2 a3a2 c1b1 a2a3 b1a1".split()
    for ply, uci in enumerate(line):
        value, dtm = tb.probe(pos)
        assert (value, dtm) == ((1, 9 - ply) if ply % 2 == 0 else (-1, 9 - ply))
        assert uci in [m.uci() for m in tb.fastest_moves(pos)]
        pos.push_uci(uci)
    assert pos.is_checkmate() and tb.probe(pos) == (-1, 0)


def test_start_is_drawn_and_only_two_moves_hold(tb):
    assert tb.probe(START) == (0, None)
    assert tb.probe("kqr/3/KQR b - - 0 1") == (0, None)
    assert sorted(m.uci() for m in tb.optimal_moves(START)) == ["b1b3", "c1c2"]  # 1.Qxb3, 1.Rc2
    after = {m.move.uci(): (m.value, m.dtm) for m in tb.move_values(START)}
    # research: Qb2?? and Qa2?? allow mate in 1, Rxc3 loses in 3 plies, Qc2 in 7 (after the move)
    assert after["b1b2"] == after["b1a2"] == (-1, 1 + 1)
    assert after["c1c3"] == (-1, 3 + 1) and after["b1c2"] == (-1, 7 + 1)


def test_fairy_stockfish_agrees_on_checkmates_and_stalemates(tb):
    oracles = pytest.importorskip("oracles")
    sf = oracles.sf
    rng = np.random.default_rng(0)
    mates = np.flatnonzero(tb.outcome == Termination.CHECKMATE)
    stalemates = np.flatnonzero(tb.outcome == Termination.STALEMATE)
    playing = tb.non_terminal()
    # pyffish takes ~2 ms a call: every stalemate, samples of the rest (all of them: test_slow_...).
    for i in np.concatenate([stalemates, rng.choice(mates, 300, replace=False)]):
        fen = tb.fen(i)
        assert sf.legal_moves("mc-3x3", fen, []) == []
        expected = -sf.VALUE_MATE if tb.outcome[i] == Termination.CHECKMATE else sf.VALUE_DRAW
        assert sf.game_result("mc-3x3", fen, []) == expected, fen
        assert tb.probe(fen) == ((-1, 0) if expected else (0, None))
    for i in rng.choice(playing, 300, replace=False):
        assert sf.legal_moves("mc-3x3", tb.fen(i), []), tb.fen(i)


@pytest.mark.slow
def test_slow_fairy_stockfish_agrees_on_every_game_end(tb):
    sf = pytest.importorskip("oracles").sf
    for i in range(len(tb)):
        fen = tb.fen(i)
        moves = sf.legal_moves("mc-3x3", fen, [])
        assert (not moves) == (tb.outcome[i] in (Termination.CHECKMATE, Termination.STALEMATE)), fen


# -- mates and stalemates --------------------------------------------------------------


def test_hand_checked_mates_in_one_and_stalemates(tb):
    # Black king a3, White king a1, queen c2: Qa2, Qb2 and Qc3 all mate (the king a1 guards a2, b2).
    pos = "k2/2Q/K2 w - - 0 1"
    assert tb.probe(pos) == (1, 1)
    assert sorted(m.uci() for m in tb.fastest_moves(pos)) == ["c2a2", "c2b2", "c2c3"]
    # The same position with Black to move is stalemate (tests/test_engine.py); so is K+R.
    assert tb.probe("k2/2Q/K2 b - - 0 1") == (0, None)
    assert tb.optimal_moves("k2/2Q/K2 b - - 0 1") == []
    assert tb.probe("k2/1Q1/2K b - - 0 1") == (-1, 0)  # checkmate
    # Bare kings: a draw, whoever moves.
    assert tb.probe("k2/3/2K w - - 0 1") == tb.probe("k2/3/2K b - - 0 1") == (0, None)
    stalemates = np.flatnonzero(tb.outcome == Termination.STALEMATE)
    assert len(stalemates) == 424
    assert np.all(tb.value[stalemates] == 0) and np.all(tb.dtm[stalemates] == -1)


def test_mates_in_one_and_two_match_brute_force(tb):
    rng = np.random.default_rng(1)
    sample = set(rng.choice(tb.non_terminal(), 3_000, replace=False).tolist())
    for d in (1, 2, 3):  # and a sample of what the table calls mate in 1, mated in 1, mate in 2
        sample |= set(rng.choice(np.flatnonzero(tb.dtm == d), 200, replace=False).tolist())
    for i in sorted(sample):
        pos = tb.position(i)
        value, dtm = tb.probe(pos)
        assert wins_within(pos, 1) == (value == 1 and dtm == 1), pos.fen()
        assert wins_within(pos, 3) == (value == 1 and dtm <= 3), pos.fen()
        assert loses_within(pos, 2) == (value == -1 and dtm <= 2), pos.fen()
        if value == 1 and dtm <= 3:
            fast = {m.uci() for m in tb.fastest_moves(pos)}
            for uci, child in children(pos):
                assert (uci in fast) == loses_within(child, dtm - 1), (pos.fen(), uci)


# -- consistency over the whole table -----------------------------------------------


def check_recursion(tb) -> None:
    """value = max over moves of -value(child); DTM: fastest win, longest loss."""
    for i in range(len(tb)):
        pos = tb.position(i)
        value, dtm = tb.probe(pos)
        reason, winner = pos.outcome_code()
        if reason:
            assert (value, dtm) == ((-1, 0) if reason == Termination.CHECKMATE else (0, None)), pos.fen()
            continue
        kids = [tb.probe(child) for _, child in children(pos)]
        assert kids and value == max(-v for v, _ in kids), pos.fen()
        if value == 1:
            assert dtm == 1 + min(d for v, d in kids if v == -1), pos.fen()
        elif value == -1:
            assert dtm == 1 + max(d for v, d in kids), pos.fen()
        else:
            assert dtm is None


def test_value_and_dtm_obey_the_minimax_recursion_everywhere(tb):
    check_recursion(tb)


def test_mirrored_positions_have_the_same_value_and_dtm(tb):
    for i in range(len(tb)):
        pos = tb.position(i)
        assert tb.probe(pos.mirror()) == tb.probe(pos), pos.fen()


# -- positions ---------------------------------------------------------------------------


def test_legal_positions_are_legal_and_distinct():
    positions = legal_positions("3x3")
    assert len(set(positions)) == len(positions)
    for pieces, turn in positions[::7]:
        fen = make_position("3x3", pieces, turn).fen()
        assert Position("3x3", fen).board_state()[:2] == (pieces, turn)  # set_fen validates legality
    assert len(non_terminal_positions("3x3")) == 32_152 - 6_768 - 424 - 64  # less mates, stalemates, bare kings
    assert materials("KQR") == ["K", "KQ", "KR", "KQR"]
    assert materials("KP", "QN") == ["K", "KQ", "KN", "KP"]


def test_random_position_is_seeded_and_not_over():
    a = [random_position("3x3", seed=s).fen() for s in range(20)]
    assert a == [random_position("3x3", seed=s).fen() for s in range(20)]
    rng = np.random.default_rng(3)
    for _ in range(200):
        assert not random_position("3x3", rng).is_game_over()


def test_start_and_probe_positions(tb):
    starts = START_POSITIONS["3x3"]
    assert starts["white"] == get_variant("3x3").start_fen == START
    for fen in starts.values():
        pos = Position("3x3", fen)
        assert tb.probe(pos) == (0, None) and len(pos.piece_map()) == 6
    probes = PROBE_POSITIONS["3x3"]
    assert probes["draw-white"] == starts["white"] and probes["draw-black"] == starts["black"]
    for name, turn in (("win-white", 0), ("win-black", 1)):
        pos = Position("3x3", probes[name])
        assert pos.turn == turn and tb.probe(pos)[0] == 1
        wrong = [m for m in tb.move_values(pos) if m.value < 1]
        assert len(wrong) >= 4 and {m.value for m in wrong} == {0, -1}  # draws and losses on offer
    # Brute force: White mates in 2 (not 1), and only 1.Rxb3 does it.
    white = Position("3x3", probes["win-white"])
    assert wins_within(white, 3) and not wins_within(white, 1)
    assert [uci for uci, child in children(white) if loses_within(child, 2)] == ["b1b3"]
    # Black mates in 1 with Qxb2, and Rxa2 also wins (slower): AlphaZeroNano's urgency test.
    black = Position("3x3", probes["win-black"])
    assert [uci for uci, child in children(black) if child.is_checkmate()] == ["c2b2"]
    assert tb.probe(probes["win-black"]) == (1, 1)
    assert {m.move.uci() for m in tb.move_values(black) if m.value == 1} == {"c2b2", "a3a2"}
    targets = probe_targets(tb)
    assert set(targets) == set(probes) and targets["win-white"]["moves"]["b1b3"] == (1, 3)


# -- generality: other piece sets ----------------------------------------------------------


def test_pieces_are_a_parameter_pawns_and_knights():
    v = get_variant("3x3").replace(name="3x3-np", pieces="KQRNP", promotion="QRN")
    positions = legal_positions(v, "KNP", "kr")
    for pieces, _ in positions:
        for s in (*range(0, 3), *range(6, 9)):
            assert pieces[s] & 7 != 1  # no pawn on the first or last rank
    small = Tablebase.build(v, "KNP", "kr")
    assert len(small) == len(positions) > 10_000
    check_recursion(small)
    assert small.probe("k2/3/N1K w - - 0 1") == (0, None)  # K+N vs K: insufficient material
    # a3=Q# or a3=R# (the king c1 covers b2 and c2): mate by promotion; a3=N is no check
    assert small.probe("2k/P2/2K w - - 0 1") == (1, 1)
    assert sorted(m.uci() for m in small.fastest_moves("2k/P2/2K w - - 0 1")) == ["a2a3q", "a2a3r"]
    assert wins_within(Position(v, "2k/P2/2K w - - 0 1"), 1)
    for i in range(0, len(small), 11):
        pos = small.position(i)
        assert small.probe(pos.mirror()) == small.probe(pos)


# -- size before building -------------------------------------------------------------


@pytest.mark.parametrize("variant, white, black", [
    ("3x3", None, None), ("3x3", "KQ", "kr"), ("gardner", "KQ", "k"), ("gardner", "KP", "k"),
    ("microchess", "KP", "k"), ("losalamos", "KN", "k"), ("petty", "KP", "k"),
])
def test_placement_count_is_the_enumerated_count_and_bounds_the_positions(variant, white, black):
    v = get_variant(variant)
    white, black = _check(v, white, black)
    boards = sum(1 for wm in materials(white, v.promotion) for bm in materials(black, v.promotion)
                 if len(wm) + len(bm) <= v.width * v.height for _ in _placements(v, wm, bm))
    assert placement_count(v, white, black) == boards
    if boards < 300_000:
        assert len(legal_positions(v, white, black)) <= estimate(v, white, black).positions == 2 * boards


def test_too_large_a_table_is_refused_before_building_and_the_armies_that_fit_are_named():
    limit = 40_000_000  # bytes
    with pytest.raises(TablebaseTooLarge) as caught:
        Tablebase.build("gardner", max_memory=limit)
    message, fits = str(caught.value), caught.value.fits
    assert "gardner" in message and "KQRBNP" in message and "--white" in message
    assert fits and fits == fitting_armies("gardner", limit)
    assert f"{fits[0][0]} v {fits[0][1].lower()}" in message
    pieces = "QRBNP"
    for w, b in fits:
        assert estimate("gardner", w, b).memory <= limit
        for p in pieces:  # the largest: one more piece on either side no longer fits
            if p not in w:
                assert estimate("gardner", w + p, b).memory > limit
            if p not in b:
                assert estimate("gardner", w, b + p).memory > limit
    assert isinstance(caught.value, ValueError)


def run_measured(args: list[str], memory_cap: int = 4 * 2**30) -> tuple[int, str, float, int]:
    """Exit code, stderr, wall seconds and peak RSS (bytes) of a command, its address space capped.

    A small intermediate Python starts the command and reads RUSAGE_CHILDREN: a child's peak RSS
    includes the memory of the process it was forked from, and pytest's own would swamp it.
    """
    probe = (
        "import json, resource, subprocess, sys, time\n"
        "cap = int(sys.argv[1])\n"
        "resource.setrlimit(resource.RLIMIT_AS, (cap, cap))  # a child that blows up fails fast\n"
        "start = time.perf_counter()\n"
        "run = subprocess.run(sys.argv[2:], capture_output=True, text=True)\n"
        "print(json.dumps([run.returncode, run.stderr, time.perf_counter() - start,\n"
        "                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(memory_cap), *args], capture_output=True, text=True,
                         check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, timeout=300)
    code, err, seconds, peak = json.loads(out.stdout)
    return code, err, seconds, peak


@pytest.mark.parametrize("variant", ["gardner", "losalamos"])
def test_cli_refuses_a_table_that_does_not_fit_within_seconds_and_little_memory(variant, tmp_path):
    code, err, seconds, peak = run_measured(
        [sys.executable, "-m", "minichess_envs.cli", "tablebase", "stats", variant, "--cache-dir", str(tmp_path)])
    assert code == 2, err
    assert f"the {variant} tablebase" in err and f"Army pairs of {variant} that fit" in err and "--white" in err
    assert "Traceback" not in err
    assert seconds < 20 and peak < 200 * 2**20, (seconds, peak)


def test_the_memory_estimate_bounds_a_real_build(tmp_path):
    code = ("import resource, sys; from minichess_envs.tablebase import Tablebase; "
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
            "tb = Tablebase.build('gardner', 'KP', 'k'); "
            "print(len(tb), (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    positions, grown = int(out[0]), int(out[1])
    size = estimate("gardner", "KP", "k")
    assert positions <= size.positions and grown <= size.memory, (positions, grown, size)


# -- bad input ------------------------------------------------------------------------


def test_bad_input_raises_value_errors_that_name_the_problem(tb):
    with pytest.raises(FenError, match="bad FEN"):
        tb.probe("kqr/3/KQR/3 w - - 0 1")
    with pytest.raises(ValueError, match="variant 'gardner'"):
        tb.probe(Position("gardner"))
    small = Tablebase.build("3x3", white="KQ", black="k")
    with pytest.raises(ValueError, match="outside the 3x3 tablebase"):
        small.probe(START)
    with pytest.raises(ValueError, match="uses N"):
        Tablebase.build("3x3", white="KN")
    with pytest.raises(ValueError, match="exactly one king"):
        legal_positions("3x3", white="QR")
    with pytest.raises(ValueError, match="castling"):
        Tablebase.build("chess")
    with pytest.raises(TypeError):
        tb.probe(42)


# -- cache -----------------------------------------------------------------------------


def test_cache_is_written_read_and_matches_a_fresh_build(tb, cache):
    path = cache_path("3x3", "KQR", "kqr", cache)
    assert os.path.exists(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a good cache loads silently
        again = Tablebase.load("3x3", cache_dir=cache)
    assert again.build_seconds is None  # read, not built
    fresh = Tablebase.build("3x3")
    for name in ("pieces", "turn", "value", "dtm", "outcome"):
        assert np.array_equal(getattr(again, name), getattr(fresh, name))
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
    assert meta["format"] == FORMAT_VERSION and meta["variant"] == "3x3" and len(meta["checksum"]) == 64


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MINICHESS_CACHE", str(tmp_path / "mc"))
    assert default_cache_dir() == str(tmp_path / "mc")
    monkeypatch.delenv("MINICHESS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "minichess-envs")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "minichess-envs")


@pytest.fixture()
def small_cache(tmp_path):
    """A cached small table (K+Q vs K) to damage."""
    Tablebase.load("3x3", "KQ", "k", cache_dir=str(tmp_path))
    return str(tmp_path), cache_path("3x3", "KQ", "k", str(tmp_path))


def _rewrite(path, **changes):
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta.update(changes.pop("meta", {}))
    arrays.update(changes)
    np.savez(path.removesuffix(".npz"), meta=np.array(json.dumps(meta)), **arrays)


@pytest.mark.parametrize("damage, message", [
    ("truncate", "corrupt"),
    ("garbage", "corrupt"),
    ("values", "checksum mismatch"),
    ("version", r"stale \(format"),
    ("rules", r"stale \(rules"),
])
def test_corrupt_or_stale_cache_is_rebuilt_with_a_warning(small_cache, damage, message):
    cache_dir, path = small_cache
    good = Tablebase.load("3x3", "KQ", "k", cache_dir=cache_dir)
    if damage == "truncate":
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    elif damage == "garbage":
        with open(path, "wb") as f:
            f.write(b"not a tablebase")
    elif damage == "values":
        _rewrite(path, value=-good.value)  # old checksum, flipped values
    elif damage == "version":
        _rewrite(path, meta={"format": FORMAT_VERSION - 1})
    else:
        _rewrite(path, meta={"rules": {"width": 3}})
    with pytest.warns(CacheWarning, match=message):
        rebuilt = Tablebase.load("3x3", "KQ", "k", cache_dir=cache_dir)
    assert rebuilt.build_seconds is not None and np.array_equal(rebuilt.value, good.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(Tablebase.load("3x3", "KQ", "k", cache_dir=cache_dir).value, good.value)


# -- PerfectAgent ----------------------------------------------------------------------


def play(tb, fen, first, second, max_plies=60):
    """A game from ``fen`` (``first`` to move); returns (winner, plies) with winner 0 / 1 for first / second."""
    pos = Position("3x3", fen)
    players = (first, second)
    while not pos.is_game_over() and pos.ply < max_plies:
        agent = players[pos.ply % 2]
        pos.push_action(agent.act(None, pos.action_mask(), pos))
    outcome = pos.outcome()
    if outcome is None or outcome.winner is None:
        return None, pos.ply
    return (0 if outcome.winner == Position("3x3", fen).turn else 1), pos.ply


def test_perfect_agent_wins_every_won_position_within_its_dtm(tb):
    perfect, random_agent = PerfectAgent(seed=0, tablebase=tb), RandomAgent(seed=0)
    won = np.flatnonzero(tb.value == 1)
    assert len(won) == 11_720
    for i in won:
        winner, plies = play(tb, tb.fen(i), perfect, random_agent)
        assert winner == 0 and plies <= tb.dtm[i], tb.fen(i)


def test_perfect_agent_never_loses_a_drawn_position(tb):
    perfect, random_agent = PerfectAgent(seed=1, tablebase=tb), RandomAgent(seed=1)
    drawn = np.flatnonzero((tb.value == 0) & (tb.outcome == 0))
    assert len(drawn) == 7_640 - 424 - 64  # less stalemates and bare kings
    for i in drawn:
        winner, _ = play(tb, tb.fen(i), perfect, random_agent)
        assert winner != 1, tb.fen(i)
    assert play(tb, START, perfect, PerfectAgent(seed=2, tablebase=tb), max_plies=40)[0] is None


def test_perfect_agent_plays_fastest_and_longest_and_is_seeded(tb):
    agent = PerfectAgent(seed=5, tablebase=tb)
    lost = Position("3x3", "kqr/3/KQR w - - 0 1")
    lost.push_uci("b1c2")  # Qc2?: Black now mates in 7 plies
    assert tb.probe(lost) == (1, 7)
    black = Position("3x3", PROBE_POSITIONS["3x3"]["win-black"])
    assert black.action_to_move(agent.act(None, black.action_mask(), black)).uci() == "c2b2"
    losing = Position("3x3", "kqr/3/KQR w - - 0 1")
    losing.push_uci("c1c3")  # Rxc3?: Black wins in 3; now 1...Qxc3 is not forced
    choices = [PerfectAgent(seed=s, tablebase=tb).act(None, losing.action_mask(), losing) for s in range(8)]
    assert choices == [PerfectAgent(seed=s, tablebase=tb).act(None, losing.action_mask(), losing) for s in range(8)]
    for a in choices:
        assert losing.action_to_move(a) in tb.fastest_moves(losing)
    with pytest.raises(ValueError, match="needs the position"):
        agent.act(None, lost.action_mask())


def test_perfect_agent_saves_and_loads(tb, tmp_path, monkeypatch):
    monkeypatch.setenv("MINICHESS_CACHE", str(tmp_path / "cache"))  # the loaded agent builds its own table
    PerfectAgent(seed=7).save(str(tmp_path / "agent"))
    loaded = agents.load(str(tmp_path / "agent"))
    assert isinstance(loaded, PerfectAgent) and loaded.seed == 7 and loaded.variant == "3x3"
    pos = Position("3x3", LONGEST)
    assert pos.action_to_move(loaded.act(None, pos.action_mask(), pos)).uci() == "c2c1"


# -- scoring agents -------------------------------------------------------------------------


def test_perfect_agent_scores_perfectly(tb):
    score = score_agent(PerfectAgent(seed=0, tablebase=tb), tb)
    assert len(score.index) == 24_896
    for side, r in score.by_side().items():
        assert r["value_preserving"] == r["dtm_optimal"] == 1.0, side
        assert r["win->draw"] == r["win->loss"] == r["draw->loss"] == 0
    assert score.by_side()["white"]["positions"] == score.by_side()["black"]["positions"] == 12_448
    assert "| white |" in score.table()


def test_scores_of_a_callable_and_of_a_value_head(tb):
    def worst(pos):  # the move the table likes least: blunders wherever it can
        return min(tb.move_values(pos), key=lambda m: (m.value, -(m.dtm or 0))).move

    sample = score_agent(worst, tb, sample=2_000, seed=0)
    assert len(sample.index) == 2_000 and np.array_equal(sample.index, score_agent(worst, tb, sample=2_000).index)
    r = sample.rates()
    worst_value = np.array([min(m.value for m in tb.row_move_values(i)) for i in sample.index])
    value = tb.value[sample.index]
    assert r["value_preserving"] == pytest.approx(np.mean(worst_value == value)) and r["value_preserving"] < 0.7
    assert r["win->loss"] == np.sum((value == 1) & (worst_value == -1)) > 0
    assert r["win->draw"] == np.sum((value == 1) & (worst_value == 0)) > 0
    assert r["draw->loss"] == np.sum((value == 0) & (worst_value == -1)) > 0
    assert r["dtm_optimal"] < r["value_preserving"]  # lost positions: the quickest loss is not the longest
    assert sample.rates(0)["positions"] + sample.rates(1)["positions"] == 2_000

    def truth(positions):
        return np.array([tb.probe(p)[0] * 0.9 for p in positions])

    score = score_agent(RandomAgent(seed=0), tb, sample=500, value_fn=truth)
    assert score.rates()["value_match"] == 1.0 and 0 < score.rates()["value_preserving"] < 1
    zero = score_agent(RandomAgent(seed=0), tb, sample=500, value_fn=lambda ps: np.zeros(len(ps)))
    assert zero.rates()["value_match"] == pytest.approx(np.mean(tb.value[zero.index] == 0))

    class Cheater:
        def act(self, observation, action_mask, position=None):
            return int(np.flatnonzero(action_mask == 0)[0])

    with pytest.raises(ValueError, match="illegal action"):
        score_agent(Cheater(), tb, sample=5)


# -- CLI and imports ------------------------------------------------------------------------


def test_cli_stats_and_probe(cache, capsys):
    from minichess_envs.cli import main

    assert main(["tablebase", "stats", "3x3", "--cache-dir", cache]) == 0
    out = capsys.readouterr().out
    assert "32,152 positions" in out and "6,768 checkmates" in out and "longest mate: 9 plies" in out
    assert main(["tablebase", "probe", "kqr/3/KQR", "w", "-", "-", "0", "1", "--cache-dir", cache]) == 0
    out = capsys.readouterr().out
    assert "draw for white" in out and "* b1b3" in out and "loss in 2 plies" in out
    assert main(["tablebase", "probe", "k2/3/KN1 w - - 0 1", "--cache-dir", cache]) == 2
    assert "error" in capsys.readouterr().err


def test_import_minichess_envs_does_not_load_the_tablebase():
    code = "import sys, minichess_envs; print([m for m in sys.modules if m.startswith('minichess_envs.')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    mods = eval(out.stdout)
    assert "minichess_envs.tablebase" not in mods and "minichess_envs.positions" not in mods, out.stderr
