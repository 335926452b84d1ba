"""mlx_lm.server with arena's OpenBLAS loaded first (the wheel's reference BLAS does sgemm at ~5 GFLOP/s here).

Usage: HF_HUB_CACHE=DIR HF_HUB_OFFLINE=1 python studies/smollm2_kuhn/serve.py --model DIR --host 127.0.0.1 --port P
"""

import runpy
import sys

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx
sys.argv[0] = "mlx_lm.server"
runpy.run_module("mlx_lm.server", run_name="__main__")
