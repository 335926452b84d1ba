"""Ctrl-C stops a build: SIGINT to `./dev.sh repro`'s process (arena.pipeline.repro) stops the running round within
seconds, writes none of its outputs, and the stage says so in one line; `dvc repro` alone would ignore it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_copy import make_copy, repro_env, run_dvc, small_params

from arena.pipeline import stage

# A round slow enough to be caught running: many rollout deals, many training steps.
SLOW_ROUND = {"selfplay": {"deals_per_round": 4000, "group_size": 4}, "train": {"steps": 200}}


def test_a_stage_interrupted_says_so_in_one_line_and_exits_130(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["stages/round.py"])

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as exit_info:
        stage.run(interrupted)
    assert exit_info.value.code == stage.INTERRUPTED == 130
    err = capsys.readouterr().err
    assert "interrupted: round stopped, nothing of it written" in err and "Traceback" not in err


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _wait_for(log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not seen in {timeout} s:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)


@pytest.mark.slow
def test_sigint_to_the_build_stops_a_running_round_promptly_and_writes_nothing(tmp_path):
    repo = make_copy(tmp_path / "repo", small_params(**SLOW_ROUND))
    env = repro_env(repo)
    built = run_dvc(repo, env, "repro", "round0", timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    log = tmp_path / "build.log"
    with open(log, "wb") as handle:
        # Its own session, as a terminal's foreground job is apart from DVC's group: the signal goes to it alone.
        # Started with SIGINT ignored, as a script's background job is: the build must take it all the same.
        build = subprocess.Popen([sys.executable, "-m", "arena.pipeline.repro", "round@r1"], cwd=repo, env=env,
                                 stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
                                 preexec_fn=_ignoring_sigint)
    try:
        _wait_for(log, "memory bound for", 300)  # round 1 is running: its rollouts come next
        time.sleep(0.5)  # caught inside the rollouts, which take several seconds even on an idle machine
        sent = time.monotonic()
        build.send_signal(signal.SIGINT)
        code = build.wait(timeout=60)
        stopped = time.monotonic() - sent
    finally:
        if build.poll() is None:
            build.kill()
    text = log.read_text(errors="replace")
    assert code != 0, text[-2000:]
    assert stopped < 10, f"stopped {stopped:.1f} s after SIGINT"
    assert "stopping the build" in text and "interrupted: round stopped, nothing of it written" in text
    assert "round 1 done" not in text and "What the build learned" not in text
    for kind in ("rollouts", "adapters", "snapshots", "pools"):
        assert not (repo / "artifacts" / kind / "r1").exists()
        assert not list((repo / "artifacts" / kind).glob(".r1.*"))  # no temporary left (core.artifacts' names)
    assert not (repo / "artifacts" / "evals" / "r1.json").exists()
