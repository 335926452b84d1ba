"""Survey every TextArena env id: does it start with two players, and does TextArena's invalid-move rule end it?

    python studies/textarena_envs.py [--out studies/results/textarena_envs.json] [--timeout 30]

Each id (TextArena's registry, without its ``-train``/``-raw`` wrapper variants) runs in its own process, without
network: ``make_game("textarena:ID", 0)`` (a fresh env, reset for two players), then up to ``MOVES`` moves of the same
text (``FAKE_MOVE``, which no env accepts as a move of its own grammar, so the rule should end the game by forfeit).
The JSON it writes is what docs/textarena.md's table and tests/test_anyenv.py read.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from arena.core.artifacts import atomic_write_text

MOVES = 6
FAKE_MOVE = "zq"
PROBE = """
import json, sys
from arena.games.registry import make_game
game = make_game("textarena:" + sys.argv[1], 0)
moves = 0
while not game.done and moves < {moves}:
    game.step({fake!r})
    moves += 1
result = game.result() if game.done else None
print(json.dumps({{"moves": moves, "done": game.done,
                  "forfeit_by": None if result is None else result.forfeit_by}}))
"""


def env_ids() -> list[str]:
    """TextArena's registered ids, without the wrapper variants."""
    from textarena.envs.registration import ENV_REGISTRY

    return sorted(i for i in ENV_REGISTRY if not i.endswith(("-train", "-raw")))


def survey(env_id: str, timeout: float) -> dict:
    """One env's row: status ``plays`` or ``fails`` with the reason (the last line of the error)."""
    code = PROBE.format(moves=MOVES, fake=FAKE_MOVE)
    try:
        done = subprocess.run([sys.executable, "-c", code, env_id], capture_output=True, text=True, timeout=timeout,
                              env={"PYTHONPATH": ".", "PATH": "/usr/bin:/bin", "NO_PROXY": "*",
                                   "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    except subprocess.TimeoutExpired:
        return {"id": env_id, "status": "fails", "reason": f"no answer in {timeout:.0f} s (network at make?)"}
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        return {"id": env_id, "status": "fails", "reason": (lines[-1] if lines else "exit code")[:300]}
    return {"id": env_id, "status": "plays", **json.loads(done.stdout.strip().splitlines()[-1])}


# TextArena ids arena also plays as its own games (legal actions listed: scripted and local players too).
NATIVE = {"TicTacToe-v0": "tictactoe", "Nim-v0": "nim", "LiarsDice-v0-small": "liarsdice",
          "SimpleNegotiation-v0": "negotiation", "SimpleNegotiation-v0-short": "negotiation (variant turns: 6)",
          "SimpleNegotiation-v0-long": "negotiation (variant turns: 30)", "IteratedUltimatumGame-v0": "ultimatum",
          "IteratedUltimatumGame-v0-alternate": "ultimatum (variant alternate: true, rounds: 6)"}


def render(rows: list[dict]) -> str:
    """docs/textarena.md's table: every id that starts with two players, what plays it; then the ones that fail."""
    lines = ["| TextArena id | invalid text ends it | arena game | plays it |", "|---|---|---|---|"]
    for row in rows:
        if row["status"] != "plays":
            continue
        native = NATIVE.get(row["id"])
        ends = "yes" if row["forfeit_by"] is not None else ("ends" if row["done"] else f"no (>{row['moves']} moves)")
        players = "scripted, local (direct, thinking), frontier" if native else "local (thinking), frontier"
        lines.append(f"| {row['id']} | {ends} | {native or 'textarena:' + row['id']} | {players} |")
    groups: dict[str, list[str]] = {}
    for row in rows:
        if row["status"] != "plays":
            groups.setdefault(why_not(row["reason"]), []).append(row["id"])
    lines += ["", "| why it does not play | TextArena ids |", "|---|---|"]
    lines += [f"| {why} | {', '.join(ids)} |" for why, ids in sorted(groups.items(), key=lambda g: -len(g[1]))]
    return "\n".join(lines) + "\n"


def why_not(reason: str) -> str:
    """A failure's reason, short: the cause inside arena's error, classified where it is a known kind."""
    inner = reason.split("two-player TextArena game (", 1)[-1].split("); see docs", 1)[0]
    kinds = (("nltk", "fetches NLTK data from the network at make"),
             ("has to be 1", "a one-player env"), ("three players", "three players only"),
             ("exactly 3", "three players only"), ("API key", "calls an LLM API at make (needs an OpenRouter key)"),
             ("no answer in", "no answer in the time limit (network at make)"))
    for marker, why in kinds:
        if marker in inner:
            return why
    if inner.startswith("SyntaxError: f-string"):
        return "its env.py needs Python >= 3.12 (nested f-string quotes); arena runs on 3.11"
    if inner.startswith(("FileNotFoundError", "ImportError", "SyntaxError", "ModuleNotFoundError")):
        inner = re.sub(r"/\S*/site-packages/", "", inner)
        return "broken in the 0.7.4 wheel: " + inner[:120].replace("|", "/")
    return inner[:160].replace("|", "/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("studies/results/textarena_envs.json"))
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--render", action="store_true", help="print the docs table from --out instead of surveying")
    args = parser.parse_args()
    if args.render:
        print(render(json.loads(args.out.read_text())), end="")
        return
    with ThreadPoolExecutor(args.workers) as pool:
        rows = list(pool.map(lambda i: survey(i, args.timeout), env_ids()))
    # A loaded machine can stall an import past the limit: each id that timed out gets one more try, 4x as long.
    rows = [survey(r["id"], 4 * args.timeout) if r.get("reason", "").startswith("no answer") else r for r in rows]
    atomic_write_text(args.out, json.dumps(rows, indent=1, sort_keys=True) + "\n")
    print(f"{sum(r['status'] == 'plays' for r in rows)} of {len(rows)} ids start with two players -> {args.out}")


if __name__ == "__main__":
    main()
