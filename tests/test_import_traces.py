"""`arena import-traces` on a real verifiers run's traces: replayed, scored, verified; every kind of tampering rejected.

``data/verifiers_kuhn_traces.jsonl`` is the ``traces.jsonl`` that verifiers 0.3.1's own eval wrote for
``eval arena-kuhn -n 4`` with scripted policies behind an OpenAI-compatible server (``policy_server.py``):
``player_a`` = ``random``, ``player_b`` = ``first``. No verifiers install is needed to read it.
"""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.eval.config import EvalConfig
from arena.eval.imported import TraceImportError, import_records, import_traces
from arena.eval.scorecards import CARD_SUFFIX, card_digest, load_archive
from arena.eval.verdict import MATCH, MISMATCH
from arena.eval.verify import verify_scorecard
from arena.play.stats import summarize_outcomes

TRACES = Path(__file__).parent / "data" / "verifiers_kuhn_traces.jsonl"
PARAMS = "eval:\n  games:\n    - {id: kuhn, variant: {}}\n  seeds: [0, 4]\n"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "params.yaml").write_text(PARAMS)
    return tmp_path


def _episodes() -> list[dict]:
    return [json.loads(line) for line in TRACES.read_text().splitlines()]


def _write(path: Path, episodes: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    return path


def _import(repo: Path, traces: Path) -> Path:
    out = repo / "cards"
    import_traces([traces], out, params=repo / "params.yaml")
    (card,) = sorted(out.glob(f"*{CARD_SUFFIX}"))
    return card


def test_every_game_replays_to_its_digest_and_reward():
    records = import_records([TRACES])
    assert sorted(r["seed"] for r in records) == [0, 1, 2, 3]
    for record in records:
        assert record["transcript_digest"] and not record["errored"]
        # Each role's verifiers reward is its seat's chips, and the seats swap every task.
        a_seat = record["first_seat"]
        assert a_seat == record["seed"] % 2
        assert record["claimed_rewards"]["player_a"] == record["rewards"][a_seat]
        assert record["claimed_rewards"]["player_b"] == record["rewards"][1 - a_seat]
        assert sum(record["rewards"]) == 0.0  # poker is zero-sum in chips


def test_import_writes_cards_and_ratings_that_arena_verify_accepts(repo):
    card_path = _import(repo, TRACES)
    card = json.loads(card_path.read_text())
    assert [p["pin"]["kind"] for p in card["players"]] == ["imported", "imported"]
    assert card["players"][0]["spec"].startswith("openai:random@http://127.0.0.1:")
    assert all(outcome["actions"] for outcome in card["outcomes"])
    assert load_archive([repo / "cards"]) == [card]
    board = json.loads((repo / "cards" / "leaderboard.json").read_text())
    assert board["cards"] == [card["digest"]] and len(board["ranking"]) == 2
    result = verify_scorecard(card_path, repo=repo)
    assert result.verdict == MATCH, result.report()
    assert result.games == result.identical_games == 4


def test_cli_import_then_verify(repo, monkeypatch):
    monkeypatch.chdir(repo)
    runner = CliRunner()
    done = runner.invoke(main, ["import-traces", str(TRACES), "--out", "cards"])
    assert done.exit_code == 0, done.output
    assert "1 score card(s)" in done.output
    (card,) = sorted((repo / "cards").glob(f"*{CARD_SUFFIX}"))
    verified = runner.invoke(main, ["verify", str(card)])
    assert verified.exit_code == 0 and verified.output.startswith(MATCH), verified.output


def test_an_edited_action_is_rejected_naming_game_and_digests(tmp_path):
    episodes = _episodes()
    claimed = None
    for trace in episodes[0]["traces"]:
        info = trace["info"]["arena"]
        info["actions"][0] = "[bet]" if info["actions"][0] != "[bet]" else "[check]"
        claimed = info["transcript_digest"]
    with pytest.raises(TraceImportError, match=rf"kuhn seed {episodes[0]['task']['data']['seed']}.*{claimed}"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])


def test_an_edited_reward_is_rejected(tmp_path):
    episodes = _episodes()
    trace = episodes[0]["traces"][0]
    trace["rewards"]["outcome"]["score"] += 1.0
    with pytest.raises(TraceImportError, match=r"reward .* is not its replayed outcome"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])


def test_the_two_roles_must_record_the_same_game(tmp_path):
    episodes = _episodes()
    episodes[0]["traces"][0]["info"]["arena"]["rewards"] = [5.0, -5.0]
    with pytest.raises(TraceImportError, match="record different games"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])


def test_consistently_forged_rewards_fail_on_replay(tmp_path):
    """Edit both roles' records and rewards together: the actions still replay to the true outcome."""
    episodes = _episodes()
    for trace in episodes[0]["traces"]:
        info = trace["info"]["arena"]
        info["rewards"] = [-r for r in info["rewards"]]
        info["round_rewards"] = [[-r for r in pair] for pair in info["round_rewards"]]
        trace["rewards"]["outcome"]["score"] = -trace["rewards"]["outcome"]["score"]
    with pytest.raises(TraceImportError, match=r"rewards = .* in the trace, .* on replay"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])


