"""AlphaZero: a residual policy-value network (``network``), batched PUCT or Gumbel search in C (``search``),
self-play (``selfplay``, ``workers``), the training loop (``train``) and a trained net as an agent (``agent``)."""
