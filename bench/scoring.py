"""Figure scoring: games/s and peak RSS of prefix-shared, head-only scoring vs full-row scoring at real vocab size.

Each case runs in its own child process (``python bench/scoring.py --case ...``), so its peak RSS is its own (read
from ``wait4``). The full-row path (every position's full-vocabulary logits, one row per multi-token action) is kept
here only, as the reference.
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

from common import KUHN_EVAL_SEED, ROOT, Row, log, throughput_row, write_keeping_notes

# The issue's stand-in for a real-size model: qwen3 architecture, Qwen's 151,936-token vocabulary, random weights.
STAND_IN = {
    "model_type": "qwen3", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 768, "vocab_size": 151936,
    "rms_norm_eps": 1.0e-6, "max_position_embeddings": 4096, "rope_theta": 1000000.0, "tie_word_embeddings": True,
    "eos_token_id": 2, "torch_dtype": "float32",
}
# Issue 13's reference for Liar's Dice on the stand-in: the full-row path on the compact view (the full view crashed),
# measured as `arena play liarsdice ... --games 4 --concurrency 4 --view compact`; re-run here the same way.
ISSUE_LIARSDICE_FULL_ROW = {"games_per_s": 0.09, "concurrency": 4}
# Each side of a pair runs this often, alternating with the other: on this VM one case's games/s moves by up to 30%
# from one minute to the next (the same code: 1.96, then 1.48 games/s), so one run of each would measure the machine.
REPEATS = 3


def build_stand_in(out: Path, seed: int = 0, vocab: int = STAND_IN["vocab_size"]) -> Path:
    """The stand-in with the embedded base model's tokenizer (its ids are < 1024 < the vocabulary)."""
    from arena.train.config import BaseConfig
    from arena.train.embedded import build_tokenizer, write_seeded_model

    out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(out, BaseConfig())
    return write_seeded_model(out, {**STAND_IN, "vocab_size": vocab}, seed)


# ----------------------------------------------------------------------------------------------- the reference


def _full_row_scores(model, prompts, actions, pad_id: int):
    """Per action, the sum of its tokens' log-probabilities under the full-row path."""
    import mlx.core as mx
    import numpy as np

    rows: dict[tuple[int, ...], int] = {}
    row_r, pos_r, tok_r, act_r = [], [], [], []
    index = 0
    for prompt, legal in zip(prompts, actions, strict=True):
        single = all(len(a) == 1 for a in legal)
        for action in legal:
            seq = tuple(prompt) if single else tuple(prompt) + tuple(action)
            row = rows.setdefault(seq, len(rows))
            for i, token in enumerate(action):
                row_r.append(row)
                pos_r.append(len(prompt) - 1 + i)
                tok_r.append(token)
                act_r.append(index)
            index += 1
    tokens = np.full((len(rows), max(map(len, rows))), pad_id, dtype=np.int32)
    for seq, row in rows.items():
        tokens[row, : len(seq)] = seq
    logits = model(mx.array(tokens))
    logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
    picked = logprobs[mx.array(row_r), mx.array(pos_r), mx.array(tok_r)]
    onehot = mx.array(act_r)[None, :] == mx.arange(index)[:, None]
    return (onehot.astype(picked.dtype) * picked[None, :]).sum(axis=1)


def full_row_player(path: Path, view: str):
    """An MLXPlayer whose policy is scored by the old full-row path, 256 observations a pass (the old max_rows)."""
    import numpy as np

    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer
    from arena.players.scoring import masked_log_softmax

    class FullRowPlayer(MLXPlayer):
        def _log_policy(self, observations):
            out = []
            for start in range(0, len(observations), 256):
                chunk = observations[start: start + 256]
                actions = [[self._action_ids(a) for a in o.legal_actions] for o in chunk]
                loglik = _full_row_scores(self.model, [self._prompt_ids(o) for o in chunk], actions,
                                          self.tokenizer.pad_token_id or 0)
                offsets = np.cumsum([0] + [len(a) for a in actions]).tolist()
                logp = np.array(masked_log_softmax(loglik, offsets, self.config.temperature), dtype=np.float64)
                out.extend(logp[offsets[i]: offsets[i + 1]] for i in range(len(chunk)))
            return out

    return FullRowPlayer(path, MLXPlayerConfig(view=view))


# ----------------------------------------------------------------------------------------------- one case


