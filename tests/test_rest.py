"""ReST-EM rounds: the verified win set (filter, dedup, replay, provenance), its audit, tiny rounds end to end."""

import dataclasses
import json

import numpy as np
import pytest

import arena.train.rest.sample as rest_sample
from arena.core.config import ConfigError, from_mapping
from arena.core.errors import ArenaError
from arena.core.hashing import digest_dir, digest_file
from arena.core.seeds import SeedsConfig
from arena.eval.config import EvalConfig, RoundEvalConfig
from arena.eval.roundeval import evaluate_round
from arena.play.match import play_match
from arena.play.records import read_shard
from arena.players.mlx import MLXPlayer
from arena.players.scripted import make_scripted
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig, CurriculumConfig, RestConfig, check_loop
from arena.train.curriculum import CURRICULUM_FILE
from arena.train.fuse import NO_UPDATE, copy_snapshot, fuse_round
from arena.train.rest.sample import rest_schedule, sample_round
from arena.train.rest.sft import empty_win_set, round_metrics, train_rest_round
from arena.train.rest.winset import (
    audit,
    check_game,
    dataset_rows,
    load_win_set,
    replay_buffer,
    select_wins,
    write_win_set,
)

TINY = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1, "intermediate_size": 64,
        "vocab_size": 400}
REST = RestConfig(samples_per_seed=2, seeds_per_round=8, iters=2, batch_size=4, lora_layers=1, audit_games=8)
# Plays like `random` under another name, so the stand-in learner (`random`) holds exactly one seat.
RANDOMISH = "eps-oracle:1.0"
CURRICULUM = CurriculumConfig(epsilons=(1.0, 0.0), variants=({"rounds": 1},), probe_games=8, max_tasks=1)


def _scripted_records(opponent: str, seeds=range(40), game="kuhn", samples=2) -> list[dict]:
    """Games of `random` (standing in for the learner) against ``opponent``, scheduled as a ReST round is."""
    players = (make_scripted("random"), make_scripted(opponent))
    return play_match(game, players, rest_schedule(seeds, samples), progress=False)


def _wins(records, learner="random"):
    return [r for r in records if r["rewards"][r["players"].index(learner)] > 0]


# ----------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("values", "pattern"),
    [
        ({"samples_per_seed": 0}, r"rest\.samples_per_seed = 0 is invalid: must be >= 1"),
        ({"samples_per_seed": -3}, r"rest\.samples_per_seed = -3 is invalid"),
        ({"temperature": 0.0}, r"rest\.temperature = 0\.0 is invalid: must be > 0"),
        ({"init": "scratch"}, r"rest\.init = 'scratch' is invalid: expected one of base, previous"),
        ({"replay_games": -1}, r"rest\.replay_games = -1 is invalid"),
        ({"lr": "1e-4"}, r"rest\.lr = '1e-4' must be a float"),
        ({"audit_games": 0}, r"rest\.audit_games = 0 is invalid"),
        ({"view": "pixels"}, r"player\.view = 'pixels' is invalid"),
    ],
)
def test_bad_rest_values_name_the_key(values, pattern):
    with pytest.raises(ConfigError, match=pattern):
        from_mapping(RestConfig, values, "rest")


def test_loop_defaults_to_selfplay_and_names_bad_values():
    assert check_loop({}) == "selfplay" and check_loop({"loop": "rest"}) == "rest"
    with pytest.raises(ConfigError, match=r"loop = 'ppo' is invalid: expected one of selfplay, rest"):
        check_loop({"loop": "ppo"})


def test_the_old_loop_name_grpo_still_runs_selfplay_with_one_deprecation_line(capsys, monkeypatch):
    import arena.train.config as train_config

    monkeypatch.setattr(train_config, "_warned", set())
    assert check_loop({"loop": "grpo"}) == "selfplay" and check_loop({"loop": "grpo"}) == "selfplay"
    err = capsys.readouterr().err
    assert err == "warning: loop: grpo is deprecated, write loop: selfplay (the same rounds)\n"


