"""Agents: legality everywhere, greedy and minimax choices, the UCI engine, save/load.

Independent truth: hand-made positions (a free rook, a capturable king, mate in
one), the 3x3 tablebase for minimax's mate distances, and Fairy-Stockfish /
Stockfish themselves for the engine agent.
"""

from __future__ import annotations

import pickle
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agents
from agents import GreedyAgent, MinimaxAgent, RandomAgent, UCIEngineAgent
from agents.players import uci as uci_module
from agents.arena import play_game, play_match
from agents.players.perfect import PerfectAgent
from minichess_envs import VARIANTS, IllegalMoveError, Position


def engine_installed(engine: str) -> bool:
    try:
        uci_module.find_engine(engine)
    except agents.EngineNotFoundError:
        return False
    return True


needs_fsf = pytest.mark.skipif(not engine_installed("fairy-stockfish"),
                               reason="fairy-stockfish not installed (apt install fairy-stockfish)")
needs_stockfish = pytest.mark.skipif(not engine_installed("stockfish"),
                                     reason="stockfish not installed (apt install stockfish)")


class Checked:
    """Wraps an agent and asserts that every action it returns is legal (by the engine's own move list)."""

    def __init__(self, agent):
        self.agent, self.name, self.moves = agent, agent.name, 0

    def reset(self, seed=None):
        self.agent.reset(seed)

    def act(self, observation, action_mask, position):
        legal = position.legal_actions()
        assert sorted(np.flatnonzero(action_mask)) == sorted(legal)  # the mask the agent sees is right
        action = self.agent.act(observation, action_mask, position)
        assert action in legal, f"{self.name} played illegal action {action} in {position.fen()}"
        assert isinstance(action, (int, np.integer))
        self.moves += 1
        return action


# -- legality, in every variant --------------------------------------------------------


def baseline_agents(variant: str) -> list:
    players = [RandomAgent(), GreedyAgent(), MinimaxAgent(1)]
    if VARIANTS[variant].width * VARIANTS[variant].height <= 30:
        players.append(MinimaxAgent(2))  # depth 2 on 8x8 would only slow the test down
    if variant == "3x3":
        players.append(PerfectAgent("3x3"))
    return players


@settings(max_examples=100, deadline=None)
@given(variant=st.sampled_from(sorted(VARIANTS)), seed=st.integers(0, 2**32 - 1),
       opening=st.integers(0, 40), white=st.integers(0, 4), black=st.integers(0, 4))
def test_every_agent_plays_only_legal_moves(variant, seed, opening, white, black):
    players = baseline_agents(variant)
    w, b = Checked(players[white % len(players)]), Checked(players[black % len(players)])
    if w.agent is b.agent:
        b = Checked(baseline_agents(variant)[black % len(players)])
    # Random opening plies reach mid-game positions (promotions, castling, e.p., king captures).
    record = play_game(w, b, variant, seed, opening_plies=opening, ply_limit=opening + 60, pgn=False)
    assert record.result in ("1-0", "0-1", "1/2-1/2")
    assert record.plies <= opening + 60


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_baselines_finish_games_in_every_variant(variant):
    """Whole games, to the end or the ply limit, with every baseline on both sides."""
    players = baseline_agents(variant)
    for i, white in enumerate(players):
        black = baseline_agents(variant)[(i + 1) % len(players)]
        record = play_game(Checked(white), Checked(black), variant, seed=i, pgn=False)
        assert record.plies <= VARIANTS[variant].ply_limit


@needs_fsf
@pytest.mark.parametrize("variant", ["gardner", "losalamos", "chess"])
def test_fairy_stockfish_plays_only_legal_moves(variant):
    with UCIEngineAgent(variant, engine="fairy-stockfish", nodes=50) as engine:
        for seed in range(2):
            play_game(Checked(engine), Checked(RandomAgent()), variant, seed, opening_plies=6 * seed,
                      ply_limit=80, pgn=False)


