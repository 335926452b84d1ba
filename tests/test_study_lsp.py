"""studies/lsp.py: which runs --seeds makes, and what a replicate's seed changes in its params."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))  # not a package

# isort: split

import lsp

from arena.core.config import load_params


def test_seeds_repeat_only_the_two_lsp_arms():
    runs = lsp.arm_runs(list(lsp.ARMS), [0, 1])
    assert [label for label, _, _ in runs] == ["GRPO on uniform puzzles", "LSP-Zero (seed 0)", "LSP-Zero (seed 1)",
                                               "LSP (seed 0)", "LSP (seed 1)"]
    assert [label for label, _, _ in lsp.arm_runs(list(lsp.ARMS), [0])] == list(lsp.ARMS)  # one seed: plain names


def test_a_replicate_draws_other_training_seeds_and_minibatches():
    base = load_params(Path(__file__).parents[1] / "params.yaml")
    first, second = (lsp.arm_params(base, lsp.ARMS["LSP"], 2, 16, 1e-3, seed) for seed in (0, 1))
    assert second["seeds"]["train_start"] - first["seeds"]["train_start"] == lsp.SEED_STRIDE
    assert (first["train"]["seed"], second["train"]["seed"]) == (0, 1)
    assert first["lsp"] == second["lsp"] and first["loop"] == "lsp" and set(first["rounds"]) == {"r1", "r2"}
