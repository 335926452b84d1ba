"""Why an untrained model never trades in negotiation: its policy over [Accept], [Deny] and offers, scored two ways.

    python studies/negotiation_prior.py [--model artifacts/models/base] [--deals 50] [--units 1]
        [--out studies/results/negotiation_prior.md]

For each deal (seeds from 0) two decisions: seat 0's first move, and seat 1 facing a standing offer (seat 0's first
listed offer). Each is scored by the model as arena's local player scores it, two ways: **whole string** (an
action's log-likelihood is the sum of its tokens' log-probabilities over the whole vocabulary, how every other game
is scored) and **by choice** (each token renormalised over the tokens the legal actions continue with at that
point, how negotiation is scored now: arena.games.variants.CHOICE_SCORED). The table gives the mean probability
of each kind of move and each kind's scored tokens and mean log-probability per token under the whole-string
scoring: an untrained model's tokens are all about equally unlikely, so a 24-token offer loses to a 5-token [Deny]
by ~19 tokens' worth of log-probability.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from arena.core.artifacts import atomic_write_text
from arena.core.blas import ensure_fast_blas

KINDS = ("accept", "deny", "offer")


def _kind(action: str) -> str:
    return "accept" if action == "[Accept]" else "deny" if action == "[Deny]" else "offer"


def observations(deals: int, units: int) -> list:
    """Per deal: seat 0's first observation and seat 1's after seat 0 offers its first listed offer."""
    from arena.games.registry import make_game

    out = []
    for seed in range(deals):
        game = make_game("negotiation", seed, {"units": units})
        first = game.observation()
        out.append(first)
        game.step(next(a for a in first.legal_actions if a.startswith("[Offer")))
        out.append(game.observation())
    return out


def scored(player, obs: list, by_choice: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per observation: its legal actions' probabilities, and each action's per-token log-probabilities summed."""
    from arena.players.batching import pack_batches
    from arena.players.scoring import inference_log_softmax, inference_loglik, per_decision

    prompts = [player.prompts.prompt_ids(o) for o in obs]
    actions = [[player.prompts.action_ids(a) for a in o.legal_actions] for o in obs]
    probs, logliks = [], []
    for _, _, batch in pack_batches(prompts, actions, 1 << 22, player.shape.head_weight, "study", 0,
                                    choices=[by_choice] * len(obs)):
        loglik = inference_loglik(player.model, batch)
        logp = inference_log_softmax(loglik, batch.action_offsets, 1.0)
        probs += [np.exp(p) for p in per_decision(np.array(logp, dtype=np.float64), batch.action_offsets)]
        logliks += per_decision(np.array(loglik, dtype=np.float64), batch.action_offsets)
    return probs, logliks


def table(player, obs: list) -> str:
    """The markdown rows: per decision kind (first move, facing an offer) and move kind."""
    whole, loglik = scored(player, obs, False)
    choice, _ = scored(player, obs, True)
    lines = ["| decision | move | legal | tokens | log-prob per token (whole) | P whole string | P by choice |",
             "|---|---|---|---|---|---|---|"]
    for label, rows in (("first move", range(0, len(obs), 2)), ("facing an offer", range(1, len(obs), 2))):
        for kind in KINDS:
            legal = [[i for i, a in enumerate(obs[r].legal_actions) if _kind(a) == kind] for r in rows]
            if not any(legal):
                continue
            tokens = [len(player.prompts.action_ids(obs[r].legal_actions[i]))
                      for r, idx in zip(rows, legal, strict=True) for i in idx]
            per_token = [loglik[r][i] / len(player.prompts.action_ids(obs[r].legal_actions[i]))
                         for r, idx in zip(rows, legal, strict=True) for i in idx]
            p_whole = np.mean([whole[r][idx].sum() for r, idx in zip(rows, legal, strict=True)])
            p_choice = np.mean([choice[r][idx].sum() for r, idx in zip(rows, legal, strict=True)])
            lines.append(f"| {label} | {kind} | {np.mean([len(i) for i in legal]):.1f} | {np.mean(tokens):.1f} | "
                         f"{np.mean(per_token):.2f} | {p_whole:.4f} | {p_choice:.4f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=Path("artifacts/models/base"))
    parser.add_argument("--deals", type=int, default=50)
    parser.add_argument("--units", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("studies/results/negotiation_prior.md"))
    args = parser.parse_args()
    ensure_fast_blas()
    from arena.players.mlx import MLXPlayer

    player = MLXPlayer(args.model)
    rows = table(player, observations(args.deals, args.units))
    text = (f"# An untrained model's moves in negotiation (units {args.units}, {args.deals} deals from seed 0)\n\n"
            f"Model: `{args.model}` (model hash {player.pin()['model_hash'][:16]})\n\n{rows}\n")
    atomic_write_text(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
