"""Verifiable puzzles from the games' exact solvers: a grammar of masked choices, exact verifiers and features."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arena.games.base import Observation
from arena.games.nim import legal_actions as nim_actions
from arena.games.nim_theory import nim_sum, winning_moves
from arena.games.tictactoe import compact_board
from arena.games.tictactoe import legal_actions as ttt_actions
from arena.games.tictactoe_theory import ttt_value, ttt_winner
from arena.games.variants import PUZZLE_KINDS

# Each kind's first choice is a token the embedded tokenizer already has, so a proposal starts with one token.
KIND_TOKENS = dict(zip(PUZZLE_KINDS, ("piles:", "board:"), strict=True))
NIM_COUNTS = (2, 3, 4)
NIM_MAX = 7
TTT_MARKS = tuple(range(1, 9))
# A puzzle's status: ok, or why no answer can be right (a lost Nim position, a finished TicTacToe board).
OK, UNSOLVABLE, INVALID = "ok", "unsolvable", "invalid"


@dataclass(frozen=True)
class Puzzle:
    """One puzzle: ``kind`` and its ``body`` (Nim: the pile sizes; TicTacToe: nine cells, '' when empty)."""

    kind: str
    body: tuple[Any, ...]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "body": list(self.body)}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Puzzle:
        return Puzzle(str(data["kind"]), tuple(data["body"]))


@dataclass(frozen=True)
class Step:
    """One choice of a proposal: the challenger's prompt and the options it may pick from."""

    prompt: str
    options: tuple[str, ...]


def check_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """The puzzle kinds, checked: a non-empty list of distinct names from PUZZLE_KINDS."""
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KIND_TOKENS]
    if not kinds or unknown or len(set(kinds)) != len(kinds):
        raise ValueError(f"puzzles must be a non-empty list of distinct kinds from {list(PUZZLE_KINDS)}, got "
                         f"{list(kinds)}")
    return kinds


def _ttt_cells(moves: Sequence[str]) -> list[str]:
    """The board after placing ``moves`` (cells as ``[i]``), marks alternating from 'O' (who moves first)."""
    cells = [""] * 9
    for index, move in enumerate(moves):
        cells[int(move[1:-1])] = "O" if index % 2 == 0 else "X"
    return cells


def _to_move(cells: Sequence[str]) -> str:
    return "O" if sum(bool(c) for c in cells) % 2 == 0 else "X"


def _kind_of(token: str) -> str:
    return next(kind for kind, kind_token in KIND_TOKENS.items() if kind_token == token)


def next_step(kinds: Sequence[str], choices: Sequence[str]) -> Step | None:
    """The next choice of a proposal after ``choices`` (None once the puzzle is complete).

    Every option is legal by construction, so every finished sequence parses into a puzzle; whether that
    puzzle has a right answer is the verifier's business (``status``). With one kind the kind choice is skipped.
    """
    kinds = check_kinds(kinds)
    head: list[str] = list(choices)
    if len(kinds) > 1:
        if not head:
            return Step("propose\n", tuple(KIND_TOKENS[k] for k in kinds))
        kind = _kind_of(head.pop(0))
    else:
        kind = kinds[0]
    if kind == "nim":
        if not head:
            return Step("propose\npiles:", tuple(map(str, NIM_COUNTS)))
        count, sizes = int(head[0]), head[1:]
        if len(sizes) == count:
            return None
        return Step(f"propose {count}\npiles: {' '.join(sizes)}", tuple(str(s) for s in range(1, NIM_MAX + 1)))
    if not head:
        return Step("propose\nboard:", tuple(map(str, TTT_MARKS)))
    marks, moves = int(head[0]), head[1:]
    if len(moves) == marks:
        return None
    cells = _ttt_cells(moves)
    return Step(f"propose {marks}\n{compact_board(cells)}\nmark: {_to_move(cells)}\n", ttt_actions(cells))


def build(kinds: Sequence[str], choices: Sequence[str]) -> Puzzle:
    """The puzzle a complete choice sequence describes (a ValueError if the sequence is not complete)."""
    if next_step(kinds, choices) is not None:
        raise ValueError(f"choices {list(choices)} do not complete a puzzle of kinds {list(kinds)}")
    head = list(choices)
    kind = _kind_of(head.pop(0)) if len(kinds) > 1 else kinds[0]
    if kind == "nim":
        return Puzzle("nim", tuple(int(s) for s in head[1:]))
    return Puzzle("tictactoe", tuple(_ttt_cells(head[1:])))


