"""arena: post-train small local language models by self-play in games, as a content-addressed build."""

__version__ = "0.1.0"
