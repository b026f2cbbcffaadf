"""AlphaZero: a residual policy-value network, batched PUCT search in C, and the self-play loop.

Needs torch (``pip install -e ".[agents]"``). Modules, in reading order:
``network`` (the net and its loss), ``mcts`` (the search around the C tree),
``selfplay`` (games and the replay buffer), ``train`` (the loop), ``agent``
(a trained net as an agent).
"""
