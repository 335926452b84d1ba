"""What a build learned, in words: a line per finished round, and `arena summary`'s closing text (<= 80 columns)."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

WIDTH = 80
# What each exact measure's numbers mean (arena.eval.exact), by the measure's dotted name's first part.
MEASURE_NOTES = {
    "exploitability": "lower is better, 0 = Nash",
    "loss_vs_minimax": "lower is better, 0 = never loses to minimax",
    "optimal_move_mass": "higher is better, 1 = always a minimax move",
    "winning_move_mass": "higher is better, 1 = always a winning move",
    "winning_move_mass_held_out": "higher is better, 1 = always a winning move",
}
# Games whose reward is chips (a game's chips: Kuhn's reward sums its hands, Leduc's default game is one hand).
CHIP_GAMES = ("kuhn", "leduc")
_SNAPSHOT = re.compile(r"^mlx:(?:.*/)?snapshots/r(\d+)/?$")
_BASE = re.compile(r"^mlx:(?:.*/)?models/base/?$")


def player_name(spec: str) -> str:
    """A player's short name: ``round N`` for a round's snapshot, ``base`` for the stock model, else the spec."""
    if match := _SNAPSHOT.match(spec):
        return f"round {match.group(1)}"
    if _BASE.match(spec):
        return "base"
    return spec


def measure_note(key: str) -> str:
    """How to read exact measure ``key`` (``loss_vs_minimax.seat0`` reads as ``loss_vs_minimax``)."""
    return MEASURE_NOTES.get(key.split(".")[0], "exact measure")


def headline_measure(metrics: Mapping[str, Any]) -> str | None:
    """The measure a game's curve shows: its exploitability where it has one, else its first number."""
    if metrics.get("exploitability") is not None:
        return "exploitability"
    return next((k for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)), None)


def _game_id(label: str) -> str:
    return label.split("[")[0]


def _versus(result: Mapping[str, Any], game: str, opponent: str = "oracle") -> str | None:
    """``game``'s result against ``opponent`` in words: chips (exact where known) for chip games, else win rate."""
    row = result.get(f"{game}_vs_{opponent}")
    if not isinstance(row, Mapping):
        return None
    if row.get("exact_chips_per_hand") is not None:
        return f"{row['exact_chips_per_hand']:+.3f} chips a hand vs {opponent} (exact)"
    if _game_id(game) in CHIP_GAMES:
        return f"{row['mean_reward']:+.3f} chips a game vs {opponent}"
    return f"win rate {row['win_rate']:.3f} vs {opponent}"


def round_line(result: Mapping[str, Any], seconds: float) -> str:
    """One line for a finished round: each game's exact headline measure, its result against the oracle (or the
    first opponent) and the round's wall time."""
    exact = result.get("exact") or {}
    games = list(dict.fromkeys([*exact, *(k.split("_vs_")[0] for k in result if "_vs_" in k)]))
    parts = []
    for game in games:
        bits = []
        key = headline_measure(exact.get(game) or {})
        if key is not None:
            bits.append(f"{key} {exact[game][key]:.3f}")
        opponents = [k.split("_vs_", 1)[1] for k in result if k.startswith(f"{game}_vs_")]
        opponent = "oracle" if "oracle" in opponents else (opponents[0] if opponents else None)
        if opponent is not None and (said := _versus(result, game, opponent)):
            bits.append(said)
        parts.append(f"{game} " + ", ".join(bits))
    minutes, rest = divmod(round(seconds), 60)
    return f"round {result.get('round')} done in {minutes}m{rest:02d}s: " + ("; ".join(parts) or "evaluated")


def _oracle_value(result: Mapping[str, Any], game: str) -> float | None:
    """``game``'s number against the oracle: exact chips a hand (Kuhn), else mean chips (or reward) a game."""
    row = result.get(f"{game}_vs_oracle")
    if not isinstance(row, Mapping):
        return None
    return row["exact_chips_per_hand"] if row.get("exact_chips_per_hand") is not None else row.get("mean_reward")


