"""A throwaway copy of this repository with small params, and real `dvc repro` runs in it (for the pipeline tests)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from arena.core.hashing import digest_file, dir_manifest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
DVC = str(VENV_BIN / "dvc")
# Everything a `dvc repro` needs; artifacts are rebuilt, tests and benchmarks are not part of the pipeline, nor is the
# real-model pipeline (realmodel/dvc.yaml: its stages hang off the root `code` stage, and `dvc status` would list
# them, never built, in every copy).
SKIPPED = ("artifacts/", "bench/", "tests/", "dvc.lock", "realmodel/")


def small_params(**overrides: dict[str, Any]) -> dict[str, Any]:
    """params.yaml for a whole pipeline in about a minute on two cores: a 1-layer model, few games, one round."""
    params: dict[str, Any] = {
        "base": {"source": "embedded", "quant": "none", "seed": 0, "hidden_size": 32, "num_layers": 1,
                 "num_heads": 2, "num_kv_heads": 1, "intermediate_size": 64, "vocab_size": 512,
                 "max_position_embeddings": 128},
        "seeds": {"train_start": 0, "train_end": 1_000_000},
        # The oracle's edge over random in Kuhn needs thousands of games to clear the gate (about 2 s).
        "probe": {"games": ["kuhn"], "games_per_check": 20, "kuhn_games_per_check": 4000, "seed": 5_000_000},
        "shards": {"game": "kuhn", "variant": {}, "players": ["mlx:artifacts/models/base", "random"], "shards": [0],
                     "games_per_shard": 16, "view": "compact", "temperature": 1.0},
        "eval": {"games": ["kuhn"], "seeds": [9_000_000, 9_000_010]},
        "frontier": {},
        "baseline": {"players": ["mlx:artifacts/models/base", "random"], "frontier": [], "view": "compact",
                     "temperature": 1.0},
        "selfplay": {"game": "kuhn", "variant": {}, "deals_per_round": 8, "group_size": 2, "view": "compact",
                     "temperature": 1.0},
        "train": {"method": "full", "lr": 1.0e-3, "lr_decay": "inverse_sqrt", "steps": 2, "batch_size": 16,
                  "beta": 0.05, "clip_eps": 0.2, "reference": "base", "normalise_std": False,
                  "drop_zero_groups": True, "invalid_penalty": 0.0, "lora_rank": 8, "lora_layers": 4,
                  "lora_scale": 20.0, "seed": 0},
        "pool": {"sampling": "latest", "lag": 2, "window": 0, "scripted": []},
        "roundeval": {"opponents": ["random"], "games": 4, "view": "compact", "temperature": 1.0},
        "rounds": {"r1": {"n": 1, "prev": 0}},
        "tournament": {"players": ["mlx:artifacts/models/base", "mlx:artifacts/snapshots/r1", "random"],
                       "frontier": [], "view": "compact", "temperature": 1.0},
        "loop": "selfplay",
        "rest": {"samples_per_seed": 2, "seeds_per_round": 4, "temperature": 1.0, "view": "compact",
                 "replay_games": 16, "keep_forfeit_wins": False, "init": "base", "lr": 3.0e-4, "iters": 2,
                 "batch_size": 4, "lora_rank": 4, "lora_layers": 1, "lora_scale": 20.0, "audit_games": 4, "seed": 0},
        "curriculum": {"epsilons": [1.0, 0.0], "variants": [{"rounds": 1}], "band_low": 0.3, "band_high": 0.7,
                       "probe_games": 4, "max_tasks": 1},
        "lsp": {"puzzles": ["nim", "tictactoe"], "proposals": 8, "answers_per_proposal": 4, "alpha_ch": 1.0,
                "quality": True, "quality_weight": 1.0, "challenger": "model", "temperature": 1.0, "view": "compact",
                "benchmark_seeds": [9_100_000, 9_100_040]},
    }
    for section, values in overrides.items():
        params[section] = {**params[section], **values} if isinstance(values, dict) else values
    return params


def _tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    keep = [f for f in listed if f and (ROOT / f).is_file()]
    return [f for f in keep if not f.startswith(SKIPPED) or (f.startswith("artifacts/") and f.endswith(".gitignore"))]


def _git(dest: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=arena-test", "-c", "user.email=arena-test@localhost", *args], cwd=dest,
                   check=True, capture_output=True)


def make_copy(dest: Path, params: dict[str, Any]) -> Path:
    """Copy the working tree's source files to ``dest`` with ``params``, as a fresh git + DVC repository."""
    for name in _tracked_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", "copy")
    own_site_cache(dest)
    return dest


