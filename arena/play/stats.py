"""Match statistics: Wilson intervals and the per-match summary computed from game records."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from arena.games.negotiation_theory import pareto_counts
from arena.games.ultimatum_theory import optimal_share
from arena.games.variants import ARENA_ALIASES, TEXTARENA_PREFIX

# Games whose rewards are chips summed over several rounds; their summaries also report chips per round.
CHIP_GAMES = frozenset({"kuhn", "leduc"})
# Games whose records carry ``details`` (values, holdings, trades); their summaries also report trade measures.
DETAIL_GAMES = frozenset({"negotiation", *(TEXTARENA_PREFIX + alias for alias, (game, _) in ARENA_ALIASES.items()
                                          if game == "negotiation")})


def wilson_interval(successes: float, n: int, z: float = 1.96) -> tuple[float, float, float]:
    """Rate and Wilson score interval ``(rate, low, high)`` for ``successes`` out of ``n``.

    Draws count as half a win: callers pass ``wins + draws / 2`` (so ``successes`` may be a half-integer).
    A game scored 0, 1/2 or 1 with mean p has variance at most p(1 - p), the Bernoulli variance the
    interval assumes, so treating draws this way keeps the interval conservative, never too narrow.

    ``n == 0`` raises ``ValueError``: there is no rate to report, and a NaN would not survive JSON.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if n == 0:
        raise ValueError("wilson_interval needs at least one game (n=0); report the rate as missing instead")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n={n}], got {successes!r}")
    if not (isinstance(z, (int, float)) and z > 0 and math.isfinite(z)):
        raise ValueError(f"z must be a positive finite number (1.96 for 95%), got {z!r}")
    rate = successes / n
    z2 = z * z
    centre = (rate + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # Clamp: for rate 0 or 1 the formula lands on the bound up to rounding, sometimes a hair outside.
    return rate, max(0.0, centre - half), min(1.0, centre + half)


def game_score(rewards: Sequence[float], seat: int) -> float:
    """The seat's score in one two-player game: 1 for the higher reward, 0 for the lower, 1/2 for a tie."""
    mine, theirs = rewards[seat], rewards[1 - seat]
    if mine > theirs:
        return 1.0
    if mine < theirs:
        return 0.0
    return 0.5


def seat_assignments(rows: Sequence[Mapping[str, Any]], p0_spec: str, p1_spec: str) -> list[tuple[int, int]]:
    """``(seat of p0, seat of p1)`` for each game, read from each row's ``players`` list.

    When both specs are the same string (self-play) the list cannot tell them apart, so the match
    convention decides: p0 sits in seat ``k % 2`` for the k-th game.
    """
    seats: list[tuple[int, int]] = []
    for k, row in enumerate(rows):
        players = list(row.get("players", ()))
        if sorted(players) != sorted([p0_spec, p1_spec]):
            raise ValueError(
                f"game {k} (seed {row.get('seed')!r}) has players {players!r}, expected seats for "
                f"{p0_spec!r} and {p1_spec!r}; pass the specs the match was played with"
            )
        if p0_spec == p1_spec:
            seats.append((k % 2, 1 - k % 2))
        else:
            seats.append((players.index(p0_spec), players.index(p1_spec)))
    return seats


def _rate_dict(successes: float, n: int) -> dict[str, float | None]:
    if n == 0:
        return {"rate": None, "low": None, "high": None}
    rate, low, high = wilson_interval(successes, n)
    return {"rate": rate, "low": low, "high": high}


def errored_note(records: Sequence[Mapping[str, Any]], what: str) -> str | None:
    """One line naming how many of ``records`` errored and the first one's reason (schedule order), or None."""
    errored = [r for r in records if r.get("errored")]
    if not errored:
        return None
    first = errored[0]
    reason = " ".join(str(first.get("error")).split())
    reason = reason if len(reason) <= 300 else reason[:297] + "..."
    count = f"all {len(records)}" if len(errored) == len(records) else f"{len(errored)} of {len(records)}"
    return f"{count} games of {what} errored; the first (seed {first.get('seed')}): {reason}"


def errored_line(records: Sequence[Mapping[str, Any]], what: str) -> str | None:
    """``error: `` + ``errored_note`` when every game errored, ``warning: `` + it when some did, else None."""
    note = errored_note(records, what)
    return None if note is None else f"{'error' if all_errored(records) else 'warning'}: {note}"


def all_errored(records: Sequence[Mapping[str, Any]]) -> bool:
    """True when there are records and every one of them errored (no game to score)."""
    return bool(records) and all(r.get("errored") for r in records)


def summarize_outcomes(game_id: str, rows: Sequence[Mapping[str, Any]], p0_spec: str, p1_spec: str) -> dict[str, Any]:
    """The match summary for rows shaped like game records (``players``, ``rewards``, ``errored``, ...).

    ``games`` counts every row; ``errored`` rows count for neither side, so wins, draws, the win rate,
    mean rewards, invalid moves and chips per round are all over the ``games - errored`` completed
    games. Rates and means are ``None`` when no game completed. ``p0_win_rate`` counts draws as half.
    """
    seats = seat_assignments(rows, p0_spec, p1_spec)
    wins = {"p0": 0, "p1": 0, "draws": 0}
    reward_sum = {"p0": 0.0, "p1": 0.0}
    invalid = {"p0": 0, "p1": 0}
    chips = {"p0": 0.0, "p1": 0.0}
    rounds = 0
    errored = 0
    for row, (s0, s1) in zip(rows, seats, strict=True):
        if row.get("errored"):
            errored += 1
            continue
        rewards = row["rewards"]
        score = game_score(rewards, s0)
        wins["p0" if score == 1.0 else "p1" if score == 0.0 else "draws"] += 1
        reward_sum["p0"] += rewards[s0]
        reward_sum["p1"] += rewards[s1]
        invalid["p0"] += row.get("invalid_moves", [0, 0])[s0]
        invalid["p1"] += row.get("invalid_moves", [0, 0])[s1]
        for round_reward in row.get("round_rewards", []):
            chips["p0"] += round_reward[s0]
            chips["p1"] += round_reward[s1]
            rounds += 1
    completed = len(rows) - errored
    summary: dict[str, Any] = {
        "games": len(rows),
        "wins": wins,
        "errored": errored,
        "p0_win_rate": _rate_dict(wins["p0"] + 0.5 * wins["draws"], completed),
        "mean_reward": {k: (v / completed if completed else None) for k, v in reward_sum.items()},
        "invalid_moves": invalid,
    }
    if game_id in CHIP_GAMES:
        summary["mean_chips_per_round"] = {k: (v / rounds if rounds else None) for k, v in chips.items()}
    if game_id in DETAIL_GAMES:
        summary["trades"] = trade_summary(rows, seats)
    if game_id == "ultimatum":
        summary["splits"] = split_summary(rows, seats)
    return summary


def split_summary(rows: Sequence[Mapping[str, Any]], seats: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """Ultimatum's measures over completed games: each player's mean money, the share of offers accepted, and each
    player's share of decisions that keep its win/draw/loss game value (exact: ``ultimatum_theory``)."""
    done = [(row["details"], row["variant"], s) for row, s in zip(rows, seats, strict=True) if not row.get("errored")]
    offers = [r["accepted"] for details, _, _ in done for r in details["rounds"]]
    return {"mean_money": {key: (sum(d["money"][s[i]] for d, _, s in done) / len(done) if done else None)
                           for i, key in enumerate(("p0", "p1"))},
            "accepted_share": sum(offers) / len(offers) if offers else None,
            "optimal_share": {key: optimal_share((d, v, s[i]) for d, v, s in done)
                              for i, key in enumerate(("p0", "p1"))}}


def trade_summary(rows: Sequence[Mapping[str, Any]], seats: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """Negotiation's measures over completed games: mean inventory-value gain per player, and the accepted trades
    that raise both sides' private values strictly (``pareto_share``: their share, None when no trade happened)."""
    done = [(row["details"], s) for row, s in zip(rows, seats, strict=True) if not row.get("errored")]
    improving, accepted = pareto_counts(details for details, _ in done)
    gain = {key: (sum(d["value_gain"][s[i]] for d, s in done) / len(done) if done else None)
            for i, key in enumerate(("p0", "p1"))}
    return {"mean_value_gain": gain, "accepted": accepted, "pareto_improving": improving,
            "pareto_share": improving / accepted if accepted else None}


def summarize_match(records: Sequence[Mapping[str, Any]], p0_spec: str, p1_spec: str) -> dict[str, Any]:
    """The JSON-able summary of one match (``arena play --json``; the runner adds ``games_per_sec``).

    Keys: ``games``, ``wins`` {p0, p1, draws}, ``errored``, ``p0_win_rate`` {rate, low, high} (Wilson
    95%, draws as half), ``mean_reward`` {p0, p1}, ``invalid_moves`` {p0, p1} and, for chip games (Kuhn, Leduc),
    ``mean_chips_per_round`` {p0, p1}. See ``summarize_outcomes`` for how errored games are treated.
    """
    if not records:
        raise ValueError(f"no game records to summarize for {p0_spec!r} vs {p1_spec!r}; play at least one game")
    game_ids = sorted({str(r.get("game_id")) for r in records})
    if len(game_ids) != 1:
        raise ValueError(f"a match is one game, but the records mix game ids {game_ids}; summarize each separately")
    return summarize_outcomes(game_ids[0], records, p0_spec, p1_spec)


def deal_chips(records: Sequence[Mapping[str, Any]], spec: str) -> list[float]:
    """Per deal (its games from both seats together), ``spec``'s mean chips per hand; errored games are left out."""
    hands: dict[int, list[float]] = {}
    for record in records:
        if not record["errored"]:
            seat = record["players"].index(spec)
            hands.setdefault(record["seed"], []).extend(r[seat] for r in record["round_rewards"])
    return [sum(chips) / len(chips) for _, chips in sorted(hands.items()) if chips]


def mean_interval(values: Sequence[float], z: float = 1.96) -> tuple[float, float, float]:
    """Mean and its normal-approximation 95% interval (the deals are independent; a deal's two seats are not)."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_interval needs at least one value (every game errored?)")
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / max(n - 1, 1) / n)
    return mean, mean - z * spread, mean + z * spread


def chips_interval(records: Sequence[Mapping[str, Any]], spec: str) -> dict[str, float] | None:
    """``spec``'s mean chips per hand over deals, with its 95% interval (``mean``, ``low``, ``high``), or None
    when no game completed."""
    chips = deal_chips(records, spec)
    if not chips:
        return None
    mean, low, high = mean_interval(chips)
    return {"mean": mean, "low": low, "high": high}
