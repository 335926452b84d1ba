"""`./dev.sh repro`: `dvc repro` with Ctrl-C passed on to the running stage, then what the build learned.

DVC ignores SIGINT while a stage runs (it waits for the stage's own exit), so a SIGINT sent to `dvc repro`
alone never stops the stage. Here DVC runs in its own process group and SIGINT or SIGTERM to this process is
sent to that whole group: the running stage stops (``arena.pipeline.stage.run``: one line, no output written)
and DVC exits with it. A build that succeeds ends on ``arena summary``'s text.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

EVALS = Path("artifacts/evals")
LEADERBOARD = Path("artifacts/scores/leaderboard.json")
# After Ctrl-C, the build's group is signalled again this often, this many times, then killed.
RESEND_S = 2.0
RESENDS = 5


def _dvc() -> str:
    """The dvc beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "dvc"
    return str(beside) if beside.exists() else (shutil.which("dvc") or "dvc")


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass  # already gone


def build(args: Sequence[str], again_s: float = RESEND_S) -> int:
    """Run ``dvc repro ARGS`` in its own process group, forwarding SIGINT and SIGTERM to it; its exit status.

    After a forwarded signal the group is signalled again every ``again_s`` seconds until it has exited (a stage
    can miss one: C's ``system()`` ignores SIGINT in its caller while its child runs), and killed outright after
    ``RESENDS`` tries (whatever it was writing is swept by the next build)."""
    # The handlers go in first: a handled signal is reset to its default in a child, so the build and its stages
    # take SIGINT even where this process was started with it ignored (a background job of a script).
    group: list[int] = []
    stopping: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if not stopping:
            print("\nstopping the build: the running stage writes nothing", file=sys.stderr, flush=True)
        stopping.append(signum)
        if group:
            _signal_group(group[0], signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    process = subprocess.Popen([_dvc(), "repro", *args], start_new_session=True)
    group.append(process.pid)
    try:
        while True:
            try:
                return process.wait(timeout=again_s if stopping else None)
            except subprocess.TimeoutExpired:
                if len(stopping) > RESENDS:
                    _signal_group(process.pid, signal.SIGKILL)
                else:
                    forward(stopping[0], None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def summarize(evals: Path = EVALS, leaderboard: Path = LEADERBOARD) -> str | None:
    """``arena summary``'s text for the built artifacts, or None when no round has been evaluated."""
    import json

    from arena.report.summary import load_evals, summary_text

    rounds = load_evals(evals) if evals.is_dir() else []
    if not rounds:
        return None
    board = json.loads(leaderboard.read_text(encoding="utf-8")) if leaderboard.is_file() else None
    return summary_text(rounds, board)


def main(argv: Sequence[str] | None = None) -> int:
    """``dvc repro ARGV``, then (when it succeeded) the summary; returns dvc's exit status. A ``dvc.lock`` that a
    killed build cut short is first put back from the last good copy, and a cut stage-lock file emptied
    (``lockguard``: DVC writes both in place)."""
    from arena.core.errors import ArenaError
    from arena.pipeline.lockguard import repair

    try:
        said = repair()
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for line in said:
        print(line, file=sys.stderr)
    code = build(list(sys.argv[1:] if argv is None else argv))
    if code == 0 and (text := summarize()) is not None:
        print(f"\n{text}", flush=True)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
