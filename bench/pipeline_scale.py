"""DVC's own cost against the pipeline's shape: no-op and first-run `dvc repro` at 8, 32 and 64 rounds.

Each generated project has arena's shape (a head of base/probe/shard stages, then the rounds, then the
tournaments and the report) with stub commands that only write their outputs, so every second measured
is DVC's: parsing, hashing the code deps, checking and rewriting dvc.lock. Two ways to depend on code:

* ``listed``: each stage lists its ``--code-deps`` module files (its import closure) as dependencies;
* ``manifest`` (what dvc.yaml does): a ``code`` stage depends on the code directory and writes one small
  manifest per script; every stage depends on its own manifest only.

    python bench/pipeline_scale.py [--rounds 8 32 64] [--shapes 5 2 1] [--designs listed manifest] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HEAD = ("base", "probe", "shard0", "shard1", "round0")
TAIL = ("baseline", "tournament", "report")
STEPS = ("rollouts", "train", "fuse", "pool", "eval")


def _stub(out: str) -> str:
    return f"mkdir -p {out} && echo ok > {out}/x"


def _stage(out: str, deps: list[str]) -> dict:
    return {"cmd": _stub(out), "deps": deps, "params": ["section"], "outs": [out]}


def project_yaml(rounds: int, per_round: int, code_deps: int, design: str = "listed") -> dict:
    """dvc.yaml with ``per_round`` stages per round (the round's steps grouped into that many stages)."""
    code = [f"code/m{i}.py" for i in range(code_deps)]
    stages = {}
    if design == "manifest":
        stages["code"] = {"cmd": _stub("out/code"), "deps": ["code"], "outs": ["out/code"]}
        code = ["out/code/x"]
    stages.update({name: _stage(f"out/{name}", code) for name in HEAD})
    groups = [STEPS[i::per_round] for i in range(per_round)]
    for n in range(1, rounds + 1):
        previous = f"out/r{n - 1}-{len(groups) - 1}" if n > 1 else "out/round0"
        for g, _group in enumerate(groups):
            deps = [*code, previous if g == 0 else f"out/r{n}-{g - 1}"]
            stages[f"r{n}-{g}"] = _stage(f"out/r{n}-{g}", deps)
    last = f"out/r{rounds}-{len(groups) - 1}"
    for name in TAIL:
        stages[name] = _stage(f"out/{name}", [*code, last])
    return {"stages": stages}


def _run(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def measure(rounds: int, per_round: int, code_deps: int, design: str = "listed") -> dict:
    """First-run and no-op repro seconds for one shape, in a fresh git + DVC project."""
    with tempfile.TemporaryDirectory(prefix="arena-scale-") as tmp:
        root = Path(tmp)
        (root / "code").mkdir()
        for i in range(code_deps):
            (root / "code" / f"m{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 50)
        (root / "params.yaml").write_text("section: {a: 1}\n")
        (root / "dvc.yaml").write_text(yaml.safe_dump(project_yaml(rounds, per_round, code_deps, design),
                                                      sort_keys=False))
        dvc = [sys.executable, "-m", "dvc"]
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run([*dvc, "init", "-q"], cwd=root, check=True)
        subprocess.run([*dvc, "config", "--local", "core.site_cache_dir", str(root / ".site")], cwd=root, check=True)
        subprocess.run([*dvc, "config", "--local", "core.analytics", "false"], cwd=root, check=True)
        stages = len(project_yaml(rounds, per_round, code_deps, design)["stages"])
        first = _run([*dvc, "repro", "-q"], root)
        noop = min(_run([*dvc, "repro", "-q"], root) for _ in range(2))
        return {"rounds": rounds, "stages_per_round": per_round, "design": design, "stages": stages,
                "first_run_s": round(first, 2), "noop_s": round(noop, 2),
                "lock_kb": round((root / "dvc.lock").stat().st_size / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--shapes", type=int, nargs="+", default=[5, 2, 1], help="stages per round")
    parser.add_argument("--designs", nargs="+", default=["listed", "manifest"], choices=["listed", "manifest"])
    parser.add_argument("--code-deps", type=int, default=40, help="modules in a stage's closure")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    rows = []
    print("| rounds | stages/round | code deps | stages | first run (s) | no-op (s) | dvc.lock (KiB) |")
    print("|---|---|---|---|---|---|---|")
    for rounds in args.rounds:
        for per_round in args.shapes:
            for design in args.designs:
                row = measure(rounds, per_round, args.code_deps, design)
                rows.append(row)
                print(f"| {row['rounds']} | {row['stages_per_round']} | {design} | {row['stages']} | "
                      f"{row['first_run_s']} | {row['noop_s']} | {row['lock_kb']} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
