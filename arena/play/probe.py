"""The reward-audit gate: degenerate policies must not score, the oracle must, and random play must be fair."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arena.games.base import Observation
from arena.play.config import ProbeConfig
from arena.play.match import duplicate_schedule, play_match
from arena.play.stats import CHIP_GAMES, summarize_match
from arena.players.base import Decision, Player
from arena.players.scripted import make_scripted

# play_match's signature: (game, players, schedule, *, progress) -> one record per scheduled game.
PlayFn = Callable[..., list[dict]]


@dataclass(frozen=True)
class Check:
    """One audited property: what was measured, what it had to satisfy, and whether it did."""

    game: str
    name: str
    measured: str
    requirement: str
    passed: bool


class AggressivePlayer(Player):
    """Always bets (Leduc: raises) or calls: wins chips in TextArena's unpatched Kuhn, where betting costs nothing."""

    spec = "aggressive"

    def act(self, observation: Observation) -> Decision:
        for action in ("[bet]", "[raise]", "[call]"):
            if action in observation.legal_actions:
                return Decision(action)
        return Decision(observation.legal_actions[0])

    def pin(self) -> dict[str, str]:
        return {"kind": "scripted", "name": self.spec}


def _mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its normal-approximation 95% interval."""
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / max(n - 1, 1)
    half = 1.96 * math.sqrt(var / n)
    return mean, mean - half, mean + half


def _rate_text(rate: dict[str, float]) -> str:
    return f"win rate {rate['rate']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}]"


def _chips_per_round(records: list[dict], seat_of: str) -> list[float]:
    """Per round chips won by the match's first player (``seat_of`` = its spec)."""
    chips = []
    for record in records:
        if record["errored"]:
            continue
        seat = record["players"].index(seat_of)
        chips.extend(r[seat] for r in record["round_rewards"])
    return chips


