"""Content addressing: digest stability and sensitivity, the stat-keyed hash cache, canonical configs."""

import os
import time

import pytest

from arena.core.hashing import HashCache, canonical_json, digest_config, digest_dir, digest_file


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"alpha")
    (root / "sub" / "b.bin").write_bytes(bytes(range(256)) * 100)
    return root


def test_dir_digest_is_stable(tree):
    assert digest_dir(tree) == digest_dir(tree)


def test_dir_digest_changes_on_one_byte(tree):
    before = digest_dir(tree)
    data = bytearray((tree / "sub" / "b.bin").read_bytes())
    data[1234] ^= 1
    (tree / "sub" / "b.bin").write_bytes(bytes(data))
    assert digest_dir(tree) != before


def test_dir_digest_changes_on_rename_and_move(tree):
    before = digest_dir(tree)
    (tree / "a.txt").rename(tree / "c.txt")
    renamed = digest_dir(tree)
    assert renamed != before
    (tree / "c.txt").rename(tree / "sub" / "c.txt")
    assert digest_dir(tree) not in (before, renamed)


def test_dir_digest_changes_on_new_empty_file(tree):
    before = digest_dir(tree)
    (tree / "empty").touch()
    assert digest_dir(tree) != before


def test_dir_digest_ignores_meta_json(tree):
    before = digest_dir(tree)
    (tree / "meta.json").write_text("{}")
    assert digest_dir(tree) == before


def test_large_file_streamed_digest_matches_in_memory(tmp_path):
    from blake3 import blake3

    data = os.urandom(6 * 1024 * 1024)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert digest_file(path, use_cache=False) == blake3(data).hexdigest()


def _counting_cache(tmp_path, monkeypatch):
    import arena.core.hashing as hashing

    calls = []
    real = hashing._hash_file_uncached

    def counting(path, size):
        calls.append(path)
        return real(path, size)

    monkeypatch.setattr(hashing, "_hash_file_uncached", counting)
    return HashCache(tmp_path / "cache.sqlite"), calls


def test_hash_cache_hits_when_unchanged(tmp_path, monkeypatch):
    cache, calls = _counting_cache(tmp_path, monkeypatch)
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 1000)
    first = cache.digest(path)
    assert cache.digest(path) == first
    assert len(calls) == 1


def test_hash_cache_invalidated_by_size_and_mtime(tmp_path, monkeypatch):
    from blake3 import blake3

    cache, calls = _counting_cache(tmp_path, monkeypatch)
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 1000)
    first = cache.digest(path)
    path.write_bytes(b"x" * 1001)
    assert cache.digest(path) != first
    st = path.stat()
    path.write_bytes(b"y" * 1001)  # same size, new content
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert cache.digest(path) == blake3(b"y" * 1001).hexdigest()
    assert len(calls) == 3


def test_hash_cache_not_fooled_by_restored_mtime(tmp_path, monkeypatch):
    cache, _ = _counting_cache(tmp_path, monkeypatch)
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 64)
    st = path.stat()
    stale = cache.digest(path)
    time.sleep(0.01)
    path.write_bytes(b"b" * 64)  # same size, then put the old mtime back: only ctime tells
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache.digest(path) != stale


def test_hash_cache_invalidated_by_inode(tmp_path, monkeypatch):
    cache, calls = _counting_cache(tmp_path, monkeypatch)
    path = tmp_path / "f.bin"
    path.write_bytes(b"a" * 64)
    stale = cache.digest(path)
    replacement = tmp_path / "g.bin"
    replacement.write_bytes(b"b" * 64)
    os.replace(replacement, path)
    assert cache.digest(path) != stale
    assert len(calls) == 2


def test_canonical_config_is_order_independent():
    one = {"a": 1, "b": {"c": 0.1, "d": [1, 2]}}
    other = {"b": {"d": [1, 2], "c": 0.1}, "a": 1}
    assert digest_config(one) == digest_config(other)


def test_canonical_config_distinguishes_types_and_values():
    assert digest_config({"a": 1}) != digest_config({"a": 1.0})
    assert digest_config({"a": 0.1}) != digest_config({"a": 0.10000000000000002})
    assert digest_config({"a": -0.0}) == digest_config({"a": 0.0})
    assert canonical_json({"b": 1, "a": [True, None]}) == '{"a":[true,null],"b":1}'


def test_canonical_config_rejects_non_finite():
    with pytest.raises(ValueError, match="non-finite"):
        digest_config({"a": float("nan")})


def test_hash_cache_falls_back_to_hashing_when_sqlite_fails(tmp_path, monkeypatch):
    """A database locked past the timeout (concurrent Ray workers did this in CI) or a damaged one costs a re-hash,
    never a digest or a crash; once the lock is gone the cache is set up and used."""
    import sqlite3

    from blake3 import blake3

    import arena.core.hashing as hashing

    calls = []
    real = hashing._hash_file_uncached
    monkeypatch.setattr(hashing, "_hash_file_uncached", lambda path, size: calls.append(path) or real(path, size))
    path = tmp_path / "f.bin"
    path.write_bytes(b"z" * 1000)
    expected = blake3(b"z" * 1000).hexdigest()
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"not a database" * 100)
    assert HashCache(damaged).digest(path) == expected

    holder = sqlite3.connect(tmp_path / "locked.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    cache = HashCache(tmp_path / "locked.sqlite", timeout=0.05)
    assert cache.digest(path) == expected and cache.digest(path) == expected
    holder.execute("ROLLBACK")
    assert cache.digest(path) == expected and cache.digest(path) == expected
    assert len(calls) == 4  # damaged: 1; locked: 2; after the lock: 1, then a cache hit
