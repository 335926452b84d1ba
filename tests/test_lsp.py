"""Language Self-Play on verifiable puzzles: the grammar and its exact verifiers, both roles' advantages, the
challenger's reward-audit gate, the seed plan and config, and one LSP iteration on the tiny model."""

from __future__ import annotations

import random

import numpy as np
import pytest

from arena.core.config import ConfigError, from_mapping
from arena.core.hashing import digest_path
from arena.core.seeds import SeedsConfig, lsp_seeds
from arena.games import puzzles as grammar
from arena.games.nim_theory import nim_sum
from arena.games.tictactoe_theory import optimal_cells
from arena.train.config import LspConfig
from arena.train.lsp.advantages import (
    challenger_advantages,
    challenger_rewards,
    quality,
    query_values,
    solver_advantages,
)
from arena.train.lsp.audit import audit_challenger

KINDS = ("nim", "tictactoe")

# ----------------------------------------------------------------------------------------------- grammar


def test_every_choice_sequence_parses_and_each_choice_is_from_its_legal_set():
    rng = random.Random(7)
    for _ in range(300):
        choices: list[str] = []
        while (step := grammar.next_step(KINDS, choices)) is not None:
            assert step.options and len(set(step.options)) == len(step.options)
            choices.append(rng.choice(step.options))
        puzzle = grammar.build(KINDS, choices)
        assert grammar.Puzzle.from_json(puzzle.to_json()) == puzzle
        assert grammar.status(puzzle) in (grammar.OK, grammar.UNSOLVABLE, grammar.INVALID)


def test_one_kind_skips_the_kind_choice_and_an_incomplete_sequence_is_an_error():
    assert grammar.next_step(("nim",), []).options == ("2", "3", "4")
    assert grammar.next_step(KINDS, []).options == ("piles:", "board:")
    assert grammar.build(("nim",), ["2", "3", "5"]) == grammar.Puzzle("nim", (3, 5))
    with pytest.raises(ValueError, match="do not complete"):
        grammar.build(("nim",), ["3", "1"])
    with pytest.raises(ValueError, match="distinct kinds"):
        grammar.next_step(("chess",), [])


def test_tictactoe_proposals_alternate_marks_from_o():
    puzzle = grammar.build(KINDS, ["board:", "3", "[4]", "[0]", "[8]"])
    assert puzzle.body == ("X", "", "", "", "O", "", "", "", "O")
    assert grammar.solver_observation(puzzle).compact == "solve\nX12\n3O5\n67O\nmark: X\n"


def test_nim_verifier_accepts_exactly_the_moves_to_nim_sum_zero():
    for piles in [(1, 2), (3, 4, 5), (5, 2, 3, 5), (7, 7, 1)]:
        puzzle = grammar.Puzzle("nim", piles)
        for answer in grammar.answers(puzzle):
            pile, take = map(int, answer[1:-1].split())
            after = list(piles)
            after[pile] -= take
            assert grammar.verify(puzzle, answer) == float(nim_sum(after) == 0)
    assert grammar.right_answers(grammar.Puzzle("nim", (1, 2))) == {"[1 1]"}
    assert grammar.status(grammar.Puzzle("nim", (3, 3))) == grammar.UNSOLVABLE
    assert grammar.right_answers(grammar.Puzzle("nim", (3, 3))) == frozenset()


def test_tictactoe_verifier_wins_or_blocks():
    # O to move (four marks placed) can complete the top row at 2; that is the only optimal move.
    win = grammar.Puzzle("tictactoe", ("O", "O", "", "X", "X", "", "", "", ""))
    assert grammar.right_answers(win) == {"[2]"}
    # X to move must block O's top row at 2 (X is lost anyway, but only later: minimax prefers the later loss).
    block = grammar.Puzzle("tictactoe", ("O", "O", "", "X", "", "", "", "", ""))
    assert grammar.right_answers(block) == {"[2]"}
    assert grammar.verify(block, "[5]") == 0.0
    finished = grammar.Puzzle("tictactoe", ("O", "O", "O", "X", "X", "", "", "", ""))
    assert grammar.status(finished) == grammar.INVALID and grammar.right_answers(finished) == frozenset()
    # O (centre against an edge) wins: here the fastest wins are exactly the moves that keep the win.
    board = ("", "X", "", "", "O", "", "", "", "")
    right = grammar.right_answers(grammar.Puzzle("tictactoe", board))
    assert right == {f"[{c}]" for c in optimal_cells(board, "O")} and len(right) < 7


