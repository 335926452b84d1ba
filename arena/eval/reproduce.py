"""The reproduction check CI runs: rebuild every stage from scratch and demand byte-identical published results."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ReproResult:
    """What the check found: ``problems`` is empty when everything reproduced byte for byte."""

    problems: list[str] = field(default_factory=list)
    diff: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True)


def reproduction_check(repo: str | Path = ".", published: tuple[str, ...] = ("dvc.lock", "artifacts")) -> ReproResult:
    """``dvc repro --force``; then ``dvc status -q`` must be clean and the committed lock file and git-tracked results
    (DVC metrics with ``cache: false``) must be unchanged, with no new untracked result file."""
    repo = Path(repo)
    result = ReproResult()
    # --force: a fresh clone has every git-tracked result (cache: false) in place, so without it DVC would
    # skip exactly the stages whose outputs we want to see recomputed.
    repro = _run(["dvc", "repro", "--force"], repo)
    if repro.returncode != 0:
        result.problems.append(f"dvc repro failed (exit {repro.returncode}):\n{repro.stderr[-4000:]}")
        return result
    # Plain `dvc status` exits 0 even when the pipeline is dirty; -q reports it in the exit code.
    if _run(["dvc", "status", "-q"], repo).returncode != 0:
        status = _run(["dvc", "status"], repo).stdout
        result.problems.append(f"pipeline not up to date after dvc repro:\n{status}")
    diff = _run(["git", "diff", "--exit-code", "--stat", "--", *published], repo)
    if diff.returncode != 0:
        result.diff = _run(["git", "diff", "--", *published], repo).stdout
        result.problems.append(f"reproduced results differ from the committed ones:\n{diff.stdout}")
    untracked = _run(["git", "ls-files", "--others", "--exclude-standard", "--", *published], repo).stdout.split()
    if untracked:
        result.problems.append("result files that are not committed: " + ", ".join(untracked))
    return result
