"""One game in progress over a fresh TextArena env: isolated RNG, legal actions, observations, results, digests."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import textarena as ta

from arena.core.hashing import digest_config

T = TypeVar("T")


@dataclass(frozen=True)
class Observation:
    """What a player sees at one decision.

    ``text`` is TextArena's full observation; ``compact`` holds only what this decision depends on
    (short prompts for tiny models); ``state`` is a structured view for scripted policies;
    ``sample_key`` is a deterministic per-decision key so sampling players draw the same choice
    whatever else is batched alongside; ``stream`` names the game within its match (0: none), so a player may
    carry what it computed at the game's previous turn.
    """

    game_id: str
    player_id: int
    text: str
    compact: str
    legal_actions: tuple[str, ...]
    state: Mapping[str, Any] = field(default_factory=dict)
    info_set: str | None = None
    sample_key: int = 0
    stream: int = 0



class Move(NamedTuple):
    """One submitted action: who sent it, the text, and whether the env accepted it."""

    player: int
    action: str
    valid: bool


@dataclass(frozen=True)
class GameResult:
    """The outcome of a finished game.

    ``rewards`` are per player (Kuhn: net chips; other games +1/-1/0). ``round_rewards`` has one entry
    per Kuhn round (other games: a single entry equal to ``rewards``). ``turns`` counts accepted moves;
    invalid attempts are counted in ``invalid_moves`` instead.
    """

    rewards: tuple[float, float]
    round_rewards: tuple[tuple[float, float], ...]
    invalid_moves: tuple[int, int]
    forfeit_by: int | None
    reason: str
    transcript_digest: str
    turns: int
    # Game-specific facts of the finished game for its measures (negotiation: values, holdings, trades); None where
    # a game records none, so other games' records keep their bytes.
    details: Mapping[str, Any] | None = None


class Game(ABC):
    """A two-player TextArena game with its own RNG stream.

    TextArena's ``reset(seed)`` reseeds the global ``random`` module and envs draw cards and dice from
    it (Kuhn deals and Liar's Dice rolls happen inside ``step`` when a round ends), so construction, reset
    and every ``step`` run inside ``_isolated``: the game's own random state is swapped in and the
    caller's restored afterwards. Many games can then be stepped in any interleaving with identical
    outcomes, and the caller's global ``random`` is never disturbed. ``get_observation`` and ``close``
    only read messages and rewards (TextArena's core, the same for every env) and skip the swap, which
    costs more than the call itself; tests check that they leave the global state untouched. The swap
    is process-wide: step games from one thread.
    """

    # Moves played before any player decided (the variant's ``opening``, a training start distribution); None where
    # the variant plays none, so the standard game's records keep their bytes.
    opening: tuple[str, ...] | None = None

    def __init__(self, game_id: str, env_id: str, seed: int, variant: dict[str, Any], env_kwargs: Mapping) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.game_id = game_id
        self.env_id = env_id
        self.variant = variant
        self.seed = seed
        self.actions: list[str] = []
        self.moves: list[Move] = []
        self._invalid = [0, 0]
        self._observation: Observation | None = None
        self._result: GameResult | None = None
        self._rng_state: tuple | None = None
        self._env = self._isolated(self._start, dict(env_kwargs))
        # reset() created the state object; it stays the same for the whole game (saves wrapper lookups).
        self._ta_state = self._env.state
        if variant.get("opening"):
            self.opening = self._play_opening(variant["opening"])

    def _start(self, env_kwargs: dict) -> Any:
        # Seed first so even env construction (should it ever draw) is a function of the seed alone.
        random.seed(self.seed)
        env = ta.make(self.env_id, **env_kwargs)
        env.reset(num_players=2, seed=self.seed)
        return env

    def _play_opening(self, most: int) -> tuple[str, ...]:
        """Uniform in 0..``most`` random moves, none ending the game, drawn from an RNG of the game and seed alone.

        They come before any player decides, so they stay out of ``actions`` and ``moves``: a replay of the
        recorded actions starts from the same opening because ``make_game`` plays it again from the seed.
        """
        rng = random.Random(f"{self.game_id}-opening:{self.seed}")
        played: list[str] = []
        for _ in range(rng.randint(0, most)):
            moves = self._opening_moves(self._ta_state.game_state)
            if not moves:
                break
            played.append(rng.choice(moves))
            self._isolated(self._env.step, played[-1])
        return tuple(played)

    def _opening_moves(self, game_state: Mapping[str, Any]) -> list[str]:
        """The legal moves an opening may play here: those that leave the game running (games whose variant takes
        ``opening`` say which)."""
        raise NotImplementedError(f"{self.game_id} has no opening moves: its variant takes no 'opening'")

    def _isolated(self, fn: Callable[..., T], *args: Any) -> T:
        outer = random.getstate()
        if self._rng_state is not None:
            random.setstate(self._rng_state)
        try:
            return fn(*args)
        finally:
            self._rng_state = random.getstate()
            random.setstate(outer)

    @property
    def done(self) -> bool:
        """Whether the game has ended."""
        return bool(self._ta_state.done)

    @property
    def current_player(self) -> int:
        """The player to act (0 or 1)."""
        return int(self._ta_state.current_player_id)

    def observation(self) -> Observation:
        """What the current player sees now (``sample_key`` 0: the match runner sets it)."""
        if self.done:
            raise RuntimeError(f"{self.game_id} game (seed {self.seed}) is over: no observation; call result()")
        if self._observation is None:
            player, text = self._env.get_observation()
            game_state = self._ta_state.game_state
            self._observation = Observation(
                game_id=self.game_id,
                player_id=player,
                text=text,
                compact=self._compact(game_state, player),
                legal_actions=self._legal_actions(game_state),
                state=self._state(game_state, player),
                info_set=self._info_set(game_state, player),
            )
        return self._observation

    def step(self, action: str) -> None:
        """Submit the current player's action (invalid text is recorded and judged by TextArena's rules)."""
        if not isinstance(action, str):
            raise TypeError(f"an action must be a str, got {type(action).__name__}: {action!r}")
        if self.done:
            raise RuntimeError(f"{self.game_id} game (seed {self.seed}) is over: cannot step {action!r}")
        player = self.current_player
        self.actions.append(action)
        self._isolated(self._env.step, action)
        state = self._ta_state
        # TextArena keeps error_count > 0 after a first invalid move and flags game_info on the one that ends
        # the game; an accepted move resets error_count to 0.
        valid = state.error_count == 0 and not state.game_info[player]["invalid_move"]
        self.moves.append(Move(player, action, valid))
        if not valid:
            self._invalid[player] += 1
        self._observation = None

    def result(self) -> GameResult:
        """The outcome; only once the game is done."""
        if not self.done:
            raise RuntimeError(f"{self.game_id} game (seed {self.seed}) is not over after {len(self.actions)} actions")
        if self._result is None:
            self._result = self._build_result()
        return self._result

    def _build_result(self) -> GameResult:
        ta_rewards, game_info = self._env.close()
        forfeit_by = next((p for p in (0, 1) if game_info[p]["invalid_move"]), None)
        reason = str(game_info[0].get("reason", ""))
        if forfeit_by is not None:
            reason = f"Player {forfeit_by} forfeited by invalid moves in a row. {reason}".strip()
        rewards, round_rewards = self._rewards({p: float(ta_rewards[p]) for p in (0, 1)}, forfeit_by)
        transcript = {
            "game_id": self.game_id,
            "env_id": self.env_id,
            "variant": self.variant,
            "seed": self.seed,
            "moves": [list(move) for move in self.moves],
            "logs": [[sender, message] for sender, message in self._ta_state.logs],
            "rewards": list(rewards),
            "round_rewards": [list(r) for r in round_rewards],
            "forfeit_by": forfeit_by,
            "reason": reason,
        }
        return GameResult(
            rewards=rewards,
            round_rewards=round_rewards,
            invalid_moves=(self._invalid[0], self._invalid[1]),
            forfeit_by=forfeit_by,
            reason=reason,
            transcript_digest=digest_config(transcript),
            turns=sum(move.valid for move in self.moves),
            details=self._details(),
        )

    def _rewards(
        self, ta_rewards: dict[int, float], forfeit_by: int | None
    ) -> tuple[tuple[float, float], tuple[tuple[float, float], ...]]:
        """Final and per-round rewards; TextArena's +1/-1/0 unless a game scores otherwise (Kuhn: chips)."""
        rewards = (ta_rewards[0], ta_rewards[1])
        return rewards, (rewards,)

    @staticmethod
    @abstractmethod
    def validate_variant(variant: Mapping[str, Any]) -> dict[str, Any]:
        """The complete variant (defaults filled in), or a ValueError naming the bad key or value."""

    @staticmethod
    @abstractmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword overrides for ``ta.make`` that realise a validated variant."""

    @abstractmethod
    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        """The exact action strings the env accepts now."""

    @abstractmethod
    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        """A minimal prompt: only what this decision depends on."""

    @abstractmethod
    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        """A structured view of what ``player`` may know (for scripted policies)."""

    def _details(self) -> Mapping[str, Any] | None:
        """Game-specific facts of the finished game that its measures read (None: the game records none)."""
        return None

    def _info_set(self, game_state: Mapping[str, Any], player: int) -> str | None:
        """An information-set key where the game defines one (Kuhn)."""
        return None
