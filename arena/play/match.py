"""Lockstep play of many games between two players: every pending decision of a player goes out in one batch."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tqdm import tqdm

from arena.core.errors import ArenaError
from arena.core.hashing import digest_bytes
from arena.games.base import Game, Observation
from arena.games.registry import make_game
from arena.games.variants import MAX_ACTIONS, lists_no_actions
from arena.players.base import Decision, Player, reasoning_digest

# MAX_ACTIONS (every variant is checked to end within it, games/variants.py): a player stuck re-prompting forever
# is stopped there and the game recorded as errored.


@dataclass(frozen=True)
class Slot:
    """One scheduled game: its deal seed, the seat of the match's first player, a sampling salt, and the actions
    forced before anyone decides (``prefix``: a branch rollout replays a game's start with another action)."""

    seed: int
    first_seat: int
    salt: int = 0
    prefix: tuple[str, ...] = ()


def duplicate_schedule(seeds: Sequence[int], games: int, salt: int = 0) -> list[Slot]:
    """Each seed is played twice with seats swapped (game k: seed ``seeds[k // 2]``, seat ``k % 2``).

    Replaying a deal from both seats cancels the luck of the deal, so fewer games separate two players.
    """
    if games < 0:
        raise ValueError(f"games = {games} must be >= 0")
    needed = (games + 1) // 2
    if len(seeds) < needed:
        raise ValueError(f"{games} games need {needed} seeds, got {len(seeds)}")
    return [Slot(seeds[k // 2], k % 2, salt) for k in range(games)]


def sample_key(slot: Slot, turn: int) -> int:
    """A decision's sampling key: a function of the game alone, never of what else is in the batch.

    The seat order is part of it, so the two seat-swapped plays of one deal draw independent samples.
    """
    text = f"{slot.seed}:{slot.salt}:{slot.first_seat}:{turn}"
    if slot.prefix:  # a branch draws its own samples, not its main game's (whose keys stay as they were)
        text += ":" + "\x1f".join(slot.prefix)
    return int.from_bytes(bytes.fromhex(digest_bytes(text.encode())[:16]), "big")


@dataclass
class _Running:
    index: int
    position: int  # in its cohort
    slot: Slot
    game: Game
    seats: tuple[Player, Player]
    decisions: list[dict[str, Any]]
    error: str | None = None


def _record(run: _Running, game_id: str, pins: list[dict[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "game_id": game_id,
        "variant": dict(run.game.variant),
        "seed": run.slot.seed,
        "salt": run.slot.salt,
        "first_seat": run.slot.first_seat,
        "players": [p.spec for p in run.seats],
        "pins": pins,
        "actions": list(run.game.actions),
        # Only where the variant plays one (even if empty for this deal): the standard game's records keep their bytes.
        **({"opening": list(run.game.opening)} if run.game.opening is not None else {}),
        **({"prefix": list(run.slot.prefix)} if run.slot.prefix else {}),
        "decisions": run.decisions,
        **({"reasoning_digest": digest} if (digest := reasoning_digest(run.decisions)) is not None else {}),
        "errored": run.error is not None,
        "error": run.error,
    }
    if run.error is None:
        result = run.game.result()
        record.update(
            rewards=list(result.rewards),
            round_rewards=[list(r) for r in result.round_rewards],
            invalid_moves=list(result.invalid_moves),
            forfeit_by=result.forfeit_by,
            reason=result.reason,
            transcript_digest=result.transcript_digest,
            turns=result.turns,
            **({"details": dict(result.details)} if result.details is not None else {}),
        )
    else:
        record.update(rewards=None, round_rewards=None, invalid_moves=None, forfeit_by=None,
                      reason=run.error, transcript_digest=None, turns=None)
    return record


def _apply(run: _Running, observation: Observation, decision: Decision) -> None:
    run.decisions.append({
        "player": observation.player_id,
        "observation": observation.compact,
        "text": observation.text,
        "legal": list(observation.legal_actions),
        "info_set": observation.info_set,
        "action": decision.action,
        "logprob": decision.logprob,
        "model_id": decision.model_id,
        # A thinking player's reasoning (only then: other records keep their bytes).
        **({"reasoning": decision.reasoning, "reasoning_tokens": list(decision.reasoning_tokens or ())}
           if decision.reasoning is not None else {}),
    })
    if decision.error is not None:
        run.error = decision.error
        return
    run.game.step(decision.action)
    if len(run.game.actions) >= MAX_ACTIONS and not run.game.done:
        run.error = f"stopped after {MAX_ACTIONS} actions without an end"


def check_players(game_id: str, players: Sequence[Player]) -> None:
    """A ``textarena:ENV_ID`` game lists no legal actions: only players that write their move (frontier players, and
    local players with ``think``) can play it."""
    if lists_no_actions(game_id):
        local = sorted({p.spec for p in players if not (p.spec.startswith("openai:") or p.writes_text)})
        if local:
            raise ArenaError(f"game {game_id} lists no legal actions, so {local} cannot play it: only frontier "
                             "players (openai:MODEL@BASE_URL) and thinking local players (think: {max_tokens: N}) "
                             "play a textarena:ENV_ID game")


def _start_cohort(cohort: Sequence[tuple[int, Slot]], players: tuple[Player, Player], game_id: str,
                  variant: Mapping[str, Any] | None) -> list[_Running]:
    """A cohort's games, each with a fresh env; every player starts the cohort with no state kept from the last."""
    for player in dict.fromkeys(players):
        player.begin_match()
    running = []
    for position, (index, slot) in enumerate(cohort):
        seats = (players[0], players[1]) if slot.first_seat == 0 else (players[1], players[0])
        game = make_game(game_id, slot.seed, variant)
        for action in slot.prefix:
            game.step(action)
        running.append(_Running(index, position, slot, game, seats, []))
    return running


def _ask(player: Player, running: Sequence[_Running]) -> None:
    """One ``act_batch`` call to ``player`` about every running game it is to move in; apply its decisions."""
    waiting = [r for r in running if r.error is None and not r.game.done and r.seats[r.game.current_player] is player]
    if not waiting:
        return
    observations = [r.game.observation() for r in waiting]
    observations = [_with_key(o, r, len(r.game.actions)) for o, r in zip(observations, waiting, strict=True)]
    try:
        decisions = player.act_batch(observations)
    except Exception as error:  # noqa: BLE001 -- a failing player is recorded, not fatal
        decisions = [Decision("", error=f"{type(error).__name__}: {error}")] * len(waiting)
    for run, observation, decision in zip(waiting, observations, decisions, strict=True):
        _apply(run, observation, decision)


def _finish(running: list[_Running], records: dict[int, dict[str, Any]], game_id: str,
            pins: list[dict[str, Any]], bar: tqdm) -> list[_Running]:
    """Record every game that ended or errored (by schedule index); return the games still running."""
    still = []
    for run in running:
        if run.error is not None or run.game.done:
            records[run.index] = _record(run, game_id, [pins[s] for s in _seat_pins(run.slot)])
            bar.update(1)
        else:
            still.append(run)
    return still


def play_match(
    game_id: str,
    players: tuple[Player, Player],
    schedule: Sequence[Slot],
    *,
    variant: Mapping[str, Any] | None = None,
    concurrency: int = 64,
    progress: bool = True,
    bar: tqdm | None = None,
) -> list[dict[str, Any]]:
    """Play every scheduled game between ``players`` and return one record per game, in schedule order.

    The schedule is played in cohorts of ``concurrency`` consecutive games, each cohort in lockstep (at each
    step every game waiting on the same player is sent to it in one ``act_batch`` call) and from a clean
    player state. A cohort's records depend on its games alone, so any split of the schedule at cohort
    boundaries (``arena.play.distributed``) gives the same bytes as one call. A player's error (or exception)
    stops only the games it was deciding, which are recorded as errored and counted for neither side.
    ``bar``: a progress bar shared with other matches (its owner closes it), advanced a game at a time;
    otherwise this match's own bar.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency = {concurrency} must be >= 1")
    check_players(game_id, players)
    pins = [players[0].pin(), players[1].pin()]
    records: dict[int, dict[str, Any]] = {}
    indexed = list(enumerate(schedule))
    own = bar is None
    if bar is None:
        bar = tqdm(total=len(schedule), desc=f"{game_id}: {players[0].spec} vs {players[1].spec}", unit="game",
                   file=sys.stderr, disable=None if progress else True, leave=False)
    for start in range(0, len(indexed), concurrency):
        running = _start_cohort(indexed[start : start + concurrency], players, game_id, variant)
        while running:
            # Self-play passes the same object twice: ask it once per step, about every game it is to move in.
            for player in dict.fromkeys(players):
                _ask(player, running)
            running = _finish(running, records, game_id, pins, bar)
    if own:
        bar.close()
    return [records[i] for i in range(len(schedule))]


def _seat_pins(slot: Slot) -> tuple[int, int]:
    return (0, 1) if slot.first_seat == 0 else (1, 0)


def _with_key(observation: Observation, run: _Running, turn: int) -> Observation:
    return replace(observation, sample_key=sample_key(run.slot, turn), stream=run.position + 1)


def timed_match(*args: Any, **kwargs: Any) -> tuple[list[dict[str, Any]], float]:
    """``play_match`` plus its games per second (wall clock)."""
    start = time.perf_counter()
    records = play_match(*args, **kwargs)
    elapsed = time.perf_counter() - start
    return records, (len(records) / elapsed if elapsed > 0 else float("inf"))
