"""The verdict of `arena verify`: what differs from the card (Difference), the result, and the comparisons behind it.

MATCH: every re-played game, the summary and the card are identical. MATCH WITHIN INTERVAL: the platform
tuple differs, so byte identity is not promised, and the re-derived win rate lies in the card's own 95%
Wilson interval. MISMATCH: the first difference found. A code difference (the card's producing code is
not the code here) never decides the verdict: it is reported, and named as the likely cause of a MISMATCH.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MATCH = "MATCH"
MATCH_WITHIN_INTERVAL = "MATCH WITHIN INTERVAL"
MISMATCH = "MISMATCH"

# Per-game fields compared in order; the first one that differs names the difference.
_GAME_FIELDS = ("errored", "transcript_digest", "rewards", "round_rewards", "invalid_moves")
# Pin fields compared before ``versions`` (which is the platform tuple and compared field by field).
_PIN_ORDER = ("kind", "name", "model_hash", "quant", "code_hash", "config_hash")
# Card fields compared on their own before the re-derived card is compared field by field.
_COMPARED_APART = ("digest", "code")


@dataclass(frozen=True)
class Difference:
    """One thing that is not as the card says: what (a dotted name), the card's value and the value found here."""

    name: str
    card: Any
    here: Any
    detail: str = ""

    def __str__(self) -> str:
        text = f"{self.name}: card {_show(self.card)}, here {_show(self.here)}"
        return f"{text} ({self.detail})" if self.detail else text


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


