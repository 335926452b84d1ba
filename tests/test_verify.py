"""`arena verify` re-derives a tiny tournament's score card, and names a tampered model, config or library version."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import arena.core.pins
from arena.core.code import closure, code_digest
from arena.core.config import load_params, load_section
from arena.eval.codecheck import compare_code
from arena.eval.config import EvalConfig, TournamentConfig
from arena.eval.runner import run_stage
from arena.eval.scorecards import CARD_SUFFIX, card_digest
from arena.eval.verdict import MATCH, MATCH_WITHIN_INTERVAL, MISMATCH
from arena.eval.verify import verify_scorecard
from arena.play.stats import summarize_outcomes
from arena.train.basemodel import build_base
from arena.train.config import BaseConfig

TINY = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1, "intermediate_size": 64,
        "vocab_size": 400}
SPEC = "mlx:models/m"
MODEL = f"players[0] {SPEC}"
GAMES = 16
PARAMS = f"""\
eval:
  games:
    - {{id: kuhn, variant: {{rounds: 3}}}}
  seeds: [9000000, {9000000 + GAMES}]
tournament:
  players: ["{SPEC}", random]
  frontier: []
  view: compact
  temperature: 1.0
"""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A project directory with a tiny model, params.yaml and the score card its tournament stage wrote."""
    project = tmp_path_factory.mktemp("verify") / "project"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARENA_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "arena-cache"))
        build_base(BaseConfig(**TINY), project / "models" / "m")
        (project / "params.yaml").write_text(PARAMS)
        patch.chdir(project)  # specs are paths relative to the project root, as in the pipeline
        params = load_params("params.yaml")
        run_stage(EvalConfig.from_dict(params["eval"]), load_section(TournamentConfig, "tournament", params), [],
                  "scores")
    return project


@pytest.fixture
def project(pristine, tmp_path):
    """A private copy of the pristine project, free to tamper with."""
    return Path(shutil.copytree(pristine, tmp_path / "project"))


def _card_path(project: Path) -> Path:
    (path,) = (project / "scores").glob(f"*{CARD_SUFFIX}")
    return path


def _rewrite_card(path: Path, edit=None, *, code=None, drop_code=False) -> None:
    """Edit a card's outcomes (and code), then recompute its summary and digest so it is self-consistent again."""
    card = json.loads(path.read_text())
    if edit is not None:
        edit(card["outcomes"])
    if code is not None:
        card["code"] = {**card["code"], **code}
    if drop_code:
        del card["code"]
    specs = [player["spec"] for player in card["players"]]
    card["summary"] = summarize_outcomes(card["game_id"], card["outcomes"], *specs)
    card["digest"] = card_digest(card)
    path.write_text(json.dumps(card))


def test_untouched_card_matches_byte_for_byte(project):
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MATCH and result.ok, result.report()
    assert (result.games, result.identical_games) == (GAMES, GAMES)
    assert result.summary == result.card_summary
    assert result.report().startswith(f"MATCH {_card_path(project)} ({SPEC} vs random on kuhn[rounds=3])")
    assert result.code_differences == [] and "code" not in result.report()


def test_tampered_weight_file_is_named(project):
    weights = project / "models" / "m" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # one bit of the last weight
    weights.write_bytes(bytes(data))
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MISMATCH and not result.ok
    assert result.first_difference.name == f"{MODEL}: pin.model_hash"
    assert "its files changed after it was built" in result.first_difference.detail
    assert result.games == 0  # verification stops at the first difference


def test_changed_player_config_is_named(project):
    params = project / "params.yaml"
    params.write_text(params.read_text().replace("temperature: 1.0", "temperature: 0.5"))
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MISMATCH
    assert result.first_difference.name == f"{MODEL}: pin.config_hash"
    assert "params.yaml tournament" in result.first_difference.detail
    assert '"temperature": 0.5' in result.first_difference.detail


def test_changed_eval_config_is_named(project):
    params = project / "params.yaml"
    params.write_text(params.read_text().replace("rounds: 3", "rounds: 5"))
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.first_difference.name == "eval_config_hash"


