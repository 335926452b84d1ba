"""A local model behind mlx_lm.server for the length of a block: the OpenAI-compatible endpoint a stage plays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from arena.core.errors import ArenaError

HOST = "127.0.0.1"
# How long a server may take to load its model and answer GET /v1/models.
START_TIMEOUT_S = 180.0
POLL_S = 0.5


def base_url(port: int) -> str:
    """The endpoint's BASE_URL (what ``openai:MODEL@BASE_URL`` names) for a server on ``port``."""
    return f"http://{HOST}:{port}/v1"


def _answers(port: int) -> bool:
    """Whether the server on ``port`` answers GET /v1/models with a JSON model list."""
    try:
        with urllib.request.urlopen(f"{base_url(port)}/models", timeout=2) as response:
            return isinstance(json.loads(response.read()).get("data"), list)
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return False


def _log_tail(log: Path, lines: int = 5) -> str:
    text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log.exists() else []
    return " | ".join(text[-lines:]) or "no output"


@contextmanager
def served(model: str | Path, port: int, log: str | Path, timeout_s: float = START_TIMEOUT_S) -> Iterator[str]:
    """Run mlx_lm.server (with arena's OpenBLAS) on ``model`` at 127.0.0.1:``port``; yield its BASE_URL.

    Requests must name the model as ``model`` is written here (mlx_lm.server loads a differently spelled path again).
    Its Hugging Face cache is a fresh empty folder and the hub is offline (docs/frontier.md says why). A port already
    answering, or a server that exits or does not answer in ``timeout_s``, is an ArenaError naming the fix; the
    server is stopped when the block ends, however it ends.
    """
    if not Path(model).is_dir():
        raise ArenaError(f"no model directory {model} to serve: build it first (dvc repro) or check the path")
    if _answers(port):
        raise ArenaError(f"port {port} already serves an endpoint: stop it, or serve on another port (--port)")
    log = Path(log)
    with tempfile.TemporaryDirectory(prefix="arena-hf-") as hub, log.open("w", encoding="utf-8") as out:
        env = {**os.environ, "HF_HUB_CACHE": hub, "HF_HUB_OFFLINE": "1"}
        command = [sys.executable, "-m", "arena.players.localserver", "--model", str(model), "--host", HOST,
                   "--port", str(port)]
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_until_up(process, port, log, timeout_s)
            yield base_url(port)
        finally:
            stop(process)


def stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop a server process: SIGTERM, then SIGKILL if it has not exited in ``grace_s``; always reaped."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_until_up(process: subprocess.Popen, port: int, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not _answers(port):
        if "Address already in use" in _log_tail(log):  # mlx_lm.server logs it and never exits
            raise ArenaError(f"port {port} is taken by another process: free it, or serve on another port (--port)")
        if process.poll() is not None:
            raise ArenaError(f"mlx_lm.server exited (status {process.returncode}) before answering on port {port}: "
                             f"{_log_tail(log)}; see {log}")
        if time.monotonic() > deadline:
            raise ArenaError(f"mlx_lm.server did not answer on port {port} within {timeout_s:g} s: "
                             f"{_log_tail(log)}; see {log}")
        time.sleep(POLL_S)


def main() -> None:
    """mlx_lm.server's own command line, run with arena's OpenBLAS loaded first (MLX's wheel's reference BLAS does
    sgemm at ~5 GFLOP/s on x86)."""
    import runpy

    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()  # before anything imports mlx
    sys.argv[0] = "mlx_lm.server"
    runpy.run_module("mlx_lm.server", run_name="__main__")


if __name__ == "__main__":
    main()
