"""mlx_lm.server with arena's OpenBLAS loaded first (the wheel's reference BLAS does sgemm at ~5 GFLOP/s here):
``arena.players.localserver``'s command line, which the real-model pipeline's headline stages start themselves.

Usage: HF_HUB_CACHE=DIR HF_HUB_OFFLINE=1 python studies/smollm2_kuhn/serve.py --model DIR --host 127.0.0.1 --port P
"""

from arena.players.localserver import main

main()
