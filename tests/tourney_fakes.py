"""Synthetic game records and a scripted ``play`` callable for the stats, tournament and report tests."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from arena.core.hashing import digest_bytes
from arena.eval.errors import PlayerLoadError


def pin_of(spec: str) -> dict[str, Any]:
    """A scripted player's pin: a stand-in code digest derived from the spec."""
    return {"kind": "scripted", "spec": spec, "code_digest": digest_bytes(spec.encode())}


def make_record(
    game_id: str,
    seed: int,
    players: Sequence[str],
    rewards: Sequence[float],
    *,
    round_rewards: Sequence[Sequence[float]] | None = None,
    invalid_moves: Sequence[int] = (0, 0),
    errored: bool = False,
    error: str | None = None,
    pins: Sequence[Mapping[str, Any]] | None = None,
    variant: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One game record in the match runner's format (decisions left empty: nothing here reads them)."""
    return {
        "game_id": game_id,
        "variant": dict(variant or {}),
        "seed": seed,
        "players": list(players),
        "pins": [dict(p) for p in pins] if pins else [pin_of(players[0]), pin_of(players[1])],
        "actions": [],
        "decisions": [],
        "rewards": list(rewards),
        "round_rewards": [list(r) for r in round_rewards] if round_rewards is not None else [list(rewards)],
        "invalid_moves": list(invalid_moves),
        "forfeit_by": None,
        "reason": "synthetic",
        "errored": errored,
        "error": error,
        "transcript_digest": digest_bytes(f"{game_id}|{seed}|{players}|{rewards}".encode()),
    }


class ScriptedPlay:
    """A fake match runner: outcomes follow fixed strengths, seats swap every game (A in seat k % 2).

    ``strength`` orders the players: the stronger one wins every game outright unless the two are equal,
    when each game is a draw. Kuhn games get three rounds of chips that sum to the reward. ``fail_load``
    specs raise PlayerLoadError; ``broken`` specs produce only errored records.
    """

    def __init__(
        self,
        strength: Mapping[str, float],
        *,
        fail_load: Mapping[str, str] | None = None,
        broken: Sequence[str] = (),
        upsets: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self.strength = dict(strength)
        self.fail_load = dict(fail_load or {})
        self.broken = set(broken)
        self.upsets = dict(upsets or {})
        self.calls: list[tuple[str, dict[str, Any], str, str, list[int]]] = []

    def __call__(
        self, game_id: str, variant: Mapping[str, Any], spec_a: str, spec_b: str, seeds: Sequence[int]
    ) -> list[dict[str, Any]]:
        self.calls.append((game_id, dict(variant), spec_a, spec_b, list(seeds)))
        for spec in (spec_a, spec_b):
            if spec in self.fail_load:
                raise PlayerLoadError(spec, self.fail_load[spec])
        records = []
        for k, seed in enumerate(seeds):
            seats = [spec_a, spec_b] if k % 2 == 0 else [spec_b, spec_a]
            if self.broken & set(seats):
                # An unreachable endpoint reports no pin, so its seat's pin is missing (None).
                pins = [None if spec in self.broken else pin_of(spec) for spec in seats]
                record = make_record(
                    game_id, seed, seats, [0, 0], errored=True, error="endpoint unreachable (synthetic)"
                )
                records.append({**record, "pins": pins})
                continue
            score0 = self._score(seats, k)
            records.append(self._record(game_id, variant, seed, seats, score0))
        return records

    def _score(self, seats: Sequence[str], k: int) -> float:
        s0, s1 = self.strength[seats[0]], self.strength[seats[1]]
        # The first `upsets[(winner, loser)]` games of a pair go the other way, to script surprises.
        expected = 1.0 if s0 > s1 else 0.0 if s0 < s1 else 0.5
        upsets = self.upsets.get((seats[0], seats[1]), 0) + self.upsets.get((seats[1], seats[0]), 0)
        if k < upsets and expected != 0.5:
            return 1.0 - expected
        return expected

    @staticmethod
    def _record(
        game_id: str, variant: Mapping[str, Any], seed: int, seats: Sequence[str], score0: float
    ) -> dict[str, Any]:
        sign = {1.0: 1, 0.0: -1, 0.5: 0}[score0]
        if game_id == "kuhn":
            # Three rounds of +-1/+-2 chips (as standard Kuhn pays) summing to +-1, or to 0 for a draw.
            first = random.Random(f"kuhn-chips|{seed}").choice([1, 2])
            rounds = [[first, -first], [-first, first], [sign, -sign]] if sign else [[1, -1], [-2, 2], [1, -1]]
            totals = [sum(r[0] for r in rounds), sum(r[1] for r in rounds)]
            return make_record(game_id, seed, seats, totals, round_rewards=rounds, variant=variant)
        return make_record(game_id, seed, seats, [sign, -sign], variant=variant)
