"""The project's committed default DVC remote works in a fresh clone with no set-up: push from one, pull in another."""

import shutil
from pathlib import Path

import dvc_tiny
import pytest

PROJECT_CONFIG = Path(__file__).resolve().parents[1] / ".dvc" / "config"


@pytest.mark.slow
def test_committed_default_remote_needs_no_setup(tmp_path):
    home = tmp_path / "home"  # a user whose ~/.cache does not exist yet
    home.mkdir()
    a = dvc_tiny.create(tmp_path / "a", tmp_path / "a.log")
    shutil.copy(PROJECT_CONFIG, a.path / ".dvc" / "config")  # the project's config, byte for byte
    a.extra_env["HOME"] = str(home)
    a.dvc("repro")
    a.dvc("push")
    a.run("git", "add", "-A")
    a.run("git", "commit", "-qm", "built")
    assert any((home / ".cache" / "arena" / "dvc-remote").rglob("*.dir"))

    b = dvc_tiny.clone(a, tmp_path / "b", tmp_path / "b.log")
    b.extra_env["HOME"] = str(home)
    b.dvc("pull")
    b.dvc("repro")
    assert b.runs() == []
    assert (b.path / "model" / "weights.json").read_bytes() == (a.path / "model" / "weights.json").read_bytes()
