"""arena's exported verifiers environments run by verifiers' own eval command; import-traces accepts what it writes.

The fast tests load each package through verifiers' own loaders; the slow ones run eval. The chat endpoints are on
127.0.0.1: ``policy_server.py`` (scripted policies chosen by the request's model)
and, in the slow test, ``mlx_lm server`` with a different seeded model in each seat. Needs the
``verifiers`` extra (CI installs it with the environment packages); without it these tests are skipped.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="needs the verifiers extra: pip install -e '.[verifiers]'")

from policy_server import PolicyServer  # noqa: E402

from arena.eval.imported import TraceImportError, import_records, import_traces  # noqa: E402
from arena.eval.scorecards import CARD_SUFFIX  # noqa: E402
from arena.eval.verdict import MATCH  # noqa: E402
from arena.eval.verify import verify_scorecard  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# verifiers' v1 eval command (console script `vf-eval` in 0.4, `eval` in 0.3); the function both scripts run.
EVAL = [sys.executable, "-c", "from verifiers.v1.cli.eval.main import main; main()"]


def _eval_serves() -> bool:
    """Whether this verifiers' eval has --serve/--no-serve (0.3); 0.4's runs every episode in-process."""
    try:
        from verifiers.v1.configs.cli.eval import EvalConfig
    except ImportError:
        return True
    return "serve" in EvalConfig.model_fields


VERIFIERS_SERVES = _eval_serves()


def _env(home: Path) -> dict[str, str]:
    """The eval's environment: the exported packages importable (installed, else from the checkout), HOME private
    (verifiers keeps its subprocess runtimes under ~/.cache), no hub, pinned BLAS threads."""
    paths = [str(ROOT)]
    for package in sorted((ROOT / "environments").iterdir()):
        if importlib.util.find_spec(package.name) is None:
            paths.append(str(package))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]),
            "HOME": str(home), "HF_HUB_OFFLINE": "1", "OPENBLAS_NUM_THREADS": "1"}


def vf_eval(tmp: Path, env_id: str, model_a: str, model_b: str, base_url: str, games: int,
            *extra: str) -> Path:
    """Run verifiers' eval of ``env_id`` (role A = ``model_a``, role B = ``model_b``); return its traces.jsonl."""
    out = tmp / "outputs"
    serve = [] if any(arg.startswith("--serve") for arg in extra) or not VERIFIERS_SERVES else ["--no-serve"]
    args = [*EVAL, env_id, "--model", model_a, "--env.player-b.model", model_b, "--client.base-url", base_url,
            "--client.api-key-var", "ARENA_TEST_NO_KEY", "-n", str(games), *serve, "--no-rich", "--no-push",
            "-o", str(out), *extra]
    done = subprocess.run(args, env=_env(tmp), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    (traces,) = sorted(out.rglob("traces.jsonl"))
    return traces


def _project(tmp: Path, game: str, games: int, variant: str = "{}") -> Path:
    project = tmp / "project"
    project.mkdir()
    (project / "params.yaml").write_text(f"eval:\n  games:\n    - {{id: {game}, variant: {variant}}}\n"
                                         f"  seeds: [0, {games}]\n")
    return project


def _import_and_verify(traces: Path, project: Path) -> dict:
    board = import_traces([traces], project / "cards", params=project / "params.yaml")
    (card,) = sorted((project / "cards").glob(f"*{CARD_SUFFIX}"))
    result = verify_scorecard(card, repo=project)
    assert result.verdict == MATCH, result.report()
    return board


GAMES = ("kuhn", "tictactoe", "nim", "liarsdice", "leduc")


@pytest.mark.parametrize("game", GAMES)
def test_each_package_loads_through_verifiers_loaders(game, monkeypatch):
    """What verifiers resolves from the id ``arena-<game>``: the taskset, its config, the env, the default harness."""
    import itertools

    from verifiers.v1.utils import loaders

    for package in ("arena_vf", f"arena_{game}"):
        if importlib.util.find_spec(package) is None:
            monkeypatch.syspath_prepend(str(ROOT / "environments" / package))
    env_id = f"arena-{game}"
    config_type = loaders.taskset_config_type(env_id)
    assert config_type().game == game
    assert loaders.environment_class(env_id).__name__ == "ArenaGameEnv"
    assert loaders.default_harness_id(env_id) == env_id  # the package's own harness: no uv, no sandbox
    assert {"player_a", "player_b"} <= set(loaders.env_config_type(env_id).model_fields)
    taskset = loaders.load_taskset(config_type(id=env_id, seed_start=40))
    tasks = [task.data for task in itertools.islice(taskset, 3)]
    assert [(t.seed, t.first_seat, t.prompt) for t in tasks] == [(40, 0, None), (41, 1, None), (42, 0, None)]
    assert taskset.INFINITE


@pytest.mark.slow
@pytest.mark.parametrize("game", ["tictactoe", "liarsdice", "leduc"])
def test_every_other_game_through_verifiers_eval(tmp_path, game):
    with PolicyServer() as server:
        traces = vf_eval(tmp_path, f"arena-{game}", "random", "first", server.base_url, 1)
        assert {r["model"] for r in server.requests} == {"random", "first"}  # a different model in each seat
    (record,) = import_records([traces])
    assert not record["errored"] and record["turns"] >= 2
    _import_and_verify(traces, _project(tmp_path, game, 1))


@pytest.mark.slow
def test_served_mode_with_an_endpoint_per_seat(tmp_path):
    """verifiers' default env-server worker pool (prime-rl's path), and player_b on its own endpoint."""
    if not VERIFIERS_SERVES:
        pytest.skip("this verifiers' eval has no env-server mode (0.4 runs episodes in-process)")
    with PolicyServer() as first, PolicyServer() as second:
        traces = vf_eval(tmp_path, "arena-nim", "random", "first", first.base_url, 2, "--serve.max-concurrent", "2",
                         "--env.player-b.client.type", "eval", "--env.player-b.client.base-url", second.base_url,
                         "--env.player-b.client.api-key-var", "ARENA_TEST_NO_KEY")
        assert {r["model"] for r in first.requests} == {"random"}
        assert {r["model"] for r in second.requests} == {"first"}
    records = import_records([traces])
    assert {tuple(sorted(r["players"])) for r in records} == {
        (f"openai:first@{second.base_url}", f"openai:random@{first.base_url}")}
    _import_and_verify(traces, _project(tmp_path, "nim", 2))


@pytest.mark.slow
@pytest.mark.parametrize("degenerate", ["staller", "spammer"])
def test_degenerate_agents_cannot_score_in_the_exported_env(tmp_path, degenerate):
    """The probe gate's degenerate checks, run through verifiers' real machinery on the exported Kuhn env."""
    with PolicyServer() as server:
        traces = vf_eval(tmp_path, "arena-kuhn", degenerate, "random", server.base_url, 4, "--env.fixed-opponent")
    agents = [trace["agent"] for line in traces.read_text().splitlines() for trace in json.loads(line)["traces"]]
    assert {(a["name"], a["trainable"]) for a in agents} == {("player_a", True), ("player_b", False)}
    board = import_traces([traces], tmp_path / "cards", params=_project(tmp_path, "kuhn", 4) / "params.yaml")
    (pair,) = board["pairs"]  # the card's summary, p0 = player_a = the degenerate agent
    assert pair["p0"].startswith(f"openai:{degenerate}@")
    assert pair["games"] == 4 and pair["wins"]["p0"] == 0, pair
    assert pair["mean_reward"]["p0"] < 0, pair


@pytest.fixture(scope="module")
def second_model(tmp_path_factory) -> Path:
    """Another embedded base model, from another seed: the second seat's model."""
    from arena.train.basemodel import build_base
    from arena.train.config import BaseConfig

    out = tmp_path_factory.mktemp("models") / "base-seed1"
    build_base(BaseConfig(seed=1), out)
    return out


@pytest.mark.slow
def test_kuhn_eval_against_mlx_lm_server_with_a_model_per_seat(tmp_path, base_model_dir, second_model):
    from test_frontier import _start_mlx_server

    from arena.players.localserver import stop

    work = tmp_path / "server"
    (work / "hub").mkdir(parents=True)
    env = {**os.environ, "HF_HUB_CACHE": str(work / "hub"), "HF_HUB_OFFLINE": "1"}
    started = None
    for _ in range(3):
        started = _start_mlx_server(base_model_dir, work, env)
        if started is not None:
            break
    assert started is not None, "three free ports in a row were taken before mlx_lm's server could bind them"
    process, url = started
    try:
        # mlx_lm's server loads the model a request names, so each seat gets its own model.
        traces = vf_eval(tmp_path, "arena-kuhn", str(base_model_dir), str(second_model), url, 4,
                         "--sampling.max-tokens", "8")
    finally:
        stop(process)
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    served = {call.get("model") for e in episodes for t in e["traces"] for call in t.get("calls", [])}
    assert served == {str(base_model_dir), str(second_model)}, served
    project = _project(tmp_path, "kuhn", 4)
    _import_and_verify(traces, project)
    # A trace whose actions were edited is rejected, naming the game and the digest it claimed.
    info = episodes[0]["traces"][0]["info"]["arena"]
    for trace in episodes[0]["traces"]:
        trace["info"]["arena"]["actions"][-1] += "x"
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    with pytest.raises(TraceImportError, match=rf"kuhn seed {info['seed']}\b.*{info['transcript_digest']}"):
        import_records([tampered])
