"""Writes that can't be lost, and that stay inside `--out/clusters/<cluster>/`: tried for real.

Every case runs the installed CLI. Canary files sit next to `--out`, in its parent, in another
cluster's directory and behind the links an attacker would plant; after each case every file,
link and directory outside `clusters/<cluster>/` is compared with its state before (type, mode,
SHA-256 or link target). The kill test SIGKILLs renders at seeded random instants and checks that
every file of the cluster directory holds its old bytes or its new ones, that the directory is the
old tree unless the write's journal was committed, and that the next render ends with the new
tree; the lock test runs two real processes into one repository.
Real components: the embedded Helm engine, flock, real processes, real Git.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.core.ownership import is_manifest
from tests.conftest import CLI, EXAMPLES, ROOT, RunCli
from tests.support.rendered import rendered_repository

CLUSTER = "c1"
MANIFEST = ".btp-gitops-files"
BTP = EXAMPLES / "btp-operator"
CAP = EXAMPLES / "cap-app"


def state_of(root: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under `root` (links not followed) with its type, mode and content hash."""
    found: dict[str, str] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            path = Path(directory) / name
            if skip is not None and (path == skip or skip in path.parents):
                continue
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                kind = f"link {os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                kind = "dir"
            else:
                kind = "file " + hashlib.sha256(path.read_bytes()).hexdigest()
            found[path.relative_to(root).as_posix()] = f"{kind} {stat.S_IMODE(info.st_mode):o}"
    return found


