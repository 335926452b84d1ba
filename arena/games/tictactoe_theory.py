"""Exact TicTacToe: minimax values, the optimal moves of every reachable position, and a policy's exact chance of
losing to the minimax oracle from each seat."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache

# Player 0 is 'O' and moves first, player 1 is 'X' (TextArena's TicTacToe-v0).
MARKS = ("O", "X")
Board = tuple[str, ...]
# A policy maps (board, mark) to a probability per empty cell (cell index -> probability).
TTTPolicy = Callable[[Board, str], Mapping[int, float]]


_TTT_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def ttt_winner(board: tuple[str, ...]) -> str:
    """'X' or 'O' if a line is complete, else ''."""
    for a, b, c in _TTT_LINES:
        if board[a] and board[a] == board[b] == board[c]:
            return board[a]
    return ""


def child(board: Board, cell: int, mark: str) -> Board:
    """The board after ``mark`` fills ``cell``."""
    return board[:cell] + (mark,) + board[cell + 1:]


@cache
def ttt_value(board: tuple[str, ...], mark: str) -> int:
    """Minimax value for ``mark`` to move: positive wins (sooner is larger), 0 draws, negative loses."""
    empties = [i for i, cell in enumerate(board) if cell == ""]
    if not empties:
        return 0
    other = "X" if mark == "O" else "O"
    best = -math.inf
    for cell in empties:
        after = child(board, cell, mark)
        # A win is worth more with more empty cells left, so faster wins and slower losses are preferred.
        value = len(empties) if ttt_winner(after) == mark else -ttt_value(after, other)
        best = max(best, value)
        if best == len(empties):
            break
    return int(best)


def ttt_best_move(board: Sequence[str], mark: str) -> int:
    """The lowest-numbered cell among the minimax-optimal moves."""
    board = tuple(board)
    other = "X" if mark == "O" else "O"
    best_cell, best_value = -1, -math.inf
    for cell, occupant in enumerate(board):
        if occupant:
            continue
        after = child(board, cell, mark)
        empties_before = board.count("")
        value = empties_before if ttt_winner(after) == mark else -ttt_value(after, other)
        if value > best_value:
            best_cell, best_value = cell, value
    return best_cell


def other(mark: str) -> str:
    """The opponent's mark."""
    return "X" if mark == "O" else "O"


def optimal_cells(board: Sequence[str], mark: str) -> tuple[int, ...]:
    """Every move that keeps the position's game-theoretic value (win stays win, draw stays draw)."""
    board = tuple(board)
    values = {}
    for cell in (i for i, occupant in enumerate(board) if not occupant):
        after = child(board, cell, mark)
        values[cell] = 1 if ttt_winner(after) == mark else -_sign(ttt_value(after, other(mark)))
    best = max(values.values())
    return tuple(cell for cell, value in values.items() if value == best)


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)


def reachable_positions() -> list[tuple[Board, str]]:
    """Every non-terminal position reachable from the empty board, with the mark to move, in a fixed order."""
    seen: dict[tuple[Board, str], None] = {}
    frontier = [(("",) * 9, "O")]
    while frontier:
        board, mark = frontier.pop()
        if (board, mark) in seen or ttt_winner(board) or all(board):
            continue
        seen[(board, mark)] = None
        frontier.extend((child(board, cell, mark), other(mark)) for cell in range(9) if not board[cell])
    return sorted(seen, key=lambda item: (sum(bool(c) for c in item[0]), item[0]))


def loss_probability(policy: TTTPolicy, seat: int) -> float:
    """Exact probability that ``policy`` playing ``seat`` loses to the minimax oracle (``ttt_best_move``)."""
    mine = MARKS[seat]

    @cache
    def lose(board: Board, mark: str) -> float:
        winner = ttt_winner(board)
        if winner or all(board):
            return float(winner == other(mine))
        if mark != mine:
            return lose(child(board, ttt_best_move(board, mark), mark), other(mark))
        return sum(p * lose(child(board, cell, mark), other(mark)) for cell, p in policy(board, mark).items() if p)

    return lose(("",) * 9, "O")


def optimal_mass(policy: TTTPolicy, positions: Sequence[tuple[Board, str]]) -> float:
    """Mean over ``positions`` of the probability the policy puts on minimax-optimal moves."""
    masses = [sum(policy(board, mark).get(cell, 0.0) for cell in optimal_cells(board, mark))
              for board, mark in positions]
    return math.fsum(masses) / len(masses)
