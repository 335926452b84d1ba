"""Study: arena's Kuhn against verifiers' own ``kuhn_poker`` environment on the same seeds (deal, seat order, chips).

Usage (from the repository root, with verifiers' repository checked out at VF; its ``kuhn_poker`` environment is not
in the verifiers wheel)::

    PYTHONPATH=VF/environments/kuhn_poker python studies/kuhn_verifiers.py [--seeds 3000]

Needs the ``verifiers`` extra (``kuhn_poker`` imports ``verifiers.v1``). Prints, per seed, whether both deal the same
cards to the same seats and to the same first mover, which seat arena opens with, each side's deal counts, and
whether the chips of every terminal line agree for the same cards. docs/verifiers.md has the finding.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from kuhn_poker.taskset import LEGAL, RANKS, TO_ACT, payoff  # verifiers' environment, not arena's

from arena.games.kuhn_theory import CARD_NAMES
from arena.games.registry import make_game

# verifiers' histories (dash-joined) and the same lines as arena's actions
LINES = {"check-check": ["[Check]", "[Check]"], "bet-fold": ["[Bet]", "[Fold]"], "bet-call": ["[Bet]", "[Call]"],
         "check-bet-fold": ["[Check]", "[Bet]", "[Fold]"], "check-bet-call": ["[Check]", "[Bet]", "[Call]"]}


def verifiers_deal(seed: int) -> list[str]:
    """verifiers' deal: ``rng = random.Random(task.data.info["seed"]); cards = rng.sample(list(RANKS), 2)``."""
    return random.Random(seed).sample(list(RANKS), 2)


def arena_deal(seed: int) -> tuple[list[str], int]:
    """arena's cards by seat and the seat that acts first, for ``kuhn`` (one hand) on ``seed``."""
    game = make_game("kuhn", seed)
    cards = game._env.state.game_state["player_cards"]
    return [CARD_NAMES[cards[0]], CARD_NAMES[cards[1]]], game.current_player


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3000)
    args = parser.parse_args()
    same_seats = same_movers = 0
    openers: Counter[int] = Counter()
    ours: Counter[tuple[str, ...]] = Counter()
    theirs: Counter[tuple[str, ...]] = Counter()
    for seed in range(args.seeds):
        cards, opener = arena_deal(seed)
        theirs_cards = verifiers_deal(seed)
        openers[opener] += 1
        ours[tuple(cards)] += 1
        theirs[tuple(theirs_cards)] += 1
        same_seats += cards == theirs_cards
        same_movers += [cards[opener], cards[1 - opener]] == theirs_cards
    print(f"seeds 0..{args.seeds - 1}: same cards by seat {same_seats}, same cards by order of play {same_movers}; "
          f"arena's first mover by seat {dict(openers)}; verifiers' first mover is always player0 ({TO_ACT[''] == 0})")
    print(f"arena's deals {sorted(ours.items())}\nverifiers' deals {sorted(theirs.items())}")
    agree = total = 0
    for seed in range(200):
        for history, actions in LINES.items():
            game = make_game("kuhn", seed)
            cards, opener = arena_deal(seed)
            for action in actions:
                game.step(action)
            total += 1
            agree += game.result().rewards[opener] == payoff(history, [cards[opener], cards[1 - opener]])
    print(f"first mover's chips on every terminal line, same cards: {agree} of {total} agree; legal actions: {LEGAL}")


if __name__ == "__main__":
    main()
