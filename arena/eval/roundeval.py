"""eval@r: a snapshot against fixed external baselines on held-out seeds, plus exact Kuhn exploitability."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.core.config import require
from arena.core.seeds import check_seed_ranges
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.play.match import Slot, play_match
from arena.play.stats import summarize_match
from arena.players.build import make_player
from arena.players.config import MLXPlayerConfig
from arena.players.mlx import MLXPlayer
from arena.train.pool import load_pool, pool_average_policy


def _headline(summary: dict[str, Any]) -> dict[str, Any]:
    rate = summary["p0_win_rate"]
    row = {"win_rate": rate["rate"], "low": rate["low"], "high": rate["high"],
           "mean_reward": summary["mean_reward"]["p0"], "games": summary["games"], "errored": summary["errored"]}
    if "mean_chips_per_round" in summary:
        row["chips_per_round"] = summary["mean_chips_per_round"]["p0"]
    return row


def evaluate_round(snapshot: str | Path, pool_file: str | Path | None, round_number: int, config: RoundEvalConfig,
                   eval_config: EvalConfig, reserved: list[range], out_file: str | Path,
                   extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Score ``snapshot`` against each fixed baseline on the first ``games`` held-out seeds; write the metrics.

    ``extra`` (e.g. a ReST round's curriculum tiers and win-set size) is recorded alongside, never scored here.
    """
    seeds = range(eval_config.seeds.start, eval_config.seeds.start + config.games)
    require(seeds.stop <= eval_config.seeds.stop, "roundeval.games", config.games,
            f"must fit in eval.seeds ({len(eval_config.seeds)} seeds)")
    check_seed_ranges(seeds, reserved)
    player = MLXPlayer(snapshot, MLXPlayerConfig(view=config.view, temperature=config.temperature))
    schedule = [Slot(seed, k % 2) for k, seed in enumerate(seeds)]
    result: dict[str, Any] = {"round": round_number, "snapshot": player.spec, "model_hash": player.pin()["model_hash"]}
    for game in eval_config.games:
        for spec in config.opponents:
            records = play_match(game.game_id, (player, make_player(spec)), schedule, variant=game.variant)
            result[f"{game.label}_vs_{spec}"] = _headline(summarize_match(records, player.spec, spec))
    if any(game.game_id == "kuhn" for game in eval_config.games):
        from arena.games.kuhn_theory import exploitability
        from arena.players.policy import model_policy

        policy = model_policy(player)
        result["exploitability"] = round(exploitability(policy), 6)
        result["kuhn_policy"] = policy
        if pool_file is not None:
            average = pool_average_policy(load_pool(pool_file))
            result["pool_exploitability"] = round(exploitability(average), 6) if average else None
    result.update(extra or {})
    atomic_write_json(out_file, result)
    return result
