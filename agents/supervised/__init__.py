"""Supervised training of the AlphaZero (or PPO) network from games (engine self-play or PGN), and DAgger, on the
run machinery; every epoch's network saved as an agent (docs/supervised.md).

>>> net = train_supervised("runs/supervised_gardner", SupervisedSettings(data="data/gardner"))   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import torch
from torch.nn import functional as F

from agents.alphazero.agent import AlphaZeroAgent
from agents.alphazero.network import NetConfig, PolicyValueNet, masked_log_softmax
from agents.reports import line_plot, markdown_table
from agents.runs import Run, cosine_rate, read_json, read_state, write_csv, write_json
from minichess_envs.dataset import Batch, GameDataset
from minichess_envs.encoding import ObservationEncoding

#: The values each choice setting takes.
CHOICES = {"value_target": ("result", "score", "mix"), "lr_schedule": ("constant", "cosine"),
           "network": ("alphazero", "ppo")}


@dataclasses.dataclass
class SupervisedSettings:
    """A supervised run; saved in its checkpoints (a resumed run must match, but for ``epochs``)."""

    data: str  # a dataset directory written by minichess_envs.dataset.ShardWriter
    epochs: int = 10
    batch_size: int = 256
    learning_rate: float = 1e-3
    lr_schedule: str = "constant"  # or "cosine": from learning_rate down to 0 (see scheduled_rate)
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    value_target: str = "mix"  # "result", "score" (the engine's, tanh(cp / score_scale)) or "mix"
    score_weight: float = 0.5  # share of the engine score in the "mix" target
    score_scale: float = 400.0
    draw_penalty: float = 0.0  # weight of draw_move_loss (0: off)
    winning_cp: int = 300  # where draw_move_loss applies: the engine scores the side to move at least this
    validation: float = 0.05  # share of games held out, chosen per game
    shuffle_games: int = 512
    # the network, as in agents.alphazero.train.Config
    blocks: int = 4
    channels: int = 64
    policy_channels: int = 32
    history: int = 1
    last_move: bool = False
    network: str = "alphazero"  # or "ppo": the PPO actor-critic (agents.ppo.network.PPONet)
    ppo_channels: int = 64  # the PPO network's size (PPONetConfig)
    ppo_conv_layers: int = 3
    simulations: int = 64  # of the saved AlphaZero agents' search
    seed: int = 0
    threads: int = 0  # torch threads (0: torch's default)

    def __post_init__(self):
        for key, choices in CHOICES.items():
            if getattr(self, key) not in choices:
                raise ValueError(f"{key} must be one of {', '.join(choices)}, not {getattr(self, key)!r}")
        if not 0.0 <= self.score_weight <= 1.0 or not 0.0 <= self.validation < 1.0:
            raise ValueError("score_weight must be in [0, 1] and validation in [0, 1)")


def policy_loss(logits: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the moves played over the legal moves only (mean over the batch)."""
    return -masked_log_softmax(logits, masks).gather(1, actions[:, None]).squeeze(1).mean()