def sample_choices(kinds: Sequence[str], rng: random.Random) -> list[str]:
    """A proposal drawn uniformly choice by choice from the grammar (``rng`` is the caller's own)."""
    choices: list[str] = []
    while (step := next_step(kinds, choices)) is not None:
        choices.append(rng.choice(step.options))
    return choices


def uniform_puzzle(kinds: Sequence[str], seed: int) -> tuple[list[str], Puzzle]:
    """The uniform grammar conditioned on a right answer existing: redraw until ``status`` is ok (seeded)."""
    rng = random.Random(seed)
    while True:
        choices = sample_choices(kinds, rng)
        puzzle = build(kinds, choices)
        if status(puzzle) == OK:
            return choices, puzzle


# ------------------------------------------------------------------------------------------------ verifier


def status(puzzle: Puzzle) -> str:
    """ok when some answer is right; unsolvable for a Nim position with no winning move; invalid for a finished
    TicTacToe board (a line already complete)."""
    if puzzle.kind == "nim":
        return OK if nim_sum(puzzle.body) else UNSOLVABLE
    cells = tuple(puzzle.body)
    return INVALID if ttt_winner(cells) or all(cells) else OK


def answers(puzzle: Puzzle) -> tuple[str, ...]:
    """The solver's legal answers: the game's own legal actions at the position."""
    return nim_actions(puzzle.body) if puzzle.kind == "nim" else ttt_actions(puzzle.body)


def right_answers(puzzle: Puzzle) -> frozenset[str]:
    """The right answers: a move to nim-sum 0 (Nim); a minimax-optimal move, which wins or avoids losing (TTT,
    ``best_cells``)."""
    if status(puzzle) != OK:
        return frozenset()
    if puzzle.kind == "nim":
        return frozenset(f"[{i} {q}]" for i, q in winning_moves(puzzle.body))
    return frozenset(f"[{c}]" for c in best_cells(tuple(puzzle.body)))


def best_cells(cells: tuple[str, ...]) -> tuple[int, ...]:
    """The moves of exact minimax value for the mark to move, where a sooner win and a later loss are worth
    more: the win when one is on the board, else the block, else the move that keeps the draw (or wins later)."""
    mark = _to_move(cells)
    other = "X" if mark == "O" else "O"
    empties = [i for i, c in enumerate(cells) if not c]
    values = {}
    for cell in empties:
        child = cells[:cell] + (mark,) + cells[cell + 1:]
        values[cell] = len(empties) if ttt_winner(child) == mark else -ttt_value(child, other)
    best = max(values.values())
    return tuple(cell for cell, value in values.items() if value == best)


def verify(puzzle: Puzzle, answer: str) -> float:
    """1.0 when ``answer`` is right, else 0.0."""
    return 1.0 if answer in right_answers(puzzle) else 0.0


def solver_observation(puzzle: Puzzle, sample_key: int = 0) -> Observation:
    """The solver's view: ``solve`` over the game's own compact view, and the game's legal moves as answers."""
    if puzzle.kind == "nim":
        view = f"piles: {' '.join(map(str, puzzle.body))}\n"
    else:
        view = f"{compact_board(puzzle.body)}\nmark: {_to_move(puzzle.body)}\n"
    text = f"solve\n{view}"
    return Observation(f"puzzle-{puzzle.kind}", 0, text, text, answers(puzzle), sample_key=sample_key)


def challenger_observation(step: Step, sample_key: int = 0) -> Observation:
    """The challenger's view at one choice of a proposal."""
    return Observation("puzzle-propose", 0, step.prompt, step.prompt, step.options, sample_key=sample_key)


def features(puzzle: Puzzle) -> dict[str, Any]:
    """What a puzzle looks like, for the challenger's proposal plots: its size, shape and exact difficulty."""
    legal = answers(puzzle)
    right = right_answers(puzzle)
    common = {"kind": puzzle.kind, "status": status(puzzle), "answers": len(legal),
              "right_fraction": round(len(right) / len(legal), 6) if legal else 0.0}
    if puzzle.kind == "nim":
        return {**common, "piles": len(puzzle.body), "objects": sum(puzzle.body), "largest": max(puzzle.body)}
    cells = tuple(puzzle.body)
    marks = sum(bool(c) for c in cells)
    value = 0 if status(puzzle) != OK else ttt_value(cells, _to_move(cells))
    return {**common, "marks": marks, "outcome": "win" if value > 0 else "loss" if value < 0 else "draw"}
