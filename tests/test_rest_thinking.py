"""ReST with a thinking learner (rest.think): whole winning replies in the win set, trained in the pipeline's rounds."""

import copy
import json

import numpy as np
import pytest
from repo_copy import small_params
from tinyround import built_twice

from arena.core.config import ConfigError, as_dict, load_params, load_section
from arena.pipeline.params import validate_all
from arena.pipeline.rounds import RoundPaths, round_n, round_zero
from arena.play.match import play_match
from arena.play.records import read_shard
from arena.players.mlx import MLXPlayer
from arena.players.scripted import make_scripted
from arena.report.summary import round_headline
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig, RestConfig
from arena.train.rest.sample import rest_schedule
from arena.train.rest.thinksft import win_set_replies
from arena.train.rest.winset import check_game, dataset_rows, load_win_set, won_game

THINK = {"max_tokens": 6}


def _params(**overrides):
    return small_params(loop="rest", rest={"think": THINK, "iters": 3, "batch_size": 4},
                        roundeval={"think": THINK, "games": 4},
                        rounds={"r1": {"n": 1, "prev": 0}, "r2": {"n": 2, "prev": 1}}, **overrides)


def _rounds(root, params):
    validate_all(params)
    build_base(load_section(BaseConfig, "base", params), root / "models" / "base")
    round_zero(RoundPaths(root, 0, 0), params)
    for n in (1, 2):
        round_n(RoundPaths(root, n, n - 1), params)