def round_headline(result: Mapping[str, Any]) -> dict[str, Any]:
    """A round's few numbers for ``dvc metrics show``, one short key a game: ``exact`` (its headline exact
    measure) and ``oracle`` (chips against the oracle); an eval without games (loop: lsp) keeps its top-level
    numbers. The whole eval stays in ``artifacts/evals/r<N>.json``."""
    exact = result.get("exact") or {}
    games = list(dict.fromkeys([*exact, *(k.split("_vs_")[0] for k in result if k.endswith("_vs_oracle"))]))
    out: dict[str, Any] = {}
    for game in games:
        key = headline_measure(exact.get(game) or {})
        values = {"exact": exact[game][key] if key else None, "oracle": _oracle_value(result, game)}
        name = _game_id(game) if _game_id(game) not in out else game  # a second variant of a game: its label
        out[name] = {k: v for k, v in values.items() if v is not None}
    if not out:
        out = {k: v for k, v in result.items()
               if isinstance(v, int | float) and not isinstance(v, bool) and k != "round"}
    out.update(reasoning_headline(result))
    return out


# A thinking round's reasoning statistics in its headline: (eval key, headline key) pairs, and the short names kept.
REASONING_KEYS = (("reasoning", "reasoning"), ("rollout_reasoning", "rollout_reasoning"))
REASONING_SHORT = {"reasoning_tokens_mean": "tokens_mean", "reasoning_tokens_std": "tokens_std",
                   "last_named_differs_rate": "differs", "names_a_move_rate": "names_a_move"}


def reasoning_headline(result: Mapping[str, Any]) -> dict[str, Any]:
    """A thinking round's reasoning length (mean, spread) and how often the last move its reasoning names differs
    from the move played, in the round eval's games (``reasoning``) and its rollouts (``rollout_reasoning``);
    nothing for a round that does not think."""
    out = {}
    for key, name in REASONING_KEYS:
        stats = result.get(key) or {}
        short = {REASONING_SHORT[k]: v for k, v in stats.items() if k in REASONING_SHORT and v is not None}
        if short:
            out[name] = short
    return out


