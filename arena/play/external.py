"""One game driven reply by reply from outside arena (a verifiers environment): seats, prompts, parsing, record.

An external runner (``environments/arena_vf``) owns the conversation with each seat's model; this module owns
everything about the game: which seed and seats task ``k`` gets, what each seat is shown, how a free-text
reply becomes an action (``arena.players.frontier_reply.parse_action``, the frontier player's parser), the
re-prompt after an illegal move, and the finished game's record, shaped like a ``play_match`` record so the
same score cards, replays and digests apply.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tqdm import tqdm

from arena.games.base import Game, Observation
from arena.games.registry import get_spec, make_game
from arena.play.match import MAX_ACTIONS, Slot, sample_key
from arena.players.base import Player
from arena.players.frontier_reply import parse_action

# The two roles of an exported environment. Seats alternate between them (role A sits in seat k % 2 in
# task k), as in every arena tournament, so neither model keeps the first-mover advantage.
ROLES = ("player_a", "player_b")


@dataclass(frozen=True)
class GameTask:
    """Task ``index`` of a seeded, infinite taskset: the game, its variant, the deal seed and role A's seat."""

    index: int
    game_id: str
    variant: Mapping[str, Any]
    seed: int
    first_seat: int

    def seat_of(self, role: str) -> int:
        """The seat (0 or 1) ``role`` plays in this task."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; the roles are {ROLES}")
        return self.first_seat if role == ROLES[0] else 1 - self.first_seat

    def role_of(self, seat: int) -> str:
        """The role that plays ``seat``."""
        return ROLES[0] if seat == self.first_seat else ROLES[1]


def game_task(game_id: str, variant: Mapping[str, Any] | None, seed_start: int, index: int) -> GameTask:
    """Task ``index``: seed ``seed_start + index``, role A in seat ``index % 2`` (the tournament schedule)."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"task index {index!r} must be an int >= 0")
    if isinstance(seed_start, bool) or not isinstance(seed_start, int) or seed_start < 0:
        raise ValueError(f"seed_start {seed_start!r} must be an int >= 0")
    full = get_spec(game_id).validate_variant(variant)
    return GameTask(index, game_id, full, seed_start + index, index % 2)


def prompt_text(observation: Observation, rejected: str | None = None) -> str:
    """What a seat is shown: the game's compact view, the legal actions, and after an illegal move a re-prompt."""
    lines = []
    if rejected is not None:
        lines.append(f"Your reply {rejected!r} is not a legal move here. Reply with exactly one legal action.")
    lines.append(observation.compact.rstrip())
    lines.append(f"\nLegal actions: {' '.join(observation.legal_actions)}")
    return "\n".join(lines)


class ExternalGame:
    """One game of a task, advanced one reply at a time by whoever talks to the models."""

    def __init__(self, task: GameTask, players: Mapping[str, str]) -> None:
        if sorted(players) != sorted(ROLES):
            raise ValueError(f"players must name both roles {ROLES}, got {sorted(players)}")
        self.task = task
        self.players = dict(players)
        self.game: Game = make_game(task.game_id, task.seed, task.variant)
        self._rejected: dict[int, str | None] = {0: None, 1: None}
        self.error: str | None = None

    @property
    def done(self) -> bool:
        """Whether the game is over (finished, or stopped with an error)."""
        return self.error is not None or self.game.done

    @property
    def role_to_act(self) -> str:
        """The role whose seat is to move."""
        return self.task.role_of(self.game.current_player)

    def prompt(self) -> str:
        """The user turn for the seat to move (with the re-prompt if its last reply was illegal)."""
        seat = self.game.current_player
        return prompt_text(self.game.observation(), self._rejected[seat])

    def submit(self, reply: str) -> str:
        """Parse the seat's reply into an action, play it, and return the action played.

        A reply naming no legal action reaches the game sanitised, and TextArena's rules judge it (an
        invalid move; repeated ones forfeit), exactly as for arena's frontier player.
        """
        seat = self.game.current_player
        observation = self.game.observation()
        action = parse_action(reply, observation.legal_actions)
        self.game.step(action)
        self._rejected[seat] = None if action in observation.legal_actions else action
        if len(self.game.actions) >= MAX_ACTIONS and not self.game.done:
            self.error = f"stopped after {MAX_ACTIONS} actions without an end"
        return action

    def stop(self, reason: str) -> None:
        """End the game unfinished (a seat's model failed); the record is errored and counts for nobody."""
        if not self.game.done and self.error is None:
            self.error = reason

    def record(self) -> dict[str, Any]:
        """The game record, shaped like ``play_match``'s: seats, actions, rewards, the transcript digest."""
        seats = [self.players[self.task.role_of(0)], self.players[self.task.role_of(1)]]
        record: dict[str, Any] = {
            "game_id": self.task.game_id,
            "variant": dict(self.task.variant),
            "seed": self.task.seed,
            "index": self.task.index,
            "first_seat": self.task.first_seat,
            "players": seats,
            "actions": list(self.game.actions),
            "errored": self.error is not None,
            "error": self.error,
        }
        if self.error is None and self.game.done:
            result = self.game.result()
            record.update(rewards=list(result.rewards), round_rewards=[list(r) for r in result.round_rewards],
                          invalid_moves=list(result.invalid_moves), forfeit_by=result.forfeit_by,
                          reason=result.reason, transcript_digest=result.transcript_digest, turns=result.turns,
                          **({"details": dict(result.details)} if result.details is not None else {}))
        else:
            record.update(rewards=None, round_rewards=None, invalid_moves=None, forfeit_by=None,
                          reason=self.error or "unfinished", transcript_digest=None, turns=None)
        return record

    def reward(self, role: str) -> float:
        """The role's outcome: net chips for poker, +1/-1/0 otherwise; 0 for an errored game."""
        record = self.record()
        if record["rewards"] is None:
            return 0.0
        return float(record["rewards"][self.task.seat_of(role)])


def play_external(game_id: str, players: tuple[Player, Player], schedule: Sequence[Slot], *,
                  variant: Mapping[str, Any] | None = None, progress: bool = False) -> list[dict[str, Any]]:
    """``play_match``'s contract, played the exported environment's way: each decision goes out as the prompt a
    seat's model sees and comes back as reply text that ``ExternalGame.submit`` parses (players[0] is role A).

    This is how the reward-audit gate runs against an exported environment (``arena.play.probe``): a degenerate
    policy must not score through the env's prompt, parser and re-prompts either.
    """
    if len({players[0].spec, players[1].spec}) != 2:
        raise ValueError(f"two different player specs are needed, got {players[0].spec!r} twice")
    by_role = dict(zip(ROLES, players, strict=True))
    pins = {role: player.pin() for role, player in by_role.items()}  # once: a scripted pin digests source code
    records = []
    for index, slot in enumerate(tqdm(schedule, desc=f"{game_id} (exported env)", unit="game", file=sys.stderr,
                                      disable=None if progress else True, leave=False)):
        task = GameTask(index, game_id, get_spec(game_id).validate_variant(variant), slot.seed, slot.first_seat)
        game = ExternalGame(task, {role: player.spec for role, player in by_role.items()})
        while not game.done:
            observation = replace(game.game.observation(), sample_key=sample_key(slot, len(game.game.actions)))
            decision = by_role[game.role_to_act].act(observation)
            if decision.error is not None:
                game.stop(decision.error)
                break
            game.submit(decision.action)
        record = game.record()
        record.update(salt=slot.salt, pins=[pins[task.role_of(0)], pins[task.role_of(1)]])
        records.append(record)
    return records