def test_rest_seed_blocks_stay_below_the_probe_block():
    seeds = SeedsConfig()
    assert rest_sample.rest_seeds(seeds, REST, 1) == range(600_000, 600_008)
    assert rest_sample.rest_seeds(seeds, REST, 2) == range(600_008, 600_016)
    with pytest.raises(ConfigError, match=r"rest\.seeds_per_round = 200000 is invalid: round 2's seeds"):
        rest_sample.rest_seeds(seeds, RestConfig(seeds_per_round=200_000), 2)


def test_schedule_samples_each_seed_k_times_from_alternating_seats():
    assert [(s.seed, s.first_seat, s.salt) for s in rest_schedule([10, 11], 3)] == [
        (10, 0, 0), (10, 1, 1), (10, 0, 2), (11, 1, 0), (11, 0, 1), (11, 1, 2)]
    assert [s.first_seat for s in rest_schedule([1, 2, 3], 1)] == [0, 1, 0]  # K = 1 still uses both seats


# ----------------------------------------------------------------------------------------------- the win set


def test_select_wins_keeps_each_verified_win_once_with_the_learners_rows():
    records = _scripted_records(RANDOMISH)
    won = _wins(records)
    games, stats = select_wins(records + records[:10], "random", REST, round_number=1)
    assert stats["won"] == len(won) + len(_wins(records[:10])) and stats["rejected"] == 0
    assert stats["duplicates"] == len(_wins(records[:10]))
    assert len(games) == len({(r["transcript_digest"], r["players"].index("random")) for r in won})
    assert 0 < len(games) < len(records)
    for game in games:
        seat = game["learner_seat"]
        assert game["rewards"][seat] > 0 and game["opponent"] == RANDOMISH and game["round"] == 1
        assert game["rows"] and all(row["prompt"].startswith("card: ") for row in game["rows"])
        assert [r["decision"] for r in game["rows"]] == [
            i for i, _ in enumerate(game["actions"]) if (i % 2 == 0) == (seat == 1)]  # Kuhn: player 1 opens


def test_forged_or_altered_wins_never_enter():
    records = _scripted_records(RANDOMISH)
    won, lost = _wins(records)[0], next(r for r in records if r not in _wins(records))
    forged_digest = {**won, "transcript_digest": "0" * 64}
    seat = won["players"].index("random")
    altered_prompt = json.loads(json.dumps(won))
    first = next(d for d in altered_prompt["decisions"] if d["player"] == seat)
    first["observation"] = first["observation"].replace("card: ", "card:  ")
    claimed = {**lost, "rewards": list(reversed(lost["rewards"]))}  # a loss relabelled as a win
    games, stats = select_wins([forged_digest, altered_prompt, claimed], "random", REST, 1)
    assert games == [] and stats["rejected"] == 3
    text = " ".join(stats["rejections"])
    assert "transcript digest" in text and "rows differ" in text and "not a win" in text


def test_forfeit_wins_are_counted_and_kept_out_unless_allowed():
    records = _scripted_records("staller", seeds=range(5))
    games, stats = select_wins(records, "random", REST, 1)
    assert stats["won"] == stats["won_by_forfeit"] == len(records) and stats["forfeit_fraction"] == 1.0
    assert games == []
    allowed = RestConfig(keep_forfeit_wins=True)
    games, stats = select_wins(records, "random", allowed, 1)
    # The staller forfeits on its first turn: when it opens, the learner never moved and there is no row.
    assert len(games) + stats["without_decisions"] == len(records) and stats["rejected"] == 0
    assert games and stats["without_decisions"] > 0 and all(game["rows"] for game in games)
    assert check_game(games[0], "compact", allow_forfeit=False)[0].endswith("which rest.keep_forfeit_wins excludes")


def test_the_learner_must_hold_exactly_one_seat():
    records = _scripted_records("random", seeds=range(1))  # `random` in both seats: self-play, not ReST's games
    for learner in ("random", "oracle"):
        with pytest.raises(ValueError, match="in exactly one seat"):
            select_wins(records, learner, REST, 1)