def run_case(path: Path, game: str, view: str, path_kind: str, games: int, concurrency: int) -> dict[str, Any]:
    """Play ``games`` games of the model against random (after a 2-game warm-up); games/s of the timed games."""
    from arena.play.match import duplicate_schedule, play_match
    from arena.players.build import make_player
    from arena.players.config import MLXPlayerConfig
    from arena.players.mlx import MLXPlayer

    player = full_row_player(path, view) if path_kind == "full-row" else MLXPlayer(path, MLXPlayerConfig(view=view))
    opponent = make_player("random")
    schedule = duplicate_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + games), games)
    play_match(game, (player, opponent), schedule[:2], concurrency=2, progress=False)
    start = time.perf_counter()
    result = play_match(game, (player, opponent), schedule, concurrency=concurrency, progress=False)
    seconds = time.perf_counter() - start
    errored = [r["error"] for r in result if r["errored"]]
    turns = getattr(player, "turns", None)
    from arena.players.hostmath import host_math, host_threads

    threads = host_threads() if host_math(player.model) else None
    return {"games": games, "seconds": seconds, "games_per_s": games / seconds, "errored": len(errored),
            "host_threads": threads,
            "first_error": errored[0] if errored else None, "turn_cache_hits": turns.hits if turns else 0,
            "turn_cache_tokens": turns.reused if turns else 0}


