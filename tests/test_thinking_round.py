"""Thinking in the pipeline's rounds: a selfplay.think GRPO round on the embedded tiny model, end to end."""

import copy
import json

import numpy as np
import pytest
from repo_copy import small_params
from tinyround import built_twice

from arena.core.config import ConfigError, as_dict, load_params, load_section
from arena.pipeline.params import validate_all
from arena.pipeline.rounds import RoundPaths, round_n, round_zero
from arena.report.summary import round_headline
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig, SelfPlayConfig

THINK = {"max_tokens": 6}


def _params(selfplay=None, **overrides):
    return small_params(selfplay={"think": THINK, "deals_per_round": 6, **(selfplay or {})},
                        train={"objective": "grpo", "steps": 2, "batch_size": 8},
                        roundeval={"think": THINK, "games": 4}, **overrides)


def _round(root, params):
    validate_all(params)
    build_base(load_section(BaseConfig, "base", params), root / "models" / "base")
    round_zero(RoundPaths(root, 0, 0), params)
    round_n(RoundPaths(root, 1, 0), params)
    return root


def _files(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def thinking_rounds(tmp_path_factory):
    """The same thinking round twice, from the same seeds, each in its own directory."""
    return built_twice(tmp_path_factory, lambda root: _round(root, _params()))


def test_a_thinking_round_is_byte_identical_from_the_same_seeds(thinking_rounds):
    a, b = thinking_rounds
    for kind in ("rollouts/r1", "adapters/r1", "snapshots/r1", "pools/r1"):
        assert _files(a / kind) == _files(b / kind), kind
    for name in ("evals/r1.json", "metrics/r1.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_a_thinking_rounds_moves_are_legal_and_its_replies_trained(thinking_rounds):
    root = thinking_rounds[0]
    records = [json.loads(line) for line in (root / "rollouts" / "r1" / "games.jsonl").read_text().splitlines()]
    decisions = [d for r in records for d in r["decisions"]]
    assert decisions and all(d["action"] in d["legal"] and d["reasoning_tokens"] is not None for d in decisions)
    assert all(len(d["reasoning_tokens"]) <= THINK["max_tokens"] for d in decisions)
    log = [json.loads(line) for line in (root / "adapters" / "r1" / "train_log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in log] == [0, 1] and all(np.isfinite(row["loss"]) for row in log)
    baseline = json.loads((root / "adapters" / "r1" / "role_baseline.json").read_text())
    assert set(baseline) == {"kuhn:0", "kuhn:1"}  # one running mean per role (game, seat), carried to round 2
    assert "unchanged" not in json.loads((root / "snapshots" / "r1" / "meta.json").read_text())["config"]  # updated


def test_a_thinking_rounds_metrics_report_reasoning_length_and_disagreement(thinking_rounds):
    root = thinking_rounds[0]
    evaluation = json.loads((root / "evals" / "r1.json").read_text())
    for key in ("reasoning", "rollout_reasoning"):
        assert {"reasoning_tokens_mean", "reasoning_tokens_std", "last_named_differs_rate",
                "names_a_move_rate"} <= set(evaluation[key])
    headline = json.loads((root / "metrics" / "r1.json").read_text())
    assert {"tokens_mean", "tokens_std"} <= set(headline["rollout_reasoning"]) and "reasoning" in headline
    assert headline == round_headline(evaluation)
    summary = json.loads((root / "adapters" / "r1" / "summary.json").read_text())
    assert summary["reasoning"] == evaluation["rollout_reasoning"]


def test_the_report_finds_a_thinking_runs_reasoning(thinking_rounds):
    from arena.report.thinkplots import plot_reasoning_rounds, reasoning_series

    evals = [json.loads((thinking_rounds[0] / "evals" / f"r{n}.json").read_text()) for n in (0, 1)]
    series = reasoning_series(evals)
    assert [p[0] for p in series["rollout_reasoning"]] == [1] and [p[0] for p in series["reasoning"]] == [0, 1]
    assert plot_reasoning_rounds(evals).startswith(b"\x89PNG")


def test_the_default_round_keeps_its_bytes():
    """A section without think keeps its config dict (and so its hashes), and a headline gains no reasoning key."""
    assert "think" not in as_dict(SelfPlayConfig())
    plain = {"round": 1, "exact": {"kuhn": {"exploitability": 0.2}}}
    assert not any("reasoning" in key for key in round_headline(plain))


def test_think_in_a_loop_that_cannot_train_it_is_one_line():
    params = load_params("params.yaml")
    for section, value, pattern in [
            ("selfplay", {**params["selfplay"], "think": THINK}, "selfplay.think .* train.objective is 'neurd'"),
            ("rest", {**params["rest"], "think": THINK}, "rest.think .* loop: rest's rounds, but loop is 'selfplay'"),
            ("lsp", {**params["lsp"], "think": THINK}, "lsp.think .* LSP's proposer and solver")]:
        broken = copy.deepcopy(params)
        broken[section] = value
        with pytest.raises(ConfigError, match=pattern):
            validate_all(broken)
    broken = _params(selfplay={"iterations_per_round": 2})
    with pytest.raises(ConfigError, match="selfplay.iterations_per_round: 1"):
        validate_all(broken)
    with pytest.raises(ConfigError, match="use loop: selfplay"):
        validate_all(_params(loop="rest"))


def test_the_headline_tournament_gives_thinking_and_frontier_players_the_same_text_and_budget(standin_dir):
    from arena.players.config import FrontierConfig, MLXPlayerConfig, ThinkConfig
    from arena.players.frontier import FrontierPlayer
    from arena.players.mlx import MLXPlayer

    params = load_params("params.yaml")
    params["tournament"] = {**params["tournament"], "think": {"max_tokens": 64},
                            "frontier": ["openai:m@http://127.0.0.1:9/v1"]}
    params["frontier"] = {"view": "full"}
    with pytest.raises(ConfigError, match="tournament.view = 'compact' is invalid: differs from frontier.view"):
        validate_all(params)
    params["frontier"] = {"view": "compact"}
    with pytest.raises(ConfigError, match="tournament.think.max_tokens = 64 .* frontier.max_tokens = 32"):
        validate_all(params)
    params["frontier"] = {"view": "compact", "max_tokens": 64}
    validate_all(params)
    # Every score card carries both players' pins: each states its reasoning budget.
    frontier = FrontierPlayer("m", "http://127.0.0.1:9/v1", FrontierConfig(view="compact", max_tokens=64))
    local = MLXPlayer(standin_dir, MLXPlayerConfig(think=ThinkConfig(max_tokens=64)))
    assert frontier.pin()["think"]["max_tokens"] == local.pin()["think"]["max_tokens"] == 64
    # Without a thinking local player (or without frontier players) nothing is required.
    params["frontier"] = {"view": "full"}
    params["tournament"] = {**params["tournament"], "think": {}}
    validate_all(params)
