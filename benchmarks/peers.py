"""Peer measurements to set beside minichess-envs' own figures.

Each function imports its peer library lazily, never raises when it is missing
(it returns {"available": False, "reason": ...}) and returns a small dict that
includes the exact definition of the "step" it counts.  All timings use
time.perf_counter, exclude warm-up / compilation and use a fixed seed.

Peers: pgx gardner_chess (JAX, 5x5), EnvPool GardnerChess-v1 and Chess-v1
(C++ ports of pgx's games, batched, 1-2 threads), PettingZoo classic chess_v6
(8x8, AEC) and python-chess (8x8 random play and perft).

    python benchmarks/peers.py            # short run of everything
    python benchmarks/peers.py 5          # 5 s per measurement
"""

from __future__ import annotations

import json
import os
import platform
import random
import sys
import time

SEED = 0
START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
KIWIPETE_FEN = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


def machine() -> dict:
    """The date (UTC), the machine and its load average now: what every figure is recorded with."""
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_start": os.getloadavg()}


def finish(results: dict, path: str | None) -> None:
    """Records the load average at the end, prints both, and writes ``results`` as JSON to ``path`` if given."""
    results["load_end"] = os.getloadavg()
    print(f"load average {results['load_start'][0]:.2f} at the start, {results['load_end'][0]:.2f} at the end")
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(results, f, indent=2, default=str)


def _missing(exc: BaseException) -> dict:
    return {"available": False, "reason": f"{type(exc).__name__}: {exc}"}


# --------------------------------------------------------------------------- pgx


def pgx_gardner(batch_sizes=(1, 8, 64, 256, 1024), seconds=5.0, steps_per_call=1) -> dict:
    """Random-play throughput of pgx gardner_chess on the default JAX device (CPU here).

    One jitted call = `steps_per_call` vmapped steps (1: one step per Python call,
    as in an ordinary RL loop; >1: steps fused with lax.scan, which removes the
    per-call dispatch overhead).  Actions are uniform over legal_action_mask,
    sampled inside the jitted function; finished games are reset with
    pgx.experimental.auto_reset.  Under vmap, auto_reset's lax.cond becomes a
    select, so env.init runs for every game on every step (pgx's own idiom).
    On a 2-core CPU the figures swing by up to ~1.7x between runs with XLA's
    default thread pool; XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
    intra_op_parallelism_threads=1" (set before jax is imported) was steadier.
    """
    try:
        import jax
        import jax.numpy as jnp
        import pgx
        from pgx.experimental import auto_reset
    except Exception as exc:  # ImportError, or a broken jaxlib
        return _missing(exc)

    env = pgx.make("gardner_chess")
    step_fn = auto_reset(env.step, env.init)

    def one_step(carry, _):
        state, key = carry
        key, k_act, k_step = jax.random.split(key, 3)
        # log-mask logits: illegal actions get -inf, legal ones equal weight.
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(k_act, logits, axis=-1)
        keys = jax.random.split(k_step, action.shape[0])
        state = jax.vmap(step_fn)(state, action, keys)
        return (state, key), None

    @jax.jit
    def run(state, key):
        (state, key), _ = jax.lax.scan(one_step, (state, key), None, length=steps_per_call)
        return state, key

    init = jax.jit(jax.vmap(env.init))
    results = {}
    for b in batch_sizes:
        key = jax.random.PRNGKey(SEED)
        key, k0 = jax.random.split(key)
        state = init(jax.random.split(k0, b))

        t0 = time.perf_counter()
        state, key = run(state, key)  # compile + first call
        jax.block_until_ready(state)
        compile_s = time.perf_counter() - t0
        for _ in range(3):  # warm-up
            state, key = run(state, key)
        jax.block_until_ready(state)

        # Dispatch calls in chunks and sync once per chunk: asynchronous
        # dispatch may overlap Python with compute, but nothing is left
        # uncounted or unfinished when the clock stops.
        chunk, calls = 1, 0
        t0 = time.perf_counter()
        while True:
            for _ in range(chunk):
                state, key = run(state, key)
            jax.block_until_ready(state)
            calls += chunk
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds:
                break
            chunk = min(chunk * 2, 64)
        steps = calls * steps_per_call * b
        results[b] = {"steps_per_s": steps / elapsed, "steps": steps,
                      "seconds": elapsed, "compile_s": compile_s}

    best = max(results, key=lambda b: results[b]["steps_per_s"])
    return {
        "available": True,
        "peer": "pgx gardner_chess (5x5)",
        "versions": {"pgx": pgx.__version__, "jax": jax.__version__},
        "device": str(jax.devices()[0]),
        "step": ("one ply in one game: steps/s = batch_size * vmapped env.step calls / s; "
                 "auto-reset plies counted; uniform random legal actions; "
                 f"{steps_per_call} step(s) per jitted call; env.step also computes the observation; "
                 "pgx ends gardner games as a draw after 256 plies"),
        "steps_per_call": steps_per_call,
        "by_batch": results,
        "best_batch": best,
        "best_steps_per_s": results[best]["steps_per_s"],
    }


