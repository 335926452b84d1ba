"""The headline's table from `arena play --out` shards: each match's first player against its second, over all games
and over the games the second player played legally (no invalid or unparsable reply), with 95% intervals.

Usage: python studies/smollm2_kuhn/headline_summary.py SHARD.jsonl ...   (markdown on stdout)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from arena.eval.roundeval import mean_interval
from arena.play.stats import wilson_interval


def _side(record: dict, spec: str) -> int:
    return record["players"].index(spec)


def summary(records: list[dict]) -> dict:
    """The first listed player's (the learner's) results against the other over ``records``."""
    first = records[0]["players"][0] if records[0]["first_seat"] == 0 else records[0]["players"][1]
    other = next(p for p in records[0]["players"] if p != first)
    rows = []
    for r in records:
        me, them = _side(r, first), _side(r, other)
        rows.append({"win": r["rewards"][me] > r["rewards"][them], "draw": r["rewards"][me] == r["rewards"][them],
                     "chips": r["rewards"][me], "their_invalid": r["invalid_moves"][them],
                     "my_invalid": r["invalid_moves"][me], "they_forfeit": r["forfeit_by"] == them,
                     "errored": r["errored"]})

    def block(subset: list[dict]) -> dict:
        if not subset:
            return {"games": 0}
        wins = sum(x["win"] + 0.5 * x["draw"] for x in subset)
        rate, low, high = wilson_interval(wins, len(subset))
        chips, clow, chigh = mean_interval([x["chips"] for x in subset])
        return {"games": len(subset), "win_rate": [round(rate, 3), round(low, 3), round(high, 3)],
                "chips": [round(chips, 3), round(clow, 3), round(chigh, 3)]}

    return {"learner": first, "opponent": other, "all": block(rows),
            "opponent_legal": block([x for x in rows if x["their_invalid"] == 0]),
            "opponent_invalid_moves": sum(x["their_invalid"] for x in rows),
            "opponent_forfeits": sum(x["they_forfeit"] for x in rows),
            "learner_invalid_moves": sum(x["my_invalid"] for x in rows),
            "errored": sum(x["errored"] for x in rows)}


def main(paths: list[str]) -> None:
    print("| match | games | win rate [95%] | chips/game [95%] | opponent invalid replies (forfeits) |"
          " games opponent legal | win rate there [95%] | chips there [95%] |")
    print("|---|---|---|---|---|---|---|---|")
    for path in paths:
        records = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        s = summary(records)
        a, legal = s["all"], s["opponent_legal"]
        there = (f"{legal['win_rate'][0]:.3f} [{legal['win_rate'][1]:.3f}, {legal['win_rate'][2]:.3f}] | "
                 f"{legal['chips'][0]:+.3f} [{legal['chips'][1]:+.3f}, {legal['chips'][2]:+.3f}]"
                 if legal["games"] else "- | -")
        print(f"| {Path(path).stem} | {a['games']} | {a['win_rate'][0]:.3f} [{a['win_rate'][1]:.3f}, "
              f"{a['win_rate'][2]:.3f}] | {a['chips'][0]:+.3f} [{a['chips'][1]:+.3f}, {a['chips'][2]:+.3f}] | "
              f"{s['opponent_invalid_moves']} ({s['opponent_forfeits']}) | {legal['games']} | {there} |")
        print(json.dumps(s), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
