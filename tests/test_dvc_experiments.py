"""DVC experiments on the tiny project: `dvc exp run -S` overrides, queued runs (`dvc queue start`), `dvc exp show`."""

import json
import time

import dvc_tiny
import pytest

pytestmark = pytest.mark.slow

QUEUE_DEADLINE_S = 300


def _experiments(repo: dvc_tiny.TinyRepo) -> dict[str, dict]:
    """Experiment name -> {params, score} from `dvc exp show --json`."""
    found = {}
    for baseline in json.loads(repo.dvc("exp", "show", "--json").stdout):
        for experiment in baseline.get("experiments") or []:
            for rev in experiment["revs"]:
                data = rev["data"]
                found[rev["name"]] = {
                    "params": data["params"]["params.yaml"]["data"],
                    "score": data["metrics"]["metrics/score.json"]["data"]["score"],
                }
    return found


def _wait_for_queue(repo: dvc_tiny.TinyRepo) -> str:
    deadline = time.monotonic() + QUEUE_DEADLINE_S
    while time.monotonic() < deadline:
        status = repo.dvc("queue", "status").stdout
        if "Queued" not in status and "Running" not in status:
            return status
        time.sleep(1)
    raise AssertionError(f"queued experiments still pending after {QUEUE_DEADLINE_S} s:\n{status}")


def test_overrides_and_queued_experiments(tmp_path):
    repo = dvc_tiny.create(tmp_path / "project", tmp_path / "runs.log")
    repo.dvc("repro")
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "baseline")
    repo.clear_runs()

    repo.dvc("exp", "run", "-S", "train.beta=0.0", "-n", "beta0")
    assert repo.runs() == ["train", "evaluate"]  # prepare does not read train.beta: not rerun
    repo.clear_runs()

    repo.dvc("exp", "run", "--queue", "-S", "train.beta=0.5", "-n", "q-beta05")
    repo.dvc("exp", "run", "--queue", "-S", "train.beta=1.0", "-S", "prepare.n=3", "-n", "q-n3")
    try:
        repo.dvc("queue", "start", "-j", "1")
        status = _wait_for_queue(repo)
    finally:
        repo.dvc("queue", "stop", check=False)  # workers exit once the queue drains; make sure on failure too
    assert "Failed" not in status, status
    assert sorted(repo.runs()) == sorted(["train", "evaluate", "prepare", "train", "evaluate"])

    # score = w / (1 + w) with w = beta * sum(range(n)).
    assert _experiments(repo) == {
        "beta0": {"params": {"prepare": {"n": 5}, "train": {"beta": 0.0}}, "score": 0.0},
        "q-beta05": {"params": {"prepare": {"n": 5}, "train": {"beta": 0.5}}, "score": 5.0 / 6.0},
        "q-n3": {"params": {"prepare": {"n": 3}, "train": {"beta": 1.0}}, "score": 0.75},
    }
    repo.dvc("exp", "apply", "q-beta05")
    assert "beta: 0.5" in (repo.path / "params.yaml").read_text()
    assert json.loads((repo.path / "metrics" / "score.json").read_text()) == {"score": 5.0 / 6.0}