# ---------------------------------------------------------------------- EnvPool


def sample_legal(masks, rng):
    """A uniformly random legal action per row of a mask batch (0 where none is legal), vectorised NumPy.

    The one sampler of every batched loop here: ours (``bench_envs.py``) and EnvPool's.
    """
    import numpy as np

    counts = masks.sum(1, dtype=np.int64)
    pick = (rng.random(len(masks)) * counts).astype(np.int64)
    actions = (np.cumsum(masks, axis=1, dtype=np.int16) <= pick[:, None]).sum(1)
    return np.where(counts > 0, actions, 0)


def envpool_chess(task_id="GardnerChess-v1", batch_sizes=(64, 256), threads=(1, 2), seconds=5.0,
                  warmup_s=0.3) -> dict:
    """Random-play throughput of EnvPool's chess ports (``GardnerChess-v1``, ``Chess-v1``) on the CPU.

    One ``envpool.make(task_id, env_type="gymnasium", num_envs=b, batch_size=b, num_threads=t)`` per
    (batch, threads): sync mode, every ``step`` moves all ``b`` games. EnvPool's board games are C++
    ports of pgx's: two-player games in which the side to move plays, so one env step is one ply. An env
    that ended on the previous step is reset by the next one (its action ignored, ``elapsed_step`` back to
    0): that env step is counted in env steps/s but not as a ply. Actions are uniform over
    ``info["legal_action_mask"]``, drawn with :func:`sample_legal` in Python/NumPy (as in our vector-env
    loops), and sent with ``info["env_id"]``: with 2 threads the rows come back in the order the games
    finished, not 0..b-1. The loop figures (``*_per_s``) include that sampling; the ``*_in_step`` figures
    count only the time inside ``env.step`` (EnvPool's C++ work and its Python wrapper).

    Every env step writes one observation per player (``obs`` has ``2 * b`` rows: both sides' views of
    each game), each 8 positions of history: (5, 5, 115) float32 for Gardner, (8, 8, 119) for 8x8.
    """
    try:
        import envpool
        import numpy as np
    except Exception as exc:  # ImportError, or a broken build
        return _missing(exc)
    if task_id not in envpool.list_all_envs():
        return {"available": False, "reason": f"envpool {envpool.__version__} has no {task_id}"}

    rng = np.random.default_rng(SEED)
    runs, layout = [], {}
    for b in batch_sizes:
        for t in threads:
            env = envpool.make(task_id, env_type="gymnasium", num_envs=b, batch_size=b, num_threads=t, seed=SEED)
            obs, info = env.reset()
            rows = np.arange(b)

            def play(duration, obs, info, done):
                """Step for ``duration`` s; returns counts and the time inside step(), then obs, info, done.

                ``done``: the games that ended on the previous step, which this step resets (no ply).
                """
                calls = plies = games = game_plies = illegal = stuck = 0
                inside = 0.0
                t0 = time.perf_counter()
                while True:
                    masks, env_id = info["legal_action_mask"], info["env_id"]
                    actions = sample_legal(masks, rng)
                    live = ~done
                    illegal += int((~masks[rows, actions] & live).sum())  # 0: the sampler keeps to the mask
                    stuck += int((live & ~masks.any(1)).sum())  # a live game with no legal move: 0
                    s = time.perf_counter()
                    obs, _, terminated, truncated, info = env.step(actions, env_id)
                    inside += time.perf_counter() - s
                    calls += 1
                    plies += int(live.sum())
                    done = terminated | truncated
                    if done.any():
                        games += int(done.sum())
                        game_plies += int(info["elapsed_step"][done].sum())
                    elapsed = time.perf_counter() - t0
                    if elapsed >= duration:
                        return (dict(calls=calls, plies=plies, games=games, game_plies=game_plies,
                                     illegal=illegal, stuck=stuck, inside=inside, elapsed=elapsed), obs, info, done)

            _, obs, info, done = play(warmup_s, obs, info, np.zeros(b, bool))
            r, obs, info, _ = play(seconds, obs, info, done)
            env.close()
            steps = r["calls"] * b
            layout = {"obs_per_env_step": obs.shape[0] // b, "obs_shape": tuple(obs.shape[1:]),
                      "obs_dtype": str(obs.dtype), "num_actions": info["legal_action_mask"].shape[1]}
            runs.append({
                "batch": b, "threads": t,
                "plies_per_s": r["plies"] / r["elapsed"],
                "env_steps_per_s": steps / r["elapsed"],
                "plies_per_s_in_step": r["plies"] / r["inside"],
                "env_steps_per_s_in_step": steps / r["inside"],
                "plies": r["plies"], "env_steps": steps, "seconds": r["elapsed"], "seconds_in_step": r["inside"],
                "games_finished": r["games"],
                "mean_game_plies": r["game_plies"] / r["games"] if r["games"] else None,
                "illegal_actions_sampled": r["illegal"], "live_games_without_legal_move": r["stuck"],
                "obs_rows": obs.shape[0],
            })

    best = max(runs, key=lambda r: r["plies_per_s"])
    return {
        "available": True,
        "peer": f"EnvPool {task_id}",
        "task_id": task_id,
        "versions": {"envpool": envpool.__version__, "numpy": np.__version__},
        "step": ("one env.step of a sync pool (num_envs = batch_size = b) moves every game one ply; "
                 "plies/s = plies / s (the reset step after a game's end is an env step, not a ply); "
                 "uniform random legal actions sampled in NumPy from info['legal_action_mask'] "
                 "(in the loop figures, not in the *_in_step ones); each env step writes an observation "
                 "for each of the two players, 8 positions of history"),
        "obs_shape": layout["obs_shape"],
        "obs_dtype": layout["obs_dtype"],
        "obs_per_env_step": layout["obs_per_env_step"],
        "num_actions": layout["num_actions"],
        "runs": runs,
        "best": {"batch": best["batch"], "threads": best["threads"]},
        "best_plies_per_s": best["plies_per_s"],
        "best_plies_per_s_in_step": max(r["plies_per_s_in_step"] for r in runs),
    }


