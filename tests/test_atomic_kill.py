"""Atomic artifact writes under SIGKILL: a real writer process killed mid-write never leaves a partial output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arena.core.artifacts import atomic_dir, atomic_write_text, sweep_stale_temps
from arena.core.hashing import dir_manifest

ROOT = Path(__file__).resolve().parents[1]

# Writes two of three files into the artifact's temporary directory, says so, then waits to be killed.
WRITER = textwrap.dedent("""
    import sys, time
    from arena.core.artifacts import atomic_dir
    with atomic_dir(sys.argv[1]) as tmp:
        (tmp / "weights.bin").write_bytes(b"w" * 100_000)
        (tmp / "log.jsonl").write_text('{"step": 0}\\n')
        print(tmp, flush=True)
        time.sleep(120)
        (tmp / "meta.json").write_text("{}")
""")


def _start_writer(out: Path) -> tuple[subprocess.Popen, Path]:
    """A writer paused inside atomic_dir; returns it and the temporary directory it is filling."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = writer.stdout.readline().strip()
    assert line, f"writer exited early with {writer.wait()}"
    return writer, Path(line)


def _kill(writer: subprocess.Popen) -> None:
    writer.send_signal(signal.SIGKILL)
    assert writer.wait(timeout=10) == -signal.SIGKILL


def _temps(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.endswith(".tmp"))


def test_a_killed_first_write_leaves_no_output_and_its_temp_is_swept(tmp_path):
    out = tmp_path / "adapters" / "r1"
    writer, tmp = _start_writer(out)
    assert tmp.parent == out.parent and tmp.name.startswith(f".r1.writing-{writer.pid}-")
    _kill(writer)
    assert not out.exists()
    assert _temps(out.parent) == [tmp.name] and sorted(p.name for p in tmp.iterdir()) == ["log.jsonl", "weights.bin"]

    with atomic_dir(out) as fresh:
        (fresh / "weights.bin").write_bytes(b"v2")
    assert _temps(out.parent) == []
    assert sorted(dir_manifest(out)) == ["weights.bin"]


def test_a_killed_rewrite_keeps_the_previous_version_whole(tmp_path):
    out = tmp_path / "r1"
    with atomic_dir(out) as first:
        (first / "weights.bin").write_bytes(b"v1")
        (first / "meta.json").write_text("{}")
    before = dir_manifest(out, exclude=())
    writer, tmp = _start_writer(out)
    _kill(writer)
    assert dir_manifest(out, exclude=()) == before
    assert sweep_stale_temps(out) == [tmp]
    assert _temps(tmp_path) == []


def test_a_live_writers_temp_is_never_swept(tmp_path):
    out = tmp_path / "r1"
    writer, tmp = _start_writer(out)
    try:
        assert sweep_stale_temps(out) == []
        with atomic_dir(out) as mine:  # another writer of the same path finishes first: the live temp stays
            (mine / "weights.bin").write_bytes(b"mine")
        assert tmp.is_dir()
    finally:
        _kill(writer)
    assert sweep_stale_temps(out) == [tmp]


def test_a_dead_writers_temp_file_is_swept_and_other_names_are_left_alone(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    out = tmp_path / "r1.json"
    stale = tmp_path / f".r1.json.writing-{pid}-abc_123.tmp"
    stale.write_text('{"half": ')
    # Look-alikes that are not r1.json's temporaries: another artifact's, and a name without a pid.
    others = [tmp_path / f".r1.json.5.writing-{pid}-abc.tmp", tmp_path / ".r1.json.abc123.tmp"]
    for other in others:
        other.write_text("keep")
    atomic_write_text(out, '{"whole": true}\n')
    assert not stale.exists() and all(other.exists() for other in others)
    assert out.read_text() == '{"whole": true}\n'


@pytest.mark.parametrize("kind", ["writing", "old"])
def test_sweep_recognises_both_kinds_of_temporary(tmp_path, kind):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".r1.{kind}-{int(dead.stdout)}-x1_y.tmp"
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"partial")
    assert sweep_stale_temps(tmp_path / "r1") == [stale] and not stale.exists()


def test_a_killed_writer_not_yet_reaped_is_dead(tmp_path):
    # SIGKILLed but not yet waited for (a zombie, as an orphan is until its new parent reaps it): it answers
    # signal 0, yet it will never write again, so its temporary is stale.
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        zombie.kill()
        state = Path(f"/proc/{zombie.pid}/stat")
        while state.read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)
        stale = tmp_path / f".r1.writing-{zombie.pid}-z1.tmp"
        stale.mkdir()
        assert sweep_stale_temps(tmp_path / "r1") == [stale]
    finally:
        zombie.wait()
