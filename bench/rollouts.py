"""Figure rollouts: Kuhn games/s of arena's batched play_match against a naive loop of one mlx_lm.generate per move."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from common import KUHN_EVAL_SEED, Row, base_model, interleaved, log, paired_speedup, throughput_row


def parse_action(text: str, legal: Sequence[str]) -> str | None:
    """The legal action that appears first in generated text (case-insensitive), or None if none does."""
    lowered = text.lower()
    found = [(lowered.find(action.lower()), i) for i, action in enumerate(legal) if action.lower() in lowered]
    return legal[min(found)[1]] if found else None


@dataclass
class NaiveStats:
    games: int = 0
    generated_moves: int = 0
    illegal_moves: int = 0


def _generated_move(model, tokenizer, observation, view: str, max_tokens: int, sampler, stats: NaiveStats) -> str:
    """One ``mlx_lm.generate`` call: the first legal action its text names, else the first legal action."""
    import mlx_lm

    from arena.players.mlx import prompt_text

    messages = [{"role": "user", "content": prompt_text(observation, view)}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    text = mlx_lm.generate(model, tokenizer, prompt, max_tokens=max_tokens, sampler=sampler)
    action = parse_action(text, observation.legal_actions)
    stats.generated_moves += 1
    if action is None:
        stats.illegal_moves += 1
        action = observation.legal_actions[0]
    return action


def naive_games(model, tokenizer, schedule, view: str, max_tokens: int, stats: NaiveStats) -> None:
    """Play the schedule game by game, one ``mlx_lm.generate`` call per model move (the unbatched baseline).

    Seats and the random opponent's draws follow arena.play.match exactly, so these are the same games. Generated
    text that names no legal action is replaced by the first legal action (counted in ``stats``).
    """
    from mlx_lm.sample_utils import make_sampler

    from arena.games.registry import make_game
    from arena.play.match import sample_key
    from arena.players.build import make_player

    opponent = make_player("random")
    sampler = make_sampler(temp=1.0)
    for slot in schedule:
        game = make_game("kuhn", slot.seed)
        model_seat = slot.first_seat  # the match's first player (the model) sits in seat first_seat
        while not game.done:
            observation = game.observation()
            if game.current_player == model_seat:
                action = _generated_move(model, tokenizer, observation, view, max_tokens, sampler, stats)
            else:
                keyed = replace(observation, sample_key=sample_key(slot, len(game.actions)))
                action = opponent.act(keyed).action
            game.step(action)
        game.result()
        stats.games += 1


def _time_both(player, opponent, schedule, naive_count: int, max_tokens: int, concurrency: int, reps: int,
               stats: NaiveStats) -> dict[str, list[float]]:
    """Warm both sides up, then time the whole batched schedule and its first ``naive_count`` games, alternating."""
    from arena.play.match import play_match

    # Warm-up (model load, first-call allocations, tokenizer caches) for both sides.
    play_match("kuhn", (player, opponent), schedule[:8], concurrency=concurrency, progress=False)
    naive_games(player.model, player.tokenizer, schedule[:2], "compact", max_tokens, NaiveStats())

    def ours() -> None:
        play_match("kuhn", (player, opponent), schedule, concurrency=concurrency, progress=False)

    def naive() -> None:
        naive_games(player.model, player.tokenizer, schedule[:naive_count], "compact", max_tokens, stats)

    log(f"rollouts: {len(schedule)} batched games vs {naive_count} naive games, x {reps} (alternating)")
    return interleaved({"ours": ours, "naive": naive}, reps)


def _row(times: dict[str, list[float]], ours_games: int, naive_count: int, concurrency: int, max_tokens: int,
         stats: NaiveStats, model_label: str) -> Row:
    """The figure's row: games per second of each side, and how often the naive loop's text named no action."""
    details: dict[str, Any] = {"samples_ours": times["ours"], "samples_reference": times["naive"],
                               "naive_illegal": stats.illegal_moves, "naive_generated": stats.generated_moves}
    note = (f"naive: mlx_lm.generate(max_tokens={max_tokens}) per model move; {stats.illegal_moves} of "
            f"{stats.generated_moves} generated moves named no legal action, so the first legal action was played "
            f"instead; model: {model_label}")
    return throughput_row("rollouts", f"Kuhn games/s, {concurrency} concurrent vs random", "games/s",
                          ours_games / statistics.median(times["ours"]),
                          naive_count / statistics.median(times["naive"]),
                          ("arena.play.match.play_match", "naive generate loop"), 10.0, note,
                          paired_speedup(times["ours"], times["naive"], ours_games, naive_count), **details)


def figure(quick: bool) -> list[Row]:
    """Batched games against random at 64 concurrent games, and the same games played one generate call a move."""
    import mlx.core as mx

    from arena.play.match import duplicate_schedule
    from arena.players.build import make_player
    from arena.players.mlx import MLXPlayer

    ours_games, naive_count, reps = (64, 8, 1) if quick else (512, 64, 3)
    concurrency = 64
    schedule = duplicate_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + ours_games), ours_games)
    with base_model() as (model_dir, model_label):
        player = MLXPlayer(model_dir)
        opponent = make_player("random")
        # The cap most favourable to the naive loop: a perfect model answers with the action's tokens and then
        # its end-of-turn token; this tiny random-weight model never stops on its own.
        action_tokens = max(len(player._action_ids(a)) for a in ("[check]", "[bet]", "[call]", "[fold]"))
        max_tokens = action_tokens + 1
        mx.random.seed(0)
        stats = NaiveStats()
        times = _time_both(player, opponent, schedule, naive_count, max_tokens, concurrency, reps, stats)
    return [_row(times, ours_games, naive_count, concurrency, max_tokens, stats, model_label)]
