"""A GRPO round's training over several processes: ``mlx.launch`` runs this module on every rank (ARENA_TRAIN_LAUNCH).

Where training runs is never configuration: the round stage reads the environment variable ``ARENA_TRAIN_LAUNCH``
(mlx.launch's own arguments, e.g. ``--backend ring -n 2`` or ``--hostfile hosts.json``), and params.yaml, pins and
meta.json are the same whether it is set or not. The result is byte-identical too (``dataparallel.py``).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.errors import ArenaError

LAUNCH_ENV = "ARENA_TRAIN_LAUNCH"


def launch_args() -> list[str] | None:
    """mlx.launch's arguments from ``ARENA_TRAIN_LAUNCH`` (None when unset or blank: train in this process)."""
    value = os.environ.get(LAUNCH_ENV, "").strip()
    if not value:
        return None
    args = shlex.split(value)
    if "--" in args or any(a.endswith(".py") for a in args):
        raise ArenaError(f"{LAUNCH_ENV} = {value!r} holds a command; give only mlx.launch's own options, "
                         "e.g. '--backend ring -n 2' or '--backend ring --hostfile hosts.json'")
    return args


def launch_for(loop: str, objective: str = "grpo") -> list[str] | None:
    """mlx.launch's arguments for a round of ``loop`` (None: train in this process); only loop: selfplay with
    train.objective: grpo runs launched (NeuRD's targets and fit run in one process)."""
    args = launch_args()
    if args is not None and loop != "selfplay":
        raise ArenaError(f"{LAUNCH_ENV} is set, but data-parallel training runs loop: selfplay only (this is loop: "
                         f"{loop}): unset {LAUNCH_ENV}")
    if args is not None and objective != "grpo":
        raise ArenaError(f"{LAUNCH_ENV} is set, but data-parallel training runs train.objective: grpo only (this is "
                         f"{objective}): unset {LAUNCH_ENV}, or add -S train.objective=grpo")
    return args


def _launcher() -> str:
    """The mlx.launch beside this Python (the same environment the ranks run in)."""
    beside = Path(sys.executable).parent / "mlx.launch"
    if beside.exists():
        return str(beside)
    raise ArenaError(f"{LAUNCH_ENV} is set but there is no mlx.launch beside {sys.executable}: install mlx "
                     f"into this environment, or unset {LAUNCH_ENV} to train in one process")


def launch_command(args: Sequence[str], job: Mapping[str, Any]) -> list[str]:
    """The command that runs ``job`` on every rank mlx.launch starts (each rank gets the job on its argv)."""
    module = "arena.train.selfplay.launch"
    return [_launcher(), *args, "--", sys.executable, "-m", module, json.dumps(job, sort_keys=True)]


def launch_train_round(args: Sequence[str], snapshot: str | Path, reference: str | Path, shard: str | Path,
                       round_number: int, params: Mapping[str, Any], out_dir: str | Path,
                       pool_file: str | Path | None = None) -> dict[str, Any]:
    """``train_round`` on the ranks mlx.launch starts with ``args``; rank 0 writes ``out_dir``. Returns its summary.

    The job carries this process's producing code, so meta.json names the stage script whichever process writes it.
    """
    from arena.core.code import producing_code

    job = {"code": producing_code(), "snapshot": str(snapshot), "reference": str(reference), "shard": str(shard),
           "round": round_number, "params": dict(params), "out": str(out_dir),
           "pool": None if pool_file is None else str(pool_file)}
    command = launch_command(args, job)
    print(f"[arena] train r{round_number}: data-parallel, mlx.launch {shlex.join(args)}", file=sys.stderr, flush=True)
    done = subprocess.run(command, check=False)
    if done.returncode != 0 or not (Path(out_dir) / "summary.json").exists():
        raise ArenaError(f"data-parallel training of round {round_number} failed (mlx.launch exit "
                         f"{done.returncode}; the ranks' errors are above): check {LAUNCH_ENV} = "
                         f"{os.environ.get(LAUNCH_ENV)!r}, or unset it to train in one process")
    return json.loads((Path(out_dir) / "summary.json").read_text())


def run_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """One rank's part of a launched job: the same ``train_round`` as one process, in this rank's world."""
    from arena.core.config import load_section
    from arena.core.seeds import SeedsConfig
    from arena.train.config import SelfPlayConfig, TrainConfig
    from arena.train.selfplay.dataparallel import init_world
    from arena.train.selfplay.step import train_round

    world = init_world()
    params = job["params"]
    return train_round(job["snapshot"], job["reference"], job["shard"], job["round"],
                       load_section(SelfPlayConfig, "selfplay", params), load_section(TrainConfig, "train", params),
                       job["out"], progress=world.is_writer, pool_file=job["pool"],
                       seeds=load_section(SeedsConfig, "seeds", params), world=world, code=job["code"])


def main(argv: Sequence[str]) -> None:
    """Entry point of each rank: OpenBLAS first (as every stage does), then the job on argv."""
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    if len(argv) != 1:
        raise SystemExit("usage: python -m arena.train.selfplay.launch JOB_JSON (the round stage builds the job)")
    try:
        run_job(json.loads(argv[0]))
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