def test_a_second_pipelines_params_file_is_the_one_read(project):
    """A card built from another params file (realmodel/params.yaml) verifies against that file, not the root's."""
    (project / "sub").mkdir()
    (project / "params.yaml").rename(project / "sub" / "params.yaml")
    (project / "params.yaml").write_text(PARAMS.replace("rounds: 3", "rounds: 5"))  # the root's own eval
    assert verify_scorecard(_card_path(project), repo=project).first_difference.name == "eval_config_hash"
    result = verify_scorecard(_card_path(project), repo=project, params_file="sub/params.yaml")
    assert result.verdict == MATCH and result.ok, result.report()


def test_verify_names_a_missing_params_file_in_one_line(project):
    from click.testing import CliRunner

    from arena.cli import main

    result = CliRunner().invoke(main, ["verify", "--repo", str(project), "--params", "nope.yaml",
                                       str(_card_path(project))])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --params nope.yaml: no such file in {project}; name the params file the cards' stage read "
        "(params.yaml, realmodel/params.yaml)"]


def _other_mlx(monkeypatch):
    real = arena.core.pins.versions
    monkeypatch.setattr(arena.core.pins, "versions", lambda: {**real(), "mlx": "0.99.0"})
    return real()["mlx"]


def test_other_library_version_is_named_and_compared_within_the_interval(project, monkeypatch):
    card_mlx = _other_mlx(monkeypatch)
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MATCH_WITHIN_INTERVAL and result.ok, result.report()
    assert [(d.name, d.card, d.here) for d in result.tuple_differences] == [
        (f"{MODEL}: pin.versions.mlx", card_mlx, "0.99.0")]
    assert "platform tuple differs" in result.report()


def test_strict_turns_a_version_difference_into_a_mismatch(project, monkeypatch):
    _other_mlx(monkeypatch)
    result = verify_scorecard(_card_path(project), repo=project, strict=True)
    assert result.verdict == MISMATCH
    assert result.first_difference.name == f"{MODEL}: pin.versions.mlx"


def test_score_outside_its_interval_fails_across_platforms(project, monkeypatch):
    # The card now claims the model won all 16 games: rate 1, Wilson 95% interval [0.806, 1] for n=16.
    # The re-played games are the real ones, which this tiny random model does not all win (it wins about
    # half against uniform random), so the re-derived rate falls below 0.806.
    def model_wins_everything(outcomes):
        for outcome in outcomes:
            seat = outcome["players"].index(SPEC)
            outcome["rewards"] = [1.0, -1.0] if seat == 0 else [-1.0, 1.0]

    _rewrite_card(_card_path(project), model_wins_everything)
    _other_mlx(monkeypatch)
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MISMATCH
    assert result.first_difference.name == "summary.p0_win_rate.rate"
    assert "outside the card's 95% Wilson interval [0.8064" in result.first_difference.detail
    assert "pin.versions.mlx" in result.first_difference.detail


def test_replayed_transcript_difference_names_the_game(project):
    def forge(outcomes):
        outcomes[3]["transcript_digest"] = "0" * 64

    _rewrite_card(_card_path(project), forge)
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MISMATCH
    assert result.first_difference.name == "outcomes[3] (seed 9000003).transcript_digest"
    assert result.identical_games == GAMES - 1


def test_hand_edited_card_fails_its_own_check(project):
    path = _card_path(project)
    card = json.loads(path.read_text())
    card["summary"]["wins"]["p0"] += 1
    path.write_text(json.dumps(card))
    result = verify_scorecard(path, repo=project)
    assert result.first_difference.name == "card"
    assert "digest does not match" in result.first_difference.detail


# --------------------------------------------------------------------------------------------- producing code

OTHER_CODE = "c0de" * 16


def _card_code(project: Path) -> dict:
    return json.loads(_card_path(project).read_text())["code"]


def test_card_records_the_code_that_played_it(project):
    code = _card_code(project)
    # Played under pytest, the card records the CLI's closure; the tournament stage records stages/tournament.py's.
    assert code == {"entry": "arena/cli.py", "code_digest": code_digest(closure("arena/cli.py"))}