def draw_move_loss(logits: torch.Tensor, masks: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
    """``-log(1 - p(draw))``, the unlikelihood (Welleck et al., ICLR 2020) of the moves that draw at once. ``draws``
    marks them (:attr:`minichess_envs.dataset.Batch.draws`: only in positions the engine scores as won); ``p(draw)`` is
    their total probability under the masked policy. Averaged over the positions that have such a move; 0 if none has.
    It teaches what never to play when winning: the stalemate against a bare defender."""
    marked = draws.any(1)
    if not marked.any():
        return logits.new_zeros(())
    probabilities = masked_log_softmax(logits[marked], masks[marked]).exp()
    p_draw = (probabilities * draws[marked]).sum(1).clamp(max=1.0 - 1e-6)
    return -torch.log1p(-p_draw).mean()


def scheduled_rate(settings: SupervisedSettings, peak: float, done: float, start: int = 0) -> float:
    """The learning rate after ``done`` epochs (fractional), in a cycle over epochs ``start + 1 .. settings.epochs``:
    ``peak`` throughout (``"constant"``), or on a cosine from ``peak`` to 0 at the cycle's end (``"cosine"``)."""
    if settings.lr_schedule == "constant":
        return peak
    return cosine_rate(peak, 0.0, (done - start) / max(settings.epochs - start, 1))


def _tensors(batch: Batch, settings: SupervisedSettings):
    """The batch as tensors; the value target: the results, the engine's scores or their mix (``score_weight``)."""
    weight = {"result": 0.0, "score": 1.0}.get(settings.value_target, settings.score_weight)
    target = (1 - weight) * batch.results + weight * batch.scores
    return (torch.from_numpy(batch.observations), torch.from_numpy(batch.masks), torch.from_numpy(batch.actions),
            torch.from_numpy(np.asarray(target, np.float32)), torch.from_numpy(batch.results))


def make_net(settings: SupervisedSettings, variant) -> torch.nn.Module:
    """A fresh network of the kind and size the settings name."""
    shape = ObservationEncoding(variant, settings.history, settings.last_move).shape
    if settings.network == "ppo":
        from agents.ppo.network import PPONet, PPONetConfig
        return PPONet(PPONetConfig(*shape, variant.num_actions, settings.ppo_channels, settings.ppo_conv_layers))
    return PolicyValueNet(NetConfig(*shape, variant.num_actions, settings.blocks, settings.channels,
                                    settings.policy_channels))


def forward(net: torch.nn.Module, observations: torch.Tensor, masks: torch.Tensor):
    """``(policy logits, value)`` of either network (the PPO network takes the mask as input)."""
    return net(observations) if isinstance(net, PolicyValueNet) else net(observations, masks)


def save_agent(net: torch.nn.Module, variant, settings: SupervisedSettings, name: str, path: str) -> None:
    """Save the network to ``path`` as the agent that plays it: AlphaZero (search) or PPO (policy)."""
    if isinstance(net, PolicyValueNet):
        agent = AlphaZeroAgent(net, variant.name, settings.history, settings.last_move, settings.simulations, name=name)
    else:
        from agents.ppo.agent import PPOAgent
        agent = PPOAgent(net, variant.name, settings.history, settings.last_move, name=name, backend="supervised")
    agent.save(path)


def held_out_metrics(net: torch.nn.Module, data: GameDataset, settings: SupervisedSettings,
                     split: str = "validation") -> dict:
    """Held-out metrics: top-1 agreement with the move played, policy and value loss, value-sign accuracy; with the
    draws marked, also the share of won positions with a drawing move where the policy's top move draws."""
    net.eval()
    n = agree = signs = decisive = marked = drawn = 0
    policy_sum = value_sum = 0.0
    with torch.no_grad():
        for batch in data.batches(1024, split=split, score_scale=settings.score_scale):
            obs, masks, actions, target, results = _tensors(batch, settings)
            logits, value = forward(net, obs, masks)
            k = len(actions)
            policy_sum += policy_loss(logits, masks, actions).item() * k
            value_sum += F.mse_loss(value, target, reduction="sum").item()
            top = logits.masked_fill(masks == 0, float("-inf")).argmax(1)
            agree += (top == actions).sum().item()
            nonzero = results != 0
            decisive += nonzero.sum().item()
            signs += (torch.sign(value[nonzero]) == results[nonzero]).sum().item()
            n += k
            if batch.draws is not None:
                draws = torch.from_numpy(batch.draws)
                rows = draws.any(1)
                marked += rows.sum().item()
                drawn += draws[rows].gather(1, top[rows][:, None]).sum().item()
    net.train()
    nan = float("nan")  # no held-out position (a tiny dataset): the metrics are undefined, not zero
    row = {f"{split}_top1": agree / n if n else nan, f"{split}_policy_loss": policy_sum / n if n else nan,
           f"{split}_value_loss": value_sum / n if n else nan,
           f"{split}_value_sign": signs / decisive if decisive else nan, f"{split}_positions": n}
    if data.winning_cp is not None:
        row.update({f"{split}_draw_positions": marked, f"{split}_top_move_draws": drawn / marked if marked else nan})
    return row


def train_supervised(run_dir: str, settings: SupervisedSettings, resume: bool = False,
                     verbose: bool = True, learning_rate: float | None = None, cycle_start: int = 0) -> torch.nn.Module:
    """Train (or, with ``resume``, continue training) a network on ``settings.data``; returns it. ``learning_rate``
    replaces ``settings.learning_rate`` as the peak rate, and the schedule's cycle starts after epoch ``cycle_start``
    (:func:`scheduled_rate`): :func:`dagger` fine-tunes each of its epochs so."""
    if settings.threads:
        torch.set_num_threads(settings.threads)
    # the training data, with the moves that draw marked when draw_penalty is on
    data = GameDataset(settings.data, validation=settings.validation, history=settings.history,
                       last_move=settings.last_move, winning_cp=settings.winning_cp if settings.draw_penalty else None)
    variant = data.variant
    torch.manual_seed(settings.seed)
    net = make_net(settings, variant)
    optimizer = torch.optim.AdamW(net.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay)
    with Run(run_dir, settings, "supervised", resume=resume, may_differ=("epochs",), verbose=verbose) as run:
        if run.resumed:
            saved = run.tensors()
            net.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
        peak = settings.learning_rate if learning_rate is None else learning_rate
        positions_per_epoch = data.num_positions
        train_share = positions_per_epoch * (1 - settings.validation)  # for the schedule; held out per game
        progress = run.progress(total=settings.epochs * positions_per_epoch, desc=f"supervised {variant.name}",
                                unit="position", done=run.state.iteration * positions_per_epoch)
        if not run.resumed:  # epoch 0: the untrained network, the tournaments' reference point
            save_agent(net, variant, settings, "supervised-e0", os.path.join(run_dir, "agents", "epoch-000"))
        for epoch in range(run.state.iteration + 1, settings.epochs + 1):
            net.train()  # saving an agent leaves the network in eval mode
            seen = policy_sum = value_sum = draw_sum = 0.0
            for batch in data.batches(settings.batch_size, split="train", seed=settings.seed * 100_003 + epoch,
                                      shuffle_games=settings.shuffle_games, score_scale=settings.score_scale):
                rate = scheduled_rate(settings, peak, epoch - 1 + min(seen / max(train_share, 1), 1.0), cycle_start)
                for group in optimizer.param_groups:  # set after loading too: the saved state has its own rate
                    group["lr"] = rate
                obs, masks, actions, target, _ = _tensors(batch, settings)
                logits, value = forward(net, obs, masks)
                p_loss, v_loss = policy_loss(logits, masks, actions), F.mse_loss(value, target)
                loss = p_loss + v_loss
                if settings.draw_penalty:
                    d_loss = draw_move_loss(logits, masks, torch.from_numpy(batch.draws))
                    loss = loss + settings.draw_penalty * d_loss
                    draw_sum += d_loss.item() * len(actions)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), settings.grad_clip)
                optimizer.step()
                seen += len(actions)
                policy_sum += p_loss.item() * len(actions)
                value_sum += v_loss.item() * len(actions)
                progress.update(int((epoch - 1) * positions_per_epoch + seen),
                                f"policy {policy_sum / seen:.3f} value {value_sum / seen:.3f}")
            row = {"epoch": epoch, "learning_rate": peak if seen == 0 else rate,
                   "train_policy_loss": policy_sum / max(seen, 1),
                   "train_value_loss": value_sum / max(seen, 1), "train_positions": int(seen)}
            if settings.draw_penalty:
                row["train_draw_loss"] = draw_sum / max(seen, 1)
            row.update(held_out_metrics(net, data, settings))
            run.state.iteration = epoch
            run.state.env_steps += int(seen)
            save_agent(net, variant, settings, f"supervised-e{epoch}",
                       os.path.join(run_dir, "agents", f"epoch-{epoch:03d}"))
            run.save(row, tensors={"model": net.state_dict(), "optimizer": optimizer.state_dict()})
        progress.close()
        save_agent(net, variant, settings, "supervised", os.path.join(run_dir, "agent"))
    return net.eval()