def audit_game(game: str, config: ProbeConfig, progress: bool = False, play: PlayFn = play_match) -> list[Check]:
    """All checks for one game, each from its own match on fixed seeds.

    ``play`` plays the matches: arena's runner, or ``arena.play.external.play_external`` to audit the game the
    way an exported verifiers environment plays it (prompt, reply parsing, re-prompts).
    """
    n = config.games_for(game)
    seeds = list(range(config.seed, config.seed + (n + 1) // 2))
    schedule = duplicate_schedule(seeds, n)
    if game == "negotiation":
        return audit_negotiation(schedule, progress, play)
    random_player = make_scripted("random")

    def match(player: Player) -> tuple[list[dict], dict]:
        records = play(game, (player, random_player), schedule, progress=progress)
        return records, summarize_match(records, player.spec, random_player.spec)

    checks = []
    for name in ("staller", "spammer"):
        _, summary = match(make_scripted(name))
        wins = summary["wins"]["p0"]
        checks.append(Check(game, f"{name} vs random", f"{wins} wins / {summary['games']}", "0 wins", wins == 0))
    oracle_records, summary = match(make_scripted("oracle"))
    if game in CHIP_GAMES:
        # A Nash policy maximises chips, not hands won (it folds weak cards), so poker is judged in chips.
        mean, low, high = _mean_ci(_chips_per_round(oracle_records, "oracle"))
        checks.append(Check(game, "oracle vs random", f"chips/round {mean:+.3f} [{low:+.3f}, {high:+.3f}]",
                            "95% lower bound > 0", low > 0))
    else:
        rate = summary["p0_win_rate"]
        checks.append(Check(game, "oracle vs random", _rate_text(rate), "Wilson lower bound > 0.5", rate["low"] > 0.5))
    mirror = make_scripted("random")
    mirror.spec = "random-b"
    records = play(game, (random_player, mirror), schedule, progress=progress)
    rate = summarize_match(records, random_player.spec, mirror.spec)["p0_win_rate"]
    checks.append(Check(game, "random vs random", _rate_text(rate),
                        "interval contains the seat-fair 0.5", rate["low"] <= 0.5 <= rate["high"]))
    if game in CHIP_GAMES:
        aggressive = AggressivePlayer()
        records = play(game, (aggressive, make_scripted("oracle")), schedule, progress=progress)
        mean, low, high = _mean_ci(_chips_per_round(records, aggressive.spec))
        name = "always bet/call vs oracle" if game == "kuhn" else "always raise/call vs oracle"
        checks.append(Check(game, name, f"chips/round {mean:+.3f} [{low:+.3f}, {high:+.3f}]",
                            "no gain: 95% lower bound <= 0", low <= 0))
    return checks


def audit_negotiation(schedule: Sequence, progress: bool = False, play: PlayFn = play_match) -> list[Check]:
    """Negotiation's checks: invalid text, never trading, accepting everything and spamming offers must not score,
    against the greedy trader (which exploits a pliant opponent) nor against random play; the greedy trader must
    beat random play (the reward pays for sensible trading), and random play must be seat-fair."""
    game = "negotiation"
    greedy, random_player = make_scripted("greedy"), make_scripted("random")

    def match(player: Player, opponent: Player) -> tuple[list[dict], dict]:
        records = play(game, (player, opponent), schedule, progress=progress)
        return records, summarize_match(records, player.spec, opponent.spec)

    checks = []
    for name in ("staller", "spammer", "never"):
        _, summary = match(make_scripted(name), random_player if name != "never" else greedy)
        wins = summary["wins"]["p0"]
        opponent = "greedy" if name == "never" else "random"
        checks.append(Check(game, f"{name} vs {opponent}", f"{wins} wins / {summary['games']}", "0 wins", wins == 0))
    for name in ("accept-all", "offer-spam"):
        records, _ = match(make_scripted(name), greedy)
        mean, low, high = _mean_ci(_rewards_of(records, name))
        checks.append(Check(game, f"{name} vs greedy", f"mean reward {mean:+.3f} [{low:+.3f}, {high:+.3f}]",
                            "does not score: 95% upper bound < 0", high < 0))
        _, summary = match(make_scripted(name), random_player)
        rate = summary["p0_win_rate"]
        checks.append(Check(game, f"{name} vs random", _rate_text(rate), "no edge: Wilson lower bound <= 0.5",
                            rate["low"] <= 0.5))
    _, summary = match(greedy, random_player)
    rate = summary["p0_win_rate"]
    checks.append(Check(game, "greedy vs random", _rate_text(rate), "Wilson lower bound > 0.5", rate["low"] > 0.5))
    mirror = make_scripted("random")
    mirror.spec = "random-b"
    _, summary = match(random_player, mirror)
    rate = summary["p0_win_rate"]
    checks.append(Check(game, "random vs random", _rate_text(rate),
                        "interval contains the seat-fair 0.5", rate["low"] <= 0.5 <= rate["high"]))
    return checks


def _rewards_of(records: list[dict], spec: str) -> list[float]:
    """The rewards ``spec`` won in each completed game."""
    return [r["rewards"][r["players"].index(spec)] for r in records if not r["errored"]]


def run_probe(config: ProbeConfig, progress: bool = False, play: PlayFn = play_match) -> list[Check]:
    """Audit every configured game; the gate passes when every check passes."""
    return [check for game in config.games for check in audit_game(game, config, progress, play)]


def print_checks(checks: Sequence[Check]) -> None:
    """The audit as a table on stdout, then each violation named."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="reward audit")
    for column in ("game", "check", "measured", "requirement", "result"):
        table.add_column(column)
    for check in checks:
        table.add_row(check.game, check.name, check.measured, check.requirement, "pass" if check.passed else "FAIL")
    console = Console()
    console.print(table)
    for check in checks:
        if not check.passed:
            console.print(f"VIOLATION {check.game}: {check.name}: {check.measured} (needs {check.requirement})")