def _files(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def rest_rounds(tmp_path_factory):
    """The same two thinking ReST rounds twice, from the same seeds, each in its own directory."""
    return built_twice(tmp_path_factory, lambda root: _rounds(root, _params()))


def test_a_thinking_rest_round_is_byte_identical_from_the_same_seeds(rest_rounds):
    a, b = rest_rounds
    for n in (1, 2):
        for kind in ("rollouts", "adapters", "snapshots", "pools"):
            assert _files(a / kind / f"r{n}") == _files(b / kind / f"r{n}"), (kind, n)
        for name in (f"evals/r{n}.json", f"metrics/r{n}.json"):
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_its_moves_are_legal_and_its_learner_reasons(rest_rounds):
    records = read_shard(rest_rounds[0] / "rollouts" / "r1")
    assert records and all(not r["errored"] and sum(r["invalid_moves"]) == 0 for r in records)
    for record in records:
        learner = record["players"].index("mlx:artifacts/snapshots/r0")
        for decision in record["decisions"]:
            assert decision["action"] in decision["legal"]
            reasons = decision["player"] == learner
            assert (decision.get("reasoning_tokens") is not None) == reasons
            assert not reasons or len(decision["reasoning_tokens"]) <= THINK["max_tokens"]


def test_the_win_set_keeps_whole_winning_replies_and_trains_them(rest_rounds):
    """Every SFT row carries the reasoning its move was played after, token for token, as the game record has it."""
    root = rest_rounds[0]
    shard = {r["transcript_digest"]: r for r in read_shard(root / "rollouts" / "r1")}
    data = root / "adapters" / "r1" / "data"
    rows, provenance = _lines(data / "train.jsonl"), _lines(data / "provenance.jsonl")
    assert rows and len(rows) == len(provenance)
    for row, origin in zip(rows, provenance, strict=True):
        decision = shard[origin["transcript_digest"]]["decisions"][origin["decision"]]
        assert row["reasoning_tokens"] == decision["reasoning_tokens"] and row["reasoning"] == decision["reasoning"]
        assert row["messages"][-1]["content"] == decision["action"]
    summary = json.loads((root / "adapters" / "r1" / "summary.json").read_text())
    assert summary["updated"] and summary["rows"] == len(rows)
    log = _lines(root / "adapters" / "r1" / "train_log.jsonl")
    assert [row["iteration"] for row in log] == [1, 2, 3] and summary["final_loss"] == log[-1]["train_loss"] > 0
    assert (root / "adapters" / "r1" / "lora" / "adapters.safetensors").exists()  # init: base: fused and kept
    assert "unchanged" not in json.loads((root / "snapshots" / "r1" / "meta.json").read_text())["config"]
    # The SFT's replies are those rows: each one's reasoning tokens sit in its context, and its move is the row's.
    games = load_win_set(root / "adapters" / "r1")
    player = MLXPlayer(root / "snapshots" / "r0", RestConfig(think=THINK).player_config)
    replies = win_set_replies(games, player, "compact")
    kept = [row for game in games for row in game["rows"]]
    assert len(replies) == len(kept) == len(rows)
    for reply, row in zip(replies, kept, strict=True):
        start, end = reply.reasoning
        assert list(reply.context[start:end]) == row["reasoning_tokens"] and reply.reward > 0
        assert reply.actions[reply.chosen] == player.reply_prompts.action_ids(row["action"])
    # Round 2 replays round 1's wins, reasoning included, and they still verify.
    again = load_win_set(root / "adapters" / "r2")
    replayed = [g for g in again if g["round"] == 1]
    assert replayed and all("reasoning_tokens" in row for g in replayed for row in g["rows"])
    assert all(check_game(g, "compact", False) == [] for g in again)


def test_altered_reasoning_never_enters_the_win_set(rest_rounds):
    game = load_win_set(rest_rounds[0] / "adapters" / "r1")[0]
    assert check_game(game, "compact", False) == [] and "reasoning_digest" in game
    forged = copy.deepcopy(game)
    forged["rows"][0]["reasoning_tokens"] = [*forged["rows"][0]["reasoning_tokens"], 7]
    assert any("reasoning digest" in p for p in check_game(forged, "compact", False))
    dropped = copy.deepcopy(game)
    del dropped["rows"][0]["reasoning"]
    assert any("carry reasoning" in p for p in check_game(dropped, "compact", False))


def test_its_metrics_report_the_reasoning_as_a_thinking_grpo_round_does(rest_rounds):
    evaluation = json.loads((rest_rounds[0] / "evals" / "r1.json").read_text())
    for key in ("reasoning", "rollout_reasoning"):
        assert {"reasoning_tokens_mean", "reasoning_tokens_std", "last_named_differs_rate",
                "names_a_move_rate"} <= set(evaluation[key])
    assert evaluation["rest"]["updated"]
    headline = json.loads((rest_rounds[0] / "metrics" / "r1.json").read_text())
    assert {"tokens_mean", "tokens_std"} <= set(headline["rollout_reasoning"]) and "reasoning" in headline
    assert headline == round_headline(evaluation)


def test_a_default_rest_config_and_its_rows_keep_their_bytes():
    """rest.think is left out of the config dict while empty, and a move-only win set's rows are bare chat rows."""
    assert "think" not in as_dict(RestConfig()) and as_dict(RestConfig(think=THINK))["think"] == THINK
    game = {"transcript_digest": "d", "learner_seat": 0, "round": 1,
            "rows": [{"decision": 0, "prompt": "card: K", "action": "[bet]"}]}
    rows, _ = dataset_rows([game], np.random.default_rng(0))
    assert rows == [{"messages": [{"role": "user", "content": "card: K"}, {"role": "assistant", "content": "[bet]"}]}]
    records = play_match("kuhn", (make_scripted("random"), make_scripted("oracle")), rest_schedule(range(8), 1),
                         progress=False)
    for record in records:
        kept = won_game(record, "random", "compact", 1)
        assert "reasoning_digest" not in kept and all(set(row) == {"decision", "prompt", "action"}
                                                      for row in kept["rows"])


def test_rest_think_outside_loop_rest_is_one_line():
    params = load_params("params.yaml")
    broken = copy.deepcopy(params)
    broken["rest"] = {**params["rest"], "think": THINK}
    with pytest.raises(ConfigError, match=r"rest.think = \{'max_tokens': 6\} is invalid: trains reasoning in "
                                          r"loop: rest's rounds, but loop is 'selfplay'; use loop: rest"):
        validate_all(broken)
    validate_all({**broken, "loop": "rest"})