# -- greedy ---------------------------------------------------------------------------


def action_of(pos: Position, uci: str) -> int:
    return pos.move_to_action(uci)


def test_greedy_takes_the_most_valuable_piece():
    # The white pawn on b3 can take a knight (a4) or a rook (c4).
    pos = Position("gardner", "k4/n1r2/1P3/5/4K w - - 0 1")
    agent = GreedyAgent(seed=0)
    for seed in range(10):
        agent.reset(seed)
        assert agent.act(pos.observation(), pos.action_mask(), pos) == action_of(pos, "b3c4")


def test_greedy_prefers_the_king_in_king_capture():
    # Black's queen can take White's queen (d3) or White's king (e1), which is legal and wins here.
    pos = Position("gardner-kingcapture", "k4/5/3Q1/5/3qK b - - 0 1")
    agent = GreedyAgent(seed=1)
    for seed in range(10):
        agent.reset(seed)
        assert agent.act(None, pos.action_mask(), pos) == action_of(pos, "d1e1")


def test_greedy_without_captures_is_random_and_seeded():
    pos = Position("gardner")  # no capture at the start
    agent = GreedyAgent()
    picks = set()
    for seed in range(40):
        agent.reset(seed)
        picks.add(agent.act(None, pos.action_mask(), pos))
    assert len(picks) >= 4 and picks <= set(pos.legal_actions())
    a, b = GreedyAgent(seed=7), GreedyAgent(seed=7)
    assert [a.act(None, None, pos) for _ in range(5)] == [b.act(None, None, pos) for _ in range(5)]


def test_position_agents_need_the_position():
    pos = Position("gardner")
    for agent in (GreedyAgent(), MinimaxAgent(1)):
        with pytest.raises(ValueError, match="position"):
            agent.act(pos.observation(), pos.action_mask())


# -- minimax -------------------------------------------------------------------------


def test_minimax_mates_in_one_and_takes_free_material():
    # Qc1-c5 is mate: the king on a5 is boxed in by its own pawns on a4 and b4 (hand-checked).
    mate = Position("gardner", "k4/pp3/5/5/2Q1K w - - 0 1")
    for depth in (1, 2, 3):
        best = MinimaxAgent(depth).best_moves(mate)
        assert {mate.action_to_move(mate.encode(c)).uci() for c in best} == {"c1c5"}
    # A hanging queen: every depth takes it.
    free = Position("gardner", "k4/5/2q2/1P3/4K w - - 0 1")
    for depth in (1, 2, 3):
        assert MinimaxAgent(depth, seed=0).act(None, None, free) == action_of(free, "b2c3")


def test_minimax_finds_the_fastest_mates_of_the_tablebase():
    """Depth-d search from a position won in d plies plays exactly the tablebase's fastest mates."""
    tablebase = pytest.importorskip("minichess_envs.tablebase")
    tb = tablebase.Tablebase.load("3x3")
    rng = np.random.default_rng(0)
    checked = 0
    for i in rng.permutation(len(tb)):
        pos = tb.position(int(i))
        value, dtm = tb.probe(pos)
        if value != 1 or dtm > 5:
            continue
        fastest = {m.action for m in tb.move_values(pos) if m.value == 1 and m.dtm == dtm}
        found = {pos.encode(c) for c in MinimaxAgent(dtm).best_moves(pos)}
        assert found == fastest, pos.fen()
        checked += 1
        if checked == 40:
            break
    assert checked == 40


def test_minimax_is_seeded_and_leaves_the_position_alone():
    pos = Position("gardner")
    pos.push_uci("b2b3")
    before = pos.fen(), pos.ply, pos.move_stack
    a, b = MinimaxAgent(2, seed=3), MinimaxAgent(2, seed=3)
    assert [a.act(None, None, pos) for _ in range(6)] == [b.act(None, None, pos) for _ in range(6)]
    assert (pos.fen(), pos.ply, pos.move_stack) == before
    with pytest.raises(ValueError, match="depth"):
        MinimaxAgent(0)


