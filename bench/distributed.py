"""Rollouts on Ray: Kuhn self-play games/s with 1 worker vs 2 side by side, Ray's per-task costs, and a model of N.

The rollouts are a GRPO round's (the embedded model against itself, compact view), played through
arena.play.distributed exactly as the round stage plays them: in this process, on one Ray worker, on two
(timed in alternation; the speed-up is the median of adjacent pairs). Measured beside them: an empty task's
round trip (Ray's per-task overhead), each actor's start and model load, and the driver's serial share
(splitting, merging, unpickling the records). From those, T(N) = serial + tasks(N) x per-task overhead / N +
work / N (tasks are whole 64-game cohorts, about four a worker) says where more workers stop paying.

    python bench/distributed.py [--deals 2048] [--reps 3] [--out bench/results/distributed]
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from common import ROOT, base_model, interleaved, log, paired_speedup

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx (here and in the workers, which inherit the environment)

TARGET = 1.6  # two workers' games/s over one worker's, on a 2-core machine
MACHINES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _matches(model: Path, deals: int) -> list:
    from arena.play.distributed import Match, Seat
    from arena.players.build import PlayerConfigs
    from arena.train.selfplay.rollouts import selfplay_schedule

    learner = Seat(f"mlx:{model.as_posix()}", PlayerConfigs())
    return [Match("kuhn", (learner, learner), tuple(selfplay_schedule(range(deals), 2)))]


def _round_trip(workers: Any, calls: int) -> float:
    """Seconds for one empty task (no games, scripted seats) sent to a worker and answered, one at a time."""
    from arena.play.distributed import Seat, Task

    task = Task(0, 0, "kuhn", (Seat("random"), Seat("first")), ())
    start = time.perf_counter()
    for _ in range(calls):
        workers.ray.get(workers.actors[0].play.remote(task))
    return (time.perf_counter() - start) / calls


def _serial_share(matches: list, tasks: list, results: list) -> float:
    """The driver's own seconds per run: split, merge, and unpickling every task's records (Ray does it here)."""
    from arena.play.distributed import merge, split

    blobs = [pickle.dumps(r) for r in results]
    start = time.perf_counter()
    split(matches, 2)
    merge(matches, tasks, [pickle.loads(b) for b in blobs])
    return time.perf_counter() - start


def _cold_start(ray: Any, size: int) -> tuple[Any, float]:
    """A new set of ``size`` workers, and the seconds until every one has started and answered."""
    from arena.play.rayexec import RayWorkers

    start = time.perf_counter()
    workers = RayWorkers(ray, size)
    return workers, time.perf_counter() - start


def _load_time(workers: Any, model: Path) -> float:
    """Seconds for every worker to build the model's player (a task with no games: the build alone), in parallel."""
    from arena.play.distributed import Seat, Task

    task = Task(0, 0, "kuhn", (Seat(f"mlx:{model.as_posix()}"), Seat("random")), ())
    start = time.perf_counter()
    workers.ray.get([actor.play.remote(task) for actor in workers.actors])
    return time.perf_counter() - start


def measure(deals: int, reps: int) -> dict[str, Any]:
    """Every number of the study, measured in this run."""
    import ray

    from arena.play.distributed import PlayerPool, merge, play_task, split
    from arena.play.rayexec import LOCAL_ENV

    os.environ.update(LOCAL_ENV)  # as arena starts a local instance
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)  # one 1-worker set + one 2-worker set
    with base_model() as (model, label):
        matches = _matches(model, deals)
        one, start_one = _cold_start(ray, 1)
        two, start_two = _cold_start(ray, 2)
        loads = {"one": _load_time(one, model), "two": _load_time(two, model)}
        tasks = {1: split(matches, 1), 2: split(matches, 2)}
        pool = PlayerPool()
        warm = split(_matches(model, 32), 1)[0]  # one cohort: first-call allocations, everywhere alike
        play_task(pool, warm)
        ray.get([actor.play.remote(warm) for actor in one.actors + two.actors])
        results: dict[str, Any] = {}

        def run(name: str, workers: Any, n: int):
            def go() -> None:
                results[name] = merge(matches, tasks[n], workers.run(tasks[n]))
            return go

        def local() -> None:
            results["here"] = merge(matches, tasks[1], [play_task(pool, t) for t in tasks[1]])

        log(f"distributed: {2 * deals} games, in-process / 1 worker / 2 workers, x {reps} (alternating)")
        times = interleaved({"here": local, "one": run("one", one, 1), "two": run("two", two, 2)}, reps)
        same = results["one"] == results["here"] == results["two"]
        round_trip = _round_trip(one, 50)
        serial = _serial_share(matches, tasks[2], two.run(tasks[2]))
    ray.shutdown()
    games = 2 * deals
    return {"games": games, "deals": deals, "reps": reps, "model": label, "times": times, "identical": same,
            "tasks": {str(n): len(t) for n, t in tasks.items()}, "cohorts": math.ceil(games / 64),
            "round_trip_s": round_trip, "serial_s": serial, "actor_start_s": {"one": start_one, "two": start_two},
            "model_load_s": loads,
            "speedup": paired_speedup(times["two"], times["one"]),
            "games_per_s": {k: games / statistics.median(v) for k, v in times.items()}}


