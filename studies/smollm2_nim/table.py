"""The per-round table of `studies/games.py` Nim runs: exact winning-move mass (reached, held out), win rates,
CPU and wall minutes, and the process's peak RSS.

    python studies/smollm2_nim/table.py RUN.json [RUN.json ...] > TABLE.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEADER = ("| run | round | reached mass | held-out mass | win rate vs random | win rate vs oracle | CPU min "
          "| wall min | peak RSS MB |\n|---|---|---|---|---|---|---|---|---|")


def rows(run: Path) -> list[str]:
    """One markdown row per round of ``run``."""
    out = []
    for e in json.loads(run.read_text())["evals"]:
        nim = e["exact"]["nim"]
        out.append(f"| {run.stem} | {e['round']} | {nim['winning_move_mass']:.3f} | "
                   f"{nim['winning_move_mass_held_out']:.3f} | {e['nim_vs_random']['win_rate']:.3f} | "
                   f"{e['nim_vs_oracle']['win_rate']:.3f} | {e['cpu_seconds'] / 60:.1f} | {e['seconds'] / 60:.1f} | "
                   f"{e.get('peak_rss_mb', '')} |")
    return out


def main(argv: list[str]) -> int:
    print(HEADER)
    for run in argv:
        print("\n".join(rows(Path(run))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
