"""A short seeded fuzz of the C core through its Python API, for runs under sanitizers.

    python .ci/fuzz_core.py [--seed N] [--rounds N]

Feeds mutated FENs, raw boards of random bytes, random moves and actions,
observations with random history, batches with random perspectives and a few
tree searches (every method and getter of ``_core.Search``). Every call must
either work or raise a ValueError/TypeError (FenError and IllegalMoveError are
ValueErrors); anything else, or a sanitizer report, is a bug. Exits 0 after printing a one-line summary.
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from minichess_envs import VARIANTS, FenError, Position, _core

ALPHABET = "pnbrqkPNBRQK0123456789/ -wbKQkqaceh" + "\u0663\u00b2\u212a"
EXTRA_FENS = {
    "chess": ["2QQQQBk/QQ4Rb/Q5QQ/Q3Q2Q/Q6Q/Q6Q/Q6Q/KQQQQQQB w - - 0 1", "4k1n1/2p5/8/KP5r/8/8/8/6N1 b - - 0 1",
              "4k3/8/8/8/8/8/8/4K3 b - - 2147483647 2147483647"],
    "gardner": ["qqqqk/qqqqq/5/QQQQQ/QQQQK w - - 0 1"],
}


def mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(len(chars) + 1)
        op = rng.randrange(4)
        if op == 0:
            chars.insert(i, rng.choice(ALPHABET))
        elif op == 1 and i < len(chars):
            del chars[i]
        elif op == 2 and i < len(chars):
            chars[i] = rng.choice(ALPHABET)
        else:
            chars.insert(i, str(rng.choice([2**15, 2**16 + 100, 2**31 - 1, 2**31, 2**63, 10**30])))
    return "".join(chars)


def play(rng: random.Random, pos: Position, plies: int) -> None:
    """Random legal moves, with random (mostly illegal) actions and codes in between."""
    n = pos.rules.num_actions
    for _ in range(plies):
        if pos.is_game_over() or not pos.legal_actions():
            return
        for bad in (rng.randrange(-5, n + 5), rng.randrange(2**32)):
            try:  # almost never legal; when it is, it is played
                pos.push_action(bad) if bad < 2**31 else pos.push_code(bad)
            except ValueError:
                pass
        actions = pos.legal_actions()
        if pos.is_game_over() or not actions:
            return
        pos.push_action(rng.choice(actions))
        pos.observation(history=rng.randint(1, 4), last_move=rng.random() < 0.5)
        pos.action_mask()


def fuzz(seed: int, rounds: int) -> dict[str, int]:
    rng = random.Random(seed)
    names = sorted(VARIANTS)
    counts = {"fens": 0, "accepted": 0, "raw_boards": 0, "batches": 0, "searches": 0}
    for _ in range(rounds):
        name = rng.choice(names)
        v = VARIANTS[name]
        sources = [v.start_fen, *EXTRA_FENS.get(name, [])]
        # FEN strings
        fen = mutate(rng, rng.choice(sources))
        counts["fens"] += 1
        try:
            pos = Position(v, fen)
        except FenError:
            pos = Position(v)
        else:
            counts["accepted"] += 1
            assert Position(v, pos.fen()).fen() == pos.fen()
        play(rng, pos, rng.randint(0, 30))
        pos.perft(rng.randint(0, 2))
        # raw boards: any bytes, any counters
        codes = [0, 0] + [t | c for t in range(1, 7) if "?PNBRQK"[t] in v.pieces.upper() for c in (0, 8)]
        raw = bytearray(rng.choice(codes) for _ in range(v.width * v.height))
        if rng.random() < 0.2:
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        raw = bytes(raw)
        scratch = _core.Position(v.rules, v)
        try:
            scratch.set_board(raw, rng.randrange(2), rng.randrange(-4, 40), rng.randrange(-4, 70),
                               rng.choice([0, 99, 2**31 - 1, 0, -1, 2**31]), rng.choice([1, 1, 2**31 - 1, 0]))
        except (ValueError, OverflowError):
            pass
        else:
            counts["raw_boards"] += 1
            for _ in range(rng.randint(0, 6)):
                codes = scratch.legal_move_codes()
                if not codes:
                    break
                scratch.push_code(rng.choice(codes))
                scratch.outcome_code()
            obs = np.empty((v.height, v.width, scratch.observation_channels(2, True)), np.float32)
            scratch.write_observation(obs, 2, True, rng.choice([-1, 0, 1]))
        # batches
        batch = [Position(v) for _ in range(rng.randint(1, 3))]
        for b in batch:
            play(rng, b, rng.randint(0, 10))
        history = rng.choice([1, 2, 8])
        C = batch[0].observation_channels(history, True)
        obs = np.empty((len(batch), v.height, v.width, C), np.float32)
        masks = np.empty((len(batch), v.num_actions), np.int8)
        persp = np.array([rng.choice([-1, 0, 1, 2, -2, 127]) for _ in batch], np.int8)
        try:
            _core.write_batch(batch, obs, masks, persp, history, True)
            counts["batches"] += 1
        except ValueError:
            assert (np.abs(persp.astype(int)) > 1).any() or persp.min() < -1
        # a small search with random priors and values, PUCT or Gumbel at the root
        if rng.random() < 0.2:
            gumbel = rng.random() < 0.5
            search = _core.Search(v.rules, 2, ply_limit=rng.randint(1, 50), history=history, last_move=True,
                                  root="gumbel" if gumbel else "puct", considered=rng.randint(1, 20))
            for i, b in enumerate(batch[:2]):
                search.set_root(i, b)
            values_rng = np.random.default_rng(rng.randrange(2**32))
            if gumbel:
                search.set_gumbel(values_rng.gumbel(size=(2, v.num_actions)).astype(np.float32))
            k = 4
            sobs = np.empty((2 * k, v.height, v.width, C), np.float32)
            smasks = np.empty((2 * k, v.num_actions), np.int8)
            keys = np.empty(2 * k, np.uint64)
            for _ in range(10):
                n = search.select(k, rng.randint(1, 40), sobs, smasks, keys)
                priors = values_rng.random((n, v.num_actions), np.float32)
                search.backup(priors, values_rng.uniform(-1, 1, n).astype(np.float32))
            visits = np.empty((2, v.num_actions), np.float32)
            search.root_stats(visits, np.empty_like(visits))
            search.root_priors(np.empty_like(visits))
            if gumbel:
                search.root_policy(np.empty_like(visits), np.empty(2, np.int64))
            # the entry points the searches above leave out: the getters, and a tree cleared mid-search
            assert search.num_trees == 2 and search.pending == 0
            assert search.visits(0) >= 0 and search.visits(1) >= 0
            search.clear(rng.randrange(2))
            n = search.select(k, rng.randint(1, 40), sobs, smasks, keys)
            search.backup(values_rng.random((n, v.num_actions), np.float32),
                          values_rng.uniform(-1, 1, n).astype(np.float32))
            counts["searches"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    counts = fuzz(args.seed, args.rounds)
    print(f"fuzz_core: seed {args.seed}, {args.rounds} rounds: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