def _fake_game(round_number: int, name: str) -> dict:
    return {"transcript_digest": name, "learner_seat": 0, "round": round_number, "rows": []}


def test_replay_buffer_prefers_recent_rounds_and_skips_fresh_duplicates():
    previous = [_fake_game(1, f"a{i}") for i in range(4)] + [_fake_game(2, f"b{i}") for i in range(3)]
    fresh = [_fake_game(3, "b0")]
    picked = replay_buffer(previous, fresh, 4, np.random.default_rng(0))
    names = [g["transcript_digest"] for g in picked]
    assert names[:2] == ["b1", "b2"] and len(names) == 4 and all(n.startswith("a") for n in names[2:])
    assert names == [g["transcript_digest"] for g in replay_buffer(previous, fresh, 4, np.random.default_rng(0))]
    assert replay_buffer(previous, fresh, 0, np.random.default_rng(0)) == []
    assert len(replay_buffer(previous, fresh, 100, np.random.default_rng(0))) == 6


def test_rows_are_mlx_lm_chat_rows_traced_line_by_line(tmp_path):
    games, _ = select_wins(_scripted_records(RANDOMISH), "random", REST, 1)
    rows, provenance = dataset_rows(games, np.random.default_rng(0))
    assert len(rows) == len(provenance) == sum(len(g["rows"]) for g in games)
    by_key = {(g["transcript_digest"], g["learner_seat"]): g for g in games}
    for row, origin in zip(rows, provenance, strict=True):
        assert set(row) == {"messages"}
        user, assistant = row["messages"]
        assert set(user) == set(assistant) == {"role", "content"}
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        game = by_key[(origin["transcript_digest"], origin["learner_seat"])]
        assert {"decision": origin["decision"], "prompt": user["content"], "action": assistant["content"]} \
            in game["rows"]
        assert game["actions"][origin["decision"]] == assistant["content"]
    assert (rows, provenance) == dataset_rows(games, np.random.default_rng(0))