def cluster_tree(out: Path) -> dict[str, bytes]:
    """The cluster directory's regular files, dot files included; links are an error here."""
    root = out / "clusters" / CLUSTER
    files: dict[str, bytes] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            path = Path(directory) / name
            assert not path.is_symlink(), path
            if path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "clusters").glob(f".{CLUSTER}.*"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repo rendered from the BTP operator and CAP examples, copied by each test."""
    return rendered_repository(tmp_path_factory.mktemp("pristine"), CLUSTER, BTP, CAP)


@pytest.fixture
def world(tmp_path: Path, pristine: Path) -> Path:
    """tmp_path/repo (rendered) with canaries around it: beside --out, in its parent, in the repo
    outside clusters/, in another cluster, and in a directory links will point at."""
    shutil.copytree(pristine, tmp_path / "repo", symlinks=True)
    (tmp_path / "canary.txt").write_text("next to --out\n")
    (tmp_path.parent / f"{tmp_path.name}-canary.txt").write_text("in the parent of the test directory\n")
    (tmp_path / "repo" / "README.md").write_text("the repo's own file\n")
    other = tmp_path / "repo" / "clusters" / "other" / "app"
    other.mkdir(parents=True)
    (other / "keep.yaml").write_text("kind: ConfigMap\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: canary\n")
    (outside / "btp-operator").mkdir()
    (outside / "btp-operator" / "precious.yaml").write_text("not yours\n")
    return tmp_path


@pytest.fixture
def outside_unchanged(world: Path) -> Iterator[None]:
    """After the test, nothing outside repo/clusters/c1 differs (the parent's canary included)."""
    cluster = world / "repo" / "clusters" / CLUSTER
    parent_canary = world.parent / f"{world.name}-canary.txt"
    before = state_of(world, skip=cluster), parent_canary.read_bytes()
    yield
    assert (state_of(world, skip=cluster), parent_canary.read_bytes()) == before


def _link(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    path.symlink_to(target)


Attack = Callable[[Path], None]


def _clusters_is_a_link(world: Path) -> None:
    clusters = world / "repo" / "clusters"
    shutil.rmtree(clusters)
    clusters.symlink_to(world / "outside")


def _cluster_is_a_link(world: Path) -> None:
    _link(world / "repo" / "clusters" / CLUSTER, Path("../../outside"))


def _link_inside(world: Path) -> None:
    (world / "repo" / "clusters" / CLUSTER / "btp-operator" / "passwd.yaml").symlink_to(
        world / "outside" / "canary.yaml"
    )


def _app_dir_is_a_link(world: Path) -> None:
    _link(world / "repo" / "clusters" / CLUSTER / "btp-operator", world / "outside" / "btp-operator")


def _person_added_a_file(world: Path) -> None:
    (world / "repo" / "clusters" / CLUSTER / "btp-operator" / "extra.yaml").write_text("kind: ConfigMap\n")


def _person_added_and_listed_a_file(world: Path) -> None:
    app = world / "repo" / "clusters" / CLUSTER / "btp-operator"
    (app / "patch.yaml").write_text("kind: ConfigMap\n")
    kustomization = app / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "- patch.yaml\n")


ACME = app_directory("cap-tenant.bookshop.acme", "bookshop.bookshop")  # a tenant of the CAP example


def _person_added_a_file_to_a_tenant(world: Path) -> None:
    (world / "repo" / "clusters" / CLUSTER / ACME / "extra.yaml").write_text("kind: ConfigMap\n")


def _person_added_a_manifest_of_their_own(world: Path) -> None:
    tenant = world / "repo" / "clusters" / CLUSTER / ACME
    (tenant / "extra.yaml").write_text("kind: ConfigMap\n")
    (tenant / MANIFEST).write_text("extra.yaml\n")


def _person_added_a_readme(world: Path) -> None:
    (world / "repo" / "clusters" / CLUSTER / "README.md").write_text("hand-written\n")


REFUSED: list[tuple[str, Attack, int, str]] = [
    (
        "clusters-is-a-link",
        _clusters_is_a_link,
        ExitCode.OUTPUT,
        "error: refusing to use repo/clusters: it is a symbolic link (to {world}/outside); btp-gitops "
        "reads and writes only real directories under the output directory\n",
    ),
    (
        "cluster-is-a-link",
        _cluster_is_a_link,
        ExitCode.OUTPUT,
        "error: refusing to use repo/clusters/c1: it is a symbolic link (to ../../outside); btp-gitops "
        "reads and writes only real directories under the output directory\n",
    ),
    (
        "link-inside",
        _link_inside,
        ExitCode.OUTPUT,
        "error: repo/clusters/c1 holds 1 file(s) btp-gitops did not write; a render replaces the whole "
        "directory and never deletes what is not its own: move them out of it and render again\n"
        "  repo/clusters/c1/btp-operator/passwd.yaml: a symbolic link or special file\n",
    ),
    (
        "app-dir-is-a-link",
        _app_dir_is_a_link,
        ExitCode.OUTPUT,
        "  repo/clusters/c1/btp-operator: a symbolic link or special file\n",
    ),
    (
        "person-added-a-file",
        _person_added_a_file,
        ExitCode.OUTPUT,
        "  repo/clusters/c1/btp-operator/extra.yaml: not written by btp-gitops (not in .btp-gitops-files)\n",
    ),
    (
        "person-added-and-listed-a-file",
        _person_added_and_listed_a_file,
        ExitCode.OUTPUT,
        "  repo/clusters/c1/btp-operator/patch.yaml: not written by btp-gitops (not in .btp-gitops-files)\n",
    ),
    (
        "person-added-a-file-to-a-tenant",
        _person_added_a_file_to_a_tenant,
        ExitCode.OUTPUT,
        f"  repo/clusters/c1/{ACME}/extra.yaml: not written by btp-gitops (not in .btp-gitops-files)\n",
    ),
    (
        "person-added-a-manifest-of-their-own",
        _person_added_a_manifest_of_their_own,
        ExitCode.OUTPUT,
        f"  repo/clusters/c1/{ACME}/.btp-gitops-files: not written by btp-gitops (not in .btp-gitops-files)\n"
        f"  repo/clusters/c1/{ACME}/extra.yaml: not written by btp-gitops (not in .btp-gitops-files)\n",
    ),
    (
        "person-added-a-readme",
        _person_added_a_readme,
        ExitCode.OUTPUT,
        "  repo/clusters/c1/README.md: not written by btp-gitops (not in .btp-gitops-files)\n",
    ),
]


@pytest.mark.parametrize(
    ("attack", "exit_code", "stderr"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_refused_and_nothing_touched(
    world: Path, run_cli: RunCli, attack: Attack, exit_code: int, stderr: str
) -> None:
    attack(world)
    before = state_of(world), (world.parent / f"{world.name}-canary.txt").read_bytes()
    result = run_cli("render", BTP, CAP, "--out", "repo", "--cluster", CLUSTER, "--commit", cwd=world)
    assert result.returncode == exit_code, result.stderr
    expected = stderr.format(world=world)
    assert result.stderr == expected if expected.startswith("error:") else expected in result.stderr
    assert "Traceback" not in result.stderr
    after = state_of(world), (world.parent / f"{world.name}-canary.txt").read_bytes()
    assert after == before, "a refused render changed something"


@pytest.mark.usefixtures("outside_unchanged")
def test_a_foreign_file_survives_and_the_render_works_once_it_is_moved(world: Path, run_cli: RunCli) -> None:
    _person_added_a_file(world)
    extra = world / "repo" / "clusters" / CLUSTER / "btp-operator" / "extra.yaml"
    assert (
        run_cli("render", BTP, CAP, "--out", "repo", "--cluster", CLUSTER, cwd=world).returncode
        == ExitCode.OUTPUT
    )
    assert extra.read_text() == "kind: ConfigMap\n"
    extra.rename(world / "repo" / "extra.yaml")
    result = run_cli("render", BTP, CAP, "--out", "repo", "--cluster", CLUSTER, cwd=world)
    assert result.returncode == ExitCode.OK, result.stderr
    assert "0 added, 0 changed, 0 removed" in result.stdout
    (world / "repo" / "extra.yaml").unlink()


def test_the_manifests_list_exactly_the_rendered_files(world: Path) -> None:
    """Every file, once: the cluster directory's manifest and the parts it leads to (one per
    tenants' group and shard directory), each listing paths relative to its directory, sorted."""
    tree = cluster_tree(world / "repo")
    manifests = {path: data.decode() for path, data in tree.items() if is_manifest(path)}
    assert MANIFEST in manifests
    assert {path.rpartition("/")[0].count("/") for path in manifests if path != MANIFEST} == {1, 2}
    listed: list[str] = []
    for path, text in manifests.items():
        entries = [line for line in text.splitlines() if not line.startswith("#")]
        assert entries == sorted(entries)
        directory = path.rpartition("/")[0]
        listed += [f"{directory}/{entry}" if directory else entry for entry in entries]
    assert sorted(listed) == sorted(path for path in tree if path != MANIFEST)
    assert ".kyma-modules.json" not in listed  # no Kyma here; the migration test has one


def test_an_older_repo_without_manifest_is_migrated_and_strays_are_named(
    world: Path, run_cli: RunCli
) -> None:
    cluster = world / "repo" / "clusters" / CLUSTER
    before = cluster_tree(world / "repo")
    for manifest in cluster.rglob(MANIFEST):  # as btp-gitops wrote it before the manifest existed
        manifest.unlink()
    (cluster / "btp-operator" / "extra.yaml").write_text("kind: ConfigMap\n")
    (cluster / "notes.md").write_text("ours\n")
    refused = run_cli("render", BTP, CAP, "--out", "repo", "--cluster", CLUSTER, cwd=world)
    assert refused.returncode == ExitCode.OUTPUT
    assert refused.stderr.splitlines()[1:] == [
        "  repo/clusters/c1/btp-operator/extra.yaml: not written by btp-gitops (not in .btp-gitops-files)",
        "  repo/clusters/c1/notes.md: not written by btp-gitops (not in .btp-gitops-files)",
    ]
    (cluster / "btp-operator" / "extra.yaml").unlink()
    (cluster / "notes.md").unlink()
    result = run_cli("render", BTP, CAP, "--out", "repo", "--cluster", CLUSTER, cwd=world)
    assert result.returncode == ExitCode.OK, result.stderr
    assert cluster_tree(world / "repo") == before


@pytest.mark.usefixtures("outside_unchanged")
def test_an_empty_source_over_a_populated_cluster_is_refused(
    world: Path, run_cli: RunCli, tmp_path_factory: pytest.TempPathFactory
) -> None:
    empty = tmp_path_factory.mktemp("empty-source")
    before = cluster_tree(world / "repo")
    result = run_cli("render", empty, "--out", "repo", "--cluster", CLUSTER, "--commit", cwd=world)
    assert result.returncode == ExitCode.INPUT
    assert result.stderr.startswith(
        "error: refusing to render over repo/clusters/c1: it would remove 97 of the 97 objects there "
        "(9 app(s) as a whole: "
    )
    assert result.stderr.endswith(
        " ...). If that is meant (not a wrong or empty source directory, a glob that matched nothing, or "
        "values that turned objects off by mistake), pass --allow-empty\n"
    )
    assert cluster_tree(world / "repo") == before
    allowed = run_cli("render", empty, "--out", "repo", "--cluster", CLUSTER, "--allow-empty", cwd=world)
    assert allowed.returncode == ExitCode.OK, allowed.stderr
    assert set(cluster_tree(world / "repo")) == {MANIFEST}


def test_dropping_apps_with_most_objects_is_refused_but_a_minority_is_not(
    world: Path, run_cli: RunCli
) -> None:
    most = run_cli("render", BTP, "--out", "repo", "--cluster", CLUSTER, cwd=world)
    assert most.returncode == ExitCode.INPUT
    removal = (
        "it would remove 73 of the 97 objects there (8 app(s) as a whole: cap-clusterdomain.shops-external"
    )
    assert removal in most.stderr
    minority = run_cli("render", CAP, "--out", "repo", "--cluster", CLUSTER, cwd=world)
    assert minority.returncode == ExitCode.OK, minority.stderr
    assert "0 added, 0 changed, 25 removed" in minority.stdout
    assert not (world / "repo" / "clusters" / CLUSTER / "btp-operator").exists()


def test_diff_and_validate_do_not_see_the_manifest(world: Path, run_cli: RunCli) -> None:
    diff = run_cli("diff", BTP, CAP, "--against", "repo", "--cluster", CLUSTER, "--exit-code", cwd=world)
    assert diff.returncode == ExitCode.OK, diff.stdout + diff.stderr
    valid = run_cli("validate", "repo/clusters/c1", "--ignore-missing-schemas", cwd=world)
    assert valid.returncode == ExitCode.OK, valid.stderr
    assert "0 problems" not in valid.stdout and "valid" in valid.stdout


def test_leftovers_of_a_killed_run_are_cleaned_and_a_planted_link_is_not_followed(
    world: Path, run_cli: RunCli
) -> None:
    clusters = world / "repo" / "clusters"
    (clusters / f".{CLUSTER}.staging-abc123" / "app").mkdir(parents=True)
    (clusters / f".{CLUSTER}.staging-abc123" / "app" / "half.yaml").write_text("kind: Con")
    (clusters / f".{CLUSTER}.old-def456").mkdir()
    (clusters / f".{CLUSTER}.staging-evil").symlink_to(world / "outside")
    outside = state_of(world / "outside")
    before = cluster_tree(world / "repo")
    result = run_cli("render", BTP, CAP, "--out", "repo", "--cluster", CLUSTER, cwd=world)
    assert result.returncode == ExitCode.OK, result.stderr
    assert leftovers(world / "repo") == []
    assert state_of(world / "outside") == outside
    assert cluster_tree(world / "repo") == before


def test_an_older_versions_swap_cut_between_its_renames_is_restored_with_the_kyma_record(
    tmp_path: Path, run_cli: RunCli
) -> None:
    kyma = EXAMPLES / "kyma-modules"
    out = tmp_path / "repo"
    assert run_cli("render", kyma, "--out", out, "--cluster", CLUSTER, cwd=ROOT).returncode == ExitCode.OK
    before = cluster_tree(out)
    assert ".kyma-modules.json" in before
    # An older btp-gitops swapped whole trees; where RENAME_EXCHANGE was missing it renamed the
    # old tree aside first, and a kill then left this. The next render still puts it back.
    (out / "clusters" / CLUSTER).rename(out / "clusters" / f".{CLUSTER}.old-k1ll3d")
    result = run_cli("render", kyma, "--out", out, "--cluster", CLUSTER, "--output", "json", cwd=ROOT)
    assert result.returncode == ExitCode.OK, result.stderr
    assert json.loads(result.stdout)["changes"] == {"added": [], "changed": [], "removed": []}
    assert cluster_tree(out) == before
    assert leftovers(out) == []


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_new_directories_get_the_umask(tmp_path: Path, umask: int) -> None:
    result = subprocess.run(
        [str(CLI), "render", BTP, "--out", tmp_path / "repo", "--cluster", CLUSTER],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        preexec_fn=lambda: os.umask(umask),  # the child's umask, set before exec
    )
    assert result.returncode == ExitCode.OK, result.stderr
    cluster = tmp_path / "repo" / "clusters" / CLUSTER
    for directory in (cluster.parent, cluster, cluster / "btp-operator"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o777 & ~umask, directory
    assert stat.S_IMODE((cluster / MANIFEST).stat().st_mode) == 0o666 & ~umask


# --- kill and concurrency ---------------------------------------------------------------------


def tenants_source(directory: Path, names: list[str]) -> Path:
    """examples/cap-app with these tenants instead of its own: a write of many files."""
    directory.mkdir()
    for name in ("capapplication.yaml", "domains.yaml", "version-1.0.0.yaml", "version-1.1.0.yaml"):
        shutil.copy(CAP / name, directory / name)
    documents = [
        "apiVersion: sme.sap.com/v1alpha1\nkind: CAPTenant\n"
        f"metadata:\n  name: {name}\n  namespace: bookshop\n"
        f"  annotations:\n    sme.sap.com/subscription-context-secret: {name}-subscription-context\n"
        f"spec:\n  capApplicationInstance: bookshop\n  subDomain: {name}\n"
        f"  tenantId: {uuid.uuid5(uuid.NAMESPACE_DNS, name)}\n"
        for name in names
    ]
    (directory / "tenants.yaml").write_text("---\n".join(documents))
    return directory


def render_command(source: Path, out: Path, *extra: str) -> list[str]:
    return [str(CLI), "render", str(source), "--out", str(out), "--cluster", CLUSTER, *extra]


def render_ok(source: Path, out: Path) -> None:
    result = subprocess.run(render_command(source, out), capture_output=True, text=True, check=False)
    assert result.returncode == ExitCode.OK, result.stderr


KILL_SEED = 16
KILL_BUDGET = 30.0  # seconds for the iterations; at least MIN_KILLS run however slow the machine
MIN_KILLS, MAX_KILLS = 4, 10


def start_render(source: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(render_command(source, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_staging(process: subprocess.Popen[bytes], out: Path) -> None:
    deadline = time.monotonic() + 60
    while not leftovers(out) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.0005)


def test_sigkill_at_random_instants_leaves_the_old_tree_or_the_new_one(tmp_path: Path) -> None:
    old_source = tenants_source(tmp_path / "old-src", [f"t{i:03d}" for i in range(100)])
    new_source = tenants_source(tmp_path / "new-src", [f"t{i:03d}" for i in range(130)])
    pristine = tmp_path / "pristine"
    render_ok(old_source, pristine)
    old = cluster_tree(pristine)

    # One undisturbed run: the new tree, how long a run takes, and how long its write takes.
    calibration = tmp_path / "calibration"
    shutil.copytree(pristine, calibration)
    began = time.monotonic()
    process = start_render(new_source, calibration)
    wait_for_staging(process, calibration)
    writing = time.monotonic()
    assert process.wait() == ExitCode.OK
    ended = time.monotonic()
    full, write = ended - began, ended - writing
    new = cluster_tree(calibration)
    assert old != new and len(new) > 400

    rng = random.Random(KILL_SEED)
    seen: dict[str, int] = {}
    started = time.monotonic()
    iteration = 0
    while iteration < MIN_KILLS or (time.monotonic() - started < KILL_BUDGET and iteration < MAX_KILLS):
        out = tmp_path / f"run-{iteration}"
        shutil.copytree(pristine, out)
        process = start_render(new_source, out)
        if iteration % 2:
            time.sleep(rng.uniform(0.0, full))  # anywhere in the run
        else:  # in the write: from the staging directory's appearance to the end
            wait_for_staging(process, out)
            time.sleep(rng.uniform(0.0, write))
        process.send_signal(signal.SIGKILL)
        process.wait()
        now = cluster_tree(out)
        journaled = any(".journal-" in name for name in leftovers(out))
        # Whole files only: each path holds its old bytes or its new ones; a mix only with the
        # committed journal beside it, which the next render replays.
        assert all(now[p] in (old.get(p), new.get(p)) for p in now), f"iteration {iteration}: a part file"
        assert now in (old, new) or journaled, f"iteration {iteration}: a mix without a journal"
        outcome = ("new" if now == new else "old" if now == old else "mixed") + (
            " + journal" if journaled else " + staging" if leftovers(out) else ""
        )
        seen[outcome] = seen.get(outcome, 0) + 1
        render_ok(new_source, out)
        assert cluster_tree(out) == new
        assert leftovers(out) == []
        shutil.rmtree(out)
        iteration += 1
    print(f"kill outcomes over {iteration} iterations (run {full:.2f} s, write {write:.2f} s): {seen}")


def test_two_concurrent_renders_run_one_after_the_other(tmp_path: Path) -> None:
    names = [f"t{i:03d}" for i in range(100)]
    first = tenants_source(tmp_path / "a", names)
    second = tenants_source(tmp_path / "b", [*names, "extra"])
    trees = {}
    for source in (first, second):
        alone = tmp_path / f"alone-{source.name}"
        render_ok(source, alone)
        trees[source.name] = cluster_tree(alone)
    out = tmp_path / "repo"
    processes = {
        source.name: subprocess.Popen(
            render_command(source, out, "--output", "json"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for source in (first, second)
    }
    reports = {}
    for name, process in processes.items():
        stdout, stderr = process.communicate(timeout=240)
        assert process.returncode == ExitCode.OK, stderr
        reports[name] = json.loads(stdout)["changes"]
    final = cluster_tree(out)
    last = next(name for name, tree in trees.items() if tree == final)
    earlier = "a" if last == "b" else "b"
    rendered = {name: sorted(p for p in tree if not is_manifest(p)) for name, tree in trees.items()}
    # The earlier one wrote into an empty cluster; the last one read the earlier one's tree.
    assert reports[earlier] == {"added": rendered[earlier], "changed": [], "removed": []}
    added = sorted(set(rendered[last]) - set(rendered[earlier]))
    removed = sorted(set(rendered[earlier]) - set(rendered[last]))
    assert (reports[last]["added"], reports[last]["removed"]) == (added, removed)
    assert added or removed
    assert leftovers(out) == []


def test_a_render_waits_for_the_lock_then_fails_clearly(world: Path, run_cli: RunCli) -> None:
    clusters = world / "repo" / "clusters"
    before = state_of(world)
    fd = os.open(clusters, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        started = time.monotonic()
        result = run_cli(
            "render", BTP, CAP, "--out", "repo", "--cluster", CLUSTER, "--lock-timeout", "1.5", cwd=world
        )
        waited = time.monotonic() - started
    finally:
        os.close(fd)
    assert result.returncode == ExitCode.OUTPUT
    assert result.stderr == (
        "error: another btp-gitops run is writing repo/clusters: gave up waiting for its lock after "
        "1.5 s (--lock-timeout)\n"
    )
    assert waited >= 1.5
    assert state_of(world) == before
    bad = run_cli("render", BTP, "--out", "repo", "--lock-timeout", "soon", cwd=world)
    assert bad.returncode == 2
    assert "--lock-timeout: not a number of seconds: 'soon'" in bad.stderr


def test_commit_stages_only_the_cluster_directory(tmp_path: Path, run_cli: RunCli) -> None:
    repo = tmp_path / "gitops"
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **env},
        )
        return done.stdout

    repo.mkdir()
    git("init", "-q", "-b", "main")
    (repo / "README.md").write_text("v1\n")
    (repo / "clusters" / "other").mkdir(parents=True)
    (repo / "clusters" / "other" / "keep.yaml").write_text("kind: ConfigMap\n")
    git("add", "-A")
    git("commit", "-qm", "init")
    (repo / "README.md").write_text("v2, staged by the user\n")
    git("add", "README.md")
    (repo / "clusters" / "other" / "keep.yaml").write_text("kind: Secret\n")  # unstaged, elsewhere
    result = run_cli("render", BTP, "--out", repo, "--cluster", CLUSTER, "--commit", cwd=ROOT)
    assert result.returncode == ExitCode.OK, result.stderr
    committed = git("show", "--name-only", "--format=", "HEAD").split()
    assert committed and all(path.startswith(f"clusters/{CLUSTER}/") for path in committed)
    assert f"clusters/{CLUSTER}/{MANIFEST}" in committed
    assert sorted(git("status", "--porcelain").splitlines()) == [
        " M clusters/other/keep.yaml",
        "M  README.md",
    ]


def test_diff_reads_a_directory_only_between_two_renders(world: Path) -> None:
    """diff --against DIR takes the lock shared: never a tree a render is swapping."""
    fd = os.open(world / "repo" / "clusters", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a render holds it
        started = time.monotonic()
        diff = subprocess.Popen(
            [str(CLI), "diff", BTP, CAP, "--against", "repo", "--cluster", CLUSTER, "--exit-code"],
            cwd=world,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)
        assert diff.poll() is None, "diff read the tree while a render held the lock"
    finally:
        os.close(fd)
    stdout, stderr = diff.communicate(timeout=120)
    assert diff.returncode == ExitCode.OK, stdout + stderr
    assert time.monotonic() - started >= 1.0


def test_an_incremental_render_touches_only_what_changed_and_git_sees_only_that(tmp_path: Path) -> None:
    """N tenants rendered and committed, then N + 1: every file whose bytes stay keeps its inode
    and mtime, so Git's index still matches it, and `git status` names the new tenant's files and
    the manifests listing them, nothing else."""
    names = [f"t{i:03d}" for i in range(60)]
    out = tmp_path / "repo"
    render_ok(tenants_source(tmp_path / "before", names), out)
    cluster = out / "clusters" / CLUSTER
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

    def git(*args: str) -> list[str]:
        done = subprocess.run(
            ["git", "-C", str(out), *args], capture_output=True, text=True, check=True, env=env
        )
        return sorted(done.stdout.splitlines())

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "60 tenants")
    old = cluster_tree(out)
    stats = {path: ((cluster / path).lstat().st_ino, (cluster / path).lstat().st_mtime_ns) for path in old}
    after_source = tenants_source(tmp_path / "after", [*names, "extra"])
    render_ok(after_source, out)
    render_ok(after_source, tmp_path / "fresh")
    new = cluster_tree(out)
    assert new == cluster_tree(tmp_path / "fresh")  # exactly what a render from nothing writes
    assert leftovers(out) == []

    changed = sorted(path for path in old if new[path] != old[path])
    assert changed and all(is_manifest(path) for path in changed)  # the new tenant is listed
    touched = sorted(
        path
        for path in old
        if ((cluster / path).lstat().st_ino, (cluster / path).lstat().st_mtime_ns) != stats[path]
    )
    assert touched == changed
    assert git("diff-files", "--name-only") == [
        f"clusters/{CLUSTER}/{p}" for p in changed
    ]  # index unrefreshed
    extra = app_directory("cap-tenant.bookshop.extra", "bookshop.bookshop")
    added = sorted(set(new) - set(old))
    assert added and all(path.startswith(f"{extra.rpartition('/')[0]}/") for path in added)
    assert git("status", "--porcelain", "--untracked-files=all") == sorted(
        [*(f" M clusters/{CLUSTER}/{p}" for p in changed), *(f"?? clusters/{CLUSTER}/{p}" for p in added)]
    )


def test_a_render_reads_the_tree_once_and_still_sees_an_edit_made_while_it_rendered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """render --out hands the tree it read before rendering to the writer, which lists it again
    and rereads only what changed since: a person's edit during the render (same size, mtime put
    back) is seen and overwritten, every other file is opened once."""
    from btp_gitops.generator.io import output_tree as tree_module  # noqa: PLC0415
    from btp_gitops.generator.io.helm import EmbeddedHelm  # noqa: PLC0415
    from btp_gitops.generator.io.schemas import load_schema_registry  # noqa: PLC0415
    from btp_gitops.generator.pipeline import render as render_module  # noqa: PLC0415

    source = tenants_source(tmp_path / "source", [f"t{i}" for i in range(5)])
    out = tmp_path / "repo"
    render_ok(source, out)
    render_ok(source, tmp_path / "fresh")
    cluster = out / "clusters" / CLUSTER
    monkeypatch.setattr(tree_module, "RACY_MARGIN_NS", 50_000_000)
    time.sleep(0.1)  # the files are older than the (shortened) racy margin
    edited = next(
        path for path in sorted(cluster_tree(out)) if "/cap-tenant." in path and "/captenant-" in path
    )
    reads: list[str] = []
    real_read, real_render = tree_module._read_regular_with_identity, render_module.render_cluster

    def counted(path: str) -> tuple[bytes, tree_module.Identity] | None:
        reads.append(Path(path).relative_to(cluster).as_posix())
        return real_read(path)

    def edit_while_rendering(*args: object, **kwargs: object) -> object:
        target = cluster / edited
        before = target.stat()
        data = target.read_bytes()
        target.write_bytes(data.replace(b"t", b"T", 1))  # the same size
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        return real_render(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tree_module, "_read_regular_with_identity", counted)
    monkeypatch.setattr(render_module, "render_cluster", edit_while_rendering)
    request = render_module.RenderRequest(sources=(source,), out=out, cluster=CLUSTER)
    result = render_module.render_into_repo(request, EmbeddedHelm(), load_schema_registry())
    assert sorted(reads) == sorted([*cluster_tree(tmp_path / "fresh"), edited])
    assert result.changes is not None and result.changes.changed == (edited,)
    assert cluster_tree(out) == cluster_tree(tmp_path / "fresh")
