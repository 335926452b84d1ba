"""studies/games.py builds the base its recipe names (a preset's base.source), not params.yaml's."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))  # not a package

# isort: split

import games

from arena.core.config import load_params
from arena.pipeline.presets import preset_overrides


def test_a_presets_base_source_gets_its_own_base_directory():
    base = load_params(Path(__file__).parents[1] / "params.yaml")
    default = games.study_params(base, {}, 1)["base"]
    smol = games.study_params(base, preset_overrides("presets/smollm2-fullwidth.yaml", []), 1)["base"]
    assert smol["source"] == "smollm2"  # the study's params carry the preset's base, which main now builds
    assert games.base_dir_name(default) == "base"
    assert games.base_dir_name(smol) != "base" and games.base_dir_name(smol) == games.base_dir_name(dict(smol))


def test_settings_follow_the_preset_and_a_malformed_one_names_the_fix():
    import pytest

    from arena.core.config import ConfigError

    changes = preset_overrides("presets/smollm2-lsp.yaml", ["train.lr=5e-4", "lsp.puzzles=[nim]", "loop=rest"])
    assert changes["train.lr"] == 5e-4 and changes["lsp.puzzles"] == ["nim"]  # the -S value wins over the preset's
    assert changes["loop"] == "rest"  # a top-level key, as dvc exp run -S loop=rest
    assert changes["base.source"] == "smollm2"
    with pytest.raises(ConfigError, match="key=value"):
        preset_overrides(None, ["train.lr"])
