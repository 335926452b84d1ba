"""The card's producing code against the code here: the same entry script's import closure, digested in this checkout.

A card records only its closure's digest, so which files differ can be told only in one cheap case: when
this checkout is a git work tree whose committed closure (HEAD) has the card's digest, the uncommitted
changes are the difference, and they are named.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from arena.core.code import closure, code_digest, project_root
from arena.core.hashing import digest_bytes, digest_config, digest_file
from arena.eval.verdict import Difference


@dataclass
class CodeCheck:
    """``here``: the code record for the re-derived card; ``differences`` from the card's; ``notes`` on the check."""

    here: dict[str, str] | None
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _is_script(entry: str) -> bool:
    path = PurePosixPath(entry)
    return not path.is_absolute() and ".." not in path.parts and path.suffix == ".py"


def compare_code(card_code: Mapping[str, str] | None, root: Path | None = None) -> CodeCheck:
    """Digest the card's entry script's closure in ``root`` (default: the project this arena runs from) and compare."""
    root = (root or project_root()).resolve()
    if card_code is None:
        return CodeCheck(None, notes=["the card records no producing code (it predates code digests on cards): "
                                      "the code was not compared"])
    entry = card_code["entry"]
    if not _is_script(entry) or not (root / entry).is_file():
        detail = f"{root} has no such script; the games are re-played with the arena package there"
        return CodeCheck(None, [Difference("code.entry", entry, "missing", detail)])
    files = closure(entry, root)
    here = {"entry": entry, "code_digest": code_digest(files, root)}
    if here["code_digest"] == card_code["code_digest"]:
        return CodeCheck(here)
    which = _which_files(files, card_code["code_digest"], root)
    detail = f"{entry} and its import closure, {len(files)} files; {which}"
    return CodeCheck(here, [Difference("code.code_digest", card_code["code_digest"], here["code_digest"], detail)])


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True)
    except OSError as error:  # no git here: the files cannot be told apart, which is not an error
        return subprocess.CompletedProcess(args, 127, b"", str(error).encode())


def _which_files(files: Sequence[str], card_digest: str, root: Path) -> str:
    """The uncommitted closure files when HEAD's versions of them give the card's digest, else why it cannot be told."""
    unknown = "the card records only the closure's digest, so which files differ cannot be told here"
    changed = _git(root, "diff", "--relative", "--name-only", "HEAD", "--", *files)
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "--", *files)
    if changed.returncode != 0 or untracked.returncode != 0 or untracked.stdout.strip():
        return unknown
    names = sorted(set(changed.stdout.decode().splitlines()) & set(files))
    head: dict[str, str] = {}
    for rel in files:
        if rel not in names:
            head[rel] = digest_file(root / rel)
            continue
        shown = _git(root, "show", f"HEAD:./{rel}")
        if shown.returncode != 0:
            return unknown
        head[rel] = digest_bytes(shown.stdout)
    if not names or digest_config(head) != card_digest:
        return unknown
    return f"HEAD's versions give the card's digest: the uncommitted changes to {', '.join(names)} make the difference"
