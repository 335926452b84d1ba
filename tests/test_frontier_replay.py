"""Recorded endpoint replies (``frontier.replies``): a tournament against an endpoint replays and verifies offline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fault_server import FaultServer, Reply, closed_port_url

from arena.core.config import load_params, load_section
from arena.core.errors import ArenaError
from arena.eval.config import EvalConfig, TournamentConfig
from arena.eval.runner import run_stage
from arena.eval.scorecards import CARD_SUFFIX
from arena.eval.verdict import MATCH, MISMATCH
from arena.eval.verify import verify_scorecard
from arena.players.build import make_player
from arena.players.config import FrontierConfig
from arena.players.frontier import FrontierError

GAMES = 12
# The second legal action, whatever they are: bet or call, so games run past the first move.
ALWAYS_SECOND = Reply(template="I will play {1}.")


def _params(spec: str, max_calls: int) -> str:
    return f"""\
eval:
  games: [{{id: kuhn, variant: {{}}}}]
  seeds: [9000000, {9000000 + GAMES}]
tournament:
  players: [random]
  frontier: ["{spec}"]
frontier:
  replies: recorded/replies
  max_calls: {max_calls}
  concurrency: 1
"""


def _build(project: Path) -> None:
    """The tournament stage as the pipeline runs it: params read from the project root, cards under scores/."""
    params = load_params(project / "params.yaml")
    shutil.rmtree(project / "scores", ignore_errors=True)
    run_stage(EvalConfig.from_dict(params["eval"]), load_section(TournamentConfig, "tournament", params), [],
              project / "scores", _configs(params))


def _configs(params):
    from arena.players.build import player_configs

    return player_configs(params, load_section(TournamentConfig, "tournament", params))


def _card(project: Path) -> Path:
    (path,) = (project / "scores").glob(f"*{CARD_SUFFIX}")
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A project whose tournament played an endpoint once, recording its replies; the endpoint is gone after."""
    project = tmp_path_factory.mktemp("replay") / "project"
    project.mkdir()
    with pytest.MonkeyPatch.context() as patch, FaultServer(ALWAYS_SECOND) as server:
        patch.setenv("ARENA_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "user-cache"))
        patch.chdir(project)
        spec = f"openai:m@{server.base_url}"
        (project / "params.yaml").write_text(_params(spec, max_calls=500))
        _build(project)
        calls = server.completions_seen()
    return project, spec, calls


@pytest.fixture
def project(recorded, tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "empty-user-cache"))
    copy = Path(shutil.copytree(recorded[0], tmp_path / "project"))
    monkeypatch.chdir(copy)
    return copy


def test_replies_go_to_the_named_directory_not_the_user_cache(recorded, tmp_path_factory):
    project, _, calls = recorded
    replies = sorted((project / "recorded" / "replies").rglob("*.json"))
    assert calls >= GAMES and len(replies) == calls  # one entry per distinct request, every one of them here
    assert not (tmp_path_factory.getbasetemp() / "user-cache" / "frontier").exists()


def test_a_card_against_a_gone_endpoint_verifies_from_the_recorded_replies(project):
    result = verify_scorecard(_card(project), repo=project)
    assert result.verdict == MATCH and result.ok, result.report()
    assert (result.games, result.identical_games) == (GAMES, GAMES)
    assert not any("no recorded reply" in note for note in result.notes)


def test_the_stage_rebuilt_offline_at_max_calls_0_gives_the_same_card(project, recorded):
    before = _card(project).read_bytes()
    params = project / "params.yaml"
    params.write_text(_params(recorded[1], max_calls=0))
    _build(project)  # no server runs: a replay checks no endpoint and calls nothing
    assert _card(project).read_bytes() == before


def test_a_missing_reply_is_a_mismatch_that_says_so(project):
    victim = sorted((project / "recorded" / "replies").rglob("*.json"))[3]
    victim.unlink()
    result = verify_scorecard(_card(project), repo=project)
    assert result.verdict == MISMATCH
    assert any("1 decisions had no recorded reply" in note for note in result.notes), result.notes


def test_only_a_player_that_may_call_checks_its_endpoint():
    gone = f"openai:m@{closed_port_url()}"
    assert make_player(gone, frontier_config=FrontierConfig(max_calls=0)).spec == gone
    with pytest.raises(FrontierError, match="cannot reach"):
        make_player(gone, frontier_config=FrontierConfig(max_calls=1, timeout_s=0.5))


@pytest.mark.parametrize("bad", ["", "   ", 3])
def test_a_bad_replies_value_is_named(bad):
    with pytest.raises(ArenaError, match="frontier.replies"):
        load_section(FrontierConfig, "frontier", {"frontier": {"replies": bad}})
