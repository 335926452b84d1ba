"""A `dvc repro` SIGKILLed while DVC rewrites dvc.lock (in place) cuts the lock short; arena's guard restores it.

Each stage of a small DVC project runs through ``arena.pipeline.stage.run``, which copies the whole lock aside
(``arena.pipeline.lockguard``); ``python -m arena.pipeline.lockguard``, which ``./dev.sh repro``'s driver
(``arena.pipeline.repro``) runs first, puts it back when the lock does not load, and the rerun finishes the build
(issue 47 item 2). A kill while DVC rewrites its stage-lock file ``.dvc/tmp/rwlock`` (CI met one) is repaired by
the same guard: emptied when no dvc runs in the project, kept (with the PIDs named) while one does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dvc_tiny import TinyRepo
from repo_copy import kill_group

from arena.core.errors import ArenaError
from arena.pipeline.lockguard import GOOD, RWLOCK, lock_problem, repair_rwlock, restore_lock, rwlock_problem

STAGE = (
    "import os, sys, time\n"
    "from arena.pipeline.stage import run\n"
    "def main():\n"
    "    item = sys.argv[1]\n"
    "    time.sleep(float(os.environ.get('STAGE_SLEEP', '0')))\n"
    "    os.makedirs('out', exist_ok=True)\n"
    "    open(f'out/{item}.txt', 'w').write(item * 3)\n"
    "    open(os.environ['RUN_LOG'], 'a').write(item + '\\n')\n"
    "run(main)\n"
)


def _project(path: Path, stages: int) -> TinyRepo:
    path.mkdir(parents=True)
    (path / "stage.py").write_text(STAGE)
    items = ", ".join(f"s{k:03d}" for k in range(stages))
    (path / "dvc.yaml").write_text(
        f"stages:\n  work:\n    foreach: [{items}]\n    do:\n      cmd: python stage.py ${{item}}\n"
        "      deps: [stage.py]\n      outs: [\"out/${item}.txt\"]\n")
    repo = TinyRepo(path, path.parent / "runs.log")
    repo.extra_env["OPENBLAS_NUM_THREADS"] = "1"
    repo.run("git", "init", "-q")
    repo.dvc("init", "-q")
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "lock project")
    return repo


def _guarded_repro(repo: TinyRepo) -> None:
    """What ./dev.sh repro does: restore the lock if it needs it, then dvc repro."""
    repo.run(sys.executable, "-m", "arena.pipeline.lockguard")
    repo.dvc("repro")


def _assert_built(repo: TinyRepo, stages: int) -> None:
    assert lock_problem(repo.path / "dvc.lock") is None
    for k in range(stages):
        assert (repo.path / "out" / f"s{k:03d}.txt").read_text() == f"s{k:03d}" * 3
    assert "changed" not in repo.dvc("status").stdout


def _kill_mid_lock_write(repo: TinyRepo, attempts: int = 8) -> bool:
    """Run ``dvc repro -f`` and SIGKILL it the moment the lock shrinks (DVC opened it with "w+"); True if caught."""
    lock = repo.path / "dvc.lock"
    full = lock.stat().st_size
    for _ in range(attempts):
        process = subprocess.Popen([sys.executable, "-m", "dvc", "repro", "-f"], cwd=repo.path, env=repo.env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        caught = False
        while process.poll() is None:
            try:
                if lock.stat().st_size < full:
                    os.killpg(process.pid, signal.SIGKILL)
                    caught = True
                    break
            except FileNotFoundError:
                continue
        kill_group(process)
        if caught and lock_problem(lock) is not None:
            return True
        _guarded_repro(repo)
    return False


def test_a_lock_cut_anywhere_is_restored_and_the_build_resumes(tmp_path):
    stages = 6
    repo = _project(tmp_path / "p", stages)
    repo.dvc("repro")
    lock = repo.path / "dvc.lock"
    whole = lock.read_bytes()
    assert (repo.path / GOOD).is_file()
    for cut in range(0, len(whole), max(1, len(whole) // 60)):
        lock.write_bytes(whole[:cut])
        restore_lock(repo.path)
        assert lock_problem(lock) is None, cut
    for cut in range(len(whole) // 2, len(whole)):  # a cut DVC refuses (some cuts still load: those stages rerun)
        lock.write_bytes(whole[:cut])
        if lock_problem(lock) is not None:
            break
    assert repo.dvc("status", check=False).returncode != 0  # what a user meets after the kill
    repo.clear_runs()
    _guarded_repro(repo)
    _assert_built(repo, stages)
    assert len(repo.runs()) < stages  # stages in the good copy are not rerun (the rest may come from the run cache)


def test_a_repro_killed_while_dvc_writes_the_lock_resumes(tmp_path):
    stages = 6
    repo = _project(tmp_path / "p", stages)
    repo.dvc("repro")
    assert _kill_mid_lock_write(repo), "never caught DVC mid-way through writing dvc.lock"
    _guarded_repro(repo)
    _assert_built(repo, stages)


@pytest.mark.parametrize("cut", ["", '{"write": {"/p/out/s000.txt": {"pid": 4', '{"read": []}'])
def test_a_cut_stage_lock_file_is_emptied_and_the_build_resumes(tmp_path, cut):
    repo = _project(tmp_path / "p", 2)
    repo.dvc("repro")
    (repo.path / RWLOCK).write_text(cut)
    assert rwlock_problem(repo.path / RWLOCK) is not None
    for out in (repo.path / "out").glob("*.txt"):
        out.unlink()
    failed = repo.dvc("repro", check=False)
    assert failed.returncode != 0 and "RWLock" in failed.stdout + failed.stderr  # what the CI kill left
    _guarded_repro(repo)
    _assert_built(repo, 2)
    assert rwlock_problem(repo.path / RWLOCK) is None


def test_a_cut_stage_lock_file_is_kept_while_dvc_runs_in_the_project(tmp_path):
    repo = _project(tmp_path / "p", 1)
    (repo.path / RWLOCK).write_text('{"write": ')
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "dvc"], cwd=repo.path)
    try:  # Popen returns once the child has exec'd, so its command line and cwd are already visible
        with pytest.raises(ArenaError, match=rf"dvc still runs in .*{other.pid}: "):
            repair_rwlock(repo.path)
        assert (repo.path / RWLOCK).read_text() == '{"write": '
    finally:
        other.kill()
        other.wait()
    assert "emptied" in repair_rwlock(repo.path)
    assert repair_rwlock(repo.path) is None


@pytest.mark.slow
def test_kills_at_many_points_of_a_repro_always_resume(tmp_path):
    stages, kills = 12, 16
    repo = _project(tmp_path / "p", stages)
    started = time.monotonic()
    repo.dvc("repro")
    whole_s = time.monotonic() - started
    cut = 0
    for k in range(1, kills + 1):
        for out in (repo.path / "out").glob("*.txt"):
            out.unlink()
        process = subprocess.Popen([sys.executable, "-m", "dvc", "repro", "-f"], cwd=repo.path, env=repo.env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(whole_s * k / (kills + 1))
        kill_group(process)
        cut += lock_problem(repo.path / "dvc.lock") is not None
        _guarded_repro(repo)
        _assert_built(repo, stages)
    print(f"{cut} of {kills} kills over {whole_s:.1f} s left dvc.lock cut short; every one resumed")


def test_the_build_driver_restores_a_cut_lock_before_dvc_runs(tmp_path, monkeypatch):
    from arena.pipeline import repro

    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    good = "schema: '2.0'\nstages: {}\n"
    (tmp_path / GOOD).write_text(good)
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages:\n  a: [")
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(repro, "build", lambda args: seen.append((tmp_path / "dvc.lock").read_text()) or 1)
    assert repro.main([]) == 1 and seen == [good]