def test_minimax_depth_2_beats_random_by_a_wide_margin():
    match = play_match(MinimaxAgent(2), RandomAgent(), "gardner", games=20, seed=0)
    t = match.tally()
    assert t.wins + 0.5 * t.draws >= 18, str(t)


def test_minimax_depth_2_is_fast():
    agent, pos, rng = MinimaxAgent(2, seed=0), Position("gardner"), np.random.default_rng(0)
    start, moves = time.perf_counter(), 0
    while pos.outcome() is None and pos.ply < 60:
        if pos.turn == 0:
            pos.push_action(agent.act(None, None, pos))
            moves += 1
        else:
            actions = pos.legal_actions()
            pos.push_action(actions[rng.integers(len(actions))])
    assert (time.perf_counter() - start) / moves < 0.05  # measured ~0.1 ms per move


# -- the UCI engine ------------------------------------------------------------------


def test_missing_engine_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(uci_module, "SEARCH_DIRS", (str(tmp_path),))
    with pytest.raises(agents.EngineNotFoundError, match=r"apt install fairy-stockfish"):
        UCIEngineAgent("gardner")
    with pytest.raises(agents.EngineNotFoundError, match=r"apt install stockfish"):
        UCIEngineAgent("chess")
    with pytest.raises(agents.EngineNotFoundError, match="does not exist"):
        UCIEngineAgent("gardner", path=str(tmp_path / "nowhere"))


@needs_fsf
def test_engine_settings_are_checked():
    with pytest.raises(ValueError, match="no built-in variant for 'gardner-kingcapture'"):
        UCIEngineAgent("gardner-kingcapture")
    with pytest.raises(ValueError, match="only standard chess"):
        UCIEngineAgent("gardner", engine="stockfish")
    with pytest.raises(ValueError, match="one search limit"):
        UCIEngineAgent("gardner", nodes=10, depth=2)
    with pytest.raises(ValueError, match="positive integer"):
        UCIEngineAgent("gardner", nodes=0)
    engine = UCIEngineAgent("gardner", uci_variant="no-such-variant")
    with pytest.raises(agents.EngineError, match="does not know UCI_Variant 'no-such-variant'"):
        engine.bestmove(Position("gardner"))
    assert engine._proc is None


@needs_fsf
def test_engine_beats_random_in_a_legal_game_of_gardner():
    with UCIEngineAgent("gardner", nodes=200) as engine:
        for seed, (white, black) in enumerate([(engine, RandomAgent()), (RandomAgent(), engine)]):
            record = play_game(Checked(white), Checked(black), "gardner", seed)
            assert record.score(engine.name) == 1.0, record.pgn
            assert record.termination == "checkmate"


@needs_fsf
def test_engine_configured_from_a_variants_ini(tmp_path):
    """Variants Fairy-Stockfish lacks load from a config (here Baby chess)."""
    ini = tmp_path / "variants.ini"
    ini.write_text("[mc-baby:gardner]\nstartFen = kqbnr/ppppp/5/PPPPP/RNBQK w - - 0 1\n")
    with UCIEngineAgent("baby", variant_config=str(ini), uci_variant="mc-baby", nodes=50) as engine:
        play_game(Checked(engine), Checked(RandomAgent()), "baby", 0, ply_limit=40, pgn=False)


@needs_fsf
def test_engine_shuts_down_cleanly():
    engine = UCIEngineAgent("gardner", nodes=10)
    assert engine._proc is None  # started lazily, on the first move
    pos = Position("gardner")
    engine.act(None, None, pos)
    proc = engine._proc
    assert proc.poll() is None
    copy = pickle.loads(pickle.dumps(engine))  # a copy never shares the process
    assert copy._proc is None
    engine.close()
    assert proc.poll() is not None and engine._proc is None
    engine.close()  # idempotent
    with engine:  # restarts on demand, stops on exit
        engine.act(None, None, pos)
        proc = engine._proc
    assert proc.poll() is not None


