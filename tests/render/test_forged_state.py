"""State read back from the output tree is input: forged journals, ownership manifests, big files
and blobs, and escape sequences, tried through the installed CLI as an attacker who can push to the
GitOps repository would.

Canary files sit outside `--out`; after each case their bytes are compared with what they were,
and their content must reach no output. Journals "made on this machine" are sealed with the test
session's journal key (tests/conftest.py gives every CLI the test's own state directory).
Real components: the installed CLI, real Git, real processes; memory is the child's max RSS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import CLI, EXAMPLES, RunCli
from tests.support.rendered import rendered_repository

CLUSTER = "c1"
CAP = EXAMPLES / "cap-app"
MANIFEST = ".btp-gitops-files"
CANARY = "canary-5e0c71d4-outside-out\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@b",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@b",
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rendered_repository(tmp_path_factory.mktemp("pristine"), CLUSTER, CAP)


@pytest.fixture
def world(tmp_path: Path, pristine: Path) -> Path:
    """tmp_path/repo (rendered) and tmp_path/outside/loot.yaml, a canary outside --out."""
    shutil.copytree(pristine, tmp_path / "repo", symlinks=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "loot.yaml").write_text(CANARY)
    return tmp_path


def cluster(world: Path) -> Path:
    return world / "repo" / "clusters" / CLUSTER


def render(run_cli: RunCli, world: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("render", CAP, "--out", "repo", "--cluster", CLUSTER, *extra, cwd=world)


def diff(run_cli: RunCli, against: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("diff", CAP, "--against", against, "--cluster", CLUSTER, *extra, cwd=cwd)


def assert_canary_intact(world: Path, *outputs: str) -> None:
    assert (world / "outside" / "loot.yaml").read_text() == CANARY
    for output in outputs:
        assert CANARY.strip() not in output


def plant_journal(
    world: Path,
    plan: dict[str, object],
    staged: dict[str, bytes],
    *,
    sealed: bool,
    name: str = f".{CLUSTER}.journal-x1",
) -> Path:
    """A journal beside the cluster directory: `plan` as given (format 1, as older versions wrote,
    when unsealed; format 2 with the staged files' digests when sealed with this session's key)."""
    journal = world / "repo" / "clusters" / name
    (journal / "new").mkdir(parents=True)
    for path, data in staged.items():
        (journal / "new" / path).parent.mkdir(parents=True, exist_ok=True)
        (journal / "new" / path).write_bytes(data)
    # Imported here: the unsealed cases run against versions without a journal seal too.
    from btp_gitops.generator.io.journal import digest_of  # noqa: PLC0415
    from btp_gitops.generator.io.journal_seal import journal_key, seal_text  # noqa: PLC0415

    body: dict[str, object] = {"format": 1, "write": [], "remove": [], "prune": [], **plan}
    if sealed:
        writes = body["write"]
        assert isinstance(writes, list)
        body |= {"format": 2, "digests": [digest_of(staged.get(path, b"")) for path in writes]}
    plan_bytes = json.dumps(body).encode()
    (journal / "plan.json").write_bytes(plan_bytes)
    if sealed:
        key = journal_key(create=True)
        assert key is not None
        (journal / "seal").write_text(seal_text(key, cluster(world), journal.name, plan_bytes))
    return journal


# --- item 1: a journal pushed to the repository ------------------------------------------------


def test_a_pushed_journal_is_not_replayed_and_moves_nothing_from_outside(
    world: Path, run_cli: RunCli
) -> None:
    """The attack of issue 31: `new/loot` links to a directory outside --out, the plan writes
    `loot/loot.yaml` and a manifest listing it, so the replay would move the canary in and the
    render then delete it as a file it owns and no longer renders."""
    manifest = (cluster(world) / MANIFEST).read_bytes() + b"loot/loot.yaml\n"
    journal = plant_journal(
        world, {"write": ["loot/loot.yaml", MANIFEST]}, {MANIFEST: manifest}, sealed=False
    )
    (journal / "new" / "loot").symlink_to(world / "outside")
    before = {p.name: p.read_bytes() for p in journal.rglob("*") if p.is_file() and not p.is_symlink()}
    result = render(run_cli, world)
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert f"refusing to replay repo/clusters/{journal.name}" in result.stderr
    assert "Traceback" not in result.stderr
    assert_canary_intact(world, result.stdout, result.stderr)
    assert not (cluster(world) / "loot").exists()
    after = {p.name: p.read_bytes() for p in journal.rglob("*") if p.is_file() and not p.is_symlink()}
    assert after == before and (journal / "new" / "loot").is_symlink()  # left untouched


def test_a_pushed_journals_remove_list_deletes_nothing(world: Path, run_cli: RunCli) -> None:
    notes = cluster(world) / "NOTES.txt"  # a person's file, which btp-gitops never wrote
    notes.write_text("mine\n")
    plant_journal(world, {"remove": ["NOTES.txt"]}, {}, sealed=False)
    result = render(run_cli, world)
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert "refusing to replay" in result.stderr
    assert notes.read_text() == "mine\n"


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_diff_never_reads_through_a_pushed_journals_link(
    world: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, output: str
) -> None:
    """`new/proc -> /proc/self` and a plan writing `proc/environ`: the diff would print the
    process environment, tokens included."""
    monkeypatch.setenv("BTP_TEST_TOKEN", "token-7d1c9a5e-from-the-environment")
    journal = plant_journal(world, {"write": ["proc/environ"]}, {}, sealed=False)
    (journal / "new" / "proc").symlink_to("/proc/self")
    result = diff(run_cli, "repo", world, "--output", output)
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert "refusing to replay" in result.stderr and "Traceback" not in result.stderr
    assert "token-7d1c9a5e" not in result.stdout + result.stderr


def test_a_journal_sealed_here_with_a_link_inside_is_refused_not_followed(
    world: Path, run_cli: RunCli
) -> None:
    """Sealed with this user's key (as if the key had leaked or the plan were this machine's):
    the staged files are still opened without following a link, and nothing moves."""
    journal = plant_journal(world, {"write": ["loot/loot.yaml"]}, {}, sealed=True)
    (journal / "new" / "loot").symlink_to(world / "outside")
    for command in (render(run_cli, world), diff(run_cli, "repo", world)):
        assert command.returncode == ExitCode.OUTPUT, command.stderr
        assert "never read through a symbolic link" in command.stderr, command.stderr
        assert_canary_intact(world, command.stdout, command.stderr)
    assert not (cluster(world) / "loot").exists() and journal.is_dir()


def test_a_sealed_journal_removes_only_files_the_manifest_owns(world: Path, run_cli: RunCli) -> None:
    notes = cluster(world) / "NOTES.txt"
    notes.write_text("mine\n")
    plant_journal(world, {"remove": ["NOTES.txt"]}, {}, sealed=True)
    result = render(run_cli, world)
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert f"repo/clusters/{CLUSTER}/NOTES.txt: not owned" in result.stderr
    assert notes.read_text() == "mine\n"


def test_a_journal_git_tracks_is_never_replayed(world: Path, run_cli: RunCli) -> None:
    repo = world / "repo"
    kustomization = next(cluster(world).glob("*/kustomization.yaml")).relative_to(cluster(world)).as_posix()
    journal = plant_journal(world, {"write": [kustomization]}, {kustomization: b"changed\n"}, sealed=True)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "with a journal"]):
        subprocess.run(["git", "-C", repo, *args], check=True, env={**os.environ, **IDENTITY})
    before = (cluster(world) / kustomization).read_bytes()
    result = render(run_cli, world)
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert f"refusing to replay repo/clusters/{journal.name}: Git tracks it" in result.stderr
    assert (cluster(world) / kustomization).read_bytes() == before


def test_a_journal_a_killed_render_left_is_still_finished(world: Path, run_cli: RunCli) -> None:
    """The proof costs the genuine case nothing: a journal sealed here, not tracked, is replayed."""
    kustomization = next(cluster(world).glob("*/kustomization.yaml"))
    relative = kustomization.relative_to(cluster(world)).as_posix()
    rendered = kustomization.read_bytes()
    kustomization.write_bytes(b"cut: half\n")  # as a person would never leave it: the journal fixes it
    plant_journal(world, {"write": [relative]}, {relative: rendered}, sealed=True)
    result = render(run_cli, world, "--output", "json")
    assert result.returncode == ExitCode.OK, result.stderr
    assert json.loads(result.stdout)["changes"] == {"added": [], "changed": [], "removed": []}
    assert kustomization.read_bytes() == rendered
    assert not list((world / "repo" / "clusters").glob(".*journal*"))


# --- item 2: ownership manifests ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("../../../outside/loot.yaml", "not a plain relative path"),
        ("/etc/passwd", "an absolute path"),
        ("a/./b.yaml", "not a plain relative path"),
        ("x" * 5000, "longer than 4096 characters"),
        ("esc\x1b[2J.yaml", "holds a control character"),
    ],
    ids=["dotdot", "absolute", "dot", "huge", "control"],
)
def test_a_forged_manifest_entry_is_refused_naming_the_manifest(
    world: Path, run_cli: RunCli, entry: str, why: str
) -> None:
    manifest = cluster(world) / MANIFEST
    manifest.write_text(manifest.read_text() + entry + "\n")
    before = {p: p.read_bytes() for p in cluster(world).rglob("*") if p.is_file()}
    result = render(run_cli, world)
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert f"refusing to read the ownership manifest repo/clusters/{CLUSTER}/{MANIFEST}" in result.stderr
    assert why in result.stderr and "Traceback" not in result.stderr
    assert "\x1b" not in result.stderr
    assert {p: p.read_bytes() for p in cluster(world).rglob("*") if p.is_file()} == before
    assert_canary_intact(world)


# --- item 3: bounded reads ---------------------------------------------------------------------

BIG = 256 << 20  # sparse: no disk, but 256 MiB of memory for a reader that loads it
MAX_RSS_KIB = 160 << 10  # a render or a diff of the CAP example peaks near 50 MiB


def measured(args: list[str | Path], cwd: Path) -> tuple[subprocess.CompletedProcess[str], int, float]:
    """Run `args` in a fresh Python process that reports its one child's max RSS (KiB)."""
    probe = (
        "import resource, subprocess, sys, time; t = time.monotonic(); "
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
        "time.monotonic() - t); sys.stderr.write(r.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *map(str, args)], capture_output=True, text=True, cwd=cwd, check=False
    )
    code, rss, seconds = done.stdout.split()
    child = subprocess.CompletedProcess(args, int(code), "", done.stderr)
    return child, int(rss), float(seconds)


