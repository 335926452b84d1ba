"""The CI reproduction check goes red for a nondeterministic stage and stays green for a deterministic one, for the
root dvc.yaml and for a second pipeline in a subdirectory (as realmodel/dvc.yaml is)."""

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


def _published_clone(tmp_path, script, sub_script=None):
    """A git + DVC repo whose stage writes a committed metrics file, built and committed, then freshly cloned; with
    ``sub_script``, also a pipeline sub/dvc.yaml run from the root (wdir: ..) downstream of the root's stage."""
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
    if sub_script is not None:
        (origin / "sub").mkdir()
        (origin / "sub" / "sub.py").write_text(sub_script)
        (origin / "sub" / "dvc.yaml").write_text(
            "stages:\n  sub:\n    wdir: ..\n    cmd: python sub/sub.py\n    deps: [sub/sub.py, artifacts/score.json]\n"
            "    metrics:\n      - artifacts/sub/score.json:\n          cache: false\n"
        )
        _run(origin, "dvc", "repro", "-q", "sub/dvc.yaml")
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


SUB = "import os\nos.makedirs('artifacts/sub', exist_ok=True)\n"
SUB_DETERMINISTIC = SUB + "open('artifacts/sub/score.json', 'w').write(open('artifacts/score.json').read())\n"
SUB_NONDETERMINISTIC = SUB + "open('artifacts/sub/score.json', 'w').write('{\"noise\": %d}' % os.getpid())\n"


@pytest.mark.slow
def test_second_pipeline_reproduces(tmp_path):
    result = reproduction_check(_published_clone(tmp_path, DETERMINISTIC, SUB_DETERMINISTIC), pipeline="sub/dvc.yaml")
    assert result.ok, result.problems


@pytest.mark.slow
def test_second_pipelines_nondeterminism_is_caught_in_its_own_lock_and_results(tmp_path):
    clone = _published_clone(tmp_path, DETERMINISTIC, SUB_NONDETERMINISTIC)
    result = reproduction_check(clone, pipeline="sub/dvc.yaml")
    assert not result.ok
    assert "artifacts/sub/score.json" in result.problems[0] and "sub/dvc.lock" in result.problems[0]
    assert "artifacts/score.json" not in result.problems[0].replace("artifacts/sub/score.json", "")
    _run(clone, "git", "checkout", "--", ".")
    assert reproduction_check(clone).ok  # the root pipeline's own check does not rebuild it


@pytest.mark.slow
def test_root_check_leaves_a_second_pipeline_to_its_own_run(tmp_path):
    clone = _published_clone(tmp_path, DETERMINISTIC, SUB_DETERMINISTIC)
    with open(clone / "sub" / "sub.py", "a") as handle:
        handle.write("# edited: sub/dvc.yaml is out of date, dvc.yaml is not\n")
    _run(clone, "dvc", "repro", "-q")  # a plain `dvc repro` builds ./dvc.yaml alone
    assert subprocess.run(["dvc", "status", "-q", "sub/dvc.yaml"], cwd=clone).returncode == 1
    assert reproduction_check(clone).ok
    result = reproduction_check(clone, pipeline="sub/dvc.yaml")
    assert not result.ok and "sub/dvc.lock" in result.problems[0]


def test_a_missing_pipeline_file_is_one_problem(tmp_path):
    result = reproduction_check(tmp_path, pipeline="nope/dvc.yaml")
    assert result.problems == [f"no pipeline file nope/dvc.yaml in {tmp_path}: name a dvc.yaml (dvc.yaml, "
                               "realmodel/dvc.yaml)"]


@pytest.mark.slow
def test_a_stated_cut_rebuilds_only_the_named_stages_and_their_upstream(tmp_path):
    """CI's cut of a pipeline too long to rebuild whole (realmodel/dvc.yaml): `--stage sub` forces that stage and
    the root's stage upstream of it, never the pipeline's other stages (here one that could not reproduce)."""
    clone = _published_clone(tmp_path, DETERMINISTIC, SUB_DETERMINISTIC)
    noisy = "import os\nopen('artifacts/sub/noisy.json', 'w').write('{\"noise\": %d}' % os.getpid())\n"
    (clone / "sub" / "noisy.py").write_text(noisy)
    with open(clone / "sub" / "dvc.yaml", "a") as handle:
        handle.write("  noisy:\n    wdir: ..\n    cmd: python sub/noisy.py\n    deps: [sub/noisy.py]\n"
                     "    metrics:\n      - artifacts/sub/noisy.json:\n          cache: false\n")
    _run(clone, "dvc", "repro", "-q", "sub/dvc.yaml")
    _run(clone, "git", "add", "-A")
    _run(clone, "git", "commit", "-qm", "a second, nondeterministic stage")
    assert reproduction_check(clone, pipeline="sub/dvc.yaml", stages=("sub",)).ok
    assert not reproduction_check(clone, pipeline="sub/dvc.yaml").ok
