"""Language Self-Play on verifiable puzzles: one model proposes puzzles (challenger) and answers them (solver).

``loop: lsp`` in params.yaml selects this package: rollouts@rN is ``rollouts.lsp_rollouts`` (proposals, G answers
each, both roles' advantages from ``advantages``), train@rN is ``train.train_lsp_round`` (the GRPO step of
arena.train.selfplay over both roles' decisions); ``audit`` is the challenger's reward-audit gate.
"""