def write_pretraining_files(out: str, metrics: list[dict], title: str) -> None:
    """A run's per-epoch losses and agreement as ``pretraining.png`` and ``pretraining.csv`` in ``out``."""
    epochs = [m["epoch"] for m in metrics]
    line_plot(os.path.join(out, "pretraining.png"), epochs,
              {"train policy loss": [m["train_policy_loss"] for m in metrics],
               "validation policy loss": [m["validation_policy_loss"] for m in metrics],
               "validation top-1 agreement": [m["validation_top1"] for m in metrics]},
              "epoch", "loss / agreement", title)
    write_csv(os.path.join(out, "pretraining.csv"), metrics)


def dagger_table(rounds: list[dict], metrics: list[dict], epochs: int) -> str:
    """Markdown: per DAgger round (``rounds`` from :func:`dagger`), the policy's games against random before its
    epoch, the positions labelled and the held-out agreement after (``metrics`` of the run, ``epochs`` before)."""
    rows = [[r["round"], *(f"{r[c]['wins']}-{r[c]['draws']}-{r[c]['losses']}" for c in ("white", "black")),
             f"{r['positions']:,}", f"{metrics[epochs - 1 + r['round']]['validation_top1']:.3f}"] for r in rounds]
    return markdown_table(["round", "as White W-D-L", "as Black W-D-L", "positions labelled",
                           "held-out agreement after"], rows)


