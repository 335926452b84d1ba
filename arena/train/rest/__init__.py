"""ReST-EM: curriculum-driven sampling, the verified win set, and LoRA SFT with mlx-lm."""
