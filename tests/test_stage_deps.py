"""Stage code dependencies are each script's import closure: dvc.yaml is up to date, and an edit reruns exactly
the stages whose code it is."""

import json
from pathlib import Path

import pytest
import yaml
from repo_copy import ROOT, make_copy, repro_env, run_dvc, small_params

from arena.core.code import closure, code_digest
from arena.pipeline.deps import stage_scripts, write_manifests

# A module only the round stages run, and one every stage runs (the stage runner's own helpers).
ROUND_ONLY = "arena/train/fuse.py"
EVERY_STAGE = "arena/core/errors.py"


def test_every_stage_depends_on_its_own_code_manifest():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        body = stage.get("do", stage)
        script = body["cmd"].split()[1]
        if name == "code":
            assert body["deps"] == ["arena", "stages"]
            continue
        assert f"artifacts/code/{Path(script).stem}.json" in body["deps"], name


def test_real_model_stages_run_root_scripts_on_their_own_params_and_code_manifests():
    """realmodel/dvc.yaml's stages run from the root (wdir: ..) with the root's stage scripts, each depending on its
    script's manifest from the root `code` stage and reading one of realmodel's params files (the one its command
    names), never the root's."""
    stages = yaml.safe_load((ROOT / "realmodel" / "dvc.yaml").read_text())["stages"]
    assert "code" not in stages  # artifacts/code is the root's output
    own = {"realmodel/params.yaml", "realmodel/headline.yaml", "realmodel/headline-best.yaml"}
    for name, body in stages.items():
        body = body.get("do", body)  # a foreach stage (the rounds) declares its body under `do`
        assert body["wdir"] == "..", name
        script = body["cmd"].split()[1]
        assert script in stage_scripts(ROOT), name
        assert f"artifacts/code/{Path(script).stem}.json" in body["deps"], name
        for params in body.get("params", []):
            assert isinstance(params, dict) and len(params) == 1 and set(params) <= own, name
            assert f"--params {next(iter(params))}" in body["cmd"], name
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in body.get("outs", []) + body.get("metrics", [])]
        assert all(out.startswith("artifacts/realmodel/") for out in outs), name


def test_manifests_hold_each_scripts_closure(tmp_path):
    written = write_manifests(tmp_path / "code", ROOT)
    assert set(written) == {Path(s).stem for s in stage_scripts(ROOT)}
    for name, content in written.items():
        assert json.loads((tmp_path / "code" / f"{name}.json").read_text()) == content
        assert content["files"] == closure(content["entry"], ROOT)
        assert content["code_digest"] == code_digest(content["files"], ROOT)
    assert "arena/train/basemodel.py" in written["base"]["files"]
    assert not any(f.startswith(("arena/eval/roundeval", "arena/play/match")) for f in written["base"]["files"])


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


def test_package_data_files_belong_to_the_closure(tmp_path):
    (tmp_path / "arena" / "data").mkdir(parents=True)
    (tmp_path / "arena" / "__init__.py").write_text('"""pkg"""\n')
    (tmp_path / "arena" / "data" / "table.json").write_text("{}\n")
    (tmp_path / "main.py").write_text("import arena\n")
    assert closure("main.py", tmp_path) == ["arena/__init__.py", "arena/data/table.json", "main.py"]


def _stub_commands(repo: Path) -> None:
    """Every stage's command but `code`'s replaced by one that only creates its outputs (the deps stay as they are)."""
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())
    for name, stage in spec["stages"].items():
        if name == "code":
            continue
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
        # Until `code` reruns, only it knows; then exactly the stages whose manifest changed are out of date.
        assert set(json.loads(run_dvc(repo, env, "status", "--json").stdout)) == {"code"}
        assert run_dvc(repo, env, "repro", "-q", "code").returncode == 0
        status = json.loads(run_dvc(repo, env, "status", "--json").stdout)
        flagged = {name.split("@")[0] for name in status}
        expected = {name for name, stage in stages.items() if name != "code" and module in _closure_of(stage, repo)}
        assert flagged == expected, (module, flagged, expected)
        assert run_dvc(repo, env, "repro", "-q").returncode == 0
    assert {n for n, s in stages.items() if n != "code" and ROUND_ONLY in _closure_of(s, repo)} == {"round0", "round"}
    assert len({n for n, s in stages.items() if n != "code" and EVERY_STAGE in _closure_of(s, repo)}) == len(stages) - 1


def _closure_of(stage: dict, repo: Path) -> list[str]:
    return closure(stage.get("do", stage)["cmd"].split()[1], repo)
