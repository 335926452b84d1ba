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


def published_paths(pipeline: str = "dvc.yaml") -> tuple[str, ...]:
    """What a rebuild of ``pipeline`` must leave unchanged: the root lock, the pipeline's own lock, and every
    git-tracked result under artifacts/ (a pipeline in a subdirectory runs root stages upstream of it too)."""
    lock = (Path(pipeline).parent / "dvc.lock").as_posix()
    return tuple(dict.fromkeys(("dvc.lock", lock, "artifacts")))


def reproduction_check(repo: str | Path = ".", published: tuple[str, ...] | None = None,
                       pipeline: str = "dvc.yaml", stages: tuple[str, ...] = ()) -> ReproResult:
    """``dvc repro --force PIPELINE`` (the stages of that dvc.yaml and the ones upstream of them), or with
    ``stages`` only those stages of it and the ones upstream of them (a stated cut of a pipeline too long to rebuild
    whole); then ``dvc status -q PIPELINE`` must be clean and the committed lock files and git-tracked results (DVC
    metrics with ``cache: false``) must be unchanged, with no new untracked result file."""
    repo = Path(repo)
    if not (repo / pipeline).is_file():
        return ReproResult([f"no pipeline file {pipeline} in {repo}: name a dvc.yaml (dvc.yaml, realmodel/dvc.yaml)"])
    published = published_paths(pipeline) if published is None else published
    result = ReproResult()
    # --force: a fresh clone has every git-tracked result (cache: false) in place, so without it DVC would
    # skip exactly the stages whose outputs we want to see recomputed.
    targets = [f"{pipeline}:{stage}" for stage in stages] or [pipeline]
    repro = _run(["dvc", "repro", "--force", *targets], repo)
    if repro.returncode != 0:
        result.problems.append(f"dvc repro failed (exit {repro.returncode}):\n{repro.stderr[-4000:]}")
        return result
    # Plain `dvc status` exits 0 even when the pipeline is dirty; -q reports it in the exit code. Only this
    # pipeline's stages: another dvc.yaml downstream of the root's stages is checked by its own run.
    if _run(["dvc", "status", "-q", pipeline], repo).returncode != 0:
        status = _run(["dvc", "status", pipeline], repo).stdout
        result.problems.append(f"pipeline {pipeline} not up to date after dvc repro:\n{status}")
    diff = _run(["git", "diff", "--exit-code", "--stat", "--", *published], repo)
    if diff.returncode != 0:
        result.diff = _run(["git", "diff", "--", *published], repo).stdout
        result.problems.append(f"reproduced results differ from the committed ones:\n{diff.stdout}")
    untracked = _run(["git", "ls-files", "--others", "--exclude-standard", "--", *published], repo).stdout.split()
    if untracked:
        result.problems.append("result files that are not committed: " + ", ".join(untracked))
    return result
