"""The local player's call trace: which arena.players module is entered from which, how often, in which order.

One ``act_batch`` call of an MLX player, traced with ``sys.setprofile`` after a warm-up call: a cohort of 64 Kuhn
and of 64 Leduc decisions on the embedded model (the first cohort of a match, then the second, whose prompts extend
the stored ones), 8 negotiation decisions (scored by choice), 16 decisions of a thinking player (the qwen3
stand-in, full view, 16 reasoning tokens), and a memo player's first cohort. An *entry* is a call into a module of
arena.players whose caller is another arena module; a *re-entry* is an entry into a module that is already on the
call stack (a callback: the way through loops back). Calls that mlx or mlx-lm make into arena code (the model's
attention calling the per-layer caches) are counted apart. Models are built from their seeds in a temporary directory.

    PYTHONPATH=$PWD .venv/bin/python bench/calltrace.py [--out docs/calltrace.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

PREFIX = "arena.players."


def _module(frame) -> str:
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def _short(name: str) -> str:
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


class Tracer:
    """A ``sys.setprofile`` hook counting entries, call edges (first-call order) and re-entries."""

    def __init__(self) -> None:
        self.entries: Counter[str] = Counter()
        self.edges: dict[tuple[str, str], int] = {}
        self.reentries: Counter[str] = Counter()
        self.library: Counter[str] = Counter()

    def __call__(self, frame, event, arg) -> None:
        callee = _module(frame)
        if event != "call" or not callee.startswith(PREFIX):
            return
        caller = frame.f_back
        name = _module(caller)
        if name == callee:
            return
        target = f"{_short(callee)}.{frame.f_code.co_name}"
        if not name.startswith("arena."):
            self.library[target] += 1
            return
        source = f"{_short(name)}.{caller.f_code.co_name}"
        self.entries[_short(callee)] += 1
        self.edges[(source, target)] = self.edges.get((source, target), 0) + 1
        below, up = set(), caller.f_back
        while up is not None:
            below.add(_module(up))
            up = up.f_back
        if callee in below:
            self.reentries[f"{source} -> {target}"] += 1

    def report(self, label: str) -> dict:
        return {"label": label, "entries": dict(self.entries.most_common()),
                "reentries": dict(self.reentries),
                "edges": [f"{a} -> {b}" + (f" x{n}" if n > 1 else "") for (a, b), n in self.edges.items()],
                "library_calls": dict(self.library.most_common())}


def traced(label: str, call) -> dict:
    tracer = Tracer()
    sys.setprofile(tracer)
    try:
        call()
    finally:
        sys.setprofile(None)
    return tracer.report(label)


def cohorts(game: str, path: Path, config, games: int) -> list[list]:
    """The observations a match hands the player, call by call (64 games in lockstep against random)."""
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.build import make_player
    from arena.players.mlx import MLXPlayer

    seen: list[list] = []

    class Spy(MLXPlayer):
        def act_batch(self, observations):
            seen.append(list(observations))
            return super().act_batch(observations)

    play_match(game, (Spy(path, config), make_player("random")), duplicate_schedule(range(games // 2), games),
               concurrency=games, progress=False)
    return seen


def measure(base: Path, standin: Path) -> list[dict]:
    from arena.players.config import MLXPlayerConfig, ThinkConfig
    from arena.players.mlx import MLXPlayer

    out = []
    compact = MLXPlayerConfig(view="compact")
    for game in ("kuhn", "leduc"):
        calls = cohorts(game, base, compact, 64)
        player = MLXPlayer(base, compact)
        player.act_batch(calls[0])  # warm-up
        player.begin_match()
        out.append(traced(f"{game}, embedded model, compact view: a match's first call ({len(calls[0])} decisions)",
                          lambda p=player, c=calls: p.act_batch(c[0])))
        out.append(traced(f"{game}, the same match's second call ({len(calls[1])} decisions, stored prompts reused)",
                          lambda p=player, c=calls: p.act_batch(c[1])))
    calls = cohorts("negotiation", base, compact, 8)
    player = MLXPlayer(base, compact)
    player.act_batch(calls[0])
    player.begin_match()
    out.append(traced(f"negotiation, embedded model, compact view, scored by choice: a match's first call "
                      f"({len(calls[0])} decisions)", lambda p=player, c=calls: p.act_batch(c[0])))
    think = MLXPlayerConfig(view="full", think=ThinkConfig(max_tokens=16))
    calls = cohorts("kuhn", standin, think, 16)
    player = MLXPlayer(standin, think)
    player.act_batch(calls[0])
    out.append(traced(f"kuhn, thinking player (qwen3 stand-in, full view, think 16): {len(calls[0])} decisions",
                      lambda: player.act_batch(calls[0])))
    memo = MLXPlayerConfig(view="compact", memo_prompts=64)
    calls = cohorts("kuhn", base, memo, 64)
    player = MLXPlayer(base, memo)
    player.act_batch(calls[0])
    player.memo.clear()
    out.append(traced(f"kuhn, memo player (memo_prompts 64, empty): {len(calls[0])} decisions",
                      lambda: player.act_batch(calls[0])))
    return out


def render(results: list[dict]) -> str:
    lines = []
    for result in results:
        lines += [f"### {result['label']}", "",
                  "entries: " + ", ".join(f"{m} {n}" for m, n in result["entries"].items()),
                  "re-entries: " + (", ".join(f"{e} ({n})" for e, n in result["reentries"].items()) or "none"),
                  "", "```", *result["edges"], "```", ""]
    return "\n".join(lines)


def main() -> None:
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="also write the results as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base, standin = Path(scratch) / "base", Path(scratch) / "standin"
        build_base(BaseConfig(), base)
        build_base(BaseConfig(source="standin", hidden_size=64, num_layers=2, num_heads=2, num_kv_heads=1,
                              intermediate_size=128, vocab_size=1024, max_position_embeddings=2048), standin)
        results = measure(base, standin)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(render(results))


if __name__ == "__main__":
    main()
