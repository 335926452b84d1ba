"""DVC over real network remotes (SSH via sshd, WebDAV via wsgidav) on 127.0.0.1: push, fresh-clone pull, no reruns.

Each test starts its server itself on a free port and stops it by PID. Clone A builds the tiny project and
pushes outputs and run cache; a fresh clone B pulls and must run no stage; a param change in B reruns only
the stages downstream of it, and a param value A already ran is restored from the pushed run cache.
"""

import getpass
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dvc_tiny
import pytest
import repo_copy

pytestmark = pytest.mark.slow

SSHD = "/usr/sbin/sshd"  # Debian's openssh-server; sshd must be started by absolute path to re-exec itself


def _missing(message: str) -> None:
    """Skip on a developer machine without the server; fail in CI, which must run these tests."""
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"{message}; CI must run the network remote tests")
    pytest.skip(message)


@pytest.fixture
def ssh_remote(tmp_path):
    """An sshd on 127.0.0.1 (key auth only, non-standard port), and the DVC remote settings that reach it."""
    if importlib.util.find_spec("dvc_ssh") is None:
        _missing("needs dvc-ssh (the remote extra)")
    if not Path(SSHD).exists():
        _missing("needs Debian's openssh-server (apt-get install -y --no-install-recommends openssh-server)")
    try:
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    except PermissionError:
        _missing("sshd needs /run/sshd, which only root can create")
    keys = tmp_path / "ssh"
    keys.mkdir()
    for name in ("host_key", "id_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
    shutil.copy(keys / "id_ed25519.pub", keys / "authorized_keys")
    port = dvc_tiny.free_port()
    (keys / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {keys / 'host_key'}\nPidFile {keys / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\n"
        # The keys live under /tmp, which StrictModes would reject as group/world-writable.
        "StrictModes no\nPermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\n"
    )
    log = (keys / "sshd.log").open("w")
    server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(keys / "sshd_config")], stdout=log, stderr=log)
    try:
        dvc_tiny.wait_for_port(port, server)
        store = tmp_path / "ssh-store"
        yield {"url": f"ssh://{getpass.getuser()}@127.0.0.1:{port}{store}", "keyfile": str(keys / "id_ed25519")}
    finally:
        dvc_tiny.stop(server)
        log.close()


@pytest.fixture
def webdav_remote(tmp_path):
    """A wsgidav (cheroot) server on 127.0.0.1 with basic auth, and the DVC remote settings that reach it."""
    wsgidav = Path(sys.executable).parent / "wsgidav"
    if importlib.util.find_spec("dvc_webdav") is None or not wsgidav.exists():
        _missing("needs wsgidav and cheroot (the dev extra) and dvc-webdav (the remote extra)")
    root = tmp_path / "webdav-root"
    (root / "store").mkdir(parents=True)  # WebDAV cannot create the remote's top folder (409 Conflict)
    port = dvc_tiny.free_port()
    config = tmp_path / "wsgidav.yaml"
    config.write_text(
        f"host: 127.0.0.1\nport: {port}\nserver: cheroot\nverbose: 1\n"
        f"provider_mapping:\n  '/': '{root}'\n"
        "http_authenticator:\n  accept_basic: true\n  accept_digest: false\n  default_to_digest: false\n"
        "simple_dc:\n  user_mapping:\n    '*':\n      arena: {password: test-only-secret}\n"
    )
    log = (tmp_path / "wsgidav.log").open("w")
    server = subprocess.Popen([str(wsgidav), "-c", str(config)], stdout=log, stderr=log)
    try:
        dvc_tiny.wait_for_port(port, server)
        yield {"url": f"webdav://127.0.0.1:{port}/store", "user": "arena", "password": "test-only-secret"}
    finally:
        dvc_tiny.stop(server)
        log.close()


