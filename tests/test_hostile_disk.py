"""A full disk while an artifact is written is one line, never an OSError traceback; a killed writer's temporary
is ignored by git."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_atomic_kill import _kill, _start_writer

import arena.core.artifacts
from arena.cli import main
from arena.core.errors import ArenaError
from arena.pipeline.stage import run

ROOT = Path(__file__).resolve().parents[1]


def _full_disk(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def full_disk(monkeypatch):
    monkeypatch.setattr(arena.core.artifacts.os, "fsync", _full_disk)


def test_a_full_disk_under_arena_play_out_is_one_line(tmp_path, full_disk):
    out = tmp_path / "shard" / "games.jsonl"
    result = CliRunner().invoke(main, ["play", "kuhn", "--p0", "random", "--p1", "first", "--games", "2",
                                       "--out", str(out), "--json"])
    assert result.exit_code == 2, (result.output, result.exception)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no space left" in errors[0] and str(out) in errors[0], result.output
    assert not out.exists() and not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_full_disk_inside_an_artifact_directory_names_the_artifact(tmp_path):
    out = tmp_path / "models" / "base"
    with pytest.raises(ArenaError, match=f"no space left on device.*{out}"):
        with arena.core.artifacts.atomic_dir(out) as tmp:
            (tmp / "a").write_text("a")
            _full_disk()
    assert not out.exists() and list(out.parent.iterdir()) == []


def test_a_stage_that_fills_the_disk_exits_2_with_one_line(capsys):
    def main() -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "artifacts/x/y.bin")

    with pytest.raises(SystemExit) as exit_:
        run(main)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: no space left on device") and "artifacts/x/y.bin" in err


def test_a_killed_writers_temporary_is_ignored_by_git(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    repo = tmp_path / "repo"
    (repo / "artifacts" / "rollouts" / "base").mkdir(parents=True)
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", ".gitignore"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    writer, tmp = _start_writer(repo / "artifacts" / "rollouts" / "base" / "shard-0")
    _kill(writer)
    old = tmp.with_name(tmp.name.replace(".writing-", ".old-"))
    old.mkdir()
    (old / "x").write_text("x")
    assert tmp.exists()
    status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all"], check=True,
                            capture_output=True, text=True).stdout
    assert status == "", status
