"""The CI reproduction check goes red for a nondeterministic stage and stays green for a deterministic one."""

import os
import subprocess
import sys

import pytest

from arena.eval.reproduce import reproduction_check

DETERMINISTIC = "open('artifacts/score.json', 'w').write('{\"win_rate\": 0.5}')\n"
NONDETERMINISTIC = "import os\nopen('artifacts/score.json', 'w').write('{\"noise\": %d}' % os.getpid())\n"


@pytest.fixture(autouse=True)
def _venv_tools_on_path(monkeypatch):
    # `dvc` and the stage's `python` must be this environment's, as `./dev.sh` arranges for users.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])


def _run(cwd, *args):
    subprocess.run(list(args), cwd=cwd, check=True, capture_output=True)


def _published_clone(tmp_path, script):
    """A git + DVC repo whose stage writes a committed metrics file, built and committed, then freshly cloned."""
    origin = tmp_path / "origin"
    (origin / "artifacts").mkdir(parents=True)
    _run(origin, "git", "init", "-q")
    _run(origin, "git", "config", "user.email", "ci@example.invalid")
    _run(origin, "git", "config", "user.name", "ci")
    _run(origin, "dvc", "init", "-q")
    (origin / "score.py").write_text(script)
    (origin / "dvc.yaml").write_text(
        "stages:\n  score:\n    cmd: python score.py\n    deps: [score.py]\n    metrics:\n"
        "      - artifacts/score.json:\n          cache: false\n"
    )
    _run(origin, "dvc", "repro", "-q")
    _run(origin, "git", "add", "-A")
    _run(origin, "git", "commit", "-qm", "publish")
    clone = tmp_path / "clone"  # a fresh clone has no DVC cache, so the stage really runs again
    _run(tmp_path, "git", "clone", "-q", str(origin), str(clone))
    return clone


def test_deterministic_stage_reproduces(tmp_path):
    result = reproduction_check(_published_clone(tmp_path, DETERMINISTIC))
    assert result.ok, result.problems


def test_nondeterministic_stage_is_caught(tmp_path):
    result = reproduction_check(_published_clone(tmp_path, NONDETERMINISTIC))
    assert not result.ok
    assert "differ from the committed ones" in result.problems[0]
    assert "artifacts/score.json" in result.problems[0] and "dvc.lock" in result.problems[0]
    assert '"noise"' in result.diff
