"""ReST-EM rounds: sample games at the curriculum's tiers, keep the verified wins, LoRA-SFT on them with mlx-lm.

One round uses the same stages as a GRPO round (``loop: rest`` in params.yaml selects this package):
rollouts@rN is ``sample.sample_round``, train@rN is ``sft.train_rest_round`` on the win set ``winset`` builds.
"""
