"""README is a short guide whose every shell command runs: fast ones are run, long or Mac/network ones are checked.

A command README shows is every line of a ```bash block and every inline `./dev.sh ...`. Each is written as
``./dev.sh COMMAND`` (the one form README explains). A line ending in a mark is not run here: ``# long`` (minutes),
``# needs a Mac``, ``# needs network``; for those the test checks that the entry point exists (its ``--help``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 250
MARKS = ("# long", "# needs a Mac", "# needs network")
PREFIX = "./dev.sh "


def _commands(text: str) -> list[tuple[str, bool]]:
    """(command, run it here) for every line of a bash block and every inline ``./dev.sh`` command."""
    found: list[tuple[str, bool]] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                found.append((line.strip(), not any(mark in line for mark in MARKS)))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for inline in re.findall(r"`(\./dev\.sh [^`]+)`", prose):
        if not re.fullmatch(r"\./dev\.sh [A-Z]+", inline):  # ./dev.sh COMMAND: the form, not a command
            found.append((inline, False))
    return found


def _env() -> dict[str, str]:
    """What ./dev.sh sets up, without (re)installing: this interpreter's bin first, this checkout importable."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "OPENBLAS_NUM_THREADS": "1"}


def _entry_point(command: str) -> str:
    """The ``--help`` (or version) form of a command that is not run here: its program and subcommands."""
    words = shlex.split(command.split(" #")[0])[1:]  # after ./dev.sh
    if words[0] == "repro":
        return "dvc repro --help"
    if words[0] == "test":
        return "python -m pytest --version"
    if words[0] == "arena":
        return f"arena {words[1]} --help"
    if words[0] == "dvc":
        subcommands = [w for w in words[1:3] if not w.startswith("-")]
        subcommands = subcommands[:1] if subcommands[0] not in ("exp", "metrics", "stage", "queue", "remote") \
            else subcommands
        return "dvc " + " ".join(subcommands) + " --help"
    if words[0] == "python":
        return f"python {words[1]} --help"
    raise AssertionError(f"README command {command!r}: no known entry point")


def _run(shell: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", shell], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=timeout)


README_TEXT = README.read_text()
COMMANDS = _commands(README_TEXT)


def test_readme_is_a_short_guide():
    lines = len(README_TEXT.splitlines())
    assert lines <= MAX_LINES, f"README.md has {lines} lines (at most {MAX_LINES}): move detail to docs/"


def test_every_command_uses_the_one_form_readme_explains():
    assert COMMANDS
    stray = [c for c, _ in COMMANDS if not c.startswith(PREFIX) and not c.startswith(f'eval "{PREFIX}')]
    assert not stray, f"README commands not written as ./dev.sh COMMAND: {stray}"


@pytest.mark.parametrize(("command", "here"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_every_command_runs_or_its_entry_point_exists(command, here):
    shell = command.replace(PREFIX, "") if here else _entry_point(command)
    done = _run(shell)
    assert done.returncode == 0, f"{shell!r} (from README {command!r}) failed: {done.stderr[-2000:]}"


def test_every_relative_link_resolves():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README_TEXT)
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_the_stage_count_readme_states_is_what_dvc_runs():
    stated = re.search(r"\*\*(\d+) stages\*\*", README_TEXT)
    assert stated, "README no longer states the default's stage count"
    done = _run("dvc stage list")
    assert done.returncode == 0, done.stderr
    assert int(stated.group(1)) == len(done.stdout.splitlines())


def test_the_command_finder_honours_marks_and_skips_the_placeholder():
    text = "```bash\n./dev.sh arena --help\n./dev.sh repro  # long\n# a comment\n```\nrun `./dev.sh COMMAND` or " \
           "`./dev.sh dvc stage list`.\n"
    assert _commands(text) == [("./dev.sh arena --help", True), ("./dev.sh repro  # long", False),
                               ("./dev.sh dvc stage list", False)]
    assert _entry_point("./dev.sh dvc exp run -n x -S a=1  # long") == "dvc exp run --help"
    assert _entry_point("./dev.sh dvc metrics show") == "dvc metrics show --help"
    assert _entry_point("./dev.sh arena leaderboard  # long") == "arena leaderboard --help"
