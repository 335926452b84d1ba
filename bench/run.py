"""arena's performance figures, each measured side by side with a reference in one run, as ratios against targets.

Usage (from the repository root):
    python bench/run.py [--quick] [--json OUT]

Figures (each runs in its own subprocess, so one figure's memory and warm caches never touch another's, and its
peak RSS -- the largest resident set of any process in its tree -- is read from ``wait4``):

  blas       MLX sgemm GFLOP/s with arena's in-process OpenBLAS vs numpy's sgemm on the same shapes
             (target >= 0.8x); MLX with its bundled reference BLAS (ARENA_BLAS=reference, a subprocess) for context.
  rollouts   Kuhn games/s of arena.play.match.play_match (64 concurrent games, MLXPlayer vs random) vs a naive loop
             calling mlx_lm.generate once per move on the same model (target >= 10x).
  hashing    blake3 pin (arena.core.hashing.digest_file, uncached) vs hashlib md5 (DVC's hash) of a 1 GiB file
             (target >= 5x); a cached re-pin of the unchanged file (target <= 10 ms).
  pipeline   a no-op ``dvc repro`` of the repository's pipeline, only when ``dvc status -q`` says it is up to
             date (target <= 2 s); ``dvc --version`` (DVC's start-up alone) for context.
  training   tokens/s of arena's GRPO step (arena.train.selfplay.GRPOUpdate) vs mlx-lm's LoRA training step
             (iterate_batches + default_loss + its compiled update) on the same model, decisions and batch size
             (target >= 0.8x).

Ours and the reference are timed in alternation (ours, reference, ours, ...). The table shows each side's median;
the ratio is the median over repetitions of the ratio of the two adjacent measurements, so a machine whose load
changes mid-run (shared cores) slows both sides of each pair alike. ``--quick`` uses small sizes (the test
suite's smoke run); its numbers are not the published figures. Timings are wall clock; no number is hard-coded.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from arena.core.blas import ensure_fast_blas

ensure_fast_blas()  # before anything imports mlx: the figures measure arena's BLAS

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("blas", "rollouts", "hashing", "pipeline", "training")
MiB = 1024 * 1024


# ----------------------------------------------------------------------------------------------- results


@dataclass
class Row:
    """One line of the table. ``ratio`` is always "times faster than the reference" (> 1: ours is faster)."""

    figure: str
    name: str
    unit: str
    ours: float | None
    reference: float | None
    ours_label: str
    reference_label: str
    ratio: float | None = None
    target: str | None = None
    passed: bool | None = None
    note: str = ""
    peak_rss_mib: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def throughput_row(figure: str, name: str, unit: str, ours: float, reference: float, labels: tuple[str, str],
                   min_ratio: float | None, note: str = "", ratio: float | None = None, **details: Any) -> Row:
    """A higher-is-better figure: ratio = ours / reference (or the paired ``ratio``), passing at ``min_ratio``."""
    ratio = ours / reference if ratio is None else ratio
    return Row(figure, name, unit, ours, reference, labels[0], labels[1], ratio,
               None if min_ratio is None else f">= {min_ratio:g}x",
               None if min_ratio is None else ratio >= min_ratio, note, details=details)


def latency_row(figure: str, name: str, unit: str, ours: float | None, reference: float | None,
                labels: tuple[str, str], max_value: float, note: str = "", **details: Any) -> Row:
    """A lower-is-better figure with an absolute target: ratio = reference / ours, passing at or under the target."""
    ratio = reference / ours if ours and reference else None
    passed = None if ours is None else ours <= max_value
    return Row(figure, name, unit, ours, reference, labels[0], labels[1], ratio, f"<= {max_value:g} {unit}",
               passed, note, details=details)


def log(message: str) -> None:
    """Progress on stderr, so stdout stays the table."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------- timing


