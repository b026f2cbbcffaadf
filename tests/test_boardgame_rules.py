"""Our board games move by move against OpenSpiel's, an independent implementation (google-deepmind/open_spiel)."""

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open-spiel is the board games' rules oracle: pip install open-spiel")

from agents.games import new_game  # noqa: E402

# Our name -> OpenSpiel's game and its parameters; both number the actions alike (Tic-Tac-Toe and Gomoku: cell
# size * r + c; Connect Four: column). Gomoku: OpenSpiel's gomoku is freestyle (an overline wins), as ours.
GAMES = {"tictactoe": ("tic_tac_toe", {}), "connect_four": ("connect_four", {}),
         "gomoku": ("gomoku", {"size": 9, "connect": 5}), "gomoku4k4": ("mnk", {"m": 4, "n": 4, "k": 4}),
         "gomoku15": ("gomoku", {"size": 15, "connect": 5})}
GAMES_PLAYED = {"gomoku15": 1_000}  # the others 10,000 (15x15 games are long: the rules are the 9x9's)


@pytest.mark.parametrize("game", GAMES)
def test_random_games_match_openspiel_move_by_move(game):
    rng = np.random.default_rng(0)
    oracle = pyspiel.load_game(*GAMES[game])
    steps, played = 0, GAMES_PLAYED.get(game, 10_000)
    for _ in range(played):
        ours, theirs = new_game(game), oracle.new_initial_state()
        while True:
            assert ours.is_over() == theirs.is_terminal(), (game, ours.plies)
            if ours.is_over():
                break
            assert ours.to_play() == theirs.current_player(), (game, ours.plies)
            legal = ours.legal_actions()
            assert sorted(legal) == theirs.legal_actions(), (game, ours.plies)
            action = int(legal[rng.integers(len(legal))])
            ours.step(action)
            theirs.apply_action(action)
            steps += 1
        returns = theirs.returns()
        expected = None if returns[0] == returns[1] else int(returns[1] > returns[0])
        assert ours.winner() == expected, (game, ours.plies)
    assert steps > played * (2 * type(ours).length - 1)  # no game ends before its first line can
