"""Figure exact_tokens: token positions `arena exact` runs through the model, one-pass packing vs chained scoring.

For each game with exact theory and view, the positions `arena exact` scores (TicTacToe's 4,520, Leduc's 936, Nim's
family, Kuhn's 12) are packed as the player packs them (arena.players.batching.pack_batches under the player's
``max_batch_tokens``), once as one-pass
scoring does and once as chained scoring does (arena.players.chained: each chain step's prompts reusing their chain
predecessor's prefix). Counted as the passes run them: prompt stems, then tails and action tries in width groups
(arena.players.levels.width_groups: each group padded to its widest row). A count, not a timing: the same on any
machine. Needs only the tokenizer and the model's
shapes. Usage: ``python bench/exact_tokens.py MODEL_DIR [--view full]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


def _observations(game: str) -> list:
    from arena.games import nim_theory
    from arena.games.registry import make_game
    from arena.players.board_policy import ttt_observations
    from arena.players.policy import canonical_observations, leduc_canonical_observations

    if game == "tictactoe":
        return list(ttt_observations().values())
    if game == "leduc":
        return list(leduc_canonical_observations().values())
    if game == "kuhn":
        return list(canonical_observations().values())
    start = (3, 4, 5)
    seen, held_out = nim_theory.split_by_start(nim_theory.family(max(start) + 1, len(start)), start)
    return [make_game("nim", 0, {"piles": list(piles)}).observation() for piles in seen + held_out]


def run_tokens(batch) -> int:
    """Token positions a pass runs through the body: its padded stems, and its tails and tries in width groups."""
    from arena.players.levels import GROUP_TOKENS, width_groups

    total = int(batch.prompts.size)
    for widths in (batch.tail_len, batch.trie_len):
        if len(widths) and int(widths.max()):
            total += sum(len(rows) * int(widths[rows].max()) for rows in width_groups([int(w) for w in widths],
                                                                                      GROUP_TOKENS))
    return total


def packed(prompts, actions, reuse, budget: int, weight: int) -> int:
    """``run_tokens`` over the passes ``ScoringPass.score`` cuts (several: decisions sorted by new tokens)."""
    from arena.players.batching import pack_batches

    passes = list(pack_batches(prompts, actions, budget, weight, "budget", 0, reuse))
    if len(passes) > 1:
        order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]) - reuse[i], i))
        passes = list(pack_batches([prompts[i] for i in order], [actions[i] for i in order], budget, weight,
                                   "budget", 0, [reuse[i] for i in order]))
    return sum(run_tokens(b) for _, _, b in passes)


def counts(player, game: str) -> dict[str, int]:
    """Token positions through the body: one-pass packing, chained scoring, and the prompts' own tokens."""
    from arena.players.batching import MIN_STEM
    from arena.players.chained import _common, chain_count, trie_tokens, worth_chaining

    observations = _observations(game)
    prompts = [player.prompts.prompt_ids(o) for o in observations]
    actions = [[player.prompts.action_ids(a) for a in o.legal_actions] for o in observations]
    budget, weight = player.config.max_batch_tokens, player.shape.head_weight
    one_pass = packed(prompts, actions, [0] * len(prompts), budget, weight)
    order = sorted(range(len(prompts)), key=prompts.__getitem__)
    chains = chain_count(player, prompts)
    length = math.ceil(len(order) / chains)
    runs = [order[c * length:(c + 1) * length] for c in range(chains)]
    chained = 0
    for step in range(length):
        picked = [(run[step - 1] if step else None, run[step]) for run in runs if step < len(run)]
        reuse = []
        for previous, i in picked:
            shared = min(_common(prompts[previous], prompts[i]), len(prompts[i]) - 1) if previous is not None else 0
            reuse.append(shared if shared >= MIN_STEM else 0)
        chained += packed([prompts[i] for _, i in picked], [actions[i] for _, i in picked], reuse, budget, weight)
    return {"positions": len(prompts), "prompt_tokens": sum(map(len, prompts)), "trie_tokens": trie_tokens(prompts),
            "one_pass": one_pass, "chained": chained, "chains": chains,
            "used": worth_chaining(prompts) and chains < len(prompts)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--view", default="full")
    parser.add_argument("--games", default="kuhn,leduc,nim,tictactoe")
    args = parser.parse_args(argv)
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(args.model, MLXPlayerConfig(view=args.view))
    print(f"| game ({args.view} view) | positions | prompt tokens | distinct (trie) | one-pass packed | chained packed "
          "| ratio | chained in `arena exact` |")
    print("|---|---|---|---|---|---|---|---|")
    for game in args.games.split(","):
        c = counts(player, game)
        print(f"| {game} | {c['positions']:,} | {c['prompt_tokens']:,} | {c['trie_tokens']:,} | {c['one_pass']:,} | "
              f"{c['chained']:,} ({c['chains']} chains) | {c['one_pass'] / c['chained']:.2f}x | "
              f"{'yes' if c['used'] else 'no'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
