"""Judging an AlphaZero network against the exact 3x3 tablebase, every iteration (evaluation only: nothing here
feeds training). Each position's value-preserving and DTM-optimal actions are found once."""

from __future__ import annotations

import numpy as np

from agents.alphazero.search import NetworkEvaluator, SearchConfig, search
from agents.games.chess import chess_games
from minichess_envs.encoding import ObservationEncoding
from minichess_envs.tablebase import Tablebase, probe_targets


class TablebaseEvaluation:
    """Per-iteration metrics of a network on a tablebase variant: ``score_policy_*`` (the raw policy on every
    non-terminal position), ``score_mcts_*`` (search on a seeded sample), ``value_match`` (the value head as win,
    draw if |v| < 0.5, or loss) and ``probe_*`` (value and policy on the named probe positions)."""

    def __init__(self, tablebase: Tablebase, encoding: ObservationEncoding, search: SearchConfig,
                 sample: int = 1000, seed: int = 0, batch_size: int = 4096):
        self.encoding, self.search, self.batch_size = encoding, search, batch_size
        self.rows = tablebase.non_terminal()
        n, A = len(self.rows), encoding.variant.num_actions
        self.positions = [tablebase.position(int(i)) for i in self.rows]
        self.observations = np.stack([encoding.encode(p) for p in self.positions])
        self.masks = np.stack([p.action_mask() for p in self.positions])
        self.preserving, self.fastest = np.zeros((n, A), bool), np.zeros((n, A), bool)  # per position and action
        for k, i in enumerate(self.rows):
            value, dtm = int(tablebase.value[i]), int(tablebase.dtm[i])
            for m in tablebase.row_move_values(int(i)):
                self.preserving[k, m.action] = m.value == value
                self.fastest[k, m.action] = m.value == value and (-1 if m.dtm is None else m.dtm) == dtm
        self.values = tablebase.value[self.rows].astype(np.int8)
        self.sample = np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))
        self.probes = probe_targets(tablebase)
        self.probe_positions = {name: tablebase.position(tablebase.index(p["fen"])) for name, p in self.probes.items()}

    def rates(self, kind: str, actions: np.ndarray, which: np.ndarray) -> dict:
        return {f"score_{kind}_value_preserving": float(self.preserving[which, actions].mean()),
                f"score_{kind}_dtm_optimal": float(self.fastest[which, actions].mean())}

    def __call__(self, net, iteration=None, full_search: bool = False) -> dict:
        evaluator = NetworkEvaluator(net)
        actions, values = [], []  # the raw policy's masked argmax and the value head, on every position
        for start in range(0, len(self.rows), self.batch_size):
            priors, v = evaluator.evaluate(self.observations[start:start + self.batch_size],
                                           self.masks[start:start + self.batch_size])
            actions.append(priors.argmax(1))
            values.append(v)
        values = np.concatenate(values)
        which = np.arange(len(self.rows)) if full_search else self.sample
        searched = [np.zeros(0, np.int64)]  # the search's move from each position in ``which``
        for start in range(0, len(which), 512):
            positions = [self.positions[k] for k in which[start:start + 512]]
            searched.append(search(chess_games(positions, self.encoding), evaluator, self.search).actions)
        predicted = np.where(np.abs(values) < 0.5, 0, np.sign(values))
        return {**self.rates("policy", np.concatenate(actions), np.arange(len(self.rows))),
                **self.rates("mcts", np.concatenate(searched), which), "mcts_positions": len(which),
                "value_match": float(np.mean(predicted == self.values)), **self.probe(net)}

    def probe(self, net) -> dict:
        """Value head, and the policy's probability of each move class, on the probe positions."""
        evaluator = NetworkEvaluator(net)
        out = {}
        for name, position in self.probe_positions.items():
            priors, value = evaluator.evaluate(self.encoding.encode(position)[None], position.action_mask()[None])
            out[f"probe_{name}_value"] = float(value[0])
            target = self.probes[name]
            moves = {position.move_to_action(uci): result for uci, result in target["moves"].items()}
            for label, result in (("win", 1), ("draw", 0), ("loss", -1)):
                out[f"probe_{name}_p_{label}"] = float(sum(priors[0, a] for a, r in moves.items() if r[0] == result))
            fastest = [a for a, r in moves.items() if r[0] == target["value"] and r[1] == target["dtm"]]
            out[f"probe_{name}_p_fastest"] = float(sum(priors[0, a] for a in fastest))
        return out
