"""Hostile environment variables (issue 47 items 9 and 10): one-line errors, and no silent BLAS swap in a stage.

Each case runs a stage-like child process (``arena.pipeline.stage.run``, what every stage script calls), since the
BLAS is set up once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from arena.core.errors import ArenaError

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the OpenBLAS swap is Linux-only")

STAGE = "from arena.pipeline.stage import run\nrun(lambda: print('ran'))\n"
# The same stage with the copy of OpenBLAS into the cache failing as on a full disk.
FULL_DISK = ("import errno, shutil\n"
             "def full(*args, **kwargs):\n"
             "    raise OSError(errno.ENOSPC, 'No space left on device')\n"
             "shutil.copy2 = full\n") + STAGE


def _stage(tmp_path, code: str = STAGE, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "ARENA_CACHE_DIR": str(tmp_path / "cache"), **env}
    for name, value in env.items():
        if value is None:
            environ.pop(name)
    return subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120)


def _one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "ran" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("value", ["abc", "-3", "0", "2.5", ""])
def test_a_bad_blas_thread_count_is_one_line(tmp_path, value):
    _one_line_error(_stage(tmp_path, OPENBLAS_NUM_THREADS=value), f"OPENBLAS_NUM_THREADS={value!r}",
                    "positive integer")


@pytest.mark.parametrize("name, allowed", [("ARENA_BLAS", "reference"), ("ARENA_JIT", "plain")])
def test_an_unknown_switch_value_is_one_line(tmp_path, name, allowed):
    _one_line_error(_stage(tmp_path, **{name: "bogus"}), f"{name}='bogus'", allowed)


def test_the_switches_still_work(tmp_path):
    for env in ({"ARENA_BLAS": "reference"}, {"ARENA_JIT": "plain"}, {"OPENBLAS_NUM_THREADS": "2"}):
        done = _stage(tmp_path, **env)
        assert done.returncode == 0 and done.stdout.strip() == "ran", (env, done.stderr)


def test_more_ray_workers_than_cpus_is_refused(monkeypatch):
    from arena.play.rayexec import worker_count

    monkeypatch.setenv("ARENA_RAY_WORKERS", "64")
    with pytest.raises(ArenaError, match=r"ARENA_RAY_WORKERS=64 .* 2 CPUs.*at most 2"):
        worker_count(2, cpus=2)
    monkeypatch.setenv("ARENA_RAY_WORKERS", "2")
    assert worker_count(2, cpus=2) == 2


def test_a_full_cache_disk_fails_a_stage_instead_of_swapping_the_blas(tmp_path):
    _one_line_error(_stage(tmp_path, FULL_DISK), "No space left on device", "reference BLAS", "ARENA_CACHE_DIR")
    assert not any((tmp_path / "cache").rglob("*.tmp*"))


def test_outside_a_stage_a_full_cache_disk_still_only_warns(tmp_path):
    code = FULL_DISK.replace(STAGE, "from arena.core.blas import blas_info\nprint(blas_info()['blas'])\n")
    done = _stage(tmp_path, code)
    assert done.returncode == 0 and done.stdout.strip() == "reference" and "No space left" in done.stderr