def interleaved(candidates: dict[str, Callable[[], float | None]], reps: int) -> dict[str, list[float]]:
    """Run each candidate once per repetition, in turn; each returns its own measured seconds (None: time it here)."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(reps):
        for name, fn in candidates.items():
            start = time.perf_counter()
            measured = fn()
            times[name].append(measured if measured is not None else time.perf_counter() - start)
    return times


def discarding(fn: Callable[[], object]) -> Callable[[], None]:
    """A candidate that ``interleaved`` times itself: runs ``fn`` and drops its result."""

    def run() -> None:
        fn()

    return run


def paired_speedup(ours_s: Sequence[float], reference_s: Sequence[float], ours_work: float = 1.0,
                   reference_work: float = 1.0) -> float:
    """Median over repetitions of (ours_work / ours_s[i]) / (reference_work / reference_s[i]): adjacent samples only."""
    return statistics.median((ours_work / o) / (reference_work / r) for o, r in zip(ours_s, reference_s, strict=True))


def calibrated_calls(fn: Callable[[], object], budget_s: float) -> int:
    """How many calls of ``fn`` fill about ``budget_s`` (after one warm-up call), at least one."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(budget_s / once))


def repeated(fn: Callable[[], object], calls: int) -> Callable[[], float]:
    """A candidate that calls ``fn`` ``calls`` times and returns the seconds per call."""

    def run() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls

    return run


# ----------------------------------------------------------------------------------------------- 1. BLAS


def _shape_name(shape: Sequence[int]) -> str:
    return "x".join(str(n) for n in shape)


def mlx_sgemm_candidates(shapes: Sequence[Sequence[int]], budget_s: float) -> dict[str, Callable[[], float]]:
    """Per shape (M, K, N), a candidate timing one MLX float32 product (M x K) @ (K x N), evaluated."""
    import mlx.core as mx
    import numpy as np

    rng = np.random.default_rng(0)
    out = {}
    for m, k, n in shapes:
        a = mx.array(rng.standard_normal((m, k), dtype=np.float32))
        b = mx.array(rng.standard_normal((k, n), dtype=np.float32))
        mx.eval(a, b)
        product = lambda a=a, b=b: mx.eval(a @ b)  # noqa: E731
        out[_shape_name((m, k, n))] = repeated(product, calibrated_calls(product, budget_s))
    return out


def _gflops(shape: Sequence[int], seconds: float) -> float:
    m, k, n = shape
    return 2.0 * m * k * n / seconds / 1e9