@dataclass
class VerifyResult:
    """The verdict on one card: MATCH, MATCH WITHIN INTERVAL (platform tuple differs) or MISMATCH.

    ``differences`` holds the first difference that decides a MISMATCH (verification stops there);
    ``tuple_differences`` the platform-tuple fields that differ from the card's; ``code_differences``
    how the card's producing code differs from the code here; ``summary`` the re-derived summary when
    the games were re-played.
    """

    card: str
    title: str = ""
    verdict: str = MISMATCH
    differences: list[Difference] = field(default_factory=list)
    tuple_differences: list[Difference] = field(default_factory=list)
    code_differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    games: int = 0
    identical_games: int = 0
    card_summary: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.verdict in (MATCH, MATCH_WITHIN_INTERVAL)

    @property
    def first_difference(self) -> Difference | None:
        return self.differences[0] if self.differences else None

    def report(self) -> str:
        """What ``arena verify`` prints: the verdict line, the first difference or the evidence, then notes."""
        lines = [f"{self.verdict} {self.card}" + (f" ({self.title})" if self.title else "")]
        if self.first_difference is not None:
            lines.append(f"  first difference: {self.first_difference}")
        for diff in self.tuple_differences:
            lines.append(f"  platform tuple differs: {diff}")
        for diff in self.code_differences:
            lines.append(f"  code differs: {diff}")
        if self.verdict == MATCH_WITHIN_INTERVAL:
            lines.append("  byte identity is not expected across platform tuples: compared within the card's 95% "
                         "Wilson interval")
        if self.games:
            lines.append(f"  re-played {self.games} games: {self.identical_games} identical to the card "
                         "(transcript digest, rewards, invalid moves)")
        if self.summary is not None and self.card_summary is not None:
            card_rate, here_rate = self.card_summary["p0_win_rate"], self.summary["p0_win_rate"]
            lines.append(f"  p0 win rate: card {_rate(card_rate)}, re-derived {_rate(here_rate)}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)

    def _fail(self, difference: Difference) -> VerifyResult:
        self.verdict = MISMATCH
        self.differences.append(difference)
        return self


def _rate(rate: Mapping[str, Any]) -> str:
    if rate.get("rate") is None:
        return "none (no completed game)"
    return f"{rate['rate']:.4f} [{rate['low']:.4f}, {rate['high']:.4f}]"


def note_code_difference(result: VerifyResult) -> VerifyResult:
    """Say what a code difference means for the verdict reached on the re-played games (which it never changes)."""
    if not result.code_differences or not result.games:
        return result
    named = ", ".join(diff.name for diff in result.code_differences)
    if result.ok:
        result.notes.append(f"the card's producing code differs from the code here ({named}), "
                            "yet the re-played games reproduce the card: the code change did not change the result")
    else:
        result.notes.append(f"likely cause: the card's producing code differs from the code here ({named}); "
                            "re-run verify at the commit that made the card to tell the code from the rest")
    return result


def compare_pins(who: str, card_pin: Mapping[str, Any], here_pin: Mapping[str, Any],
                 config_source: str) -> tuple[list[Difference], list[Difference]]:
    """(hard differences, platform-tuple differences) between two pins, in the order they are reported."""
    hard = []
    keys = [k for k in _PIN_ORDER if k in card_pin or k in here_pin]
    keys += sorted((card_pin.keys() | here_pin.keys()) - set(_PIN_ORDER) - {"versions"})
    for key in keys:
        if card_pin.get(key) != here_pin.get(key):
            detail = f"player config from {config_source}" if key == "config_hash" else ""
            hard.append(Difference(f"{who}: pin.{key}", card_pin.get(key), here_pin.get(key), detail))
    card_versions, here_versions = card_pin.get("versions") or {}, here_pin.get("versions") or {}
    soft = [Difference(f"{who}: pin.versions.{key}", card_versions.get(key), here_versions.get(key))
            for key in sorted(card_versions.keys() | here_versions.keys())
            if card_versions.get(key) != here_versions.get(key)]
    return hard, soft


def _first_game_difference(card_outcomes: Sequence[Mapping[str, Any]],
                           here_outcomes: Sequence[Mapping[str, Any]]) -> tuple[Difference | None, int]:
    """The first differing game field (in schedule order), and how many games are identical."""
    first, identical = None, 0
    for k, (theirs, ours) in enumerate(zip(card_outcomes, here_outcomes, strict=True)):
        differing = [key for key in _GAME_FIELDS if theirs.get(key) != ours.get(key)]
        if not differing:
            identical += 1
        elif first is None:
            key = differing[0]
            first = Difference(f"outcomes[{k}] (seed {theirs['seed']}).{key}", theirs.get(key), ours.get(key))
    return first, identical


def _first_summary_difference(card: Mapping[str, Any], here: Mapping[str, Any], prefix: str = "summary") -> Difference:
    for key in sorted(card.keys() | here.keys()):
        if card.get(key) != here.get(key):
            if isinstance(card.get(key), Mapping) and isinstance(here.get(key), Mapping):
                return _first_summary_difference(card[key], here[key], f"{prefix}.{key}")
            return Difference(f"{prefix}.{key}", card.get(key), here.get(key))
    return Difference(prefix, card, here)


def compare_replay(card: Mapping[str, Any], here: Mapping[str, Any], result: VerifyResult) -> VerifyResult:
    """Byte mode: every game, the summary and finally the whole card (but its code) must be identical."""
    first, result.identical_games = _first_game_difference(card["outcomes"], here["outcomes"])
    if first is not None:
        return result._fail(first)
    if card["summary"] != here["summary"]:
        return result._fail(_first_summary_difference(card["summary"], here["summary"]))
    # The code is compared on its own (a difference is reported, never decisive); the rest must be identical.
    keys = sorted((card.keys() | here.keys()) - set(_COMPARED_APART))
    differing = [key for key in keys if card.get(key) != here.get(key)]
    if differing:
        key = differing[0]
        return result._fail(Difference(f"card.{key}", card.get(key), here.get(key), "the re-derived card differs"))
    result.verdict = MATCH
    return result


def compare_interval(card: Mapping[str, Any], here: Mapping[str, Any], result: VerifyResult) -> VerifyResult:
    """Platform tuple differs: the re-derived win rate must lie in the card's own 95% Wilson interval."""
    _, result.identical_games = _first_game_difference(card["outcomes"], here["outcomes"])
    theirs, ours = card["summary"]["p0_win_rate"], here["summary"]["p0_win_rate"]
    if theirs["rate"] is None or ours["rate"] is None:
        return result._fail(Difference("summary.p0_win_rate.rate", theirs["rate"], ours["rate"],
                                       "no completed game to compare"))
    if not theirs["low"] <= ours["rate"] <= theirs["high"]:
        fields_named = ", ".join(diff.name for diff in result.tuple_differences)
        return result._fail(Difference(
            "summary.p0_win_rate.rate", theirs["rate"], ours["rate"],
            f"outside the card's 95% Wilson interval [{theirs['low']:.4f}, {theirs['high']:.4f}]; "
            f"the platform tuple differs in {fields_named}"))
    result.verdict = MATCH_WITHIN_INTERVAL
    return result