def _child(path: Path, game: str, view: str, kind: str, games: int, concurrency: int) -> tuple[dict | None, float, str]:
    """One case in a subprocess: its result, its peak RSS in MiB, and how it ended."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        args = [sys.executable, __file__, "--case", str(path), game, view, kind, str(games), str(concurrency),
                out.name]
        child = subprocess.Popen(args, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        text = Path(out.name).read_text()
    ended = "ok" if code == 0 else f"exit {code}" + (" (killed by a signal)" if code < 0 else "")
    return (json.loads(text) if code == 0 and text else None), usage.ru_maxrss / 1024, ended


def _paired(ours: tuple, reference: tuple | None, repeats: int) -> tuple[tuple, tuple | None]:
    """Both sides' cases ``repeats`` times, alternating (ours, reference, ours, ...) so that both meet the machine's
    same phases; each side as its median run (see _median)."""
    runs: tuple[list, list] = ([], [])
    for _ in range(repeats):
        runs[0].append(_child(*ours))
        if reference is not None:
            runs[1].append(_child(*reference))
    return _median(runs[0]), _median(runs[1]) if reference is not None else None


def _median(runs: list[tuple[dict | None, float, str]]) -> tuple[dict | None, float, str]:
    """A side's runs as one: its median games/s run (with every run's figure), its largest peak RSS; a failed run
    fails the side."""
    failed = [run for run in runs if run[0] is None]
    if failed:
        return failed[0]
    middle = sorted(runs, key=lambda run: run[0]["games_per_s"])[len(runs) // 2][0]
    result = {**middle, "runs": [round(run[0]["games_per_s"], 4) for run in runs],
              "errored": max(run[0]["errored"] for run in runs)}
    return result, max(run[1] for run in runs), "ok"


def _available_gib() -> float:
    meminfo = Path("/proc/meminfo").read_text()
    return int(next(line.split()[1] for line in meminfo.splitlines() if line.startswith("MemAvailable"))) / 2**20


def _pair_row(name: str, ours: tuple, reference: tuple | None, reference_gps: float | None, min_ratio: float,
              target_rss: float | None, note: str) -> Row:
    (result, rss, ended) = ours
    ref_result, ref_rss, ref_ended = reference or (None, None, "not run")
    ref_gps = ref_result["games_per_s"] if ref_result else reference_gps
    if result is None:
        return Row("scoring", name, "games/s", None, ref_gps, "prefix-shared, head-only", "full-row",
                   note=f"error: {ended}", passed=False, peak_rss_mib=rss)
    row = throughput_row("scoring", name, "games/s", result["games_per_s"], ref_gps,
                         ("prefix-shared, head-only", "full-row"), min_ratio, note,
                         ours_rss_mib=rss, reference_rss_mib=ref_rss, reference_ended=ref_ended)
    row.peak_rss_mib = rss
    row.details.update(errored=result["errored"], turn_cache_tokens=result.get("turn_cache_tokens", 0),
                       host_threads=result.get("host_threads"),
                       runs=result.get("runs"), reference_runs=ref_result.get("runs") if ref_result else None)
    if result["errored"]:  # a game that errored ends early: its games/s would flatter the figure
        row.passed = False
        row.note = f"{note}; {result['errored']} of {result['games']} games errored: {result['first_error']}"
    if target_rss is not None:
        row.passed = bool(row.passed and rss <= target_rss * 1024)
        row.target = f"{row.target}, peak RSS <= {target_rss:g} GiB"
    return row


def figure(quick: bool) -> list[Row]:
    """Kuhn and Liar's Dice full view on the stand-in, and Liar's Dice compact on the embedded model, old vs new.

    ``quick`` (the suite's smoke run): 4 games and a stand-in with an 8,192-token vocabulary; not the figures.
    """
    from common import base_model

    games, vocab = (4, 8192) if quick else (64, STAND_IN["vocab_size"])
    repeats = 1 if quick else REPEATS
    rows = []
    with tempfile.TemporaryDirectory(prefix="arena-scoring-") as tmp, base_model() as (embedded, label):
        stand_in = build_stand_in(Path(tmp) / "stand-in", vocab=vocab)
        model = f"stand-in (qwen3, hidden 256, 4 layers, vocab {vocab:,}, random weights)"
        log(f"scoring: stand-in built; {_available_gib():.1f} GiB available")
        # Kuhn's full-row run peaks near 14.6 GB and takes minutes: once, and only with room to spare.
        kuhn_row = (stand_in, "kuhn", "full", "full-row", games, 64) if quick or _available_gib() > 14 else None
        new, old = _paired((stand_in, "kuhn", "full", "new", games, 64), kuhn_row, 1)
        rows.append(_pair_row(f"Kuhn full view, {games} concurrent games vs random, stand-in", new, old, None,
                              20.0, 1.5, f"model: {model}"))
        # The reference at its own settings (one pass holds [rows, ~20, vocab] float32 logits: ~3.5 GB at 4 games).
        new, old = _paired((stand_in, "liarsdice", "full", "new", games, 64),
                           (stand_in, "liarsdice", "compact", "full-row", 2 if quick else 8,
                            ISSUE_LIARSDICE_FULL_ROW["concurrency"]) if quick or _available_gib() > 8 else None,
                           repeats)
        rows.append(_pair_row(f"Liar's Dice full view, {games} concurrent games vs random, stand-in", new, old,
                              ISSUE_LIARSDICE_FULL_ROW["games_per_s"], 20.0, None,
                              f"model: {model}; reference: the full-row path on the compact view, 8 games at "
                              "concurrency 4, as issue 13 measured it (its figure: 0.09 games/s); the full view's "
                              "full-row pass would hold [rows, ~600, vocab] float32 logits, tens of GB"))
        new, old = _paired((embedded, "liarsdice", "compact", "new", games, 64),
                           (embedded, "liarsdice", "compact", "full-row", games, 64), repeats)
        rows.append(_pair_row(f"Liar's Dice compact, {games} concurrent games vs random, embedded model", new, old,
                              None, 10.0, None, f"model: {label}"))
    if not quick:
        _write_results(rows)
    return rows


def _write_results(rows: list[Row]) -> None:
    """bench/results/scoring.md: the table and each side's peak RSS."""
    from common import render_table

    lines = ["# Scoring: prefix-shared, head-only vs full-row (issue 13)", "",
             "`python bench/scoring.py` (or `python bench/run.py --only scoring`); each case in its own process, "
             f"each side of a pair {REPEATS} times alternating with the other (Kuhn's full-row side once), its "
             "median run shown.", "",
             render_table([asdict(row) for row in rows]), ""]
    for row in rows:
        d = row.details
        ref_rss = f"{d['reference_rss_mib']:.0f} MiB" if d.get("reference_rss_mib") else "-"
        lines.append(f"- {row.name}: peak RSS ours {d.get('ours_rss_mib') or row.peak_rss_mib:.0f} MiB, full-row "
                     f"{ref_rss} ({d.get('reference_ended', 'not run')}); games errored: {d.get('errored', '-')}; "
                     f"prompt tokens reused across turns: {d.get('turn_cache_tokens', 0):,}; "
                     f"host threads (ours): {d.get('host_threads') or 'none (MLX kernels)'}; games/s of each run, "
                     f"alternating: ours {d.get('runs')}, full-row {d.get('reference_runs') or '-'}; {row.note}")
    write_keeping_notes(ROOT / "bench" / "results" / "scoring.md", "\n".join(lines))


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", nargs=7, metavar=("MODEL", "GAME", "VIEW", "KIND", "GAMES", "CONCURRENCY", "OUT"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    from arena.core.blas import ensure_fast_blas

    ensure_fast_blas()
    if args.case:
        model, game, view, kind, games, concurrency, out = args.case
        Path(out).write_text(json.dumps(run_case(Path(model), game, view, kind, int(games), int(concurrency))))
        return 0
    from common import render_table

    print(render_table([asdict(row) for row in figure(args.quick)]))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
