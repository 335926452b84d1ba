"""Games backed by TextArena 0.7.4: registry, standard Kuhn, legal actions, isolated RNG, replay digests."""

from arena.games.base import Game, GameResult, Move
from arena.games.registry import GAMES, GameSpec, get_spec, legal_actions, make_game, replay

__all__ = ["GAMES", "Game", "GameResult", "GameSpec", "Move", "get_spec", "legal_actions", "make_game", "replay"]