def test_other_code_with_identical_games_is_a_match_naming_the_code_difference(project):
    here = _card_code(project)["code_digest"]
    _rewrite_card(_card_path(project), code={"code_digest": OTHER_CODE})
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MATCH and result.ok, result.report()
    assert [(d.name, d.card, d.here) for d in result.code_differences] == [("code.code_digest", OTHER_CODE, here)]
    assert "arena/cli.py and its import closure" in result.code_differences[0].detail
    report = result.report()
    assert f"code differs: code.code_digest: card {OTHER_CODE}, here {here}" in report
    assert "yet the re-played games reproduce the card" in report
    assert (result.games, result.identical_games) == (GAMES, GAMES)


def test_other_code_is_named_as_the_likely_cause_of_a_mismatch(project):
    def forge(outcomes):
        outcomes[3]["transcript_digest"] = "0" * 64

    _rewrite_card(_card_path(project), forge, code={"code_digest": OTHER_CODE})
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MISMATCH
    assert result.first_difference.name == "outcomes[3] (seed 9000003).transcript_digest"
    assert result.code_differences[0].name == "code.code_digest"
    report = result.report()
    assert f"code differs: code.code_digest: card {OTHER_CODE}" in report
    assert "likely cause: the card's producing code differs from the code here (code.code_digest)" in report


def test_card_entry_missing_here_is_named_and_an_old_card_without_code_still_matches(project):
    _rewrite_card(_card_path(project), code={"entry": "stages/gone.py"})
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MATCH, result.report()
    assert "code differs: code.entry: card stages/gone.py, here missing" in result.report()
    _rewrite_card(_card_path(project), drop_code=True)
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MATCH and result.code_differences == [], result.report()
    assert "the card records no producing code" in result.report()


def _git_project(root: Path) -> list[str]:
    """A tiny git checkout: stages/s.py imports arena.a; returns the entry's closure."""
    (root / "arena").mkdir(parents=True)
    (root / "stages").mkdir()
    (root / "arena" / "__init__.py").write_text("")
    (root / "arena" / "a.py").write_text("X = 1\n")
    (root / "arena" / "b.py").write_text("Y = 2\n")
    (root / "stages" / "s.py").write_text("from arena import a\nfrom arena.b import Y\n")
    _run(root, "git", "init", "-q")
    _run(root, "git", "add", "-A")
    _run(root, "git", "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", "commit", "-qm", "code")
    return closure("stages/s.py", root)


def test_code_difference_names_the_uncommitted_files_when_head_made_the_card(tmp_path):
    root = tmp_path / "checkout"
    files = _git_project(root)
    assert files == ["arena/__init__.py", "arena/a.py", "arena/b.py", "stages/s.py"]
    card_code = {"entry": "stages/s.py", "code_digest": code_digest(files, root)}
    assert compare_code(card_code, root).differences == []
    (root / "arena" / "b.py").write_text("Y = 3\n")
    (difference,) = compare_code(card_code, root).differences
    assert difference.name == "code.code_digest" and difference.here == code_digest(files, root)
    assert "the uncommitted changes to arena/b.py make the difference" in difference.detail
    (difference,) = compare_code({**card_code, "code_digest": OTHER_CODE}, root).differences
    assert "which files differ cannot be told" in difference.detail


# --------------------------------------------------------------------------------------------- DVC


def _run(cwd, *args):
    done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"


def _dvc(cwd, *args):
    _run(cwd, sys.executable, "-m", "dvc", *args)


@pytest.fixture(scope="module")
def dvc_origin(pristine, tmp_path_factory):
    """The project as a git + DVC repository: the model tracked by DVC and pushed to a local remote."""
    root = tmp_path_factory.mktemp("dvc")
    origin = Path(shutil.copytree(pristine, root / "origin"))
    _run(origin, "git", "init", "-q")
    _run(origin, "git", "config", "user.email", "ci@example.invalid")
    _run(origin, "git", "config", "user.name", "ci")
    _dvc(origin, "init", "-q")
    _dvc(origin, "remote", "add", "-d", "store", str(root / "remote"))
    _dvc(origin, "add", "-q", "models/m")
    _dvc(origin, "push", "-q")
    _run(origin, "git", "add", "-A")
    _run(origin, "git", "commit", "-qm", "model and card")
    return origin


