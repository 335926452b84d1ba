"""The cold SmolLM2's best system prompt of three, chosen before the headline by a rule fixed here (issue 44 item 4).

The three prompts are stated below before any was tried. Each plays the cold model behind mlx_lm.server (the
pipeline's `cold` stage's float32 copy, served as the headline serves it) against `random` on CALIBRATION deals
from the training seed range, never the held-out eval seeds: Kuhn (one hand) and Nim ([3, 4, 5]), each deal from
both seats. Rule: the prompt whose games have the largest share the endpoint played with no invalid reply, over
both games; a tie goes to the earlier prompt. Writes the measurement and the choice as JSON.

Usage: python studies/smollm2_headline/prompts.py --out studies/smollm2_headline/prompts.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()

from arena.core.artifacts import atomic_write_json  # noqa: E402
from arena.core.config import load_params  # noqa: E402
from arena.play.match import duplicate_schedule, play_match  # noqa: E402
from arena.players.build import load_frontier_config, make_player  # noqa: E402
from arena.players.config import DEFAULT_SYSTEM_PROMPT  # noqa: E402
from arena.players.localserver import served  # noqa: E402

PROMPTS = {
    "default": DEFAULT_SYSTEM_PROMPT,
    "one_line": ("You play a two-player game. Reply with only your move: one line that is exactly one of the actions "
                 "listed after 'Legal actions:', copied character for character with its square brackets. No other "
                 "words."),
    "answer_tag": ("You play a two-player game. Think in one short sentence, then give your move as "
                   "<answer>[action]</answer>, where [action] is copied exactly from the legal actions."),
}
GAMES = {"kuhn": 16, "nim": 8}  # games per prompt (deals x 2 seats)
CALIBRATION_SEED = 500_000  # inside the training range [0, 1,000,000): never a held-out eval seed
MODEL = "artifacts/realmodel/models/cold"
PORT = 18472


def calibrate(name: str, prompt: str, url: str, work: Path) -> dict:
    """One prompt's games against random: games played with no invalid endpoint reply, invalid replies, wins."""
    config = replace(load_frontier_config(load_params("realmodel/headline.yaml")), system_prompt=prompt,
                     replies=str(work / "replies"))
    out = {}
    for game, games in GAMES.items():
        endpoint = make_player(f"openai:{MODEL}@{url}", frontier_config=config)
        schedule = duplicate_schedule(range(CALIBRATION_SEED, CALIBRATION_SEED + games // 2), games)
        records = play_match(game, (endpoint, make_player("random")), schedule, progress=False)
        mine = [r["players"].index(endpoint.spec) for r in records]
        out[game] = {"games": len(records),
                     "legal_games": sum(r["invalid_moves"][k] == 0 for r, k in zip(records, mine, strict=True)),
                     "invalid_replies": sum(r["invalid_moves"][k] for r, k in zip(records, mine, strict=True)),
                     "wins": sum(r["rewards"][k] > r["rewards"][1 - k] for r, k in zip(records, mine, strict=True)),
                     "requests": endpoint.stats.calls + endpoint.stats.cache_hits}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/arena-prompts"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    start, results = time.time(), {}
    with served(MODEL, PORT, args.work / "server.log") as url:
        for name, prompt in PROMPTS.items():
            results[name] = calibrate(name, prompt, url, args.work)
            print(name, json.dumps(results[name]), f"{time.time() - start:.0f} s", file=sys.stderr, flush=True)
    share = {name: sum(g["legal_games"] for g in r.values()) / sum(g["games"] for g in r.values())
             for name, r in results.items()}
    best = max(PROMPTS, key=lambda name: (share[name], -list(PROMPTS).index(name)))
    atomic_write_json(args.out, {"rule": __doc__.split("Rule: ")[1].split(" Writes")[0], "prompts": PROMPTS,
                                 "calibration_seed": CALIBRATION_SEED, "results": results, "legal_share": share,
                                 "best": best, "wall_s": round(time.time() - start, 1)})
    print(f"best: {best} ({share[best]:.3f} of games legal)")


if __name__ == "__main__":
    main()