def test_uniform_puzzles_are_seeded_and_always_have_a_right_answer():
    first = [grammar.uniform_puzzle(KINDS, seed) for seed in range(50)]
    assert first == [grammar.uniform_puzzle(KINDS, seed) for seed in range(50)]
    assert all(grammar.status(p) == grammar.OK and grammar.right_answers(p) for _, p in first)
    assert {p.kind for _, p in first} == set(KINDS)
    features = grammar.features(grammar.Puzzle("nim", (1, 2)))
    assert features == {"kind": "nim", "status": "ok", "answers": 3, "right_fraction": round(1 / 3, 6),
                        "piles": 2, "objects": 3, "largest": 2}


# ----------------------------------------------------------------------------------------------- advantages


def test_solver_advantages_are_reward_minus_the_puzzles_mean():
    advantages, zero = solver_advantages([[1, 0, 0, 1], [1, 1, 1, 1], [0, 0, 1, 0]])
    np.testing.assert_allclose(advantages, [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0, -0.25, -0.25, 0.75, -0.25])
    assert zero.tolist() == [False] * 4 + [True] * 4 + [False] * 4


def test_quality_needs_a_valid_puzzle_with_both_right_and_wrong_answers():
    rewards = [[1, 0], [1, 1], [0, 0], [], [1, 0]]
    assert quality([True, True, True, False, False], rewards).tolist() == [True, False, False, False, False]
    np.testing.assert_allclose(query_values(rewards), [0.5, 1.0, 0.0, 0.0, 0.5])
    with pytest.raises(ValueError, match="one per query"):
        quality([True], rewards)
    with pytest.raises(ValueError, match=r"rewards\[0\]"):
        query_values([[2.0]])


def test_lsp_zero_advantage_is_the_batch_mean_value_minus_the_querys():
    values = np.array([0.25, 0.5, 1.0, 0.0])
    rewards = challenger_rewards(values, np.array([True, True, False, False]), use_quality=False, quality_weight=1.0)
    np.testing.assert_allclose(challenger_advantages(rewards), values.mean() - values)


def test_lsp_pays_only_queries_with_their_quality():
    values = np.array([0.25, 0.5, 1.0, 0.0])
    flags = np.array([True, True, False, False])
    rewards = challenger_rewards(values, flags, use_quality=True, quality_weight=0.5)
    np.testing.assert_allclose(rewards, [1.25, 1.0, 0.0, 0.0])
    assert challenger_advantages(np.full(5, 0.7)).tolist() == [0.0] * 5


def test_audit_gate_pays_no_degenerate_challenger_under_lsp_and_catches_lsp_zero():
    lsp = audit_challenger(KINDS, 8, use_quality=True, quality_weight=1.0, proposals=64)
    assert [c.passed for c in lsp] == [True, True, True]
    assert {c.name.split(" {")[0] for c in lsp} == {"always the same no right answer puzzle",
                                                     "always the same trivial puzzle", "uniform challenger"}
    zero = {c.name.split(" {")[0]: c for c in audit_challenger(KINDS, 8, use_quality=False, quality_weight=1.0,
                                                               proposals=64)}
    # Without the quality term a challenger proposing only puzzles nobody can solve earns the most: the hole
    # the quality self-reward closes.
    assert not zero["always the same no right answer puzzle"].passed
    assert zero["always the same no right answer puzzle"].measured == "earns 1.000"


# ----------------------------------------------------------------------------------------------- config, seeds


def test_lsp_seed_blocks_are_disjoint_and_checked():
    seeds = SeedsConfig()
    assert lsp_seeds(seeds, 64, 1) == range(950_000, 950_064)
    assert lsp_seeds(seeds, 64, 2).start == lsp_seeds(seeds, 64, 1).stop
    with pytest.raises(ConfigError, match="lsp.proposals"):
        lsp_seeds(seeds, 64, 1000)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("puzzles", ["chess"], "lsp.puzzles"), ("proposals", 1, "lsp.proposals"),
    ("answers_per_proposal", 1, "lsp.answers_per_proposal"), ("challenger", "oracle", "lsp.challenger"),
    ("alpha_ch", -1.0, "lsp.alpha_ch"), ("benchmark_seeds", [5, 5], "lsp.benchmark_seeds"),
])
def test_lsp_config_errors_name_the_key(key, value, message):
    with pytest.raises(ConfigError, match=message):
        from_mapping(LspConfig, {key: value}, "lsp")


def test_params_reject_a_benchmark_overlapping_training_seeds():
    from arena.core.config import load_params
    from arena.pipeline.params import validate_all

    params = load_params("params.yaml")
    validate_all(params)
    params["lsp"] = {**params["lsp"], "benchmark_seeds": [999_000, 1_001_000]}
    with pytest.raises(ConfigError, match="lsp.benchmark_seeds"):
        validate_all(params)


