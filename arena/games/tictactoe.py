"""TicTacToe on TextArena's ``TicTacToe-v0``: player 0 is 'O' and moves first, player 1 is 'X'."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from arena.games.base import Game
from arena.games.tictactoe_theory import ttt_winner
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


def safe_cells(cells: Sequence[str], mark: str) -> list[int]:
    """The empty cells where ``mark`` does not complete a line (an opening move must leave the game running)."""
    board = tuple(cells)
    return [i for i, cell in enumerate(board) if not cell and not ttt_winner(board[:i] + (mark,) + board[i + 1 :])]


class TicTacToeGame(Game):
    """TicTacToe; variant ``opening``: up to that many random moves before the players' first decision."""

    validate_variant = staticmethod(tictactoe_variant)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opening = self._play_opening(self.variant.get("opening", 0))

    def _play_opening(self, most: int) -> tuple[str, ...]:
        """Uniform in 0..``most`` random moves, none ending the game, drawn from an RNG of the seed alone.

        They come before any player decides, so they stay out of ``actions`` and ``moves``: a replay of the
        recorded actions starts from the same opening because ``make_game`` plays it again from the seed.
        """
        rng = random.Random(f"tictactoe-opening:{self.seed}")
        played: list[str] = []
        for _ in range(rng.randint(0, most) if most else 0):
            cells = safe_cells(flat_board(self._ta_state.game_state["board"]), mark_of(self.current_player))
            if not cells:
                break
            played.append(f"[{rng.choice(cells)}]")
            self._isolated(self._env.step, played[-1])
        return tuple(played)

    @staticmethod
    def env_kwargs(variant: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _legal_actions(self, game_state: Mapping[str, Any]) -> tuple[str, ...]:
        return legal_actions(flat_board(game_state["board"]))

    def _compact(self, game_state: Mapping[str, Any], player: int) -> str:
        return f"{compact_board(flat_board(game_state['board']))}\nmark: {mark_of(player)}\n"

    def _state(self, game_state: Mapping[str, Any], player: int) -> dict[str, Any]:
        return {"board": flat_board(game_state["board"]), "mark": mark_of(player)}
