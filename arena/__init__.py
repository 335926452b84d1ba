"""arena: post-train small local language models by self-play in games, as a content-addressed build."""

from arena.blas import ensure_fast_blas

# Must happen before any module imports mlx; importing `arena` first is what guarantees it.
ensure_fast_blas()

__version__ = "0.1.0"