def test_the_win_set_round_trips_and_the_audit_catches_tampering(tmp_path):
    games, _ = select_wins(_scripted_records(RANDOMISH), "random", REST, 1)
    rows, provenance = dataset_rows(games, np.random.default_rng(0))
    write_win_set(tmp_path / "data", games, rows, provenance)
    loaded = load_win_set(tmp_path)
    canonical = lambda items: sorted(json.dumps(item, sort_keys=True) for item in items)  # noqa: E731
    assert canonical(loaded) == canonical(games)
    report = audit(loaded, RestConfig(audit_games=10_000), 1)
    assert report["checked"] == report["passed"] == len(games) and report["failures"] == []
    lines = (tmp_path / "data" / "train.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["messages"][1]["content"] = "[fold]" if row["messages"][1]["content"] != "[fold]" else "[call]"
    (tmp_path / "data" / "train.jsonl").write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    report = audit(load_win_set(tmp_path), RestConfig(audit_games=10_000), 1)
    assert report["passed"] == len(games) - 1 and len(report["failures"]) >= 1
    (tmp_path / "data" / "provenance.jsonl").write_text("")
    with pytest.raises(ArenaError, match=r"rows but 0 provenance lines"):
        load_win_set(tmp_path)
    with pytest.raises(ArenaError, match="not a ReST training output"):
        load_win_set(tmp_path / "nowhere")


# ----------------------------------------------------------------------------------------------- tiny rounds


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest")
    build_base(BaseConfig(**TINY), root / "base")
    copy_snapshot(root / "base", root / "snap0")
    empty_win_set(root / "train0")
    sample_round(root / "snap0", "kuhn", REST, CURRICULUM, SeedsConfig(), 1, root / "roll1", progress=False)
    return root


def test_sampling_writes_the_shard_and_the_chosen_tiers(tiny):
    plan = json.loads((tiny / "roll1" / CURRICULUM_FILE).read_text())
    assert len(plan["tasks"]) == 2 and len(plan["chosen"]) == 1 and plan["attempts"][0]["wins"] > 0
    records = read_shard(tiny / "roll1")
    learner = MLXPlayer(tiny / "snap0").spec
    assert len(records) == REST.seeds_per_round * REST.samples_per_seed == plan["attempts"][0]["games"]
    assert {r["seed"] for r in records} == set(range(600_000, 600_008))
    assert all(learner in r["players"] and plan["chosen_labels"][0].endswith(r["players"][1 - r["players"].index(
        learner)]) for r in records)


def test_a_rest_round_trains_deterministically_on_its_own_verified_wins(tiny, tmp_path):
    summary = train_rest_round(tiny / "snap0", tiny / "base", tiny / "roll1", tiny / "train0", 1, REST,
                               tmp_path / "a", progress=False)
    train_rest_round(tiny / "snap0", tiny / "base", tiny / "roll1", tiny / "train0", 1, REST, tmp_path / "b",
                     progress=False)
    assert digest_dir(tmp_path / "a") == digest_dir(tmp_path / "b")
    out = tmp_path / "a"
    rows = (out / "data" / "train.jsonl").read_text().splitlines()
    provenance = [json.loads(line) for line in (out / "data" / "provenance.jsonl").read_text().splitlines()]
    assert summary["rows"] == len(rows) == len(provenance) > 0 and summary["updated"] and summary["replay_games"] == 0
    # Every row traces to a game the snapshot itself won in this round's shard: no teacher, no scripted moves.
    learner = MLXPlayer(tiny / "snap0").spec
    shard = {(r["transcript_digest"], r["players"].index(learner)): r for r in read_shard(tiny / "roll1")}
    for origin in provenance:
        record = shard[(origin["transcript_digest"], origin["learner_seat"])]
        assert record["rewards"][origin["learner_seat"]] > 0
        assert record["decisions"][origin["decision"]]["player"] == origin["learner_seat"]
    report = json.loads((out / "audit.json").read_text())
    assert report["audit"]["checked"] > 0 and report["audit"]["failures"] == []
    assert report["forfeit_fraction"] == 0.0 and report["won_by_forfeit"] == 0
    # init: base -> the adapter belongs to the base, so the fused weights are what fuse@r copies.
    assert (out / "weights.safetensors").exists() and (out / "lora" / "adapters.safetensors").exists()
    adapter_config = json.loads((out / "lora" / "adapter_config.json").read_text())
    assert adapter_config == {"fine_tune_type": "lora", "num_layers": 1,
                              "lora_parameters": {"rank": 8, "scale": 20.0, "dropout": 0.0}}
    assert str(tmp_path) not in "".join(p.read_text() for p in out.rglob("*.json*"))
    meta = fuse_round(tiny / "snap0", out, tmp_path / "snap1")
    assert meta["pin"]["model_hash"] != digest_dir(tiny / "snap0")


def test_a_second_round_replays_earlier_wins_and_can_continue_from_the_snapshot(tiny, tmp_path):
    train_rest_round(tiny / "snap0", tiny / "base", tiny / "roll1", tiny / "train0", 1, REST, tmp_path / "t1",
                     progress=False)
    fuse_round(tiny / "snap0", tmp_path / "t1", tmp_path / "snap1")
    sample_round(tmp_path / "snap1", "kuhn", REST, CURRICULUM, SeedsConfig(), 2, tmp_path / "roll2", progress=False)
    previous = dataclasses.replace(REST, init="previous")
    summary = train_rest_round(tmp_path / "snap1", tiny / "base", tmp_path / "roll2", tmp_path / "t1", 2, previous,
                               tmp_path / "t2", progress=False)
    first = json.loads((tmp_path / "t1" / "summary.json").read_text())
    assert summary["replay_games"] == first["games"] and summary["games"] == summary["fresh_games"] + first["games"]
    assert {json.loads(line)["round"] for line in (tmp_path / "t2" / "data" / "provenance.jsonl").open()} == {1, 2}
    assert (tmp_path / "t2" / "adapters.safetensors").exists()  # init: previous -> an adapter on snapshot 1
    assert json.loads((tmp_path / "t2" / "adapter_config.json").read_text())["num_layers"] == 1
    fuse_round(tmp_path / "snap1", tmp_path / "t2", tmp_path / "snap2")
    eval_config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [9_000_000, 9_000_010]})
    result = evaluate_round(tmp_path / "snap2", None, 2, RoundEvalConfig(games=10), eval_config,
                            SeedsConfig().reserved(), tmp_path / "r2.json",
                            extra=round_metrics(tmp_path / "roll2", tmp_path / "t2"))
    assert result["curriculum"]["chosen"] and result["curriculum"]["probe_win_rate"]
    assert result["rest"]["rows"] == summary["rows"] and result["rest"]["forfeit_fraction"] == 0.0
    assert round_metrics(None, tiny / "train0") == {"rest": {**dict.fromkeys(
        ("rows", "games", "fresh_games", "replay_games", "won_games", "played_games"), 0),
        "forfeit_fraction": 0.0, "updated": False}}
    (tmp_path / "grpo").mkdir()
    (tmp_path / "grpo" / "summary.json").write_text(json.dumps({"round": 2, "method": "full", "steps": 64}))
    assert round_metrics(tmp_path / "grpo", tmp_path / "grpo") == {}  # a GRPO round adds nothing


