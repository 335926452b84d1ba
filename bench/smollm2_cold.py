"""SmolLM2-135M-Instruct cold (issue 43): every exact measure and Liar's Dice's win rates, full and compact view.

``python bench/smollm2_cold.py run MODEL_DIR OUT_DIR [NAME ...]`` runs each measurement's command (``arena exact`` per
game with exact theory and view; ``arena play liarsdice`` against random and oracle, 64 games, seats swapping) in a
child of its own under ``nice -n 10``, keeping its stdout, wall and CPU seconds, peak RSS and the commit it ran at
as OUT_DIR/NAME.json (Liar's Dice: the games' per-seat wins from the records). ``python bench/smollm2_cold.py table
OUT_DIR`` gathers them into docs/results/smollm2_cold.json and prints the Markdown table docs/realmodel-results.md
shows. MODEL_DIR is the wheel's GGUF imported as shipped (``base.source: smollm2``, arena.train.gguf.import_gguf).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LIARSDICE_GAMES = 64
EXACT = {f"{game}_{view}": ("exact", "--game", game, "--view", view)
         for game in ("kuhn", "leduc", "nim", "tictactoe") for view in ("full", "compact")}
PLAY = {f"liarsdice_{view}_{opponent}": ("play", "liarsdice", "--p0", "mlx:{model}", "--p1", opponent, "--games",
                                         str(LIARSDICE_GAMES), "--view", view, "--json", "--out", "{records}")
        for view in ("full", "compact") for opponent in ("random", "oracle")}


def command(name: str, model: Path, records: Path) -> list[str]:
    """The arena command line of measurement ``name``."""
    args = EXACT.get(name) or PLAY[name]
    if name in EXACT:
        return ["arena", args[0], str(model), *args[1:]]
    return ["arena", *(a.format(model=model, records=records) for a in args)]


def seat_results(records: Path, spec: str) -> dict[str, dict[str, float]]:
    """Per seat of the model: games, wins (a draw counts half) and the Wilson 95% interval of the win rate."""
    from arena.play.stats import game_score, wilson_interval

    out = {}
    rows = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    for seat in (0, 1):
        mine = [r for r in rows if not r.get("errored") and r["players"].index(spec) == seat]
        wins = sum(game_score(r["rewards"], seat) for r in mine)
        rate, low, high = wilson_interval(wins, len(mine)) if mine else (None, None, None)
        out[f"seat{seat}"] = {"games": len(mine), "wins": wins, "rate": rate, "low": low, "high": high}
    return out


def run(model: Path, out_dir: Path, names: list[str]) -> None:
    """Each measurement in a niced child; its record as OUT_DIR/NAME.json."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names or [*EXACT, *PLAY]:
        with tempfile.TemporaryDirectory() as tmp:
            records = Path(tmp) / "games.jsonl"
            argv = command(name, model, records)
            start = time.perf_counter()
            child = subprocess.Popen(["nice", "-n", "10", str(Path(sys.executable).parent / argv[0]), *argv[1:]],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            stdout = child.stdout.read()
            _, status, usage = os.wait4(child.pid, 0)
            record: dict[str, Any] = {
                "name": name, "command": " ".join(argv).replace(str(records), "RECORDS.jsonl"), "commit": commit,
                "exit": os.waitstatus_to_exitcode(status), "wall_s": round(time.perf_counter() - start, 1),
                "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024),
                "result": json.loads(stdout) if stdout.strip() else None}
            if name in PLAY and records.exists():
                record["seats"] = seat_results(records, f"mlx:{model.as_posix()}")
        (out_dir / f"{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def _cell(record: dict[str, Any] | None, key: str) -> str:
    if record is None or record.get("result") is None:
        return "not measured"
    value: Any = record["result"]
    for part in key.split("."):
        value = value[part]
    return f"{value:.3f}"


def _seats(record: dict[str, Any] | None) -> str:
    if record is None or "seats" not in record:
        return "not measured"
    return "; ".join(f"{seat}: {s['rate']:.2f} [{s['low']:.2f}, {s['high']:.2f}] of {s['games']}"
                     for seat, s in record["seats"].items())


def table(out_dir: Path) -> str:
    """The records as docs/results/smollm2_cold.json, and the Markdown table of them."""
    records = {p.stem: json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))}
    target = ROOT / "docs" / "results" / "smollm2_cold.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    lines = ["| measure | full view | compact view |", "|---|---|---|"]
    exact_rows = [("Kuhn exploitability", "kuhn", "exploitability"),
                  ("Leduc exploitability", "leduc", "exploitability"),
                  ("TicTacToe loss to minimax, seat 0", "tictactoe", "loss_vs_minimax.seat0"),
                  ("TicTacToe loss to minimax, seat 1", "tictactoe", "loss_vs_minimax.seat1"),
                  ("TicTacToe optimal-move mass", "tictactoe", "optimal_move_mass"),
                  ("Nim winning-move mass, seen", "nim", "winning_move_mass"),
                  ("Nim winning-move mass, held out", "nim", "winning_move_mass_held_out")]
    for label, game, key in exact_rows:
        lines.append(f"| {label} | {_cell(records.get(f'{game}_full'), key)} | "
                     f"{_cell(records.get(f'{game}_compact'), key)} |")
    for opponent in ("random", "oracle"):
        lines.append(f"| Liar's Dice win rate vs {opponent} (95% interval, games) | "
                     f"{_seats(records.get(f'liarsdice_full_{opponent}'))} | "
                     f"{_seats(records.get(f'liarsdice_compact_{opponent}'))} |")
    lines += ["", "| measurement | command | wall s | CPU s | peak RSS MiB | commit |", "|---|---|---|---|---|---|"]
    for name, r in records.items():
        lines.append(f"| {name} | `{r['command']}` | {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_mib']} | "
                     f"{r['commit'][:7]} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        run(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
    elif sys.argv[1:2] == ["table"]:
        print(table(Path(sys.argv[2])))
    else:
        sys.exit(__doc__)
