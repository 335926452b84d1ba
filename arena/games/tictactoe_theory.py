"""Exact TicTacToe: minimax values, the optimal moves of every reachable position, and a policy's exact chance of
losing to the minimax oracle from each seat."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache

import numpy as np

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


@cache
def positions() -> tuple[tuple[Board, str], ...]:
    """``reachable_positions`` as a tuple: the rows of a policy table (fewest marks first, so a child's row follows
    its parent's)."""
    return tuple(reachable_positions())


@cache
def _rows() -> dict[tuple[Board, str], int]:
    """Each position's row in ``positions()``."""
    return {position: row for row, position in enumerate(positions())}


@cache
def _tree() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row and cell: whether the cell is legal, the child's row (-1 where the move ends the game), and the
    mover's reward where it does (1 a win, 0 a draw); and per row its number of marks (its depth) and its mover's
    seat (0 for O, 1 for X)."""
    rows = _rows()
    legal, children, reward = np.zeros((len(rows), 9), bool), np.full((len(rows), 9), -1), np.zeros((len(rows), 9))
    for row, (board, mark) in enumerate(positions()):
        for cell in (c for c in range(9) if not board[c]):
            after = child(board, cell, mark)
            legal[row, cell] = True
            reward[row, cell] = float(ttt_winner(after) == mark)
            if not ttt_winner(after) and not all(after):
                children[row, cell] = rows[(after, other(mark))]
    depth = np.array([9 - board.count("") for board, _ in positions()])
    movers = np.array([MARKS.index(mark) for _, mark in positions()])
    return legal, children, reward, depth, movers


def uniform_table() -> np.ndarray:
    """The [positions, 9] table of the uniform policy over each position's empty cells."""
    legal = _tree()[0]
    return legal / legal.sum(axis=1, keepdims=True)


def _action_values(table: np.ndarray, responder: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Per row: each cell's value Q and the position's value V, both for the mover, when both seats play ``table``
    except seat ``responder``, which plays a best response (V is then its maximum Q)."""
    legal, children, reward, depth, movers = _tree()
    q, v = np.zeros(table.shape), np.zeros(len(table))
    for level in range(8, -1, -1):  # a child is one mark deeper, so its value is known
        rows = np.flatnonzero(depth == level)
        q[rows] = np.where(children[rows] >= 0, -v[np.maximum(children[rows], 0)], reward[rows])
        best = np.where(legal[rows], q[rows], -np.inf).max(axis=1)
        v[rows] = np.where(movers[rows] == responder, best, (table[rows] * q[rows]).sum(axis=1))
    return q, v


def _reaches(table: np.ndarray) -> np.ndarray:
    """Per row: the summed probability of its paths from the empty board counting O's moves only, X's only, and
    both (columns 0, 1, 2): the first two are the counterfactual reaches of X and of O."""
    _, children, _, depth, movers = _tree()
    reach = np.zeros((len(table), 3))
    reach[0] = 1.0
    for level in range(9):
        rows = np.flatnonzero(depth == level)
        for cell in range(9):
            moved = rows[children[rows, cell] >= 0]
            p = table[moved, cell][:, None]
            factor = np.where(np.arange(3)[None, :] == 1 - movers[moved][:, None], 1.0, p)
            np.add.at(reach, children[moved, cell], reach[moved] * factor)
    return reach


def action_gains(table: np.ndarray, on_policy: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Self-play of ``table``: per position and cell, the mover's Q(a) - V weighted by the opponent's reach and,
    where ``on_policy``, by the mover's own too (the position's probability in self-play); and each position's
    weight. Zero at filled cells. ``leduc_cfr.action_gains``, for TicTacToe (no chance, every position a state)."""
    legal, movers = _tree()[0], _tree()[4]
    q, v = _action_values(table)
    reach = _reaches(table)
    weight = reach[:, 2] if on_policy else reach[np.arange(len(table)), 1 - movers]
    return np.where(legal, (q - v[:, None]) * weight[:, None], 0.0), weight


def exploitability(table: np.ndarray) -> float:
    """NashConv / 2 of ``table``: the mean over seats of a best response's value against it (the game's value is
    a draw, 0)."""
    first = _action_values(table, 0)[1][0]
    second = -_action_values(table, 1)[1][0]
    return (first + second) / 2


def policy_table(policy: TTTPolicy) -> np.ndarray:
    """``policy`` at every reachable position as a [positions, 9] table (``exploitability``'s input)."""
    table = np.zeros((len(positions()), 9))
    for row, (board, mark) in enumerate(positions()):
        for cell, probability in policy(board, mark).items():
            table[row, cell] = probability
    return table


def table_policy(table: np.ndarray) -> TTTPolicy:
    """``table`` as a TTTPolicy (for ``loss_probability`` and ``optimal_mass``)."""
    rows = _rows()
    return lambda board, mark: {cell: float(table[rows[(board, mark)], cell]) for cell in range(9) if not board[cell]}
