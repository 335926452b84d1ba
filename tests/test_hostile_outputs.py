"""Hostile `--out` paths for `arena import-traces` (issue 47 item 1): an output never replaces what is not its own."""

import json
import shutil
from pathlib import Path

import pytest

from arena.eval.imported import TraceImportError, import_traces
from arena.eval.scorecards import CARD_SUFFIX

TRACES = Path(__file__).parent / "data" / "verifiers_kuhn_traces.jsonl"
PARAMS = "eval:\n  games:\n    - {id: kuhn, variant: {}}\n  seeds: [0, 4]\n"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "params.yaml").write_text(PARAMS)
    return tmp_path


def _run(repo: Path, traces: Path, out: Path):
    return import_traces([traces], out, params=repo / "params.yaml")


def test_out_holding_other_files_is_refused_and_kept(repo):
    out = repo / "artifacts" / "scores"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text('{"a": 1}\n')
    (out / ".gitignore").write_text("/baseline\n")
    (out / "baseline").mkdir()
    (out / "baseline" / "x.card.json").write_text("{}")
    with pytest.raises(TraceImportError, match=r"scores holds \.gitignore, which is not an earlier"):
        _run(repo, TRACES, out)
    assert (out / "metrics.json").read_text() == '{"a": 1}\n'
    assert (out / ".gitignore").exists() and (out / "baseline" / "x.card.json").exists()


def test_out_that_holds_the_input_traces_is_refused(repo):
    run = repo / "outputs" / "run1"
    run.mkdir(parents=True)
    traces = run / "traces.jsonl"
    shutil.copy(TRACES, traces)
    for out in (run, repo / "outputs"):
        with pytest.raises(TraceImportError, match="traces"):
            _run(repo, run, out)
    assert traces.read_bytes() == TRACES.read_bytes()


def test_out_that_is_a_file_is_refused_and_kept(repo):
    out = repo / "cards.json"
    out.write_text("keep me\n")
    with pytest.raises(TraceImportError, match=r"cards\.json.*not a directory"):
        _run(repo, TRACES, out)
    assert out.read_text() == "keep me\n"
    assert [p.name for p in repo.iterdir() if p.name.startswith(".")] == []


def test_own_earlier_output_and_empty_dir_are_replaced(repo):
    out = repo / "cards"
    out.mkdir()
    _run(repo, TRACES, out)  # empty directory: fine
    first = sorted(p.name for p in out.iterdir())
    assert any(name.endswith(CARD_SUFFIX) for name in first) and "leaderboard.json" in first
    _run(repo, TRACES, out)  # arena's own earlier import: replaced
    assert sorted(p.name for p in out.iterdir()) == first


def test_a_tournament_archive_is_not_own_output(repo):
    out = repo / "cards"
    _run(repo, TRACES, out)
    card = next(out.glob(f"*{CARD_SUFFIX}"))
    data = json.loads(card.read_text())
    for player in data["players"]:
        player["pin"] = {"kind": "mlx"}
    card.write_text(json.dumps(data))
    with pytest.raises(TraceImportError, match="not.*import-traces"):
        _run(repo, TRACES, out)
    assert json.loads(card.read_text())["players"][0]["pin"] == {"kind": "mlx"}


def test_out_beside_the_traces_inside_their_run_dir_is_fine(repo):
    run = repo / "outputs" / "run1"
    run.mkdir(parents=True)
    shutil.copy(TRACES, run / "traces.jsonl")
    _run(repo, run, run / "cards")
    assert (run / "traces.jsonl").read_bytes() == TRACES.read_bytes() and (run / "cards" / "leaderboard.json").exists()