@needs_stockfish
def test_stockfish_plays_chess():
    with UCIEngineAgent("chess", nodes=200) as engine:
        assert engine.engine == "stockfish" and engine.name == "stockfish-n200"
        record = play_game(Checked(engine), Checked(RandomAgent()), "chess", 0, ply_limit=120, pgn=False)
        assert record.score("stockfish-n200") >= 0.5


# -- save and load ---------------------------------------------------------------------


def test_agents_save_and_load_by_path(tmp_path):
    pos = Position("gardner")
    for i, agent in enumerate([GreedyAgent(seed=3, name="greedy-3"), MinimaxAgent(3, seed=5)]):
        agent.save(str(tmp_path / f"agent{i}"))
        loaded = agents.load(str(tmp_path / f"agent{i}"))
        assert type(loaded) is type(agent) and loaded.name == agent.name
        assert [loaded.act(None, None, pos) for _ in range(3)] == [agent.act(None, None, pos) for _ in range(3)]


@needs_fsf
def test_engine_agent_saves_its_settings(tmp_path):
    agent = UCIEngineAgent("losalamos", depth=2, options={"Hash": 8})
    agent.save(str(tmp_path))
    loaded = agents.load(str(tmp_path / "agent.json"))
    assert (loaded.variant, loaded.limit, loaded.limit_value, loaded.options, loaded.name) == (
        "losalamos", "depth", 2, {"Hash": 8}, "fsf-d2")
    pos = Position("losalamos")
    with agent, loaded:
        assert agent.act(None, None, pos) == loaded.act(None, None, pos)


@needs_fsf
def test_engine_random_moves_are_legal_seeded_and_saved(tmp_path):
    """random_moves=1 never asks the engine; a share p of the moves is random: about p of them, seeded by reset."""
    position = Position("gardner")
    mask = position.action_mask()
    always = UCIEngineAgent("gardner", nodes=10, random_moves=1.0)
    always.reset(3)
    moves = [always.act(None, mask, position) for _ in range(200)]
    assert always._proc is None and all(mask[a] for a in moves)
    assert set(moves) == set(np.flatnonzero(mask))  # every legal move comes up
    always.reset(3)
    assert [always.act(None, mask, position) for _ in range(200)] == moves
    with UCIEngineAgent("gardner", nodes=10, random_moves=0.25) as half:
        half.reset(0)
        best = UCIEngineAgent("gardner", nodes=10).bestmove(position)
        random_share = np.mean([position.action_to_move(half.act(None, mask, position)).uci() != best
                                for _ in range(400)])
    assert 0.25 * (1 - 1 / mask.sum()) - 0.07 < random_share < 0.25 + 0.07
    half.save(str(tmp_path))
    assert agents.load(str(tmp_path / "agent.json")).random_moves == 0.25
    for bad in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="random_moves must be a share"):
            UCIEngineAgent("gardner", random_moves=bad)


def test_illegal_engine_move_is_reported(monkeypatch):
    """A bestmove that is not legal in our rules raises EngineError, never a silent bad move."""
    if not engine_installed("fairy-stockfish"):
        pytest.skip("fairy-stockfish not installed")
    engine = UCIEngineAgent("gardner", nodes=10)
    monkeypatch.setattr(engine, "bestmove", lambda position: "a1a5")
    with pytest.raises(agents.EngineError, match="a1a5"):
        engine.act(None, None, Position("gardner"))
    with pytest.raises(IllegalMoveError):
        play_game(lambda p: "a1a5", RandomAgent(), "gardner")


@needs_fsf
def test_engine_games_are_reproducible_across_worker_processes():
    serial, parallel = (
        play_match(UCIEngineAgent("gardner", nodes=10), RandomAgent(), "gardner", games=4, seed=0, workers=w)
        for w in (1, 2)
    )
    assert [g.pgn for g in serial.games] == [g.pgn for g in parallel.games]