def test_a_tampered_card_is_a_mismatch(repo):
    card_path = _import(repo, TRACES)
    card = json.loads(card_path.read_text())
    # Forge a consistent card: flip one game's chips, recompute the summary and the digest.
    outcome = card["outcomes"][0]
    outcome["rewards"] = [-r for r in outcome["rewards"]]
    outcome["round_rewards"] = [[-r for r in pair] for pair in outcome["round_rewards"]]
    card["summary"] = summarize_outcomes(card["game_id"], card["outcomes"], *(p["spec"] for p in card["players"]))
    card["digest"] = card_digest(card)
    card_path.write_text(json.dumps(card))
    result = verify_scorecard(card_path, repo=repo)
    assert result.verdict == MISMATCH
    assert result.first_difference.name == "outcomes[0] (seed 0).rewards", result.report()


def test_seeds_must_be_the_eval_sections(tmp_path):
    (tmp_path / "params.yaml").write_text(PARAMS.replace("[0, 4]", "[9000000, 9000004]"))
    with pytest.raises(TraceImportError, match="--env.taskset.seed-start 9000000 -n 4"):
        import_traces([TRACES], tmp_path / "cards", params=tmp_path / "params.yaml")


def test_self_play_makes_no_card(tmp_path, repo):
    episodes = _episodes()
    for episode in episodes:
        for trace in episode["traces"]:
            trace["info"]["arena"]["model"] = "same"
    with pytest.raises(TraceImportError, match="self-play makes no score card"):
        import_traces([_write(tmp_path / "traces.jsonl", episodes)], repo / "cards", params=repo / "params.yaml")


def test_not_arena_traces_say_so(tmp_path):
    episodes = _episodes()
    for trace in episodes[0]["traces"]:
        del trace["info"]["arena"]
    with pytest.raises(TraceImportError, match="not one of arena's environments"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])
    with pytest.raises(TraceImportError, match="no traces.jsonl here"):
        import_records([tmp_path / "empty-dir-that-is-missing"])


def test_an_edited_action_that_still_finishes_the_game_is_rejected_by_digest(tmp_path):
    episodes = _episodes()
    (episode,) = [e for e in episodes if e["traces"][0]["info"]["arena"]["actions"][-1] == "[fold]"]
    for trace in episode["traces"]:
        trace["info"]["arena"]["actions"][-1] = "[call]"
    claimed = episode["traces"][0]["info"]["arena"]["transcript_digest"]
    with pytest.raises(TraceImportError, match=rf"replay to transcript digest [0-9a-f]+, the trace claims {claimed}"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])


def test_a_malformed_record_is_named_not_a_traceback(tmp_path):
    episodes = _episodes()
    for trace in episodes[0]["traces"]:
        del trace["info"]["arena"]["actions"]
    with pytest.raises(TraceImportError, match="no list of actions to replay"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])
    for trace in episodes[1]["traces"]:
        del trace["info"]["arena"]["model"]
    with pytest.raises(TraceImportError, match="malformed arena game record"):
        import_records([_write(tmp_path / "traces.jsonl", episodes[1:])])


def test_imported_cards_join_a_leaderboard_with_arena_played_cards(repo):
    """Same eval section, so an imported card and a card arena played rank together."""
    from arena.eval.config import GameEntry
    from arena.eval.leaderboard import build_leaderboard
    from arena.eval.scorecards import make_scorecard
    from arena.play.match import Slot, play_match
    from arena.players.scripted import make_scripted

    imported = json.loads(_import(repo, TRACES).read_text())
    config = EvalConfig.from_dict(imported["eval_config"])
    players = (make_scripted("oracle"), make_scripted("staller"))
    records = play_match("kuhn", players, [Slot(s, k % 2) for k, s in enumerate(config.seeds)], progress=False)
    played = make_scorecard(config, GameEntry("kuhn", {}), "oracle", "staller", records)
    board = build_leaderboard([imported, played])
    assert sorted(board["cards"]) == sorted([imported["digest"], played["digest"]])
    assert {row["player"].split("@")[0] for row in board["ranking"]} == {"openai:random", "openai:first", "oracle",
                                                                          "staller"}


def test_an_errored_game_scores_nobody_but_must_replay_unfinished(tmp_path, repo):
    episodes = _episodes()
    for trace in episodes[0]["traces"]:
        info = trace["info"]["arena"]
        info.update(errored=True, error="player_b's run ended", actions=info["actions"][:1])
        trace["rewards"]["outcome"]["score"] = 0.0
    path = _write(tmp_path / "traces.jsonl", episodes)
    (errored,) = [r for r in import_records([path]) if r["errored"]]
    assert errored["rewards"] is None and errored["transcript_digest"] is None
    board = import_traces([path], repo / "cards", params=repo / "params.yaml")
    assert board["pairs"][0]["errored"] == 1
    (card,) = sorted((repo / "cards").glob(f"*{CARD_SUFFIX}"))
    assert verify_scorecard(card, repo=repo).verdict == MATCH
    for trace in episodes[0]["traces"]:
        trace["info"]["arena"]["actions"] = ["[check]", "[check]", "[check]"]  # finishes the game, then one more
    with pytest.raises(TraceImportError, match="marked errored and its actions do not replay"):
        import_records([_write(tmp_path / "traces.jsonl", episodes)])
