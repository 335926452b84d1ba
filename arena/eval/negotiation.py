"""SimpleNegotiation's measures beyond win rate: value left on the table against the responder, and payoff tables.

The value a player leaves on the table (docs/negotiation.md): the player plays each deal from both seats against
``responder``, which accepts exactly the offers that raise its own value and never proposes. On each game,
``best`` is the most the player could have gained with the offers it had time to make (every offer the responder
can still answer), each one the responder would accept, found exactly by ``best_extraction``; ``gain`` is what it
did gain. ``left = best - gain`` (>= 0 for any play within the grammar).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena.games.negotiation_theory import value_left
from arena.games.variants import validate_variant
from arena.play.match import duplicate_schedule, play_match
from arena.play.stats import mean_interval, summarize_match
from arena.players.base import Player
from arena.players.scripted import make_scripted

RESPONDER = "responder"


def value_left_measures(records: Sequence[Mapping[str, Any]], spec: str) -> dict[str, Any]:
    """From ``spec``'s games against the responder: mean best extraction, mean gain, mean value left (with its 95%
    interval over games) and the share of the best it captured (sum of gains / sum of bests)."""

    rows = []
    for record in records:
        if record["errored"]:
            continue
        if sorted(record["players"]) != sorted([spec, RESPONDER]):
            raise ValueError(f"value left needs games of {spec!r} against {RESPONDER!r}, got {record['players']}")
        variant = validate_variant("negotiation", record["variant"])
        moves = variant["turns"] + (0 if variant.get("spiral") else 1)  # SPIRAL's game plays turns moves
        rows.append(value_left(record["details"], record["players"].index(spec), moves, variant["units"]))
    if not rows:
        return {"games": 0, "best": None, "gain": None, "left": None, "left_low": None, "left_high": None,
                "captured": None}
    left, low, high = mean_interval([best - gain for best, gain in rows])
    best_total = sum(best for best, _ in rows)
    return {"games": len(rows), "best": best_total / len(rows), "gain": sum(g for _, g in rows) / len(rows),
            "left": left, "left_low": low, "left_high": high,
            "captured": sum(g for _, g in rows) / best_total if best_total else None}


def value_left_of(player: Player, seeds: Sequence[int], variant: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Play ``player`` against the responder on each deal of ``seeds`` from both seats; its value left."""
    records = play_match("negotiation", (player, make_scripted(RESPONDER)),
                         duplicate_schedule(list(seeds), 2 * len(seeds)), variant=variant, progress=False)
    return value_left_measures(records, player.spec)


def trade_columns(records: Sequence[Mapping[str, Any]], spec: str, opponent: str) -> dict[str, Any]:
    """A round evaluation row's negotiation columns: mean value gains and the Pareto-improving share of trades."""
    trades = summarize_match(records, spec, opponent)["trades"]
    return {"value_gain": trades["mean_value_gain"]["p0"], "opponent_value_gain": trades["mean_value_gain"]["p1"],
            "accepted": trades["accepted"], "pareto_share": trades["pareto_share"]}


def payoff_row(records: Sequence[Mapping[str, Any]], spec: str, opponent: str) -> dict[str, Any]:
    """``spec``'s result against ``opponent``: win rate (draws half) with its Wilson interval, mean reward with its
    95% interval over deals (a deal's two seats together), mean value gains and the Pareto-improving share."""

    summary = summarize_match(records, spec, opponent)
    per_deal: dict[int, list[float]] = {}
    for record in records:
        if not record["errored"]:
            per_deal.setdefault(record["seed"], []).append(record["rewards"][record["players"].index(spec)])
    reward, low, high = mean_interval([sum(v) / len(v) for _, v in sorted(per_deal.items())])
    trades = summary["trades"]
    return {"player": spec, "opponent": opponent, "games": summary["games"], "win_rate": summary["p0_win_rate"],
            "wins": summary["wins"], "mean_reward": reward, "reward_low": low, "reward_high": high,
            "value_gain": trades["mean_value_gain"]["p0"], "opponent_value_gain": trades["mean_value_gain"]["p1"],
            "accepted": trades["accepted"], "pareto_share": trades["pareto_share"]}


def payoff_table(names: Sequence[str], seeds: Sequence[int], variant: Mapping[str, Any] | None = None
                 ) -> list[dict[str, Any]]:
    """Every ordered pair of distinct scripted players in ``names``, each deal of ``seeds`` from both seats."""
    rows = []
    schedule = duplicate_schedule(list(seeds), 2 * len(seeds))
    for spec in names:
        for opponent in names:
            if spec == opponent:
                continue
            records = play_match("negotiation", (make_scripted(spec), make_scripted(opponent)), schedule,
                                 variant=variant, progress=False)
            rows.append(payoff_row(records, spec, opponent))
    return rows