def big_owned_file(world: Path) -> Path:
    big = cluster(world) / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(BIG)
    manifest = cluster(world) / MANIFEST
    manifest.write_text(manifest.read_text() + "big.yaml\n")
    return big


@pytest.mark.parametrize("command", ["render", "diff"])
def test_a_huge_file_in_the_cluster_directory_is_refused_before_it_is_read(world: Path, command: str) -> None:
    big_owned_file(world)
    args: list[str | Path] = [CLI, command, CAP, "--cluster", CLUSTER]
    args += ["--out", "repo"] if command == "render" else ["--against", "repo"]
    result, rss, seconds = measured(args, world)
    print(
        f"{command} over a {BIG >> 20} MiB owned file: {seconds:.2f} s, peak RSS {rss // 1024} MiB"
    )  # figures
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert f"refusing to read repo/clusters/{CLUSTER}/big.yaml: too large (256.0 MiB;" in result.stderr
    assert "at most 64.0 MiB" in result.stderr
    assert rss < MAX_RSS_KIB, f"max RSS {rss} KiB"


def test_a_huge_blob_at_the_ref_is_refused_from_its_header(world: Path) -> None:
    repo = world / "repo"
    big = cluster(world) / "big.yaml"
    big.write_bytes(b"\0" * (96 << 20))  # compresses to 100 KB in Git
    manifest = cluster(world) / MANIFEST
    manifest.write_text(manifest.read_text() + "big.yaml\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a big blob"]):
        subprocess.run(["git", "-C", repo, *args], check=True, env={**os.environ, **IDENTITY})
    big.unlink()
    started = time.monotonic()
    result, rss, seconds = measured([CLI, "diff", CAP, "--against", "HEAD", "--cluster", CLUSTER], repo)
    print(f"diff --against HEAD over a 96 MiB blob: {seconds:.2f} s, peak RSS {rss // 1024} MiB")  # figures
    assert result.returncode == ExitCode.OUTPUT, result.stderr
    assert f"refusing to read clusters/{CLUSTER}/big.yaml at HEAD: too large (96.0 MiB;" in result.stderr
    assert rss < MAX_RSS_KIB, f"max RSS {rss} KiB"
    assert time.monotonic() - started < 60


# --- item 8 (part): escape sequences in diff output --------------------------------------------


@pytest.mark.parametrize("output", ["text", "markdown", "json"])
def test_diff_escapes_control_characters_of_names_and_contents(
    world: Path, run_cli: RunCli, output: str
) -> None:
    """A file someone pushed into the cluster directory, whose name and bytes clear the screen and
    set the terminal's title: the diff names it and shows its lines as removed."""
    name = "x\x1b[2J\x1b]0;pwned\x07.txt"
    (cluster(world) / name).write_text("clear: \x1b[2J\x1b[Hback\x9b2J\n")
    result = diff(run_cli, "repo", world, "--output", output)
    assert result.returncode == ExitCode.OK, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\x9b" not in result.stdout
    if output == "json":  # exact: the JSON encoder escapes, a reader gets the bytes back
        change = next(c for c in json.loads(result.stdout)["changes"] if c["oldPath"])
        assert change["oldPath"].endswith(name) and "\x1b[2J\x1b[Hback\x9b2J" in change["diff"]
    else:
        assert "x\\x1b[2J\\x1b]0;pwned\\x07.txt" in result.stdout
        assert "clear: \\x1b[2J\\x1b[Hback\\x9b2J" in result.stdout
