"""`arena preset` prints flags DVC's -S parser accepts: the README's `dvc exp run -n NAME $(arena preset FILE)` run as
written, in bash, in a small DVC project holding arena's params.yaml, and the params DVC applied checked."""

import shutil
import subprocess
import sys
from pathlib import Path

import dvc_tiny
import pytest
import yaml

from arena.core.config import ConfigError, load_params
from arena.pipeline.presets import apply_preset, checked_flags, dvc_flag, load_preset

ROOT = Path(__file__).resolve().parents[1]
# One stage that reads every section a preset may set and copies params.yaml to its output.
DVC_YAML = "stages:\n  dump:\n    cmd: python -c \"import shutil; shutil.copy('params.yaml', 'applied.yaml')\"\n" \
           "    params: [base, shards, baseline, selfplay, train, roundeval, tournament, rest, pool]\n" \
           "    outs: [applied.yaml]\n"


def _project(tmp_path: Path) -> dvc_tiny.TinyRepo:
    path = tmp_path / "project"
    path.mkdir()
    shutil.copy(ROOT / "params.yaml", path / "params.yaml")
    shutil.copytree(ROOT / "presets", path / "presets")
    (path / "dvc.yaml").write_text(DVC_YAML)
    repo = dvc_tiny.TinyRepo(path, tmp_path / "runs.log")
    repo.extra_env = {"HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}  # this worktree's arena, a known ~
    repo.run("git", "init", "-q")
    repo.dvc("init", "-q")
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "project")
    return repo


def _expected(preset: Path, home: Path) -> dict:
    overrides = {key: (str(home) + value[1:] if isinstance(value, str) and value.startswith("~/") else value)
                 for key, value in load_preset(preset).items()}
    return apply_preset(load_params(ROOT / "params.yaml"), overrides)


@pytest.mark.parametrize("name", ["qwen3-4b-4bit", pytest.param("tictactoe-oracles", marks=pytest.mark.slow),
                                  pytest.param("nim-openings", marks=pytest.mark.slow),
                                  pytest.param("negotiation-mix", marks=pytest.mark.slow),
                                  pytest.param("smollm2-think", marks=pytest.mark.slow)])
def test_readme_command_runs_through_dvc(tmp_path, name):
    repo = _project(tmp_path)
    # README's line, verbatim but for the preset's name: bash splits $(...) into words and removes no quotes.
    command = f"dvc exp run -n {name} $(arena preset presets/{name}.yaml)"
    done = repo.run("bash", "-c", command, check=False)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    applied = yaml.safe_load((repo.path / "applied.yaml").read_text())
    assert applied == yaml.safe_load(yaml.safe_dump(_expected(ROOT / "presets" / f"{name}.yaml", tmp_path / "home")))
    assert load_params(repo.path / "params.yaml") == _expected(ROOT / "presets" / f"{name}.yaml", tmp_path / "home")


def test_flags_are_bare_hydra_without_shell_quotes(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    flags = checked_flags(ROOT / "presets" / "qwen3-4b-4bit.yaml", load_params(ROOT / "params.yaml"))
    assert f"-S base.source={tmp_path}/models/Qwen3-4B-4bit " in flags and "-S selfplay.mix=[] " in flags
    assert "'" not in flags and '"' not in flags


def test_values_hydra_would_misread_are_quoted_the_hydra_way():
    params = {"a": {"b": 1}}
    assert dvc_flag("a.b", "true", params) == "-S a.b='true'"      # bare: a bool
    assert dvc_flag("a.b", "1e3", params) == "-S a.b='1e3'"        # bare: a float
    assert dvc_flag("a.b", "x,y", params) == "-S a.b='x,y'"        # bare: a sweep over x and y
    assert dvc_flag("a.b", [{"id": "nim", "variant": {}}], params) == "-S a.b=[{id:nim,variant:{}}]"
    assert dvc_flag("a.c", 5e-05, params) == "-S ++a.c=5e-05"      # a key params.yaml lacks is added
    with pytest.raises(ConfigError, match="a.b = 'two words' holds whitespace"):
        dvc_flag("a.b", "two words", params)


def test_cli_prints_one_line(tmp_path):
    done = subprocess.run([str(Path(sys.executable).parent / "arena"), "preset", "presets/standin.yaml"], cwd=ROOT,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "HOME": str(tmp_path)})
    assert done.returncode == 0 and done.stdout.count("\n") == 1 and "-S base.source=standin" in done.stdout


def test_a_map_replaces_the_one_in_params():
    params = {"selfplay": {"variant": {"opening": 4, "rounds": 3}}}
    flag = dvc_flag("selfplay.variant", {"opening": 6}, params)
    assert flag == "-S ~selfplay.variant -S ++selfplay.variant={opening:6}"


def _doc_commands() -> list[str]:
    text = (ROOT / "docs" / "own-models.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_own_model_commands_run_as_written(tmp_path):
    from conftest import STANDIN_SMALL

    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    download, prompt, experiment = _doc_commands()
    repo = _project(tmp_path)
    build_base(BaseConfig(**STANDIN_SMALL), tmp_path / "home" / "models" / "Qwen3-4B-4bit")  # what hf would fetch
    assert download.startswith("hf download mlx-community/Qwen3-4B-4bit --local-dir ~/")
    assert "--local-dir" in repo.run("bash", "-c", download.split(" mlx-community")[0] + " --help").stdout
    shown = repo.run("bash", "-c", prompt).stdout
    assert "<|im_start|>system" in shown and "[bet]" in shown
    repo.run("bash", "-c", experiment)
    applied = yaml.safe_load((repo.path / "applied.yaml").read_text())
    assert applied["base"]["source"] == f"{tmp_path}/home/models/Qwen3-4B-4bit"
