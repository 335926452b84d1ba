"""A Ray cluster of its own for the tests: a head with N CPUs in a child process, ended by its own PID."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from arena.play.rayexec import LOCAL_ENV

ROOT = Path(__file__).resolve().parents[1]
# The head runs until its stdin closes, then shuts Ray down (ending the processes it started).
HEAD = (
    "import sys, ray\n"
    "ray.init(num_cpus=int(sys.argv[1]), include_dashboard=False)\n"
    "print(ray.get_runtime_context().gcs_address, flush=True)\n"
    "sys.stdin.read()\n"
    "ray.shutdown()\n"
)

# Token authentication (Ray's default for a local head since 2.59) also for the drivers that attach to it.
AUTH = {"RAY_AUTH_MODE": "token"}


class RayCluster:
    """``with RayCluster(2, tmp) as address:`` -- a fresh head with two worker CPUs, its GCS address."""

    def __init__(self, cpus: int, cache_dir: Path) -> None:
        self.cpus, self.cache_dir = cpus, cache_dir
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> str:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
               "ARENA_CACHE_DIR": str(self.cache_dir), **LOCAL_ENV, **AUTH}
        self.process = subprocess.Popen([sys.executable, "-c", HEAD, str(self.cpus)], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        address = self.process.stdout.readline().strip()
        if not address:
            self.__exit__()
            raise AssertionError(f"the Ray head exited ({self.process.returncode}) before giving its address")
        return address

    def __exit__(self, *_: object) -> None:
        if self.process is None:
            return
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