def _clone(origin: Path, dest: Path) -> Path:
    _run(dest.parent, "git", "clone", "-q", str(origin), str(dest))
    return dest


@pytest.mark.slow
def test_tampered_workspace_model_is_found_in_the_dvc_cache(dvc_origin, tmp_path):
    project = Path(shutil.copytree(dvc_origin, tmp_path / "project"))  # with its DVC cache
    weights = project / "models" / "m" / "model.safetensors"
    weights.unlink()  # DVC may have linked it to the cache: replace the file, never write through
    weights.write_bytes(b"tampered")
    result = verify_scorecard(_card_path(project), repo=project)
    assert result.verdict == MATCH, result.report()
    assert any("models/m in the workspace is not the pinned model (changed: model.safetensors)" in note
               for note in result.notes), result.notes
    assert weights.read_bytes() == b"tampered"  # the workspace is never changed


@pytest.mark.slow
def test_fresh_clone_fetches_the_model_from_the_remote(dvc_origin, tmp_path):
    clone = _clone(dvc_origin, tmp_path / "clone")
    assert not (clone / "models" / "m").exists()
    result = verify_scorecard(_card_path(clone), repo=clone)
    assert result.verdict == MATCH, result.report()
    assert "fetched models/m from the DVC remote" in result.notes
    assert not (clone / "models" / "m").exists()


@pytest.mark.slow
def test_model_nowhere_names_what_was_searched(dvc_origin, tmp_path):
    clone = _clone(dvc_origin, tmp_path / "clone")
    empty = tmp_path / "empty-remote"
    empty.mkdir()
    (clone / ".dvc" / "config.local").write_text(f"['remote \"store\"']\n    url = {empty}\n")
    result = verify_scorecard(_card_path(clone), repo=clone)
    difference = result.first_difference
    assert (difference.name, difference.here) == (f"{MODEL}: pin.model_hash", "no such directory")
    assert "models/m is missing; not in the DVC cache" in difference.detail
    assert "dvc fetch models/m: WARNING: Some of the cache files do not exist" in difference.detail


def _respec(path: Path, spec: str) -> None:
    """The card with its model's spec replaced (a hostile card), made self-consistent again."""
    path.write_text(path.read_text().replace(json.dumps(SPEC), json.dumps(spec)))
    _rewrite_card(path)


@pytest.mark.parametrize("spec", ["mlx:../outside", "mlx:models/../../outside", "mlx:{outside}", "mlx:escape",
                                  "mlx:models/m\n", "mlx:-rf"])
def test_a_card_spec_outside_the_project_is_refused_unread(project, monkeypatch, spec):
    """Issue 47 item 4: a hostile card's mlx: spec resolves only inside the project (or an allowed model dir)."""
    outside = project.parent / "outside"
    shutil.copytree(project / "models" / "m", outside)
    (project / "escape").symlink_to(outside)
    spec = spec.format(outside=outside)
    _respec(_card_path(project), spec)
    read = []
    monkeypatch.setattr("arena.eval.locate._model_hash", lambda path: read.append(path) or "x")
    result = verify_scorecard(_card_path(project), repo=project, fetch=False)
    assert result.verdict == MISMATCH and not result.ok and read == []
    difference = result.first_difference
    if "\n" in spec:  # a control character: the card itself is refused first (item 15), before any path is resolved
        assert difference.name == "card" and "control, format or invisible characters" in difference.detail
        return
    assert difference.name.endswith(": spec"), result.report()
    assert "not a path of plain names" in difference.detail or "ARENA_MODEL_DIRS" in difference.detail


def test_an_allowed_model_directory_is_searched(project, monkeypatch):
    outside = project.parent / "outside"
    shutil.copytree(project / "models" / "m", outside)
    _respec(_card_path(project), f"mlx:{outside}")
    monkeypatch.setenv("ARENA_MODEL_DIRS", str(project.parent))
    result = verify_scorecard(_card_path(project), repo=project, fetch=False)
    assert result.verdict == MATCH and result.ok, result.report()
