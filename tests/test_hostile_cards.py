"""Hostile score cards and meta.json files: one line naming the file and the problem, never a traceback."""

import json

import pytest
from click.testing import CliRunner
from tourney_fakes import ScriptedPlay

from arena.cli import main
from arena.eval.config import EvalConfig
from arena.eval.errors import TournamentError
from arena.eval.scorecards import card_digest, load_archive, write_scorecards
from arena.eval.tournament import run_tournament


@pytest.fixture
def archive(tmp_path):
    config = EvalConfig.from_dict({"games": ["kuhn"], "seeds": [1000, 1010]})
    result = run_tournament(config, ["random", "oracle"], ScriptedPlay({"oracle": 2.0, "random": 1.0}))
    write_scorecards(tmp_path / "artifacts" / "scores" / "baseline", result.cards, excluded=result.excluded)
    return tmp_path / "artifacts" / "scores" / "baseline"


def _card(archive):
    return next(archive.glob("*.card.json"))


def _edit(path, edit):
    """The edit, with the card's digest recomputed: a hostile card is self-consistent, so only its shape is wrong."""
    card = edit(json.loads(path.read_text()))
    card["digest"] = card_digest(card)
    path.write_text(json.dumps(card))


def _set(key, value):
    def edit(card):
        card[key] = value
        return card
    return edit


def _drop(key):
    def edit(card):
        del card[key]
        return card
    return edit


HOSTILE = {
    "truncated": lambda path: path.write_text(path.read_text()[:200]),
    "outcomes is a string": lambda path: _edit(path, _set("outcomes", "x")),
    "missing eval_config": lambda path: _edit(path, _drop("eval_config")),
    "missing players": lambda path: _edit(path, _drop("players")),
    "players not a pair": lambda path: _edit(path, _set("players", [1, 2, 3])),
    "a list": lambda path: path.write_text("[1, 2]"),
    "not UTF-8": lambda path: path.write_bytes(b"\xff\xfe{"),
    "outcome not a dict": lambda path: _edit(path, _set("outcomes", [5])),
    "variant a list": lambda path: _edit(path, _set("variant", [])),
}


def _one_line_naming(output, path):
    lines = [line for line in output.splitlines() if line.strip()]
    assert "Traceback" not in output
    assert any(path.name in line for line in lines), output
    return lines


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_card_is_one_error_naming_the_file(archive, name):
    path = _card(archive)
    HOSTILE[name](path)
    with pytest.raises(TournamentError, match=path.name):
        load_archive([archive])
    result = CliRunner().invoke(main, ["leaderboard", str(archive)])
    assert result.exit_code == 2, result.output
    assert len(_one_line_naming(result.output, path)) == 1
    result = CliRunner().invoke(main, ["verify", str(path), "--no-fetch"])
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    _one_line_naming(result.output, path)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_check_artifacts_reports_a_hostile_card_in_an_archive(archive, name):
    path = _card(archive)
    HOSTILE[name](path)
    result = CliRunner().invoke(main, ["check-artifacts", "--artifacts", str(archive.parents[1]),
                                       "--dvc-cache", str(archive.parents[2] / "none")])
    assert result.exit_code == 1, result.output
    _one_line_naming(result.output, path)
    assert "1 problem(s)" in result.output


def test_check_artifacts_passes_a_good_archive_and_reports_a_bad_excluded_file(archive):
    root = archive.parents[1]
    args = ["check-artifacts", "--artifacts", str(root), "--dvc-cache", str(root / "none")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and "0 problem(s)" in result.output, result.output
    (archive / "excluded.json").write_text("[")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "excluded.json" in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("meta", ['{"digest": 5}', '{"digest": null}', "[1]", '{"digest": "ab"', '"x"'])
def test_check_artifacts_reports_a_malformed_meta_json(tmp_path, meta):
    artifact = tmp_path / "artifacts" / "models" / "base"
    artifact.mkdir(parents=True)
    (artifact / "weights.bin").write_bytes(b"w")
    (artifact / "meta.json").write_text(meta)
    result = CliRunner().invoke(main, ["check-artifacts", "--artifacts", str(tmp_path / "artifacts"),
                                       "--dvc-cache", str(tmp_path / "none")])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "meta.json" in result.output and str(artifact) in result.output
    assert "1 problem(s)" in result.output