def load_evals(evals_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``r<N>.json`` eval file under ``evals_dir``, by round."""
    files = [p for p in Path(evals_dir).glob("r*.json") if p.stem[1:].isdigit()]
    return sorted((json.loads(p.read_text()) for p in files), key=lambda e: e["round"])


def curves(evals: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, list[tuple[int, float]]]]:
    """Per game, its headline exact measure and the (round, value) points of every round that has it."""
    out: dict[str, tuple[str, list[tuple[int, float]]]] = {}
    for evaluation in evals:
        for game, metrics in (evaluation.get("exact") or {}).items():
            key = out[game][0] if game in out else headline_measure(metrics)
            if key is not None and metrics.get(key) is not None:
                out.setdefault(game, (key, []))[1].append((evaluation["round"], float(metrics[key])))
    return out


def _better(key: str, a: float, b: float) -> bool:
    """Whether ``a`` is better than ``b`` under measure ``key``."""
    return a > b if measure_note(key).startswith("higher") else a < b


def curve_facts(key: str, points: Sequence[tuple[int, float]]) -> dict[str, Any]:
    """A curve's first, last and best points, and whether the last is worse than the best earlier round."""
    best = points[0]
    for point in points[1:]:
        if _better(key, point[1], best[1]):
            best = point
    first, last = points[0], points[-1]
    return {"first": first, "last": last, "best": best,
            "regressed": best[0] != last[0] and _better(key, best[1], last[1])}


def curve_sentence(game: str, key: str, points: Sequence[tuple[int, float]]) -> str:
    """``game``'s curve in one sentence, flagging a last round worse than its best earlier one."""
    facts = curve_facts(key, points)
    (r0, v0), (r1, v1), (rb, vb) = facts["first"], facts["last"], facts["best"]
    text = f"{game} {key} ({measure_note(key)}): round {r0} {v0:.3f} -> round {r1} {v1:.3f}"
    if facts["regressed"]:
        return text + f"; WORSE than its best, round {rb} ({vb:.3f} -> {v1:.3f})"
    return text + " (its best)"


def _pair(pairs: Sequence[Mapping[str, Any]], game: str, a: str, b: str) -> Mapping[str, Any] | None:
    """The tournament's pair of ``a`` and ``b`` on ``game``, oriented so that ``a`` is p0."""
    for row in pairs:
        if row.get("game") != game or {row.get("p0"), row.get("p1")} != {a, b}:
            continue
        if row["p0"] == a:
            return row
        rate = row["p0_win_rate"]
        chips = row.get("mean_chips_per_round")
        return {**row, "p0": a, "p1": b,
                "p0_win_rate": {"rate": 1 - rate["rate"], "low": 1 - rate["high"], "high": 1 - rate["low"]},
                "mean_chips_per_round": {"p0": chips["p1"], "p1": chips["p0"]} if chips else None}
    return None


def _pair_words(row: Mapping[str, Any]) -> str:
    rate = row["p0_win_rate"]
    chips = row.get("mean_chips_per_round")
    won = f"wins {rate['rate']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}]"
    head = f"{chips['p0']:+.3f} chips a hand, " if chips else ""
    return f"{player_name(row['p0'])} vs {player_name(row['p1'])}: {head}{won}"


def published_sentences(leaderboard: Mapping[str, Any], evals: Sequence[Mapping[str, Any]]) -> list[str]:
    """The published model (the last round's snapshot) against the stock model and the oracle, per game."""
    ranked = [row["player"] for row in leaderboard.get("ranking", [])]
    rounds = sorted((int(m.group(1)), spec) for spec in ranked if (m := _SNAPSHOT.match(spec)))
    base = next((spec for spec in ranked if _BASE.match(spec)), None)
    if not rounds:
        return []
    published = rounds[-1][1]
    lines = []
    for game in leaderboard.get("games", []):
        words = [_pair_words(row) for other in (base, "oracle")
                 if other and (row := _pair(leaderboard.get("pairs", []), game, published, other))]
        if base and (row := _pair(leaderboard.get("pairs", []), game, base, "oracle")):
            words.append(_pair_words(row))
        if words:
            lines.append(f"Tournament, {game} ({player_name(published)} is published): " + "; ".join(words) + ".")
    chips = [(e["round"], row["exact_chips_per_hand"]) for e in evals
             for key, row in e.items() if key.endswith("_vs_oracle") and isinstance(row, Mapping)
             and row.get("exact_chips_per_hand") is not None]
    if len(chips) >= 2:
        (ra, ca), (rb, cb) = chips[0], chips[-1]
        lines.append(f"Exact chips a hand against the oracle (0 = as good as Nash play): round {ra} {ca:+.3f}, "
                     f"round {rb} {cb:+.3f}.")
    return lines


def summary_text(evals: Sequence[Mapping[str, Any]], leaderboard: Mapping[str, Any] | None,
                 width: int = WIDTH) -> str:
    """What the build learned, wrapped to ``width`` columns: each game's exact curve first -> last (and its best),
    then the published model against the stock model and the oracle."""
    lines = [f"What the build learned ({len(evals)} evaluated rounds):"]
    for game, (key, points) in curves(evals).items():
        lines += textwrap.wrap(curve_sentence(game, key, points), width, initial_indent="- ",
                               subsequent_indent="  ")
    for sentence in published_sentences(leaderboard or {}, evals):
        lines += textwrap.wrap(sentence, width, initial_indent="- ", subsequent_indent="  ")
    if leaderboard is None:
        lines.append("- no tournament leaderboard yet (artifacts/scores/leaderboard.json)")
    lines.append("More: arena leaderboard, artifacts/report/index.html, docs/reading-results.md")
    return "\n".join(lines)