# ------------------------------------------------------------------- PettingZoo


def pettingzoo_chess(seconds=5.0, warmup_s=0.5) -> dict:
    """PettingZoo classic chess_v6 (the wrapped `chess_v6.env()`), AEC loop, random legal moves."""
    try:
        import numpy as np
        import pettingzoo
        from pettingzoo.classic import chess_v6
    except Exception as exc:
        return _missing(exc)

    env = chess_v6.env()
    rng = np.random.default_rng(SEED)

    def play(duration, seed):
        """Play games for `duration` s; returns (plies, games finished, elapsed)."""
        plies = games = 0
        t0 = time.perf_counter()
        while True:
            env.reset(seed=seed)
            seed += 1
            for agent in env.agent_iter():
                obs, _, term, trunc, _ = env.last()
                if term or trunc:
                    action = None  # dead agents must step with None; not counted
                else:
                    action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
                    plies += 1
                env.step(action)
                # The clock is checked per ply, so the run ends mid-game.
                if time.perf_counter() - t0 >= duration:
                    return plies, games, time.perf_counter() - t0
            games += 1

    play(warmup_s, SEED + 10_000)
    plies, games, elapsed = play(seconds, SEED)
    env.close()
    return {
        "available": True,
        "peer": "PettingZoo classic chess_v6 (8x8, AEC, chess_v6.env() with default wrappers)",
        "versions": {"pettingzoo": pettingzoo.__version__, "chess": _chess_version()},
        "step": ("one env.step(action) with a non-None action (one ply), including env.last() "
                 "(observation + mask) before it; reset() and the None steps of finished agents "
                 "are timed but not counted"),
        "plies_per_s": plies / elapsed,
        "plies": plies,
        "games_finished": games,
        "seconds": elapsed,
    }


# ----------------------------------------------------------------- python-chess


def _chess_version():
    try:
        import chess
        return chess.__version__
    except Exception:
        return None


