"""Broken model directories: one line naming the directory and the problem, before any game is played."""

import json
import shutil

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.core.errors import ArenaError
from arena.players.mlx import load_model, load_tokenizer


def _truncate(model):
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])


def _garbage(model):
    (model / "model.safetensors").write_bytes(b"garbage" * 100)


def _config(**changes):
    def edit(model):
        config = json.loads((model / "config.json").read_text())
        config.update(changes)
        (model / "config.json").write_text(json.dumps(config))
    return edit


BROKEN = {
    "truncated weights": (_truncate, "model.safetensors"),
    "garbage weights": (_garbage, "model.safetensors"),
    "unknown model_type": (_config(model_type="nosuch"), "nosuch"),
    "shape mismatch": (_config(hidden_size=64), "shape"),
    "no tokenizer.json": (lambda model: (model / "tokenizer.json").unlink(), "tokenizer.json"),
    "config.json a list": (lambda model: (model / "config.json").write_text("[]"), "config.json"),
}


@pytest.fixture
def broken(base_model_dir, tmp_path, request):
    model = tmp_path / "broken"
    shutil.copytree(base_model_dir, model)
    edit, _ = BROKEN[request.param]
    edit(model)
    return model, BROKEN[request.param][1]


@pytest.mark.parametrize("broken", sorted(BROKEN), indirect=True)
def test_broken_model_is_one_line_naming_the_directory(broken):
    model, problem = broken
    with pytest.raises(ArenaError, match=problem) as error:
        load_model(model)
    assert str(model) in str(error.value) and "\n" not in str(error.value)
    result = CliRunner().invoke(main, ["play", "kuhn", "--p0", f"mlx:{model}", "--p1", "random", "--games", "2"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "errored" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(model) in lines[0] and problem in lines[0], result.output


def test_tokenizer_alone_is_refused_without_tokenizer_json(base_model_dir, tmp_path):
    model = tmp_path / "m"
    shutil.copytree(base_model_dir, model)
    (model / "tokenizer.json").unlink()
    with pytest.raises(ArenaError, match="tokenizer.json"):
        load_tokenizer(model)