def test_no_win_at_any_tier_keeps_the_previous_weights_explicitly(tiny, tmp_path, capsys):
    # TicTacToe against the exact oracle cannot be won: the best the learner can do is draw.
    hopeless = CurriculumConfig(epsilons=(0.0,), probe_games=4, max_tasks=1)
    plan = sample_round(tiny / "snap0", "tictactoe", REST, hopeless, SeedsConfig(), 1, tmp_path / "roll",
                        progress=False)
    assert plan["attempts"] == [{"tiers": [0], "games": 16, "wins": 0}]
    assert "no game won at any tier" in capsys.readouterr().err
    summary = train_rest_round(tiny / "snap0", tiny / "base", tmp_path / "roll", tiny / "train0", 1, REST,
                               tmp_path / "t", progress=False)
    assert not summary["updated"] and summary["rows"] == 0
    reason = json.loads((tmp_path / "t" / NO_UPDATE).read_text())["reason"]
    assert "no game was won (of 16 played)" in reason
    meta = fuse_round(tiny / "snap0", tmp_path / "t", tmp_path / "snap1")
    assert meta["config"] == {"unchanged": reason}
    assert digest_file(tmp_path / "snap1" / "model.safetensors") == digest_file(tiny / "snap0" / "model.safetensors")


def test_zero_wins_lower_the_difficulty_within_the_round(tiny, tmp_path, monkeypatch, capsys):
    real = rest_sample.plan_round

    def hardest_first(learner, game, seeds, config, progress=False):
        chosen, record = real(learner, game, seeds, config, progress)
        tasks = rest_sample.ladder(config, game)
        record["tasks"][0]["win_rate"], record["tasks"][1]["win_rate"] = 0.5, 0.0
        record["chosen"] = [1]
        return [tasks[1]], record

    monkeypatch.setattr(rest_sample, "plan_round", hardest_first)
    ladder = CurriculumConfig(epsilons=(1.0, 0.0), probe_games=4, max_tasks=1)
    plan = sample_round(tiny / "snap0", "tictactoe", REST, ladder, SeedsConfig(), 1, tmp_path / "roll", progress=False)
    assert [a["tiers"] for a in plan["attempts"]] == [[1], [0]]
    assert plan["attempts"][0]["wins"] == 0 and plan["attempts"][1]["wins"] > 0
    assert "lowering the difficulty to tier 0" in capsys.readouterr().err
    records = read_shard(tmp_path / "roll")
    assert len(records) == 32 and {r["salt"] for r in records[16:]} == {2, 3}  # fresh samples, same seeds
