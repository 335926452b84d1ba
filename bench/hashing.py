"""Figure hashing: blake3 pins (digest_file, uncached) against md5 (DVC's hash), and a cached re-pin."""

from __future__ import annotations

import hashlib
import statistics
import tempfile
from pathlib import Path

from common import Row, discarding, interleaved, latency_row, log, paired_speedup, throughput_row

MiB = 1024 * 1024


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


def _time_hashes(path: Path, cache_path: Path, reps: int, hits: int) -> tuple[dict[str, list[float]], list[float]]:
    """blake3 and md5 over ``path`` alternating, then ``hits`` cached re-pins, each through a fresh HashCache."""
    from arena.core.hashing import HashCache, digest_file

    # Both sides read the file from the page cache (it was just written): this compares hashing, not the disk.
    md5_file(path)
    log(f"hashing: blake3 vs md5 x {reps} (alternating)")
    times = interleaved({"blake3": discarding(lambda: digest_file(path, use_cache=False)),
                         "md5": discarding(lambda: md5_file(path))}, reps)
    first = HashCache(cache_path).digest(path)
    if first != digest_file(path, use_cache=False):
        raise RuntimeError("the hash cache returned a different digest from an uncached hash")
    # Each re-pin opens the cache afresh (as a new `arena pin` process would): connect, stat, one lookup.
    hit_times = interleaved({"hit": discarding(lambda: HashCache(cache_path).digest(path))}, hits)["hit"]
    return times, hit_times


def figure(quick: bool) -> list[Row]:
    """Pin a freshly written file both ways (page cache warm), then re-pin it from the hash cache."""
    size, reps, hits = (32 * MiB, 3, 20) if quick else (1024 * MiB, 3, 50)
    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        path = Path(tmp) / "blob.bin"
        log(f"hashing: writing {size // MiB} MiB to {path}")
        write_test_file(path, size)
        times, hit_times = _time_hashes(path, Path(tmp) / "cache" / "hashes.sqlite", reps, hits)
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
