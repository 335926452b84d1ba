"""bench/thinking.py's mlx_lm.server case: the same prompts sent at once to mlx_lm.server on loopback, tokens/s.

The server serves a float32 copy of the model holding exactly its 4-bit values (studies/smollm2_kuhn/dequantise.py:
MLX 0.32's x86 quantised matmul is ~46x slower than float BLAS, and arena's generation runs float32 copies of the
same projections), with arena's OpenBLAS loaded first (studies/smollm2_kuhn/serve.py). It is started here, on
127.0.0.1 and a free port, and killed after. Every row's prompt goes as one /v1/completions request (its text: the
prompt's tokens decoded; temperature 1.0, ``max_tokens`` tokens), all in flight at once, so the server's own
continuous batching (``--decode-concurrency``) batches them; generated tokens are the replies' ``usage``.
"""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from arena.players.localserver import stop

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _post(url: str, body: dict, timeout: float) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def _wait_ready(url: str, server: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"mlx_lm.server exited with {server.returncode} before it served")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5):
                return
        except OSError:
            time.sleep(1.0)
    raise RuntimeError(f"mlx_lm.server did not answer {url} within {timeout:.0f} s")


def run_server_case(model_dir: str, prompts: list[str], tokens: int, timeout: float = 1800.0) -> dict:
    """Serve a float32 copy of ``model_dir``, send ``prompts`` at once (after a one-request warm-up), time them."""
    sys.path.insert(0, str(ROOT / "studies" / "smollm2_kuhn"))
    from dequantise import dequantise

    with tempfile.TemporaryDirectory() as scratch:
        served = Path(scratch) / "float32"
        dequantise(Path(model_dir), served)
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [sys.executable, str(ROOT / "studies" / "smollm2_kuhn" / "serve.py"), "--model", str(served),
             "--host", "127.0.0.1", "--port", str(port), "--decode-concurrency", str(len(prompts)),
             "--prompt-concurrency", str(len(prompts))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**_offline_env(), "PYTHONPATH": str(ROOT)})
        try:
            _wait_ready(url, server, 600)
            body = {"model": str(served), "temperature": 1.0, "seed": 0}
            _post(f"{url}/v1/completions", {**body, "prompt": prompts[0], "max_tokens": 2}, timeout)  # warm-up
            start = time.perf_counter()
            with ThreadPoolExecutor(len(prompts)) as pool:
                replies = list(pool.map(lambda p: _post(f"{url}/v1/completions",
                                                        {**body, "prompt": p, "max_tokens": tokens}, timeout),
                                        prompts))
            seconds = time.perf_counter() - start
        finally:
            stop(server, grace_s=30)
    generated = sum(int(r["usage"]["completion_tokens"]) for r in replies)
    return {"case": "mlx-lm-server", "tokens": generated, "seconds": seconds, "tokens_per_s": generated / seconds,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def _offline_env() -> dict[str, str]:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1", "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
