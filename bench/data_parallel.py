"""Figure data_parallel: a GRPO step in one process against the same step in two (mlx.launch, ring on 127.0.0.1).

Both sides train the same steps from the same model on the same decisions and global batch (the parent plays the
rollouts once and hands them over as a pickle). One process is ``python bench/data_parallel.py --case ...``, two are
``mlx.launch --backend ring -n 2 -- python bench/data_parallel.py --case ...``; the cases alternate (one, two,
one, ...), each in fresh processes, and each reports its median step time (after one untimed warm-up step) and the
digest of its final weights, so the figure also checks that the two trained byte-identical weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT, Row, base_model, log, paired_speedup, throughput_row

# quick: the test suite's smoke run (a 1-layer model, a few micro-batches); full: the embedded default model on
# TicTacToe decisions (compact view: distinct boards, so a micro-batch's prompts are mostly distinct; Kuhn's 12
# compact prompts fit one pass whatever the batch), a 128-decision batch in ~9 micro-batches of 1,024 tokens.
SIZES = {
    True: {"game": "tictactoe", "deals": 4, "batch_size": 16, "budget": 160, "steps": 1, "reps": 1},
    False: {"game": "tictactoe", "deals": 32, "batch_size": 128, "budget": 1024, "steps": 3, "reps": 3},
}
TINY = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1, "intermediate_size": 64,
        "vocab_size": 512}


def _weights_digest(model) -> str:
    """sha256 over the model's parameters, by name: equal digests mean byte-identical weights."""
    import mlx.core as mx
    import numpy as np
    from mlx.utils import tree_flatten

    digest = hashlib.sha256()
    for name, value in sorted(tree_flatten(model.parameters())):
        digest.update(name.encode())
        digest.update(np.array(value.astype(mx.float32)).tobytes())
    return digest.hexdigest()


def run_case(model_dir: Path, decisions: Path, size: dict[str, Any]) -> dict[str, Any] | None:
    """One side's steps on this rank (a world of one when not launched); rank 0's timings and final digest."""
    import numpy as np

    from arena.players.mlx import MLXPlayer
    from arena.train.config import TrainConfig
    from arena.train.selfplay.dataparallel import World, init_world
    from arena.train.selfplay.update import GRPOUpdate

    world = init_world() if "MLX_RANK" in os.environ else World()
    data = pickle.loads(decisions.read_bytes())
    config = TrainConfig(batch_size=size["batch_size"], max_batch_tokens=size["budget"])
    update = GRPOUpdate(MLXPlayer(model_dir), config, 1.0, world)
    rng = np.random.default_rng(0)
    times, passes = [], 0
    for step in range(size["steps"] + 1):  # step 0 warms up: first-call allocations, Adam's state, the ring
        picked = np.sort(rng.choice(len(data.chosen), size=config.batch_size, replace=False))
        observations = [data.observations[i] for i in picked]
        passes = len(list(update.policy.scoring_passes(observations, config.max_batch_tokens)))
        start = time.perf_counter()
        update(observations, data.chosen[picked], data.logp_old[picked], data.logp_old[picked],
               data.advantages[picked], config.lr)
        if step:
            times.append(time.perf_counter() - start)
    if not world.is_writer:
        return None
    return {"step_s": statistics.median(times), "samples": times, "processes": world.size,
            "micro_batches_last_step": passes, "digest": _weights_digest(update.policy.model)}


def free_port_pair() -> int:
    """A port p with p and p + 1 free on 127.0.0.1 (the ring listens on one port per rank)."""
    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no two adjacent free ports on 127.0.0.1")


def _side(processes: int, model_dir: Path, decisions: Path, quick: bool, out: Path) -> float:
    """One case in fresh processes; returns its median step time (and leaves its result in ``out``)."""
    case = [sys.executable, __file__, "--case", str(model_dir), str(decisions), out.name] + (["--quick"] * quick)
    if processes > 1:
        launcher = Path(sys.executable).parent / "mlx.launch"
        case = [str(launcher), "--backend", "ring", "-n", str(processes), "--starting-port",
                str(free_port_pair()), "--", *case]
    subprocess.run(case, cwd=out.parent, check=True)
    return json.loads(out.read_text())["step_s"]


def _measure(model_dir: Path, decisions: Path, quick: bool, tmp: Path) -> tuple[dict[str, list[float]], dict]:
    """The two sides in alternation, ``reps`` times; every case's step times and digest."""
    times: dict[str, list[float]] = {"one": [], "two": []}
    results: dict[str, list[dict[str, Any]]] = {"one": [], "two": []}
    for rep in range(SIZES[quick]["reps"]):
        for name, processes in (("one", 1), ("two", 2)):
            out = tmp / f"{name}-{rep}.json"
            times[name].append(_side(processes, model_dir, decisions, quick, out))
            results[name].append(json.loads(out.read_text()))
    return times, results


