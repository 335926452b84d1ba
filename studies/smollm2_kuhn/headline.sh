#!/usr/bin/env bash
# The headline in miniature (issue 44 item 4): the trained SmolLM2 (local MLX player, direct scoring) against the
# cold SmolLM2 behind mlx_lm.server (arena's frontier player: free text, parsed, cached, capped), and against the
# stock SmolLM2 played locally (legal moves only). Kuhn (one hand a game), held-out eval seeds from 9000000, both
# seats (each deal played twice, seats swapped). Writes each match's records and summary under OUT.
#   studies/smollm2_kuhn/headline.sh TRAINED_DIR BASE_DIR OUT [GAMES]
set -euo pipefail
trained=$1 base=$2 out=$3 games=${4:-32}
port=18471
mkdir -p "$out/hfcache"
cold="$out/cold-f32"
[ -f "$cold/model.safetensors" ] || python studies/smollm2_kuhn/dequantise.py "$base" "$cold"
HF_HUB_CACHE="$out/hfcache" HF_HUB_OFFLINE=1 python studies/smollm2_kuhn/serve.py --model "$cold" \
  --host 127.0.0.1 --port $port > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server' EXIT
for _ in $(seq 60); do curl -sf 127.0.0.1:$port/v1/models > /dev/null && break; sleep 2; done
frontier="openai:$cold@http://127.0.0.1:$port/v1"
play() {  # name p0 p1
  arena play kuhn --p0 "$2" --p1 "$3" --games "$games" --seed 9000000 --view full \
    --params studies/smollm2_kuhn/frontier.yaml --json --out "$out/$1.jsonl" > "$out/$1.json"
}
play stock_vs_cold "mlx:$base" "$frontier"
play trained_vs_cold "mlx:$trained" "$frontier"
play trained_vs_stock "mlx:$trained" "mlx:$base"
python studies/smollm2_kuhn/headline_summary.py "$out"/*.jsonl > "$out/headline.md"