def clone_built(source: Path, dest: Path) -> Path:
    """A copy of an already built repository copy: workspace, dvc.lock and DVC cache included."""
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns("tmp"))
    own_site_cache(dest)
    return dest


def own_site_cache(repo: Path) -> None:
    """DVC's state database outside /var/tmp and unshared with other copies."""
    subprocess.run([DVC, "config", "--local", "core.site_cache_dir", str(repo.parent / f"{repo.name}-site")],
                   cwd=repo, check=True, capture_output=True)


def repro_env(repo: Path, **extra: str) -> dict[str, str]:
    """The environment of a stage: the venv first on PATH, the copy's own `arena` package, one BLAS thread."""
    return {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(repo),
        "OPENBLAS_NUM_THREADS": "1",
        "ARENA_CACHE_DIR": str(repo.parent / f"{repo.name}-arena-cache"),
        **extra,
    }


def start_dvc(repo: Path, env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    """``dvc ARGS`` in its own process group (so the group can be killed whole), output to ``log``."""
    with open(log, "wb") as handle:
        return subprocess.Popen([DVC, *args], cwd=repo, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)


def run_dvc(repo: Path, env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([DVC, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)


def group_processes(pgid: int) -> dict[int, str]:
    """pid -> command line of every live process in process group ``pgid`` (read from /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) != pgid or fields[0] == "Z":
                continue
            found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue  # gone while we looked
    return found


def _shell(cmdline: str) -> bool:
    """Whether ``cmdline`` runs a shell (its program's name)."""
    return Path(cmdline.split(" ", 1)[0]).name in {"sh", "bash", "dash", "zsh", "fish", "ksh"}


class GroupWatcher(threading.Thread):
    """Polls /proc while a dvc run lives: every command line in its process group, and when each was seen."""

    def __init__(self, pgid: int, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pgid = pgid
        self.interval = interval
        self.seen: dict[str, tuple[float, float]] = {}  # command line -> (first seen, last seen)
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            now = time.monotonic()
            for cmdline in group_processes(self.pgid).values():
                first, _ = self.seen.get(cmdline, (now, now))
                self.seen[cmdline] = (first, now)
            time.sleep(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)

    def duration(self, fragment: str) -> float:
        """How long the process whose command line contains ``fragment`` was seen alive.

        The shell DVC starts the stage's command in (``$SHELL --noprofile --norc -c CMD``, ``/bin/sh -c CMD``) also
        shows ``fragment`` until it execs the command, for as long as a poll may catch it: not counted.
        """
        spans = [span for cmd, span in self.seen.items() if fragment in cmd and not _shell(cmd)]
        if len(spans) != 1:
            raise AssertionError(f"expected one process running {fragment!r}, saw: {sorted(self.seen)}")
        (first, last), = spans
        return last - first


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the whole process group and wait until none of it is left."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while group_processes(process.pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes survived SIGKILL: {group_processes(process.pid)}")
        time.sleep(0.05)


def lock_outs(repo: Path) -> dict[str, str]:
    """Every output in dvc.lock -> its md5 (``.dir`` for directories)."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    return {out["path"]: out["md5"] for stage in lock["stages"].values() for out in stage.get("outs", [])}


def content(path: Path) -> Any:
    """A file's digest or a directory's manifest (meta.json included), None when absent."""
    if path.is_dir():
        return dir_manifest(path, exclude=())
    return digest_file(path) if path.exists() else None


def temporaries(root: Path) -> list[str]:
    """Leftover atomic-write temporaries (``.NAME.writing-PID-*.tmp``) under ``root``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*.tmp"))


def files_containing(needle: bytes, roots: Iterable[Path]) -> list[str]:
    """Every regular file under ``roots`` whose bytes contain ``needle``."""
    hits = []
    for root in roots:
        for path in [root] if root.is_file() else sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                hits.append(str(path))
    return hits
