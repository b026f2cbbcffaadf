"""The baseline players and engines: random, greedy, minimax, perfect play from a tablebase, UCI engines."""
