"""Symbolic links inside artifact and model directories: refused (or, for a model's file links, followed to their
content) and reported by `arena check-artifacts`, never silently skipped or looped on."""

from __future__ import annotations

import hashlib
import os

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.core.errors import ArenaError
from arena.core.hashing import digest_dir
from arena.core.pins import write_meta


def _artifact(root):
    out = root / "artifacts" / "models" / "base"
    out.mkdir(parents=True)
    (out / "weights.bin").write_bytes(b"w" * 100)
    write_meta(out, inputs={}, code={"entry": "x.py", "code_digest": "d"})
    return out


def _check(root):
    result = CliRunner().invoke(main, ["check-artifacts", "--artifacts", str(root / "artifacts"),
                                       "--dvc-cache", str(root / ".dvc" / "cache")])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


LINKS = {
    "loop to .": lambda d, outside: os.symlink(".", d / "loop"),
    "file outside": lambda d, outside: os.symlink(outside, d / "extra.bin"),
    "dir outside": lambda d, outside: os.symlink(outside.parent, d / "elsewhere"),
    "dangling": lambda d, outside: os.symlink(d / "gone", d / "dangling"),
}


@pytest.mark.parametrize("kind", sorted(LINKS))
def test_a_link_inside_an_artifact_fails_check_artifacts(tmp_path, kind):
    out = _artifact(tmp_path)
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    assert _check(tmp_path) == (0, "0 problem(s)\n")
    LINKS[kind](out, outside)
    code, output = _check(tmp_path)
    assert code == 1 and "symbolic link" in output and str(out) in output, output


def test_a_link_in_an_archive_without_meta_json_fails_check_artifacts(tmp_path):
    archive = tmp_path / "artifacts" / "scores" / "final"
    archive.mkdir(parents=True)
    (archive / "excluded.json").write_text("{}")
    os.symlink("/etc", archive / "etc")
    code, output = _check(tmp_path)
    assert code == 1 and "symbolic link" in output and "etc" in output, output


def test_a_link_into_the_dvc_cache_is_dvcs_own_and_passes(tmp_path):
    out = _artifact(tmp_path)
    md5 = hashlib.md5(b"w" * 100).hexdigest()
    cached = tmp_path / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    cached.parent.mkdir(parents=True)
    os.replace(out / "weights.bin", cached)
    os.symlink(cached, out / "weights.bin")  # what `dvc checkout` makes with cache.type = symlink
    assert _check(tmp_path) == (0, "0 problem(s)\n")


def test_write_meta_refuses_an_artifact_holding_a_link(tmp_path):
    out = tmp_path / "a"
    out.mkdir()
    os.symlink(".", out / "loop")
    with pytest.raises(ArenaError, match="symbolic link"):
        write_meta(out, inputs={}, code={"entry": "x.py", "code_digest": "d"})


def test_a_model_directorys_file_links_hash_as_their_content_and_others_are_refused(tmp_path):
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    (blobs / "w").write_bytes(b"weights")
    linked, copied = tmp_path / "linked", tmp_path / "copied"
    linked.mkdir()
    copied.mkdir()
    os.symlink(blobs / "w", linked / "model.safetensors")  # a Hugging Face snapshot's layout
    (copied / "model.safetensors").write_bytes(b"weights")
    assert digest_dir(linked) == digest_dir(copied)
    for name, target in (("loop", "."), ("dir", blobs), ("dangling", tmp_path / "gone")):
        os.symlink(target, linked / name)
        with pytest.raises(ArenaError, match=f"{name} is a symbolic link"):
            digest_dir(linked)
        os.unlink(linked / name)
