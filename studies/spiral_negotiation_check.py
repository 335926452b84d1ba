"""Check arena's port of SPIRAL's SimpleNegotiation-v1 against SPIRAL's own env run on TextArena 0.6.4.

Needs, offline: SPIRAL's ``spiral/envs/SimpleNegotiation/env.py`` (from spiral-rl/spiral) and the TextArena 0.6.4
wheel unpacked (``pip download textarena==0.6.4 --no-deps``, then unzip). Plays ``--games`` random move sequences
(listed moves mixed with free text: bundles, unknown resources, offers past one's holdings, accepting one's own
offer, two tags in one move) through arena's game, replays each through SPIRAL's env in a separate Python process
with 0.6.4 first on its path, and compares moves played, end, rewards, holdings and trade history.

    python studies/spiral_negotiation_check.py --spiral-env PATH/env.py --textarena-064 DIR --games 400
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

from arena.games.registry import make_game

FREE_TEXT = ["[Deny]", "[Accept]", "hello", "[Offer: 3 Wood -> 2 Gold]", "[Offer: 2 Gold -> 5 Wood]",
             "[Offer: 11 Wood -> 1 Gold]", "[Offer: 3 Wheat -> 1 Gold]", "[Offer: 1 Wood, 1 Gold -> 3 Wood]",
             "[Accept] [Offer: 1 Gold -> 4 Wood]", "[Offer: I give 2 woods and 1 gold -> 6 Wood.]",
             "[Offer: 4 Gold -> 1 Wood]", "[Offer: 1 Wood ->]", "[Deny] [Offer: 6 Wood -> 2 Gold]"]

# Run in the other process: SPIRAL's env on TextArena 0.6.4, the same sequences, the same summary.
SPIRAL_SIDE = """
import json, sys, importlib.util
sys.path.insert(0, sys.argv[1])
spec = importlib.util.spec_from_file_location("spiral_env", sys.argv[2])
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
out = []
for seed, seq in enumerate(json.load(sys.stdin)):
    env = module.SimpleNegotiationEnv(max_turns=10); env.reset(num_players=2, seed=seed)
    for action in seq:
        done, _ = env.step(action)
        if done:
            break
    gs = env.state.game_state
    out.append({"done": env.state.done, "rewards": {str(k): v for k, v in (env.state.rewards or {}).items()},
                "res": {str(k): v for k, v in gs["player_resources"].items()},
                "hist": [t["outcome"] for t in gs["trade_history"]], "moves": len(seq)})
print(json.dumps(out))
"""


def arena_side(games: int) -> tuple[list[list[str]], list[dict]]:
    """Random sequences played to the end in arena's port, and each game's summary."""
    sequences, summaries = [], []
    for seed in range(games):
        rng, game, played = random.Random(seed), make_game("textarena:SimpleNegotiation-v1", seed), []
        while not game.done:
            legal = game.observation().legal_actions
            played.append(rng.choice(FREE_TEXT) if rng.random() < 0.5 else rng.choice(legal))
            game.step(played[-1])
        state = game._ta_state.game_state
        sequences.append(played)
        summaries.append({"done": True, "rewards": {str(k): v for k, v in game._ta_state.rewards.items()},
                          "res": {str(k): v for k, v in state["player_resources"].items()},
                          "hist": [t["outcome"] for t in state["trade_history"]], "moves": len(played)})
    return sequences, summaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spiral-env", type=Path, required=True, help="SPIRAL's SimpleNegotiation env.py")
    parser.add_argument("--textarena-064", type=Path, required=True, help="the unpacked TextArena 0.6.4 wheel")
    parser.add_argument("--games", type=int, default=400)
    args = parser.parse_args()
    sequences, ours = arena_side(args.games)
    run = subprocess.run([sys.executable, "-c", SPIRAL_SIDE, str(args.textarena_064), str(args.spiral_env)],
                         input=json.dumps(sequences), capture_output=True, text=True, check=True)
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    differ = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    trades = sum(h == "Accepted" for game in ours for h in game["hist"])
    forfeits = sum(sorted(game["rewards"].values()) == [-1, 0] for game in ours)
    print(f"{args.games} games ({trades} trades, {forfeits} forfeits): {len(differ)} differ {differ[:10]}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
