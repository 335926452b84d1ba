"""Self-play GRPO: the loss and advantages (pure), round rollouts against the pool, and the training round."""
