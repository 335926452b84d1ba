"""Players: one tiny interface (observation in, action out); scripted, local MLX and frontier players."""
