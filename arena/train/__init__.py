"""Building and improving models: the base model, snapshots and the opponent pool, GRPO and ReST-EM rounds."""
