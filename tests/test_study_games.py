"""studies/games.py builds the base its recipe names (a preset's base.source), not params.yaml's."""

import importlib.util
from pathlib import Path

from arena.core.config import load_params


def _games():
    spec = importlib.util.spec_from_file_location("study_games", Path(__file__).parents[1] / "studies" / "games.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_presets_base_source_gets_its_own_base_directory():
    games = _games()
    base = load_params(Path(__file__).parents[1] / "params.yaml")
    default = games.study_params(base, {}, 1)["base"]
    smol = games.study_params(base, games.overrides("presets/smollm2-fullwidth.yaml", []), 1)["base"]
    assert smol["source"] == "smollm2"  # the study's params carry the preset's base, which main now builds
    assert games.base_dir_name(default) == "base"
    assert games.base_dir_name(smol) != "base" and games.base_dir_name(smol) == games.base_dir_name(dict(smol))