def reference_blas_gflops(shapes: Sequence[Sequence[int]], reps: int, budget_s: float) -> dict[str, float]:
    """MLX's bundled reference BLAS, measured in a subprocess (the BLAS is chosen when mlx is imported)."""
    env = {**os.environ, "ARENA_BLAS": "reference"}
    spec = ",".join(_shape_name(s) for s in shapes)
    done = subprocess.run([sys.executable, __file__, "--mlx-sgemm", spec, "--reps", str(reps), "--budget",
                           str(budget_s)], env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(done.stdout)


def figure_blas(quick: bool) -> list[Row]:
    import numpy as np

    from arena.core.blas import blas_info

    # 2048x768x768: a transformer-sized product; 168x128x384: the embedded model's MLP up-projection on a
    # Kuhn scoring batch (12 distinct prompts x 14 tokens, hidden 128, ffn 384).
    shapes = [(512, 256, 256), (168, 128, 384)] if quick else [(2048, 768, 768), (168, 128, 384)]
    reps, budget = (3, 0.05) if quick else (7, 0.3)
    # A 1x1x1 product costs nothing to compute: its time is each library's per-call overhead (for MLX: building
    # the graph and handing it to its CPU stream), which small shapes pay on top of the BLAS.
    overhead = (1, 1, 1)
    rng = np.random.default_rng(0)
    numpy_candidates = {}
    for m, k, n in (*shapes, overhead):
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        product = lambda a=a, b=b: a @ b  # noqa: E731
        numpy_candidates[_shape_name((m, k, n))] = repeated(product, calibrated_calls(product, budget))
    mlx_candidates = mlx_sgemm_candidates((*shapes, overhead), budget)
    candidates = {}
    for key in mlx_candidates:
        candidates[f"mlx {key}"] = mlx_candidates[key]
        candidates[f"numpy {key}"] = numpy_candidates[key]
    log(f"blas: {', '.join(mlx_candidates)} x {reps} (alternating MLX / numpy)")
    times = interleaved(candidates, reps)
    log("blas: MLX with its reference BLAS (subprocess)")
    reference = reference_blas_gflops(shapes, max(1, reps // 2), budget)
    info = blas_info()
    ours_label = f"MLX + {info['blas'].split()[0]} ({info['threads']} thread)"
    overhead_us = {lib: statistics.median(times[f"{lib} {_shape_name(overhead)}"]) * 1e6 for lib in ("mlx", "numpy")}
    rows = []
    for shape in shapes:
        key = _shape_name(shape)
        mlx_s, numpy_s = statistics.median(times[f"mlx {key}"]), statistics.median(times[f"numpy {key}"])
        note = (f"per-call overhead (a 1x1x1 product): MLX {overhead_us['mlx']:.0f} us, numpy "
                f"{overhead_us['numpy']:.0f} us; a call at this shape took {mlx_s * 1e6:.0f} us in MLX")
        rows.append(throughput_row("blas", f"sgemm {key} (MxKxN)", "GFLOP/s", _gflops(shape, mlx_s),
                                   _gflops(shape, numpy_s), (ours_label, "numpy (its own OpenBLAS)"), 0.8, note,
                                   paired_speedup(times[f"mlx {key}"], times[f"numpy {key}"]),
                                   samples_ours=times[f"mlx {key}"], samples_reference=times[f"numpy {key}"],
                                   overhead_us=overhead_us))
        rows.append(throughput_row("blas", f"sgemm {key}, MLX reference BLAS", "GFLOP/s", _gflops(shape, mlx_s),
                                   reference[key],
                                   (ours_label, "MLX bundled reference BLAS"), None,
                                   "context: what ARENA_BLAS=reference (or no OpenBLAS) would cost"))
    return rows


def mlx_sgemm_main(spec: str, reps: int, budget: float) -> None:
    """``--mlx-sgemm``: print MLX GFLOP/s per shape as JSON (run with the BLAS chosen by the environment)."""
    shapes = [tuple(int(n) for n in part.split("x")) for part in spec.split(",")]
    times = interleaved(mlx_sgemm_candidates(shapes, budget), reps)
    print(json.dumps({_shape_name(s): _gflops(s, statistics.median(times[_shape_name(s)])) for s in shapes}))


# ----------------------------------------------------------------------------------------------- model


@contextlib.contextmanager
def base_model() -> Iterator[tuple[Path, str]]:
    """The pipeline's base model if it is built, else the embedded default built (offline) into a temp dir."""
    built = ROOT / "artifacts" / "models" / "base"
    if (built / "config.json").exists():
        yield built, "artifacts/models/base"
        return
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        build_base(BaseConfig(), Path(tmp) / "base")
        yield Path(tmp) / "base", "embedded default (BaseConfig(), built for this run)"


# ----------------------------------------------------------------------------------------------- 2. rollouts


KUHN_EVAL_SEED = 9_000_000  # held-out evaluation seeds (params.yaml eval.seeds)


def parse_action(text: str, legal: Sequence[str]) -> str | None:
    """The legal action that appears first in generated text (case-insensitive), or None if none does."""
    lowered = text.lower()
    found = [(lowered.find(action.lower()), i) for i, action in enumerate(legal) if action.lower() in lowered]
    return legal[min(found)[1]] if found else None


@dataclass
class NaiveStats:
    games: int = 0
    generated_moves: int = 0
    illegal_moves: int = 0


def naive_games(model, tokenizer, schedule, view: str, max_tokens: int, stats: NaiveStats) -> None:
    """Play the schedule game by game, one ``mlx_lm.generate`` call per model move (the unbatched baseline).

    Seats and the random opponent's draws follow arena.play.match exactly, so these are the same games. Generated
    text that names no legal action is replaced by the first legal action (counted in ``stats``).
    """
    import mlx_lm
    from mlx_lm.sample_utils import make_sampler

    from arena.games.registry import make_game
    from arena.play.match import sample_key
    from arena.players.build import make_player
    from arena.players.mlx import prompt_text

    opponent = make_player("random")
    sampler = make_sampler(temp=1.0)
    for slot in schedule:
        game = make_game("kuhn", slot.seed)
        model_seat = slot.first_seat  # the match's first player (the model) sits in seat first_seat
        while not game.done:
            observation = game.observation()
            if game.current_player == model_seat:
                messages = [{"role": "user", "content": prompt_text(observation, view)}]
                prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
                text = mlx_lm.generate(model, tokenizer, prompt, max_tokens=max_tokens, sampler=sampler)
                action = parse_action(text, observation.legal_actions)
                stats.generated_moves += 1
                if action is None:
                    stats.illegal_moves += 1
                    action = observation.legal_actions[0]
            else:
                keyed = replace(observation, sample_key=sample_key(slot, len(game.actions)))
                action = opponent.act(keyed).action
            game.step(action)
        game.result()
        stats.games += 1


def figure_rollouts(quick: bool) -> list[Row]:
    import mlx.core as mx

    from arena.play.match import duplicate_schedule, play_match
    from arena.players.build import make_player
    from arena.players.mlx import MLXPlayer

    ours_games, naive_count, reps = (64, 8, 1) if quick else (512, 64, 3)
    concurrency = 64
    schedule = duplicate_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + ours_games), ours_games)
    with base_model() as (model_dir, model_label):
        player = MLXPlayer(model_dir)
        opponent = make_player("random")
        # The cap most favourable to the naive loop: a perfect model answers with the action's tokens and then
        # its end-of-turn token; this tiny random-weight model never stops on its own.
        action_tokens = max(len(player._action_ids(a)) for a in ("[check]", "[bet]", "[call]", "[fold]"))
        max_tokens = action_tokens + 1
        mx.random.seed(0)
        stats = NaiveStats()
        # Warm-up (model load, first-call allocations, tokenizer caches) for both sides.
        play_match("kuhn", (player, opponent), schedule[:8], concurrency=concurrency, progress=False)
        naive_games(player.model, player.tokenizer, schedule[:2], "compact", max_tokens, NaiveStats())

        def ours() -> None:
            play_match("kuhn", (player, opponent), schedule, concurrency=concurrency, progress=False)

        def naive() -> None:
            naive_games(player.model, player.tokenizer, schedule[:naive_count], "compact", max_tokens, stats)

        log(f"rollouts: {ours_games} batched games vs {naive_count} naive games, x {reps} (alternating)")
        times = interleaved({"ours": ours, "naive": naive}, reps)
    ours_rate = ours_games / statistics.median(times["ours"])
    naive_rate = naive_count / statistics.median(times["naive"])
    note = (f"naive: mlx_lm.generate(max_tokens={max_tokens}) per model move; {stats.illegal_moves} of "
            f"{stats.generated_moves} generated moves named no legal action, so the first legal action was played "
            f"instead; model: {model_label}")
    return [throughput_row("rollouts", f"Kuhn games/s, {concurrency} concurrent vs random", "games/s",
                           ours_rate, naive_rate, ("arena.play.match.play_match", "naive generate loop"), 10.0, note,
                           paired_speedup(times["ours"], times["naive"], ours_games, naive_count),
                           samples_ours=times["ours"], samples_reference=times["naive"],
                           naive_illegal=stats.illegal_moves, naive_generated=stats.generated_moves)]


# ----------------------------------------------------------------------------------------------- 3. hashing


def write_test_file(path: Path, size: int) -> None:
    """``size`` deterministic pseudo-random bytes (incompressible, so no filesystem shortcut applies)."""
    import numpy as np

    rng = np.random.default_rng(0)
    chunk = 64 * MiB
    with path.open("wb") as handle:
        for start in range(0, size, chunk):
            handle.write(rng.bytes(min(chunk, size - start)))


def md5_file(path: Path, chunk: int = MiB) -> str:
    """md5 of a file streamed in 1 MiB chunks, as DVC hashes files."""
    digest = hashlib.md5()
    buffer = bytearray(chunk)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as handle:
        while read := handle.readinto(buffer):
            digest.update(view[:read])
    return digest.hexdigest()


def figure_hashing(quick: bool) -> list[Row]:
    from arena.core.hashing import HashCache, digest_file

    size, reps, hits = (32 * MiB, 3, 20) if quick else (1024 * MiB, 3, 50)
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        path = Path(tmp) / "blob.bin"
        log(f"hashing: writing {size // MiB} MiB to {path}")
        write_test_file(path, size)
        # Both sides read the file from the page cache (it was just written): this compares hashing, not the disk.
        md5_file(path)
        log(f"hashing: blake3 vs md5 x {reps} (alternating)")
        times = interleaved({"blake3": discarding(lambda: digest_file(path, use_cache=False)),
                             "md5": discarding(lambda: md5_file(path))}, reps)
        cache_path = Path(tmp) / "cache" / "hashes.sqlite"
        first = HashCache(cache_path).digest(path)
        if first != digest_file(path, use_cache=False):
            raise RuntimeError("the hash cache returned a different digest from an uncached hash")
        # Each re-pin opens the cache afresh (as a new `arena pin` process would): connect, stat, one lookup.
        hit_times = interleaved({"hit": discarding(lambda: HashCache(cache_path).digest(path))}, hits)["hit"]
    mb = size / 1e6
    blake3_s, md5_s = statistics.median(times["blake3"]), statistics.median(times["md5"])
    hit_ms = statistics.median(hit_times) * 1e3
    size_label = f"{size // MiB} MiB"
    return [
        throughput_row("hashing", f"pin a {size_label} file, MB/s", "MB/s", mb / blake3_s, mb / md5_s,
                       ("blake3 (digest_file, uncached)", "hashlib md5 (DVC's hash)"), 5.0,
                       "page cache warm for both; peak RSS counts the file's pages, which blake3 maps (mmap)",
                       paired_speedup(times["blake3"], times["md5"]),
                       samples_ours=times["blake3"], samples_reference=times["md5"]),
        latency_row("hashing", f"cached re-pin of the unchanged {size_label} file", "ms", hit_ms, blake3_s * 1e3,
                    ("HashCache hit (fresh connection)", "uncached blake3"), 10.0,
                    samples_ms=[t * 1e3 for t in hit_times]),
    ]


# ----------------------------------------------------------------------------------------------- 4. pipeline


def _dvc() -> str:
    beside = Path(sys.executable).parent / "dvc"
    found = str(beside) if beside.exists() else shutil.which("dvc")
    if found is None:
        raise RuntimeError("dvc is not installed in this environment (pip install -e '.[dev]')")
    return found


def _timed_run(args: Sequence[str], timeout: float) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(list(args), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - start, done


def figure_pipeline(quick: bool) -> list[Row]:
    dvc = _dvc()
    reps = 1 if quick else 3
    startup = statistics.median(_timed_run([dvc, "--version"], 60)[0] for _ in range(reps))
    labels = ("dvc repro (nothing to run)", "dvc --version (start-up only)")
    log("pipeline: dvc status -q")
    status_s, status = _timed_run([dvc, "status", "-q"], 600)
    if status.returncode != 0:
        why = ("pipeline not built" if status.returncode == 1
               else f"dvc status failed (exit {status.returncode}): {status.stderr.strip()[-200:]}")
        return [latency_row("pipeline", "no-op dvc repro", "s", None, startup, labels, 2.0, f"skipped: {why}",
                            skipped=why, status_s=status_s)]
    log(f"pipeline: no-op dvc repro x {reps}")
    times = []
    for _ in range(reps):
        elapsed, done = _timed_run([dvc, "repro"], 600)
        output = done.stdout + done.stderr
        if done.returncode != 0 or "Running stage" in output:
            raise RuntimeError(f"dvc repro was not a no-op (exit {done.returncode}): {output[-500:]}")
        times.append(elapsed)
    stages = len(re.findall(r"^Stage '.+' didn't change", output, re.MULTILINE))
    return [latency_row("pipeline", f"no-op dvc repro ({stages} stages)", "s", statistics.median(times), startup,
                        labels, 2.0, f"dvc status -q took {status_s:.2f} s", samples=times, status_s=status_s)]


# ----------------------------------------------------------------------------------------------- 5. training


def kuhn_decisions(player, deals: int):
    """The player's decisions in Kuhn self-play rollouts against random (two plays of each deal), with advantages."""
    from arena.play.match import play_match
    from arena.players.build import make_player
    from arena.train.config import TrainConfig
    from arena.train.grpo.round import learner_decisions, selfplay_schedule

    schedule = selfplay_schedule(range(KUHN_EVAL_SEED, KUHN_EVAL_SEED + deals), 2)
    records = play_match("kuhn", (player, make_player("random")), schedule, progress=False)
    return learner_decisions(records, player.spec, TrainConfig())


def mlx_lm_lora_step(model, optimizer):
    """mlx-lm's training step as ``mlx_lm.tuner.trainer.train`` builds it: default_loss, value_and_grad, update,
    compiled over the model, optimizer and random state (no gradient accumulation, one process)."""
    from functools import partial

    import mlx.core as mx
    import mlx.nn as nn
    from mlx_lm.tuner.trainer import default_loss

    loss_value_and_grad = nn.value_and_grad(model, default_loss)
    state = [model.state, optimizer.state, mx.random.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(batch, lengths):
        (loss, tokens), grad = loss_value_and_grad(model, batch, lengths)
        optimizer.update(model, grad)
        return loss, tokens

    def run(batch, lengths):
        loss, tokens = step(batch, lengths)
        mx.eval(state, loss, tokens)
        return loss

    return run


def figure_training(quick: bool) -> list[Row]:
    import mlx.optimizers as optim
    import numpy as np
    from mlx_lm.tuner.trainer import iterate_batches
    from mlx_lm.tuner.utils import linear_to_lora_layers

    from arena.players.mlx import MLXPlayer, load_model
    from arena.train.config import TrainConfig
    from arena.train.grpo.round import GRPOUpdate, attach_lora

    # An mlx-lm step on 512 padded examples takes seconds here, arena's a fraction of one: each turn runs a
    # different number of steps of each, and the per-step times are compared.
    batch_size, deals, reps = (64, 96, 1) if quick else (512, 768, 3)
    steps = {"ours": 2, "mlx-lm": 1} if quick else {"ours": 8, "mlx-lm": 2}
    config = TrainConfig(method="lora", batch_size=batch_size)
    rows = []
    with base_model() as (model_dir, model_label):
        log(f"training: rollouts for {deals} deals")
        data = kuhn_decisions(MLXPlayer(model_dir), deals)
        if len(data.chosen) < batch_size:
            raise RuntimeError(f"only {len(data.chosen)} decisions for a batch of {batch_size}: raise deals")
        policy = MLXPlayer(model_dir)
        attach_lora(policy.model, config)
        update = GRPOUpdate(policy, config, temperature=1.0)
        # The same decisions as supervised examples for mlx-lm: prompt + chosen action, loss on the action.
        examples = []
        for observation, chosen in zip(data.observations, data.chosen, strict=True):
            prompt = list(policy._prompt_ids(observation))
            examples.append((prompt + list(policy._action_ids(observation.legal_actions[chosen])), len(prompt)))
        sequence_tokens = np.array([len(tokens) for tokens, _ in examples])
        reference_model, _ = load_model(model_dir)
        reference_model.freeze()
        linear_to_lora_layers(reference_model, config.lora_layers,
                              {"rank": config.lora_rank, "scale": config.lora_scale, "dropout": 0.0})
        reference_step = mlx_lm_lora_step(reference_model, optim.Adam(learning_rate=config.lr, bias_correction=True))
        batches = iterate_batches(examples, batch_size, max_seq_length=2048, loop=True, seed=0)
        rng = np.random.default_rng(0)
        logical: dict[str, list[int]] = {"ours": [], "mlx-lm": []}
        computed: dict[str, list[int]] = {"ours": [], "mlx-lm": []}

        def ours(count: int = steps["ours"]) -> None:
            for _ in range(count):
                picked = np.sort(rng.choice(len(data.chosen), size=batch_size, replace=False))
                result = update([data.observations[i] for i in picked], data.chosen[picked], data.logp_old[picked],
                                data.logp_old[picked], data.advantages[picked], config.lr)
                logical["ours"].append(int(sequence_tokens[picked].sum()))
                computed["ours"].append(result["tokens"])

        def reference(count: int = steps["mlx-lm"]) -> None:
            for _ in range(count):
                batch, lengths = next(batches)
                reference_step(batch, lengths)
                logical["mlx-lm"].append(int(np.array(lengths)[:, 1].sum()))
                computed["mlx-lm"].append(int(batch.size))

        ours(1)  # warm-up: first-call allocations for ours, tracing and compilation for mlx-lm's compiled step
        reference(1)
        for counts in (*logical.values(), *computed.values()):
            counts.clear()
        log(f"training: batch {batch_size}, {steps['ours']} arena / {steps['mlx-lm']} mlx-lm steps per turn "
            f"x {reps} (alternating)")
        times = interleaved({"ours": ours, "mlx-lm": reference}, reps)
    step_s = {name: statistics.median(t) / steps[name] for name, t in times.items()}
    tokens_per_step = {name: statistics.mean(counts) for name, counts in logical.items()}
    computed_per_step = {name: statistics.mean(counts) for name, counts in computed.items()}

    def speedup(per_step: dict[str, float]) -> float:
        return paired_speedup(times["ours"], times["mlx-lm"], steps["ours"] * per_step["ours"],
                              steps["mlx-lm"] * per_step["mlx-lm"])

    width = computed_per_step["mlx-lm"] / batch_size
    rows.append(throughput_row(
        "training", f"LoRA step tokens/s, batch {batch_size} Kuhn decisions", "tokens/s",
        tokens_per_step["ours"] / step_s["ours"], tokens_per_step["mlx-lm"] / step_s["mlx-lm"],
        ("arena GRPOUpdate (LoRA)", "mlx-lm LoRA step"), 0.8,
        f"tokens = prompt + action tokens of the batch's decisions (same count for both); per step arena ran "
        f"{computed_per_step['ours']:.0f} tokens (identical prompts scored once), mlx-lm "
        f"{computed_per_step['mlx-lm']:.0f} (every example, padded); model: {model_label}",
        speedup(tokens_per_step), step_ms_ours=step_s["ours"] * 1e3, step_ms_reference=step_s["mlx-lm"] * 1e3,
        computed_tokens_ours=computed_per_step["ours"], computed_tokens_reference=computed_per_step["mlx-lm"]))
    # The headline ratio is mostly arena scoring each distinct prompt once; per token actually run through the
    # model (forward + backward), this row shows how the two steps' kernels compare.
    rows.append(throughput_row(
        "training", "LoRA step, tokens actually computed per second", "tokens/s",
        computed_per_step["ours"] / step_s["ours"], computed_per_step["mlx-lm"] / step_s["mlx-lm"],
        ("arena GRPOUpdate (LoRA)", "mlx-lm LoRA step"), None,
        f"context: arena's batch is {computed_per_step['ours']:.0f} tokens (distinct prompts), mlx-lm's "
        f"{batch_size} examples padded to {width:.0f} tokens each", speedup(computed_per_step)))
    return rows


# ----------------------------------------------------------------------------------------------- driver


FIGURE_FUNCTIONS: dict[str, Callable[[bool], list[Row]]] = {
    "blas": figure_blas, "rollouts": figure_rollouts, "hashing": figure_hashing,
    "pipeline": figure_pipeline, "training": figure_training,
}


def run_figure_child(name: str, quick: bool, result: Path) -> None:
    """``--figure``: measure one figure in this process and write its rows as JSON."""
    rows = FIGURE_FUNCTIONS[name](quick)
    result.write_text(json.dumps([asdict(row) for row in rows]))


def run_figure(name: str, quick: bool, tmp: Path) -> list[dict[str, Any]]:
    """One figure in a subprocess; its peak RSS (largest process in its tree) comes from wait4."""
    result = tmp / f"{name}.json"
    args = [sys.executable, __file__, "--figure", name, "--result", str(result)] + (["--quick"] if quick else [])
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    peak_mib = usage.ru_maxrss / 1024  # Linux reports KiB
    if child.returncode != 0 or not result.exists():
        return [asdict(Row(name, name, "", None, None, "", "", note=f"error: exit code {child.returncode}",
                           passed=False, peak_rss_mib=peak_mib))]
    rows = json.loads(result.read_text())
    for row in rows:
        row["peak_rss_mib"] = peak_mib
        row["details"]["figure_wall_s"] = elapsed
    return rows


def _first(path: Path, pattern: str) -> str:
    try:
        match = re.search(pattern, path.read_text(), re.MULTILINE)
    except OSError:
        return "unknown"
    return match.group(1).strip() if match else "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, Any]:
    """Where the figures came from: CPU, cores, memory, load, BLAS, versions."""
    import numpy as np

    from arena.core.blas import blas_info

    numpy_blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    mem_kib = _first(Path("/proc/meminfo"), r"^MemTotal:\s+(\d+)")
    return {
        "cpu": _first(Path("/proc/cpuinfo"), r"^model name\s*:\s*(.+)$") if sys.platform == "linux"
        else platform.processor(),
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem_kib) / 1024**2, 1) if mem_kib.isdigit() else None,
        "load_average_at_start": list(os.getloadavg()),
        "platform": f"{sys.platform}-{platform.machine()}",
        "python": platform.python_version(),
        "mlx_blas": blas_info(),
        "numpy_blas": f"{numpy_blas.get('name')} {numpy_blas.get('version')}",
        "versions": {p: _version(p) for p in ("mlx", "mlx-lm", "numpy", "blake3", "dvc")},
    }


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def render_table(rows: Sequence[dict[str, Any]]) -> str:
    """The figures as a Markdown table (pastes straight into the README)."""
    lines = ["| figure | ours | reference | ratio | target | pass/fail | peak RSS |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        unit = row["unit"]
        ours = f"{_fmt(row['ours'])} {unit} ({row['ours_label']})" if row["ours"] is not None else row["note"]
        reference = f"{_fmt(row['reference'])} {unit} ({row['reference_label']})" if row["reference"] else "-"
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"
        verdict = {True: "pass", False: "**FAIL**", None: "-" if row["target"] is None else "skipped"}[row["passed"]]
        rss = f"{row['peak_rss_mib']:.0f} MiB" if row["peak_rss_mib"] is not None else "-"
        lines.append(f"| {row['name']} | {ours} | {reference} | {ratio} | {row['target'] or 'context'} | {verdict} "
                     f"| {rss} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not the published figures)")
    parser.add_argument("--json", type=Path, help="also write the table and the machine description here")
    parser.add_argument("--only", nargs="+", choices=FIGURES, help="run only these figures")
    parser.add_argument("--figure", choices=FIGURES, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mlx-sgemm", help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=3, help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, default=0.3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mlx_sgemm:
        mlx_sgemm_main(args.mlx_sgemm, args.reps, args.budget)
        return 0
    if args.figure:
        run_figure_child(args.figure, args.quick, args.result)
        return 0
    host = machine()
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arena-bench-results-") as tmp:
        for name in args.only or FIGURES:
            log(f"figure {name}")
            rows.extend(run_figure(name, args.quick, Path(tmp)))
    host["load_average_at_end"] = list(os.getloadavg())
    table = render_table(rows)
    print(f"Machine: {host['cpu']}, {host['cores']} cores, MLX BLAS: {host['mlx_blas']['blas']} "
          f"({host['mlx_blas']['threads']} thread, {host['mlx_blas']['coretype']}), numpy BLAS: {host['numpy_blas']}; "
          f"load average {host['load_average_at_start'][0]:.2f} -> {host['load_average_at_end'][0]:.2f}")
    print(table)
    for row in rows:
        if row["note"] and row["ours"] is not None:
            print(f"- {row['name']}: {row['note']}")
    if args.json:
        from arena.core.artifacts import atomic_write_json

        atomic_write_json(args.json, {"quick": args.quick, "machine": host, "rows": rows,
                                      "wall_s": time.perf_counter() - started})
    # A missed target is a finding (reported in the table), not a crash; a figure that could not run is.
    return 1 if any(row["note"].startswith("error:") for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