def scaling_model(m: dict[str, Any]) -> list[dict[str, float]]:
    """T(N) from the measured costs: serial + ceil(tasks/N) x (per-task overhead + work per task)."""
    work = statistics.median(m["times"]["here"])
    rows = []
    for n in MACHINES:
        tasks = min(m["cohorts"], 4 * n)
        seconds = m["serial_s"] + math.ceil(tasks / n) * (m["round_trip_s"] + work / tasks)
        rows.append({"workers": n, "tasks": tasks, "seconds": seconds, "games_per_s": m["games"] / seconds})
    for row in rows:
        row["speedup"] = rows[0]["seconds"] / row["seconds"]
        row["efficiency"] = row["speedup"] / row["workers"]
    return rows


def _flattens(rows: list[dict[str, float]]) -> int | None:
    """The first N whose doubling adds less than 10% speed-up."""
    return next((a["workers"] for a, b in zip(rows, rows[1:], strict=False) if b["speedup"] < 1.1 * a["speedup"]),
                None)


def render(m: dict[str, Any], rows: list[dict[str, float]], load: tuple[float, float]) -> str:
    g = m["games_per_s"]
    verdict = "pass" if m["speedup"] >= TARGET else "**FAIL**"
    lines = [
        f"# Rollouts on Ray: 1 worker vs 2 ({m['games']} Kuhn self-play games, {m['model']})",
        "",
        f"Machine: {os.cpu_count()} cores; load average {load[0]:.2f} at the start, {load[1]:.2f} at the end "
        f"(other work on the machine slows every column alike; the ratio is of adjacent runs). "
        f"Records of all three runs byte-identical: {m['identical']}.",
        "",
        f"| run | games/s | tasks | median s (of {m['reps']}) |",
        "|---|---|---|---|",
        *(f"| {label} | {g[key]:.0f} | {m['tasks'][n]} | {statistics.median(m['times'][key]):.2f} |"
          for label, key, n in (("in this process (no Ray)", "here", "1"), ("Ray, 1 worker", "one", "1"),
                                ("Ray, 2 workers", "two", "2"))),
        "",
        f"2 workers / 1 worker: **{m['speedup']:.2f}x** (target >= {TARGET}x: {verdict}).",
        "",
        "| Ray's costs | measured |",
        "|---|---|",
        f"| an empty task's round trip (per-task overhead) | {1000 * m['round_trip_s']:.2f} ms |",
        f"| driver's serial share per run (split, merge, unpickle records) | {1000 * m['serial_s']:.1f} ms |",
        f"| start 1 / 2 actors | {m['actor_start_s']['one']:.2f} s / {m['actor_start_s']['two']:.2f} s |",
        f"| model load, 1 actor / 2 actors in parallel (once per actor) | {m['model_load_s']['one']:.2f} s / "
        f"{m['model_load_s']['two']:.2f} s |",
        "",
        "Model: T(N) = serial + ceil(tasks/N) x (round trip + work/tasks), tasks = min(cohorts, 4N), work = the "
        "in-process time; it assumes N identical workers with this machine's round trip (a network adds its own).",
        "",
        "| workers | tasks | predicted s | games/s | speed-up | efficiency |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {r['workers']} | {r['tasks']} | {r['seconds']:.3f} | {r['games_per_s']:.0f} | {r['speedup']:.1f}x "
              f"| {r['efficiency']:.0%} |" for r in rows]
    flat = _flattens(rows)
    lines += ["", f"Speed-up flattens (doubling N adds < 10%) after N = {flat}: past {m['cohorts']} cohorts there "
              "is no task left to give a new worker, and the serial share and the round trip stay."
              if flat else "Speed-up does not flatten within the modelled N."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=2048, help="deals, each played twice (default 2048)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "distributed",
                        help="writes OUT.md and OUT.json")
    args = parser.parse_args()
    start_load = os.getloadavg()[0]
    measured = measure(args.deals, args.reps)
    rows = scaling_model(measured)
    text = render(measured, rows, (start_load, os.getloadavg()[0]))
    from arena.core.artifacts import atomic_write_json, atomic_write_text

    atomic_write_text(args.out.with_suffix(".md"), text)
    atomic_write_json(args.out.with_suffix(".json"), {**measured, "model_rows": rows,
                                                      "load_average": [start_load, os.getloadavg()[0]]})
    print(text)
    return 0 if measured["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
