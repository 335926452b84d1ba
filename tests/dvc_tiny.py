"""A tiny three-stage DVC project (prepare -> train -> evaluate) for remote and experiment tests, with a run log.

Each stage appends its name to the file ``$RUN_LOG`` when it really runs, so a test can tell a stage that
ran from one DVC skipped or restored from its run cache.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = {
    "prepare.py": (
        "import json, os, yaml\n"
        "n = yaml.safe_load(open('params.yaml'))['prepare']['n']\n"
        "os.makedirs('data', exist_ok=True)\n"
        "json.dump(list(range(n)), open('data/numbers.json', 'w'))\n"
        "open(os.environ['RUN_LOG'], 'a').write('prepare\\n')\n"
    ),
    "train.py": (
        "import json, os, yaml\n"
        "beta = yaml.safe_load(open('params.yaml'))['train']['beta']\n"
        "numbers = json.load(open('data/numbers.json'))\n"
        "os.makedirs('model', exist_ok=True)\n"
        "json.dump({'w': beta * sum(numbers)}, open('model/weights.json', 'w'))\n"
        "open(os.environ['RUN_LOG'], 'a').write('train\\n')\n"
    ),
    "evaluate.py": (
        "import json, os\n"
        "w = json.load(open('model/weights.json'))['w']\n"
        "os.makedirs('metrics', exist_ok=True)\n"
        "json.dump({'score': w / (1.0 + w)}, open('metrics/score.json', 'w'))\n"
        "open(os.environ['RUN_LOG'], 'a').write('evaluate\\n')\n"
    ),
}
PARAMS = "prepare:\n  n: 5\ntrain:\n  beta: 0.1\n"
DVC_YAML = """\
stages:
  prepare:
    cmd: python prepare.py
    deps: [prepare.py]
    params: [prepare]
    outs: [data]
  train:
    cmd: python train.py
    deps: [train.py, data]
    params: [train]
    outs: [model]
  evaluate:
    cmd: python evaluate.py
    deps: [evaluate.py, model]
    metrics:
      - metrics/score.json
"""


class TinyRepo:
    """A working copy of the tiny project: runs git and dvc in it with its own run log."""

    def __init__(self, path: Path, run_log: Path) -> None:
        self.path = path
        self.run_log = run_log
        self.extra_env: dict[str, str] = {}

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # The stages' `python` and `dvc` must be this environment's, as `./dev.sh` arranges for users.
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        env["RUN_LOG"] = str(self.run_log)
        env["DVC_NO_ANALYTICS"] = "1"
        for role in ("AUTHOR", "COMMITTER"):
            env[f"GIT_{role}_NAME"] = "ci"
            env[f"GIT_{role}_EMAIL"] = "ci@example.invalid"
        env.update(self.extra_env)
        return env

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(list(args), cwd=self.path, env=self.env(), capture_output=True, text=True)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def dvc(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(sys.executable, "-m", "dvc", *args, check=check)

    def runs(self) -> list[str]:
        """Stage names in the order they ran, since the log was last cleared."""
        return self.run_log.read_text().split() if self.run_log.exists() else []

    def clear_runs(self) -> None:
        self.run_log.unlink(missing_ok=True)

    def set_param(self, old: str, new: str) -> None:
        params = self.path / "params.yaml"
        text = params.read_text()
        assert old in text, f"{old!r} not in params.yaml"
        params.write_text(text.replace(old, new))


def create(path: Path, run_log: Path) -> TinyRepo:
    """A git + DVC repository holding the tiny project, committed, with no stage run yet."""
    path.mkdir(parents=True)
    for name, text in SCRIPTS.items():
        (path / name).write_text(text)
    (path / "params.yaml").write_text(PARAMS)
    (path / "dvc.yaml").write_text(DVC_YAML)
    repo = TinyRepo(path, run_log)
    repo.run("git", "init", "-q")
    repo.dvc("init", "-q")
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "tiny project")
    return repo


def clone(origin: TinyRepo, path: Path, run_log: Path) -> TinyRepo:
    """A fresh git clone: no DVC cache, no outputs, only what git tracks."""
    subprocess.run(["git", "clone", "-q", str(origin.path), str(path)], check=True, capture_output=True)
    return TinyRepo(path, run_log)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the server binds it right after)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 20.0) -> None:
    """Return once something accepts connections on ``port``; fail if ``process`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited with {process.returncode} before listening on port {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


def stop(process: subprocess.Popen) -> None:
    """Stop a server this test started, by its own PID: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
