"""Our board games move by move against OpenSpiel's, an independent implementation (google-deepmind/open_spiel)."""

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open-spiel is the board games' rules oracle: pip install open-spiel")

from agents.games import new_game  # noqa: E402

# Our name -> OpenSpiel's; both number the actions alike (Tic-Tac-Toe: square 3 r + c; Connect Four: column).
GAMES = {"tictactoe": "tic_tac_toe", "connect_four": "connect_four"}


@pytest.mark.parametrize("game", GAMES)
def test_random_games_match_openspiel_move_by_move(game):
    rng = np.random.default_rng(0)
    oracle = pyspiel.load_game(GAMES[game])
    steps = 0
    for _ in range(10_000):
        ours, theirs = new_game(game), oracle.new_initial_state()
        while True:
            assert ours.is_over() == theirs.is_terminal(), (game, ours.moves)
            if ours.is_over():
                break
            assert ours.to_play() == theirs.current_player(), (game, ours.moves)
            legal = ours.legal_actions()
            assert sorted(legal) == theirs.legal_actions(), (game, ours.moves)
            action = int(legal[rng.integers(len(legal))])
            ours.step(action)
            theirs.apply_action(action)
            steps += 1
        returns = theirs.returns()
        expected = None if returns[0] == returns[1] else int(returns[1] > returns[0])
        assert ours.winner() == expected, (game, ours.moves)
    assert steps > 10_000 * (5 if game == "tictactoe" else 7)  # no game ends before its first line can