def raw_policy(agent_dir: str, settings: SupervisedSettings):
    """The saved network's policy alone: its most probable legal move, no search."""
    if settings.network == "ppo":
        from agents.ppo.agent import PPOAgent
        return PPOAgent.load(agent_dir, sample=False)
    return AlphaZeroAgent.load(agent_dir, simulations=0)


def dagger(run_dir: str, settings: SupervisedSettings, rounds: int, games: int = 1000, nodes: int = 100,
           learning_rate: float | None = None, seed: int = 0, workers: int | None = None,
           ray_address: str | None = None, verbose: bool = True) -> list[dict]:
    """DAgger rounds (Ross, Gordon and Bagnell, AISTATS 2011) after a finished :func:`train_supervised` run. In round
    ``k`` the raw policy plays ``games`` games a colour against random (game ``i`` seeded ``2_000_000 * k + i``), the
    engine at ``nodes`` labels every position it moved in (shards ``dagger-rK-*`` in ``settings.data``), and training
    goes on for one epoch over all the data (peak rate ``learning_rate``; with the cosine schedule a warm restart).
    Resumable: a round's games are played by the kept agent of the epoch before it. Returns (and writes to
    ``dagger.json``) per round the policy's W-D-L by colour and the positions labelled."""
    from agents.arena.evaluation import versus_random
    from agents.supervised.engine_games import GenerationSettings, label_positions

    if rounds < 0 or games < 1:
        raise ValueError(f"rounds must be >= 0 and games >= 1, not {rounds} and {games}")
    trained = read_state(os.path.join(run_dir, "checkpoint")).iteration
    if trained < settings.epochs:
        raise ValueError(f"{run_dir} has trained {trained} of its {settings.epochs} epochs: finish it first")
    summary_path = os.path.join(run_dir, "dagger.json")
    summaries = read_json(summary_path) if os.path.exists(summary_path) else []
    variant = GameDataset(settings.data).variant.name
    for k in range(len(summaries) + 1, rounds + 1):
        # the policy before round k: the agent of epoch settings.epochs + k - 1 (kept, so a replay is exact)
        policy = raw_policy(os.path.join(run_dir, "agents", f"epoch-{settings.epochs + k - 1:03d}"), settings)
        fens, results, row = [], [], {"round": k}
        for color in ("white", "black"):
            visited: list = []
            match = versus_random(policy, variant, games=games, color=color, seed=2_000_000 * k, visited=visited)
            row[color] = {"wins": match.wins, "draws": match.draws, "losses": match.losses}
            for game_fens, reward in visited:
                result = {1: "1-0", -1: "0-1", 0: "1/2-1/2"}[reward if color == "white" else -reward]
                fens += game_fens
                results += [result] * len(game_fens)
        if verbose:
            print(f"DAgger round {k}: the raw policy against random, as White {row['white']}, as Black "
                  f"{row['black']}; {len(fens):,} positions to label", flush=True)
        labelling = GenerationSettings(variant, games=max(1, len(fens)), nodes=nodes, games_per_chunk=200, seed=seed)
        label_positions(settings.data, fens, results, labelling, prefix=f"dagger-r{k}", workers=workers,
                        ray_address=ray_address, progress=verbose)
        row["positions"] = len(fens)
        train_supervised(run_dir, dataclasses.replace(settings, epochs=settings.epochs + k), resume=True,
                         verbose=verbose, learning_rate=learning_rate, cycle_start=settings.epochs + k - 1)
        summaries.append(row)
        write_json(summary_path, summaries)
    return summaries
