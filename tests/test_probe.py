"""The reward-audit gate: passes on every game's real rewards, fails when the reward is deliberately broken."""

import pytest

from arena.games.base import Game
from arena.play.config import ProbeConfig
from arena.play.probe import run_probe


def _failed(checks):
    return [c for c in checks if not c.passed]


def test_probe_passes_on_nim_and_tictactoe():
    checks = run_probe(ProbeConfig(games=("nim", "tictactoe"), games_per_check=100))
    assert not _failed(checks), _failed(checks)
    assert {c.name for c in checks} >= {"staller vs random", "spammer vs random", "oracle vs random",
                                        "random vs random"}


def test_probe_fails_when_forfeits_are_rewarded(monkeypatch):
    # A broken reward: whoever forfeits by invalid moves is paid as the winner.
    def rewards_forfeit(self, ta_rewards, forfeit_by):
        if forfeit_by is None:
            rewards = (ta_rewards[0], ta_rewards[1])
        else:
            rewards = (1.0, -1.0) if forfeit_by == 0 else (-1.0, 1.0)
        return rewards, (rewards,)

    monkeypatch.setattr(Game, "_rewards", rewards_forfeit)
    failed = _failed(run_probe(ProbeConfig(games=("nim",), games_per_check=40)))
    assert {c.name for c in failed} == {"staller vs random", "spammer vs random"}
    assert all("40 wins / 40" in c.measured for c in failed)


@pytest.mark.slow
def test_probe_passes_on_every_game_at_default_size():
    checks = run_probe(ProbeConfig())
    assert not _failed(checks), _failed(checks)
    assert {c.game for c in checks} == {"kuhn", "tictactoe", "liarsdice", "nim"}
    assert any(c.name == "always bet/call vs oracle" for c in checks)


def test_probe_config_rejects_unknown_game():
    from arena.core.config import ConfigError

    with pytest.raises(ConfigError, match="probe.games = 'chess' is invalid"):
        ProbeConfig(games=("chess",))
