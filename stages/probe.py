"""DVC stage `probe`: the reward-audit gate; exits 1 (stopping `dvc repro`) if any check fails."""

import argparse
import sys
from pathlib import Path

# This repository's own `arena` first, before any installed one (an editable install of another checkout, or the
# workspace's when DVC runs an experiment in a temporary copy): python puts stages/, not the root, on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arena.core.artifacts import atomic_write_json
from arena.core.config import load_section
from arena.pipeline.stage import checked_params, run
from arena.play.config import ProbeConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out", default="artifacts/probe/audit.json")
    args = parser.parse_args()
    from arena.play.probe import print_checks, run_probe

    checks = run_probe(load_section(ProbeConfig, "probe", checked_params(args.params)), progress=True)
    print_checks(checks)
    if not all(check.passed for check in checks):
        sys.exit(1)
    atomic_write_json(args.out, {"checks": [check.__dict__ for check in checks], "passed": True})


if __name__ == "__main__":
    run(main)
