"""Per-round evaluation: a snapshot against fixed baselines on held-out deals (each from both seats), each game's
exact measures of the policy (arena.eval.exact), and for Kuhn the exact expected chips against each baseline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.core.config import require
from arena.core.errors import ArenaError
from arena.core.seeds import check_seed_ranges
from arena.eval.config import EvalConfig, GameEntry, RoundEvalConfig
from arena.eval.exact import exact_metrics
from arena.eval.negotiation import RESPONDER, trade_columns, value_left_measures
from arena.games.kuhn_theory import chips_per_hand, exploitability
from arena.games.variants import evaluation_variant
from arena.play.distributed import Match, PlayerPool, Seat, play_matches
from arena.play.match import duplicate_schedule
from arena.play.stats import all_errored, deal_chips, errored_note, mean_interval, summarize_match
from arena.players.build import PlayerConfigs
from arena.players.config import sampling_config
from arena.players.policy import scripted_kuhn_policy
from arena.train.pool import load_pool, pool_average_policy


def _headline(summary: dict[str, Any]) -> dict[str, Any]:
    rate = summary["p0_win_rate"]
    return {"win_rate": rate["rate"], "low": rate["low"], "high": rate["high"],
            "mean_reward": summary["mean_reward"]["p0"], "games": summary["games"], "errored": summary["errored"]}


def _kuhn_columns(records: Sequence[Mapping[str, Any]], spec: str, opponent: str,
                  policy: Mapping[str, float]) -> dict[str, Any]:
    """Sampled chips per hand with its interval, beside the exact value of the policy against the opponent's."""
    mean, low, high = mean_interval(deal_chips(records, spec))
    table = scripted_kuhn_policy(opponent)
    exact = round(chips_per_hand(policy, table), 6) if table is not None else None
    return {"chips_per_hand": mean, "chips_low": low, "chips_high": high, "exact_chips_per_hand": exact}


def split_columns(records: Sequence[Mapping[str, Any]], spec: str, opponent: str) -> dict[str, Any]:
    """A round evaluation row's ultimatum columns: mean money, the share of offers accepted, and the exact share of
    decisions that keep each side's win/draw/loss value (``optimal_share``)."""
    splits = summarize_match(records, spec, opponent)["splits"]
    return {"money": splits["mean_money"]["p0"], "opponent_money": splits["mean_money"]["p1"],
            "accepted_share": splits["accepted_share"], "optimal_share": splits["optimal_share"]["p0"],
            "opponent_optimal_share": splits["optimal_share"]["p1"]}


def _exact_columns(exact: Sequence[tuple[GameEntry, Mapping[str, Any]]]) -> dict[str, Any]:
    """Each game's exact measures under ``exact.<game label>``; Kuhn's exploitability also at the top level."""
    columns: dict[str, Any] = {"exact": {game.label: {k: v for k, v in m.items() if k != "policy"}
                                         for game, m in exact}}
    kuhn = [m for game, m in exact if game.game_id == "kuhn"]
    if kuhn:
        columns["exploitability"] = kuhn[0]["exploitability"]
    return columns


def _check_played(round_number: int, pairs: Sequence[tuple[GameEntry, str]],
                  played: Sequence[Sequence[Mapping[str, Any]]]) -> None:
    """Stop the round, in one line with the count and the first reason, when any match's games all errored."""
    for (game, spec), records in zip(pairs, played, strict=True):
        if all_errored(records):
            raise ArenaError(f"round {round_number} evaluation: {errored_note(records, f'{game.label} vs {spec}')}")


def round_games(eval_games: Sequence[GameEntry],
                trained: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[GameEntry, ...]:
    """The games a round is judged on: ``eval.games``, then each trained game whose id they lack, so a model
    trained on several games is evaluated on each; where both list a game, ``eval.games``' variant is kept (Kuhn
    is evaluated over 5 hands, as the tournaments rate it). A trained game is judged from its own start: a training
    start distribution (TicTacToe's ``opening``) is dropped."""
    listed = {game.game_id for game in eval_games}
    extra = [GameEntry(game_id, evaluation_variant(game_id, variant))
             for game_id, variant in trained if game_id not in listed]
    return (*eval_games, *extra)


def evaluate_round(snapshot: str | Path, pool_file: str | Path | None, round_number: int, config: RoundEvalConfig,
                   eval_config: EvalConfig, reserved: list[range], out_file: str | Path,
                   extra: Mapping[str, Any] | None = None,
                   games: Sequence[GameEntry] | None = None) -> dict[str, Any]:
    """Score ``snapshot`` against each fixed baseline on the first held-out deals, each played from both seats
    (``games`` games in all), on each of ``games`` (default ``eval.games``; see ``round_games``); write the metrics.

    ``extra`` (e.g. a ReST round's curriculum tiers and win-set size) is recorded alongside, never scored here.
    """
    games = tuple(games or eval_config.games)
    seeds = range(eval_config.seeds.start, eval_config.seeds.start + (config.games + 1) // 2)
    require(seeds.stop <= eval_config.seeds.stop, "roundeval.games", config.games,
            f"needs {len(seeds)} deals (each played from both seats) but eval.seeds has {len(eval_config.seeds)}")
    check_seed_ranges(seeds, reserved)
    pool = PlayerPool()
    seat = Seat(f"mlx:{Path(snapshot).as_posix()}", PlayerConfigs(mlx=sampling_config(config)))
    player = pool.player(seat)
    schedule = tuple(duplicate_schedule(seeds, config.games))
    result: dict[str, Any] = {"round": round_number, "snapshot": player.spec, "model_hash": player.pin()["model_hash"]}
    exact = [(game, metrics) for game in games
             if (metrics := exact_metrics(player, game.game_id, game.variant)) is not None]
    policy = next((m["policy"] for game, m in exact if game.game_id == "kuhn"), None)
    pairs = [(game, spec) for game in games for spec in config.opponents]
    # Negotiation is also played against the responder, for the value the snapshot leaves on the table.
    pairs += [(game, RESPONDER) for game in games
              if game.game_id == "negotiation" and RESPONDER not in config.opponents]
    played = play_matches([Match(game.game_id, (seat, Seat(spec)), schedule, game.variant) for game, spec in pairs],
                          pool, label=f"evaluate r{round_number}")
    _check_played(round_number, pairs, played)
    for (game, spec), records in zip(pairs, played, strict=True):
        row = _headline(summarize_match(records, player.spec, spec))
        if game.game_id == "kuhn":
            row.update(_kuhn_columns(records, player.spec, spec, policy))
        if game.game_id == "ultimatum":
            row.update(split_columns(records, player.spec, spec))
        if game.game_id == "negotiation":
            row.update(trade_columns(records, player.spec, spec))
            if spec == RESPONDER:
                row["value_left"] = value_left_measures(records, player.spec)
        result[f"{game.label}_vs_{spec}"] = row
    result.update(_exact_columns(exact))
    if seat.configs.mlx.think is not None:  # a thinking run's reasoning statistics (only then: others keep their bytes)
        from arena.train.thinking import reasoning_stats

        result["reasoning"] = reasoning_stats([record for records in played for record in records])
    if policy is not None:
        result["kuhn_policy"] = policy
        if pool_file is not None:
            average = pool_average_policy(load_pool(pool_file))
            result["pool_exploitability"] = round(exploitability(average), 6) if average else None
    result.update(extra or {})
    atomic_write_json(out_file, result)
    return result
