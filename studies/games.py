"""Study: a GRPO recipe on any game (or a mix), each round's exact measures per game, timed round by round.

Usage (from the repository root):
    python studies/games.py --preset presets/tictactoe.yaml --rounds 4 [--work /tmp/games-study] [--out DIR]
    python studies/games.py -S 'selfplay.mix=[{id: leduc}]' --rounds 2 --name kuhn+leduc

It runs the pipeline's own round functions (arena.pipeline.rounds.round_zero / round_n) on params.yaml with the
preset's (or ``-S``'s) dotted-key overrides and ``--rounds`` unrolled rounds, in its own artifacts directory: the
same rounds as ``dvc exp run $(arena preset FILE)``, without the baseline and final tournaments. Writes
``OUT/NAME.json`` (each round's eval@r file and wall seconds), ``OUT/NAME.md`` (a table per game, from
arena.report.gameplots) and ``OUT/NAME.png`` (a curve per game per exact measure).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx

# isort: split
from arena.core.config import load_params  # noqa: E402
from arena.pipeline.presets import apply_preset, preset_overrides  # noqa: E402


def study_params(base: dict[str, Any], changes: dict[str, Any], rounds: int) -> dict[str, Any]:
    """params.yaml with the overrides and ``rounds`` unrolled rounds."""
    params = apply_preset(base, changes)
    params["rounds"] = {f"r{n}": {"n": n, "prev": n - 1} for n in range(1, rounds + 1)}
    return params


def base_dir_name(base: dict[str, Any]) -> str:
    """The scratch directory name of a base config: ``base`` for the default, else one per distinct config."""
    import hashlib

    if base.get("source", "embedded") == "embedded":
        return "base"
    return "base-" + hashlib.sha256(json.dumps(base, sort_keys=True).encode()).hexdigest()[:12]


def run_study(params: dict[str, Any], root: Path, base_model: Path, rounds: int) -> list[dict[str, Any]]:
    """Round 0 .. ``rounds`` (rounds already built in ``root`` are kept: round n reads only round n - 1's
    artifacts, so resuming builds the same bytes); each round's eval with its wall seconds."""
    from arena.pipeline.params import validate_all
    from arena.pipeline.rounds import RoundPaths, round_n, round_zero

    validate_all(params)
    timing_file = root / "seconds.json"
    seconds = json.loads(timing_file.read_text()) if timing_file.exists() else {}
    for n in range(rounds + 1):
        if (root / "evals" / f"r{n}.json").exists() and str(n) in seconds:
            continue
        if n == 0:
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(base_model, root / "models" / "base")
        start, cpu = time.perf_counter(), time.process_time()
        (round_zero(RoundPaths(root, 0, 0), params) if n == 0 else round_n(RoundPaths(root, n, n - 1), params))
        # CPU seconds (every thread of this process) estimate the wall time on an idle machine: one BLAS thread.
        # Peak RSS is the process's high-water mark so far (a round's own peak where it is the largest yet).
        seconds[str(n)] = {"wall": round(time.perf_counter() - start, 1), "cpu": round(time.process_time() - cpu, 1),
                           "load": round(os.getloadavg()[0], 1),
                           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
        timing_file.write_text(json.dumps(seconds))
        print(f"[games study] round {n}: {seconds[str(n)]}", file=sys.stderr)
    return [{**json.loads((root / "evals" / f"r{n}.json").read_text()), "seconds": seconds[str(n)]["wall"],
             "cpu_seconds": seconds[str(n)]["cpu"], "load": seconds[str(n)]["load"],
             **({"peak_rss_mb": seconds[str(n)]["peak_rss_mb"]} if "peak_rss_mb" in seconds[str(n)] else {})}
            for n in range(rounds + 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", help="a presets/ file of dotted-key overrides")
    parser.add_argument("-S", dest="settings", action="append", default=[], help="key=value, as dvc exp run -S")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--name", help="output name (default: the preset's stem)")
    parser.add_argument("--work", default="/tmp/games-study", help="scratch directory for the run's artifacts")
    parser.add_argument("--out", default="studies/results", help="directory for NAME.json, NAME.md and NAME.png")
    args = parser.parse_args(argv)
    from arena.report.gameplots import exact_tables, plot_exact_rounds
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    name = args.name or Path(args.preset).stem
    base_params = load_params("params.yaml")
    work = Path(args.work)
    changes = preset_overrides(args.preset, args.settings)
    params = study_params(base_params, changes, args.rounds)
    # The base the recipe names (a preset may set base.source, e.g. smollm2), built once per distinct base config.
    base_model = work / base_dir_name(params["base"])
    if not (base_model / "meta.json").exists():
        build_base(BaseConfig(**params["base"]), base_model)
    started = time.perf_counter()
    evals = run_study(params, work / name, base_model, args.rounds)
    command = shlex.join(["python", "studies/games.py", *(argv if argv is not None else sys.argv[1:])])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps({"command": command, "overrides": changes, "evals": evals},
                                                 indent=1, sort_keys=True) + "\n")
    (out / f"{name}.png").write_bytes(plot_exact_rounds(evals, title=name))
    wall, cpu = sum(e["seconds"] for e in evals) / 60, sum(e["cpu_seconds"] for e in evals) / 60
    loads = [e["load"] for e in evals]
    header = [f"# {name}: {args.rounds} rounds", "", f"`{command}`", "",
              f"Overrides: `{json.dumps(changes)}`. Rounds 0-{args.rounds} took {wall:.1f} min of wall time and "
              f"{cpu:.1f} min of CPU time (the estimate for an idle machine: one BLAS thread) on {os.cpu_count()} "
              f"cores shared with other work, load average {min(loads):.1f}-{max(loads):.1f} at the rounds' ends "
              f"(this invocation: {time.perf_counter() - started:.0f} s).", ""]
    (out / f"{name}.md").write_text("\n".join(header + exact_tables(evals)) + "\n")
    print("\n".join(exact_tables(evals)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
