"""The scripted ultimatum players' payoffs against each other, with the exact optimal-move share (docs/ultimatum.md).

    python studies/ultimatum_baselines.py [--deals 100] [--seed 7000000] [--out studies/results/ultimatum_baselines.md]

Every ordered pair of distinct players among oracle (minimax), greedy, fair, never and random plays each deal of the
fixed seed range from both seats, in the default game (player 0 proposes all 5 rounds) and with ``alternate``.
The game draws nothing at random and every player but random is deterministic, so the table is enumerated, not
sampled: rerunning gives the same bytes. Wilson intervals for win rates (draws half).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from arena.core.artifacts import atomic_write_text
from arena.core.blas import ensure_fast_blas

PLAYERS = ("oracle", "greedy", "fair", "never", "random")
VARIANTS = ({}, {"alternate": True})


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def rows(seeds: range) -> list[str]:
    """One markdown row per (variant, player, opponent)."""
    from arena.play.match import duplicate_schedule, play_match
    from arena.play.stats import summarize_match
    from arena.players.scripted import make_scripted

    out = []
    for variant in VARIANTS:
        label = "alternate" if variant else "default"
        for a in PLAYERS:
            for b in PLAYERS:
                if a == b:
                    continue
                records = play_match("ultimatum", (make_scripted(a), make_scripted(b)),
                                     duplicate_schedule(seeds, 2 * len(seeds)), variant=variant, progress=False)
                s = summarize_match(records, a, b)
                wins, rate, split = s["wins"], s["p0_win_rate"], s["splits"]
                out.append(f"| {label} | {a} | {b} | {wins['p0']}/{wins['draws']}/{wins['p1']} | "
                           f"{rate['rate']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}] | "
                           f"{split['mean_money']['p0']:.1f} | {split['mean_money']['p1']:.1f} | "
                           f"{_number(split['accepted_share'], 3)} | {_number(split['optimal_share']['p0'], 3)} | "
                           f"{_number(split['optimal_share']['p1'], 3)} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7_000_000)
    parser.add_argument("--out", type=Path, default=Path("studies/results/ultimatum_baselines.md"))
    args = parser.parse_args()
    ensure_fast_blas()
    header = [f"# Ultimatum baselines ({args.deals} deals from seed {args.seed}, each from both seats; pool $50, "
              "5 rounds)", "",
              "| game | player | opponent | W/D/L | win rate [95%] | money | opp. money | offers accepted | "
              "optimal moves | opp. optimal moves |", "|---|---|---|---|---|---|---|---|---|---|"]
    text = "\n".join(header + rows(range(args.seed, args.seed + args.deals))) + "\n"
    atomic_write_text(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
