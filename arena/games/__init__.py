"""Two-player games on TextArena: the game base and registry, each game with its exact theory beside its env."""