def python_chess_random_play(seconds=5.0, warmup_s=0.5) -> dict:
    """python-chess 8x8 random play: legal moves, random choice, push, outcome()."""
    try:
        import chess
    except Exception as exc:
        return _missing(exc)

    rng = random.Random(SEED)

    def play(duration):
        board = chess.Board()
        plies = games = 0
        t0 = time.perf_counter()
        while True:
            board.push(rng.choice(list(board.legal_moves)))
            plies += 1
            # outcome() without claim_draw: mate, stalemate, insufficient
            # material, 75-move rule, fivefold repetition.
            if board.outcome() is not None:
                board.reset()
                games += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= duration:
                return plies, games, elapsed

    play(warmup_s)
    plies, games, elapsed = play(seconds)
    return {
        "available": True,
        "peer": "python-chess random play (8x8)",
        "versions": {"chess": chess.__version__},
        "step": ("one ply: list(board.legal_moves) + random.choice + board.push + "
                 "board.outcome() (claim_draw=False); board.reset() on game over is timed, not counted"),
        "plies_per_s": plies / elapsed,
        "plies": plies,
        "games_finished": games,
        "seconds": elapsed,
    }


def python_chess_perft(fen=START_FEN, depth=4, bulk=False, repeats=1) -> dict:
    """Perft with python-chess.  bulk=False: push/pop down to every leaf;
    bulk=True: at depth 1 count len(legal moves) without pushing (common trick)."""
    try:
        import chess
    except Exception as exc:
        return _missing(exc)

    def perft(board, d):
        if d == 0:
            return 1
        moves = list(board.legal_moves)
        if bulk and d == 1:
            return len(moves)
        n = 0
        for m in moves:
            board.push(m)
            n += perft(board, d - 1)
            board.pop()
        return n

    board = chess.Board(fen)
    perft(board, min(depth, 2))  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        nodes = perft(board, depth)
        best = min(best, time.perf_counter() - t0)
    return {
        "available": True,
        "peer": "python-chess perft",
        "versions": {"chess": chess.__version__},
        "fen": fen,
        "depth": depth,
        "bulk": bulk,
        "step": ("node = leaf position at `depth` (standard perft count); "
                 + ("leaves counted with len(legal_moves) at depth 1" if bulk
                    else "every leaf reached by board.push, undone by board.pop")),
        "nodes": nodes,
        "seconds": best,
        "nodes_per_s": nodes / best,
    }


# ------------------------------------------------------------------------- main


def _fmt(x):
    return f"{x:,.0f}"


def main(seconds=1.0):
    rows = []

    def add(name, res, rate_key, extra=""):
        if not res.get("available"):
            rows.append((name, "n/a", res.get("reason", "")))
        else:
            rows.append((name, _fmt(res[rate_key]), extra))

    pgx_res = pgx_gardner(seconds=seconds)
    if pgx_res.get("available"):
        for b, r in pgx_res["by_batch"].items():
            rows.append((f"pgx gardner_chess  batch={b}", _fmt(r["steps_per_s"]),
                         f"steps/s (compile {r['compile_s']:.1f} s)"))
        rows.append(("pgx gardner_chess  best", _fmt(pgx_res["best_steps_per_s"]),
                     f"steps/s (batch {pgx_res['best_batch']}; {pgx_res['versions']})"))
    else:
        add("pgx gardner_chess", pgx_res, "")
    for task_id in ("GardnerChess-v1", "Chess-v1"):
        ep = envpool_chess(task_id, seconds=seconds)
        if ep.get("available"):
            for r in ep["runs"]:
                rows.append((f"EnvPool {task_id}  batch={r['batch']} threads={r['threads']}",
                             _fmt(r["plies_per_s"]), f"plies/s ({_fmt(r['env_steps_per_s'])} env steps/s)"))
            b = ep["best"]
            rows.append((f"EnvPool {task_id}  best", _fmt(ep["best_plies_per_s"]),
                         f"plies/s (batch {b['batch']}, {b['threads']} threads; obs {tuple(ep['obs_shape'])} "
                         f"{ep['obs_dtype']} x{ep['obs_per_env_step']} per step; {ep['versions']})"))
        else:
            add(f"EnvPool {task_id}", ep, "")
    add("PettingZoo chess_v6", pettingzoo_chess(seconds=seconds), "plies_per_s", "plies/s")
    add("python-chess random play", python_chess_random_play(seconds=seconds), "plies_per_s", "plies/s")
    for label, fen, d in (("start", START_FEN, 4), ("kiwipete", KIWIPETE_FEN, 3)):
        r = python_chess_perft(fen, d)
        add(f"python-chess perft {label} d{d}", r, "nodes_per_s",
            f"nodes/s ({r.get('nodes')} nodes)")

    w = max(len(r[0]) for r in rows)
    for name, rate, note in rows:
        print(f"{name:<{w}}  {rate:>12}  {note}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