@pytest.mark.parametrize("remote_fixture", ["ssh_remote", "webdav_remote"])
def test_fresh_clone_pulls_and_reruns_only_what_changed(remote_fixture, request, tmp_path):
    remote = request.getfixturevalue(remote_fixture)
    a = dvc_tiny.create(tmp_path / "a", tmp_path / "a.log")
    a.dvc("remote", "add", "-d", "net", remote["url"])
    for key, value in remote.items():
        if key != "url":
            # A throwaway repository: real projects keep credentials in .dvc/config.local (`--local`).
            a.dvc("remote", "modify", "net", key, value)

    a.dvc("repro")
    assert a.runs() == ["prepare", "train", "evaluate"]
    # A value B will ask for later: run and push it here, so only A's run cache can save B the work.
    # (push --run-cache sends the run records; the outputs they name travel with a plain push of each run.)
    a.set_param("beta: 0.1", "beta: 0.2")
    a.dvc("repro")
    a.dvc("push", "--run-cache")
    a.set_param("beta: 0.2", "beta: 0.1")
    a.dvc("repro")
    assert a.runs() == ["prepare", "train", "evaluate", "train", "evaluate"]  # 0.1 again: restored, not rerun
    a.dvc("push", "--run-cache")
    a.run("git", "add", "-A")
    a.run("git", "commit", "-qm", "built")

    b = dvc_tiny.clone(a, tmp_path / "b", tmp_path / "b.log")
    assert not (b.path / "model").exists()
    b.dvc("pull", "--run-cache")
    assert (b.path / "model" / "weights.json").read_text() == (a.path / "model" / "weights.json").read_text()
    b.dvc("repro")
    assert b.runs() == []
    assert b.dvc("status", "-q", check=False).returncode == 0  # -q: exit 1 when anything is out of date

    b.set_param("beta: 0.1", "beta: 0.2")
    b.dvc("repro", "--pull")  # --pull: fetch the outputs of run-cache hits that are not in B's cache yet
    assert b.runs() == []  # A's run of beta 0.2 came back through the remote's run cache
    assert json.loads((b.path / "model" / "weights.json").read_text()) == {"w": 0.2 * sum(range(5))}

    b.set_param("beta: 0.2", "beta: 0.3")
    b.dvc("repro")
    assert b.runs() == ["train", "evaluate"]  # prepare does not read train.beta


def _dvc_ok(repo: Path, *args: str) -> str:
    """``dvc ARGS`` in a copy of this repository (repo_copy's stage environment); its output, failing on an error."""
    done = repo_copy.run_dvc(repo, repo_copy.repro_env(repo), *args, timeout=600)
    assert done.returncode == 0, f"dvc {' '.join(args)} failed in {repo.name}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _ran(output: str) -> list[str]:
    """The stages a `dvc repro` really ran (DVC prints "Running stage 'NAME':" before each)."""
    return [line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage '")]


def _shared_remote(repo: Path, remote: dict[str, str]) -> None:
    """The SSH remote as this clone's default, in .dvc/config.local (where a real clone keeps its key's path)."""
    _dvc_ok(repo, "remote", "add", "--local", "-d", "shared", remote["url"])
    _dvc_ok(repo, "remote", "modify", "--local", "shared", "keyfile", remote["keyfile"])


def _worker_builds_shard(head: Path, worker: Path, n: int, remote: dict[str, str]) -> Path:
    """One worker machine: a clone of the head's commit builds `shards@N` alone and pushes it with its run record."""
    subprocess.run(["git", "clone", "-q", str(head), str(worker)], check=True)
    repo_copy.own_site_cache(worker)
    _shared_remote(worker, remote)
    _dvc_ok(worker, "pull", "base")  # the base model; code manifests and the audit are in git
    assert _ran(_dvc_ok(worker, "repro", f"shards@{n}")) == [f"shards@{n}"]
    _dvc_ok(worker, "push", "--run-cache")
    return worker / "artifacts" / "rollouts" / "base" / f"shard-{n}"


def test_workers_build_shards_and_the_head_pulls_them_without_rerunning(ssh_remote, tmp_path):
    """docs/machines.md, "Several machines, one DVC cache": each worker builds one `shards@N` and pushes it with its run
    record; the head pulls and `dvc repro` restores both shards instead of running them."""
    from concurrent.futures import ThreadPoolExecutor

    head = repo_copy.make_copy(tmp_path / "head", repo_copy.small_params(shards={"shards": [0, 1]}))
    _shared_remote(head, ssh_remote)
    assert sorted(_ran(_dvc_ok(head, "repro", "base", "probe"))) == ["base", "code", "probe"]  # every shard needs them
    _dvc_ok(head, "push")
    subprocess.run(["git", "add", "-A"], cwd=head, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "upstream built"],
                   cwd=head, check=True)
    with ThreadPoolExecutor(2) as pool:  # the two workers at once, as two machines would
        shards = list(pool.map(lambda n: _worker_builds_shard(head, tmp_path / f"worker{n}", n, ssh_remote), (0, 1)))
    _dvc_ok(head, "fetch", "--run-cache", "shards@0", "shards@1")  # the workers' run records
    output = _dvc_ok(head, "repro", "--pull", "shards@0", "shards@1")
    assert _ran(output) == [], output
    assert output.count("is cached - skipping run") == 2, output
    for built in shards:
        assert repo_copy.content(head / "artifacts" / "rollouts" / "base" / built.name) == repo_copy.content(built)
    assert _dvc_ok(head, "status", "shards@0", "shards@1").strip().endswith("up to date.")
