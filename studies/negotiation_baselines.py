"""The scripted negotiators' payoffs against each other and the value each leaves on the table (docs/negotiation.md).

    python studies/negotiation_baselines.py [--deals 200] [--seed 7000000]
        [--out studies/results/negotiation_baselines.md]

Every ordered pair of distinct players among greedy, fair, never and random plays each deal of the fixed seed range
from both seats; each player then plays the same deals against the responder for its value left on the table. All
players are deterministic given the deal and seat (random samples from the decision's key), so the table is
enumerated, not sampled: rerunning gives the same bytes. Intervals: Wilson for win rates (draws half), normal over
deals for mean rewards and values left.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.core.artifacts import atomic_write_text
from arena.core.blas import ensure_fast_blas

PLAYERS = ("greedy", "fair", "never", "random")


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(rows: list[dict], left: dict[str, dict], deals: int, seed: int) -> str:
    """The payoff table and the value-left table as markdown."""
    lines = [f"# Negotiation baselines ({deals} deals from seed {seed}, each from both seats)", "",
             "| player | opponent | W/D/L | win rate [95%] | mean reward [95%] | value gain | opp. gain | trades | "
             "Pareto share |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        wins, rate = row["wins"], row["win_rate"]
        lines.append(
            f"| {row['player']} | {row['opponent']} | {wins['p0']}/{wins['draws']}/{wins['p1']} | "
            f"{rate['rate']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}] | "
            f"{row['mean_reward']:+.3f} [{row['reward_low']:+.3f}, {row['reward_high']:+.3f}] | "
            f"{row['value_gain']:+.1f} | {row['opponent_value_gain']:+.1f} | {row['accepted']} | "
            f"{_number(row['pareto_share'], 3)} |")
    lines += ["", "Value left on the table against the responder (per game):", "",
              "| player | best | gain | left [95%] | captured |", "|---|---|---|---|---|"]
    for name, m in left.items():
        lines.append(f"| {name} | {m['best']:.1f} | {m['gain']:.1f} | {m['left']:.1f} [{m['left_low']:.1f}, "
                     f"{m['left_high']:.1f}] | {_number(m['captured'], 3)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7_000_000)
    parser.add_argument("--out", type=Path, default=Path("studies/results/negotiation_baselines.md"))
    args = parser.parse_args()
    ensure_fast_blas()
    from arena.eval.negotiation import payoff_table, value_left_of
    from arena.players.scripted import make_scripted

    seeds = range(args.seed, args.seed + args.deals)
    rows = payoff_table(PLAYERS, seeds)
    left = {name: value_left_of(make_scripted(name), seeds) for name in PLAYERS}
    text = render(rows, left, args.deals, args.seed)
    atomic_write_text(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