def test_lsp_decisions_weigh_the_challenger_by_alpha():
    from arena.train.lsp.rollouts import score_proposals
    from arena.train.lsp.train import lsp_decisions

    steps = [{"prompt": s.prompt, "options": list(s.options), "choice": c, "logprob": -1.0}
             for s, c in zip([grammar.next_step(("nim",), []), grammar.next_step(("nim",), ["2"]),
                              grammar.next_step(("nim",), ["2", "1"])], ["2", "1", "2"], strict=True)]
    answers = [{"answer": a, "logprob": -0.5, "reward": r} for a, r in [("[1 1]", 1.0), ("[0 1]", 0.0)]]
    good = {"puzzle": {"kind": "nim", "body": [1, 2]}, "status": "ok", "challenger": steps, "answers": answers}
    bad = {"puzzle": {"kind": "nim", "body": [2, 2]}, "status": "unsolvable", "challenger": steps, "answers": []}
    config = LspConfig(puzzles=("nim",), alpha_ch=0.5)
    records = score_proposals([good, bad], config)
    assert records[0]["challenger_reward"] == 1.5 and records[1]["challenger_reward"] == 0.0
    data = lsp_decisions(records, config)
    assert len(data.chosen) == 2 + 3 + 3
    np.testing.assert_allclose(data.advantages, [0.5, -0.5] + [0.375] * 3 + [-0.375] * 3)
    solver_only = lsp_decisions(records, LspConfig(puzzles=("nim",), challenger="uniform"))
    assert len(solver_only.chosen) == 2


def _eval_row(round_number: int, accuracy: float, proposals: dict | None) -> dict:
    bench = {"accuracy": accuracy, "low": accuracy - 0.03, "high": accuracy + 0.03, "n": 1000, "greedy": accuracy,
             "expected": accuracy}
    return {"round": round_number, "loop": "lsp", "benchmark": {"all": bench, "nim": bench},
            "proposals": proposals}


def test_lsp_plot_is_a_deterministic_png_and_needs_rounds():
    from arena.report.lspplots import plot_lsp_rounds
    from arena.report.plots import PNG_SIGNATURE, ReportError

    proposals = {"solver_success": 0.4, "valid_fraction": 0.9, "features": {"kind": {"nim": 3, "tictactoe": 1}}}
    arms = {"LSP": [_eval_row(0, 0.3, None), _eval_row(1, 0.35, proposals)], "uniform": [_eval_row(0, 0.3, None)]}
    png = plot_lsp_rounds(arms)
    assert png.startswith(PNG_SIGNATURE) and png == plot_lsp_rounds(arms)
    with pytest.raises(ReportError, match="at least one arm"):
        plot_lsp_rounds({"LSP": []})


# ----------------------------------------------------------------------------------------------- on the tiny model


def test_one_lsp_iteration_on_the_tiny_model_is_reproducible_and_trains(base_model_dir, tmp_path):
    from arena.eval.puzzlebench import evaluate_lsp_round
    from arena.train.config import TrainConfig
    from arena.train.lsp.rollouts import lsp_rollouts, read_rollouts
    from arena.train.lsp.train import train_lsp_round

    config = LspConfig(proposals=8, answers_per_proposal=4, benchmark_seeds=(9_100_000, 9_100_040))
    seeds = SeedsConfig()
    for name in ("a", "b"):
        lsp_rollouts(base_model_dir, config, seeds, 1, tmp_path / f"rollouts-{name}", progress=False)
    assert digest_path(tmp_path / "rollouts-a") == digest_path(tmp_path / "rollouts-b")
    records = read_rollouts(tmp_path / "rollouts-a")
    assert len(records) == 8 and all(r["challenger"] for r in records)
    assert all(len(r["answers"]) == (4 if r["status"] == "ok" else 0) for r in records)
    train = TrainConfig(steps=2, batch_size=32, lr=1.0e-3)
    summary = train_lsp_round(base_model_dir, base_model_dir, tmp_path / "rollouts-a", 1, config, train,
                              tmp_path / "trained", progress=False)
    assert summary["steps"] == 2
    assert digest_path(tmp_path / "trained" / "weights.safetensors") != digest_path(
        base_model_dir / "model.safetensors")
    result = evaluate_lsp_round(base_model_dir, 1, config, seeds, tmp_path / "rollouts-a", tmp_path / "eval.json")
    bench = result["benchmark"]["all"]
    assert bench["n"] == 40 and 0 <= bench["low"] <= bench["accuracy"] <= bench["high"] <= 1
    assert result["proposals"]["proposals"] == 8 and all(c["passed"] for c in result["challenger_audit"])
