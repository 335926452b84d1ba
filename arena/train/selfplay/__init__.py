"""Self-play in the games (``loop: selfplay``): rollouts, branch games, NeuRD and GRPO updates, full-width targets."""
