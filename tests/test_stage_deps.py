"""Stage code dependencies are each script's import closure: dvc.yaml is up to date, and an edit reruns exactly
the stages whose code it is."""

import json
from pathlib import Path

import pytest
import yaml
from repo_copy import ROOT, make_copy, repro_env, run_dvc, small_params

from arena.core.code import closure, code_digest
from arena.pipeline.deps import BEGIN, END, check, sync

# A module only the round stages run, and one every stage runs (the stage runner's own helpers).
ROUND_ONLY = "arena/train/fuse.py"
EVERY_STAGE = "arena/core/errors.py"


def test_dvc_yaml_lists_each_stages_import_closure():
    stale = [block for block in check(ROOT / "dvc.yaml", ROOT) if block.stale]
    assert not stale, f"run `arena deps --write`: stale code lists for {[b.script for b in stale]}"


def test_closure_follows_imports_inside_functions_and_packages(tmp_path):
    (tmp_path / "arena" / "sub").mkdir(parents=True)
    (tmp_path / "arena" / "__init__.py").write_text('"""pkg"""\n')
    (tmp_path / "arena" / "sub" / "__init__.py").write_text('"""sub"""\n')
    (tmp_path / "arena" / "sub" / "leaf.py").write_text("x = 1\n")
    (tmp_path / "arena" / "lazy.py").write_text("def f():\n    from arena.sub import leaf\n    return leaf\n")
    (tmp_path / "arena" / "unused.py").write_text("y = 2\n")
    (tmp_path / "main.py").write_text("import json\nimport arena.lazy\n")
    assert closure("main.py", tmp_path) == ["arena/__init__.py", "arena/lazy.py", "arena/sub/__init__.py",
                                            "arena/sub/leaf.py", "main.py"]


def test_code_digest_changes_with_content_and_with_names(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    first = code_digest(["a.py"], tmp_path)
    assert code_digest(["b.py"], tmp_path) != first  # same bytes, another module
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_digest(["a.py"], tmp_path) != first


def test_sync_rewrites_a_stale_block_and_check_reports_it(tmp_path):
    dvc_yaml = tmp_path / "dvc.yaml"
    dvc_yaml.write_text(f"stages:\n  base:\n    deps:\n    {BEGIN}\n    - stages/base.py\n    {END}\n    - x\n")
    (block,) = check(dvc_yaml, ROOT)
    assert block.stale and block.computed[0] == "stages/base.py"
    assert [b.script for b in sync(dvc_yaml, ROOT)] == ["stages/base.py"]
    assert not any(b.stale for b in check(dvc_yaml, ROOT))
    text = dvc_yaml.read_text()
    assert "    - arena/train/basemodel.py\n" in text and text.endswith("    - x\n")


def _stub_commands(repo: Path) -> None:
    """Every stage's command replaced by one that only creates its outputs (the deps stay as generated)."""
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())
    for stage in spec["stages"].values():
        body = stage.get("do", stage)
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in body.get("outs", []) + body.get("metrics", [])]
        files = [o for o in outs if o.endswith(".json")]
        dirs = [o for o in outs if not o.endswith(".json")]
        parents = sorted({str(Path(f).parent) for f in files})
        body["cmd"] = " && ".join([f"mkdir -p {' '.join(dirs + parents)}",
                                   *(f"echo ok > {d}/x" for d in dirs), *(f"echo '{{}}' > {f}" for f in files)])
    (repo / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


@pytest.mark.slow
def test_editing_a_module_reruns_exactly_the_stages_that_import_it(tmp_path):
    repo = make_copy(tmp_path / "repo", small_params())
    _stub_commands(repo)
    env = repro_env(repo)
    assert run_dvc(repo, env, "repro", "-q").returncode == 0
    assert run_dvc(repo, env, "status", "-q").returncode == 0
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for module in (ROUND_ONLY, EVERY_STAGE):
        with open(repo / module, "a") as handle:
            handle.write("\n# edited by the test\n")
        status = json.loads(run_dvc(repo, env, "status", "--json").stdout)
        flagged = {name.split("@")[0] for name in status}
        expected = {name for name, stage in stages.items()
                    if module in closure(stage.get("do", stage)["deps"][0], repo)}
        assert flagged == expected, (module, flagged, expected)
        assert run_dvc(repo, env, "repro", "-q").returncode == 0
    assert {"round0", "round"} == {n for n, s in stages.items() if ROUND_ONLY in closure(s.get("do", s)["deps"][0],
                                                                                          repo)}
    assert len({n for n, s in stages.items() if EVERY_STAGE in closure(s.get("do", s)["deps"][0], repo)}) == \
        len(stages)
