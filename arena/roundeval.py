"""eval@r: a snapshot against fixed external baselines on held-out seeds, plus exact Kuhn exploitability."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.artifacts import atomic_write_json
from arena.config import require
from arena.match import Slot, play_match
from arena.players import make_player
from arena.players.mlx import MLXPlayer, MLXPlayerConfig
from arena.players.scripted import SCRIPTED
from arena.pool import load_pool, pool_average_policy
from arena.stats import summarize_match
from arena.tournament import EvalConfig, check_seed_ranges


@dataclass(frozen=True)
class RoundEvalConfig:
    """params.yaml ``roundeval:`` section."""

    opponents: tuple[str, ...] = ("random", "oracle")
    games: int = 400
    view: str = "compact"
    temperature: float = 1.0

    def __post_init__(self) -> None:
        for spec in self.opponents:
            require(spec in SCRIPTED, "roundeval.opponents", spec,
                    "fixed external baselines must be scripted: " + ", ".join(SCRIPTED))
        require(self.games >= 2, "roundeval.games", self.games, "must be >= 2")
        MLXPlayerConfig(view=self.view, temperature=self.temperature)


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
        from arena.kuhn import exploitability
        from arena.kuhn_model import model_policy

        policy = model_policy(player)
        result["exploitability"] = round(exploitability(policy), 6)
        result["kuhn_policy"] = policy
        if pool_file is not None:
            average = pool_average_policy(load_pool(pool_file))
            result["pool_exploitability"] = round(exploitability(average), 6) if average else None
    result.update(extra or {})
    atomic_write_json(out_file, result)
    return result
