"""Exact skill measures of a model's policy, per game with exact theory, computed over every position they need.

Kuhn and Leduc: exploitability (NashConv / 2) of the policy at every information state. TicTacToe: the mass the
policy puts on minimax-optimal moves over every reachable position, its exact probability of losing to the
minimax oracle from each seat, and its exploitability (a best response's winnings, the mean over both seats). Nim:
the mass on winning moves over a family of pile configurations, split into those a game from the variant's start
can reach and those it never sees (generalisation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arena.games import kuhn_theory, leduc_theory, nim_theory, tictactoe_theory
from arena.games.variants import validate_variant
from arena.players.board_policy import nim_model_policy, ttt_model_policy
from arena.players.mlx import MLXPlayer
from arena.players.policy import leduc_model_policy, model_policy

EXACT_GAMES = ("kuhn", "leduc", "tictactoe", "nim")


def _kuhn(player: MLXPlayer, variant: Mapping[str, Any]) -> dict[str, Any]:
    policy = model_policy(player)
    return {"exploitability": round(kuhn_theory.exploitability(policy), 6), "policy": policy}


def _leduc(player: MLXPlayer, variant: Mapping[str, Any]) -> dict[str, Any]:
    return {"exploitability": round(leduc_theory.exploitability(leduc_model_policy(player)), 6)}


def _tictactoe(player: MLXPlayer, variant: Mapping[str, Any]) -> dict[str, Any]:
    table = ttt_model_policy(player)

    def policy(board: tictactoe_theory.Board, mark: str) -> Mapping[int, float]:
        return table[(board, mark)]

    return {
        "optimal_move_mass": round(tictactoe_theory.optimal_mass(policy, list(table)), 6),
        "loss_vs_minimax": {f"seat{seat}": round(tictactoe_theory.loss_probability(policy, seat), 6)
                            for seat in (0, 1)},
        "exploitability": round(tictactoe_theory.exploitability(tictactoe_theory.policy_table(policy)), 6),
    }


def _nim(player: MLXPlayer, variant: Mapping[str, Any]) -> dict[str, Any]:
    start = tuple(validate_variant("nim", variant)["piles"])
    seen, held_out = nim_theory.split_by_start(nim_theory.family(max(start) + 1, len(start)), start)
    table = nim_model_policy(player, seen + held_out)

    def policy(piles: nim_theory.Piles) -> Mapping[tuple[int, int], float]:
        return table[piles]

    return {
        "winning_move_mass": round(nim_theory.winning_mass(policy, seen), 6),
        "winning_move_mass_held_out": round(nim_theory.winning_mass(policy, held_out), 6) if held_out else None,
        "configurations": {"seen": len(seen), "held_out": len(held_out)},
    }


_MEASURES = {"kuhn": _kuhn, "leduc": _leduc, "tictactoe": _tictactoe, "nim": _nim}


def exact_metrics(player: MLXPlayer, game_id: str, variant: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The game's exact measures of ``player``'s policy, or None for a game without exact theory (Liar's Dice)."""
    if getattr(player.config, "think", None) is not None:
        # A thinking policy is an expectation over sampled reasoning: estimated for Kuhn, with an interval.
        if game_id != "kuhn":
            return None
        from arena.eval.thinkexact import THINKING_SAMPLES, exploitability_interval, kuhn_thinking_samples

        estimate = exploitability_interval(kuhn_thinking_samples(player, THINKING_SAMPLES))
        return {"exploitability": round(estimate["exploitability"], 6), "policy": estimate["policy"],
                "exploitability_interval": [round(x, 6) for x in estimate["interval"]],
                "estimated_from_reasonings": estimate["samples_per_info_set"]}
    measure = _MEASURES.get(game_id)
    return measure(player, variant or {}) if measure else None
