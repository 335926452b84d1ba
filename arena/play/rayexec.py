"""Match tasks on Ray actors: each actor builds each player once; a task whose actor dies reruns on its restart.

Imported only when ``$ARENA_RAY_ADDRESS`` is set: ``local`` starts a Ray instance in this process (as many
workers as ``$ARENA_RAY_WORKERS``, default the CPU count), any other value (``auto``, ``HOST:PORT``) attaches
to a running cluster. Workers must run the driver's interpreter, libraries and BLAS (checked at start), since
those are in every pin; where a task runs is not.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas
from arena.core.errors import ArenaError
from arena.core.pins import versions
from arena.play.tasks import ADDRESS_ENV, LoadFailure, PlayerPool, Task, play_task

WORKERS_ENV = "ARENA_RAY_WORKERS"
# What the workers' results depend on besides the code: sent to every actor before it loads the BLAS.
FORWARDED = ("OPENBLAS_NUM_THREADS", "ARENA_BLAS", "ARENA_BLAS_CORETYPE")
# A worker that dies is restarted and its task rerun this many times before the run fails.
RETRIES = 3
# A Ray instance this process starts: no usage reports, and workers at the stage's own priority (Ray nices
# them to 15 by default, which on a busy machine starves the very work the stage waits for).
LOCAL_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0"}
INSTALL_HINT = "install with pip install -e '.[ray]'"

_pools: dict[str, RayWorkers] = {}


class MatchWorker:
    """One Ray actor: plays tasks with the players it has built (one build per seat for its whole life)."""

    def __init__(self, env: dict[str, str]) -> None:
        os.environ.update(env)
        ensure_fast_blas()  # before anything imports mlx in this process
        self.pool = PlayerPool()

    def environment(self) -> dict[str, str]:
        return versions()

    def play(self, task: Task) -> list[dict[str, Any]] | LoadFailure:
        # A spec's relative model path means the driver's file: every node must see it at the same path.
        if not os.path.isdir(task.cwd):
            raise ArenaError(f"this Ray worker has no directory {task.cwd} (the driver's working directory): "
                             "every machine must see the repository at the same path, e.g. on a shared filesystem")
        os.chdir(task.cwd)
        return play_task(self.pool, task)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ArenaError(f"{ADDRESS_ENV} is set but ray is not installed: {INSTALL_HINT}, "
                         f"or unset {ADDRESS_ENV} to play in this process") from None
    return ray


def worker_count(default: int, cpus: int | None = None) -> int:
    """``$ARENA_RAY_WORKERS`` as a positive integer, at most ``cpus`` (each worker takes one), else ``default``."""
    text = os.environ.get(WORKERS_ENV, "").strip()
    if not text:
        return max(default, 1)
    if not text.isdigit() or int(text) < 1:
        raise ArenaError(f"{WORKERS_ENV}={text!r} must be a positive integer (the number of Ray workers)")
    if cpus is not None and int(text) > cpus:
        raise ArenaError(f"{WORKERS_ENV}={text} but there are {cpus} CPUs: each worker takes one, so set "
                         f"{WORKERS_ENV} to at most {cpus} (or add nodes to the cluster)")
    return int(text)


def _check_reachable(address: str) -> None:
    """A HOST:PORT address must accept a connection now: ray.init would otherwise wait on it for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        raise ArenaError(f"{ADDRESS_ENV}={address!r}: expected local, auto or HOST:PORT of a Ray cluster's head")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as error:
        raise ArenaError(f"{ADDRESS_ENV}={address!r}: no Ray cluster answers there ({error}); start one with "
                         f"`ray start --head`, or unset {ADDRESS_ENV} to play in this process") from None


def connect(address: str) -> Any:
    """Ray, initialised for ``address``: a new local instance for ``local``, else the cluster there."""
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    for name, value in LOCAL_ENV.items():
        os.environ.setdefault(name, value)
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address == "local":
        cpus = os.cpu_count() or 1
        ray.init(num_cpus=worker_count(cpus, cpus), **options)
        return ray
    if address != "auto":
        _check_reachable(address)
    # A cluster's workers run this process's arena, shipped with the job: the code is part of every result.
    options["runtime_env"] = {"py_modules": [str(Path(__file__).resolve().parents[1])]}
    try:
        ray.init(address=address, **options)
    except ConnectionError as error:
        raise ArenaError(f"{ADDRESS_ENV}={address!r}: could not connect to a Ray cluster ({error}); start one "
                         "with `ray start --head` (a cluster with token authentication needs RAY_AUTH_MODE=token "
                         f"and its token here too), or unset {ADDRESS_ENV} to play in this process") from None
    return ray


class RayWorkers:
    """A set of MatchWorker actors on one cluster, kept for the life of this process."""

    def __init__(self, ray: Any, size: int) -> None:
        self.ray, self.size = ray, size
        env = {name: os.environ[name] for name in FORWARDED if name in os.environ}
        remote = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(MatchWorker)
        self.actors = [remote.remote(env) for _ in range(size)]
        self._check_environments()

    def _check_environments(self) -> None:
        here = versions()
        for there in self.ray.get([actor.environment.remote() for actor in self.actors]):
            differ = {k: (here.get(k), there.get(k)) for k in sorted(set(here) | set(there))
                      if here.get(k) != there.get(k)}
            if differ:
                raise ArenaError(f"a Ray worker's environment differs from this process's (here, there): {differ}; "
                                 "results would depend on placement, so run every worker with the same install")

    def close(self) -> None:
        """End the actors (their players with them)."""
        for actor in self.actors:
            self.ray.kill(actor)

    def run(self, tasks: Sequence[Task]) -> list[list[dict[str, Any]] | LoadFailure]:
        """Every task's result, in task order, whichever actor ran it."""
        from ray.exceptions import RayActorError
        from ray.util import ActorPool

        try:
            return list(ActorPool(self.actors).map(lambda actor, task: actor.play.remote(task), tasks))
        except RayActorError as error:
            raise ArenaError(f"a Ray worker died {RETRIES + 1} times on one task, so the run stops with nothing "
                             f"written: {error}") from None


def ray_workers(address: str) -> RayWorkers:
    """This process's workers on ``address`` (made on first use: ``$ARENA_RAY_WORKERS``, default the CPUs)."""
    if address not in _pools:
        ray = connect(address)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        size = worker_count(cpus, cpus)
        _pools[address] = RayWorkers(ray, size)
    return _pools[address]


def close_all() -> None:
    """End every worker this process made; the next run makes new ones (with the environment of then)."""
    while _pools:
        _pools.popitem()[1].close()
