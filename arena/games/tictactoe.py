"""TicTacToe on TextArena's ``TicTacToe-v0``: player 0 is 'O' and moves first, player 1 is 'X'."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena.games.base import Game
from arena.games.tictactoe_theory import child, ttt_winner
from arena.games.variants import tictactoe_variant

ENV_ID = "TicTacToe-v0"


def mark_of(player: int) -> str:
    """TextArena's mark for a seat."""
    return "X" if player == 1 else "O"


def flat_board(rows: Sequence[Sequence[str]]) -> list[str]:
    """The 3x3 board as 9 cells in TextArena's numbering ('' for empty)."""
    return [cell for row in rows for cell in row]


def legal_actions(cells: Sequence[str]) -> tuple[str, ...]:
    """``[i]`` for each empty cell, in cell order."""
    return tuple(f"[{i}]" for i, cell in enumerate(cells) if cell == "")


def compact_board(cells: Sequence[str]) -> str:
    """Three short lines; an empty cell shows its own number, so it reads as the action that fills it."""
    chars = [cell or str(i) for i, cell in enumerate(cells)]
    return "\n".join("".join(chars[r * 3 : r * 3 + 3]) for r in range(3))


def opening_moves(cells: Sequence[str], mark: str) -> list[str]:
    """The moves an opening may play: every empty cell where ``mark`` does not complete a line (the game runs on)."""
    board = tuple(cells)
    return [f"[{i}]" for i, cell in enumerate(board) if not cell and not ttt_winner(child(board, i, mark))]


class TicTacToeGame(Game):
    """TicTacToe; variant ``opening``: up to that many random moves before the players' first decision."""

    validate_variant = staticmethod(tictactoe_variant)

    def _opening_moves(self, game_state: Mapping[str, Any]) -> list[str]:
        return opening_moves(flat_board(game_state["board"]), mark_of(self.current_player))

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        return legal_actions(flat_board(game_state["board"]))

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        return f"{compact_board(flat_board(game_state['board']))}\nmark: {mark_of(player)}\n"

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        return {"board": flat_board(game_state["board"]), "mark": mark_of(player)}
