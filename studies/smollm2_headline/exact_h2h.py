"""The exact expected chips a hand of the published round's Kuhn policy against the stock model's (each opening half
the hands), from the policies the pipeline's round evaluations record: the head-to-head card's sampled chips carry
the deals' luck (each seed is one deal, its seat alternating), this does not.

Usage: python studies/smollm2_headline/exact_h2h.py [artifacts/realmodel/evals]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from arena.games.kuhn_theory import chips_per_hand  # noqa: E402


def main(evals: Path) -> None:
    stock = json.loads((evals / "r0.json").read_text())["kuhn_policy"]
    trained = json.loads((evals / "r1.json").read_text())["kuhn_policy"]
    print(json.dumps({"trained_vs_stock_chips_per_hand": round(chips_per_hand(trained, stock), 6),
                      "stock_vs_trained_chips_per_hand": round(chips_per_hand(stock, trained), 6)}))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("artifacts/realmodel/evals"))