def _decisions(model_dir: Path, size: dict[str, Any], out: Path) -> int:
    """The rollouts both sides train on (self-play seats against random, two plays of each deal), pickled for the
    cases; their count."""
    from common import KUHN_EVAL_SEED

    from arena.play.match import play_match
    from arena.players.build import make_player
    from arena.players.mlx import MLXPlayer
    from arena.train.config import TrainConfig
    from arena.train.selfplay.rollouts import selfplay_schedule
    from arena.train.selfplay.step import learner_decisions

    player = MLXPlayer(model_dir)
    schedule = selfplay_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + size["deals"]), 2)
    records = play_match(size["game"], (player, make_player("random")), schedule, progress=False)
    data = learner_decisions(records, player.spec, TrainConfig())
    if len(data.chosen) < size["batch_size"]:
        raise RuntimeError(f"only {len(data.chosen)} decisions for a batch of {size['batch_size']}: raise deals")
    out.write_bytes(pickle.dumps(data))
    return len(data.chosen)


def _row(times: dict[str, list[float]], results: dict[str, list[dict[str, Any]]], decisions: int,
         size: dict[str, Any], model_label: str) -> Row:
    """Steps/s of two processes against one; the ratio is paired (adjacent cases), the digests must agree."""
    digests = {r["digest"] for side in results.values() for r in side}
    passes = results["one"][-1]["micro_batches_last_step"]
    one, two = statistics.median(times["one"]), statistics.median(times["two"])
    note = (f"batch {size['batch_size']} of {decisions} compact-view {size['game']} decisions, train.max_batch_tokens "
            f"= {size['budget']} ({passes} micro-batches in the last step), full fine-tuning; median step "
            f"{one * 1e3:.0f} ms in one process, {two * 1e3:.0f} ms in two; weights after the same steps "
            f"{'byte-identical' if len(digests) == 1 else 'DIFFERENT'} in every case; model: {model_label}")
    return throughput_row(
        "data_parallel", f"GRPO step, {size['batch_size']} decisions: 2 processes vs 1 (mlx.launch, ring, 127.0.0.1)",
        "steps/s", 1 / two, 1 / one, ("2 processes", "1 process"), None, note,
        paired_speedup(times["two"], times["one"]), samples_one_s=times["one"], samples_two_s=times["two"],
        identical_weights=len(digests) == 1, micro_batches=passes, **{k: v for k, v in size.items()})


def _figure_on(model_dir: Path, label: str, quick: bool, tmp: Path) -> Row:
    size = SIZES[quick]
    decisions = _decisions(model_dir, size, tmp / "decisions.pickle")
    log(f"data_parallel: {decisions} decisions; {size['reps']} x (1 process, 2 processes), "
        f"{size['steps']} timed steps each")
    times, results = _measure(model_dir, tmp / "decisions.pickle", quick, tmp)
    return _row(times, results, decisions, size, label)


def figure(quick: bool) -> list[Row]:
    """The two sides on the same decisions (``quick``: a 1-layer model, one step a case; not the figure)."""
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="arena-dp-") as name:
        tmp = Path(name)
        if quick:
            build_base(BaseConfig(**TINY), tmp / "tiny")
            return [_figure_on(tmp / "tiny", "1-layer qwen2 (hidden 32)", quick, tmp)]
        with base_model() as (model_dir, label):
            row = _figure_on(model_dir, label, quick, tmp)
    _write_results(row, load_start, os.getloadavg())
    return [row]


def _write_results(row: Row, load_start: tuple[float, ...], load_end: tuple[float, ...]) -> None:
    """bench/results/data_parallel.md and .json: this run's table, note and the load it ran under."""
    from dataclasses import asdict

    from common import render_table

    from arena.core.artifacts import atomic_write_json

    machine = f"{os.cpu_count()} cores, load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end"
    lines = ["# Data-parallel GRPO step: 1 process vs 2 (issue 16)", "",
             "`python bench/data_parallel.py` (or `python bench/run.py --only data_parallel`); every case in fresh "
             "processes, the two sides alternating.", "", f"Machine: {machine}.", "",
             render_table([asdict(row)]), "", f"- {row.name}: {row.note}"]
    (ROOT / "bench" / "results" / "data_parallel.md").write_text("\n".join(lines) + "\n")
    atomic_write_json(ROOT / "bench" / "results" / "data_parallel.json",
                      {"machine": {"cores": os.cpu_count(), "load_average_start": list(load_start),
                                   "load_average_end": list(load_end)}, "rows": [asdict(row)]})


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", nargs=3, metavar=("MODEL", "DECISIONS", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not the published figure)")
    args = parser.parse_args(argv)
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    if args.case:
        model, decisions, out = args.case
        result = run_case(Path(model), Path(decisions), SIZES[args.quick])
        if result is not None:
            Path(out).write_text(json.dumps(result))
        return 0
    from dataclasses import asdict

    from common import render_table

    print(render_table([asdict(row) for row in figure(args.quick)]))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
