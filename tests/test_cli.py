"""The click CLI: every command has --help, user errors are one line with exit 2, `arena pin` prints JSON."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from arena.cli import main


def _commands(group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))


@pytest.mark.parametrize("command", list(_commands(main)))
def test_every_command_has_help(command):
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_pin_prints_json(base_model_dir):
    result = CliRunner().invoke(main, ["pin", str(base_model_dir)])
    assert result.exit_code == 0, result.output
    pin = json.loads(result.output)
    assert set(pin) >= {"model_hash", "quant", "config_hash", "versions"}
    assert pin["quant"] == "none"


def test_pin_of_missing_path_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["pin", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert "model directory not found" in result.output
    assert "Traceback" not in result.output


def test_python_dash_m_arena_cli_runs_the_commands():
    # Before the __main__ guard, `python -m arena.cli ...` exited 0 and printed nothing.
    done = subprocess.run([sys.executable, "-m", "arena.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Usage:" in done.stdout and "play" in done.stdout
