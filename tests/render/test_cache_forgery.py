"""Forged render caches and packs, through the CLI as users run it (issue 31, item 5).

Whoever can write the cache directory (a shared CI cache, another process of the user) is the
attacker here: they rewrite entries and packs and fix up every checksum anyone can compute. A
forgery without the user's cache key is not used (the render's bytes are those of `--no-cache`);
one signed with the key (stolen) still cannot put a credential into the output, expand without
bound, or end in a traceback or exit 70. Each test forges the files the CLI wrote.
"""

from __future__ import annotations

import resource
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io.git_blobs import blob_id
from tests.conftest import CLI, read_tree
from tests.support.forged_cache import (
    PLANTED_SECRET,
    PRIVILEGED_POD,
    add_file,
    aged_example,
    app_files,
    app_keys,
    entries,
    forge_app,
    forge_entry,
    packs,
    put_files,
    put_keys,
    put_texts,
    replace_text,
    split_pack,
    without_packs,
)
from tests.support.fuzzing import CANARY_SECRET, assert_no_canary
from tests.support.keys import pem_rsa


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """examples/cap-app with its tenant files an hour old (a pack takes them by identity)."""
    return aged_example(tmp_path / "source")


def stdout_render(source: Path, *cache: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "render", str(source), "--stdout", *cache],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        **kwargs,
    )


def warm(source: Path, directory: Path) -> str:
    """Render once with the cache (filling it); the output without any cache."""
    filled = stdout_render(source, "--cache-dir", str(directory))
    assert filled.returncode == 0, filled.stderr
    uncached = stdout_render(source, "--no-cache")
    assert uncached.stdout == filled.stdout
    return uncached.stdout


def assert_clean(run: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode != ExitCode.INTERNAL, run.stderr


def test_a_pack_forged_without_the_key_is_not_used(source: Path, tmp_path: Path) -> None:
    """A Secret with data and a privileged Pod in kube-system put into a tenant's app, the
    checksum fixed up: the pack is not used, and the output is the render's without a cache."""
    directory = tmp_path / "cache"
    expected = warm(source, directory)
    (pack,) = packs(directory)

    def plant(app: list[Any], blob: bytearray) -> None:
        add_file(app, blob, "pod-root-shell.yaml", PRIVILEGED_POD)
        add_file(app, blob, "secret-leaked.yaml", PLANTED_SECRET)

    forge_app(pack, plant, sign=False)
    run = stdout_render(source, "--cache-dir", str(directory))
    assert_clean(run)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
    assert "root-shell" not in run.stdout
    assert_no_canary([run.stdout, run.stderr])


def test_a_pack_signed_with_a_stolen_key_cannot_put_a_secret_into_the_output(
    source: Path, tmp_path: Path
) -> None:
    """Defence behind the MAC: the files of an app taken from the pack pass the credential guard
    on their text (exit 5, nothing printed, the value never shown)."""
    directory = tmp_path / "cache"
    warm(source, directory)
    (pack,) = packs(directory)
    forge_app(pack, lambda app, blob: add_file(app, blob, "secret-leaked.yaml", PLANTED_SECRET), sign=True)
    run = stdout_render(source, "--cache-dir", str(directory))
    assert_clean(run)
    assert run.returncode == ExitCode.OUTPUT, run.stderr
    assert run.stdout == ""
    assert "Secret with data" in run.stderr and "secret-leaked.yaml" in run.stderr
    assert_no_canary([run.stdout, run.stderr])


def test_a_pack_whose_keys_are_not_its_objects_is_an_input_error(source: Path, tmp_path: Path) -> None:
    """Keys claiming another app's object (a duplicate the render must report) over objects that
    do not have them: the objects are decoded, found not to be the keys' (exit 3), not exit 70."""
    directory = tmp_path / "cache"
    warm(source, directory)
    (pack,) = packs(directory)
    forge_app(pack, lambda app, _: put_keys(app, [*app_keys(app), app_keys(app)[0]]), sign=True)
    run = stdout_render(source, "--cache-dir", str(directory))
    assert_clean(run)
    assert run.returncode == ExitCode.INPUT, run.stderr
    assert "render pack" in run.stderr and run.stdout == ""


def _alias_bomb(levels: int) -> str:
    """An object whose data expands to 10**levels strings through aliases: a few hundred bytes."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: bomb", "data:"]
    lines.append(
        '  l0: &l0 ["laugh", "laugh", "laugh", "laugh", "laugh", "laugh", "laugh", "laugh", "laugh", "laugh"]'
    )
    lines += [f"  l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _limit_memory() -> None:
    limit = 1 << 30  # the render needs less than 100 MiB; the bomb expands to far more
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_an_alias_bomb_in_a_packed_file_stops_at_the_bound(source: Path, tmp_path: Path) -> None:
    """An object file of a packed app that expands to 10**12 strings through YAML aliases (signed,
    its blob id right, with a duplicate key so that the render reads the app's objects back from
    its files): refused at the alias bound, within a memory limit far below the expansion."""
    directory = tmp_path / "cache"
    warm(source, directory)
    (pack,) = packs(directory)

    def plant(app: list[Any], blob: bytearray) -> None:
        replace_text(app, blob, _alias_bomb(12))
        put_keys(app, [*app_keys(app), app_keys(app)[0]])

    forge_app(pack, plant, sign=True)
    started = time.monotonic()
    run = stdout_render(source, "--cache-dir", str(directory), preexec_fn=_limit_memory)
    assert_clean(run)
    assert run.returncode == ExitCode.INPUT, run.stderr
    assert "render pack" in run.stderr
    seconds = time.monotonic() - started
    print(f"a packed file of 10**12 aliased strings: {seconds:.2f} s under a 1 GiB address-space limit")
    assert seconds < 120


def test_a_cached_record_of_the_wrong_shape_is_an_input_error(source: Path, tmp_path: Path) -> None:
    """An entry (signed) whose record has `spec` as a list and no app: the record is rendered
    again from the entry, so it is checked against its schema first (exit 3, naming the cache)."""
    directory = without_packs(tmp_path / "cache")  # the render keeps its records in entries
    warm(source, directory)
    forged = 0
    for entry in entries(directory):

        def change(payload: dict[str, Any]) -> None:
            payload["body"]["spec"] = ["not", "a", "spec"]
            payload["app"], payload["inputs"] = None, ""

        forge_entry(entry, change, sign=True)
        forged += 1
    assert forged
    run = stdout_render(source, "--cache-dir", str(directory))
    assert_clean(run)
    assert run.returncode == ExitCode.INPUT, run.stderr
    assert "render cache" in run.stderr and "spec" in run.stderr


def test_an_entry_forged_without_the_key_is_not_used(source: Path, tmp_path: Path) -> None:
    """An entry whose cached app gained a ClusterRoleBinding to cluster-admin, its checksum fixed
    up: ignored, the record rendered again."""
    directory = without_packs(tmp_path / "cache")  # the render keeps its records in entries
    expected = warm(source, directory)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "tenant-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "bookshop"}],
    }

    def change(payload: dict[str, Any]) -> None:
        if payload.get("app"):
            body = {**binding, "metadata": {"name": f"admin-{payload['body']['metadata']['name']}"}}
            text = yaml.safe_dump(body, sort_keys=False)
            payload["app"]["objects"].append([body, "tenants/x.yaml"])
            payload["app"]["texts"].append(text)

    for entry in entries(directory):
        forge_entry(entry, change, sign=False)
    run = stdout_render(source, "--cache-dir", str(directory))
    assert_clean(run)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
    assert "cluster-admin" not in run.stdout


def out_render(source: Path, repo: Path, directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(CLI),
            "render",
            str(source),
            "--out",
            str(repo),
            "--cluster",
            "demo",
            "--cache-dir",
            str(directory),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _replace_first_file(app: list[Any], blob: bytearray, text: str, claim: str | None = None) -> str:
    """Make the text of the app's first file other than its kustomization `text`, with the blob id
    of `text` (or `claim`, a lie); its name."""
    files = app_files(app, blob)
    entry = next(e for e in files if e[0] != "kustomization.yaml")
    entry[1:] = [text, claim or blob_id(text.encode())]
    put_files(app, blob, files)
    return entry[0]


@pytest.mark.parametrize("forgery", ["added-file", "changed-file"])
def test_a_pack_signed_with_a_stolen_key_cannot_write_a_credential_into_the_repository(
    source: Path, tmp_path: Path, forgery: str
) -> None:
    """render --out searches only the reused files it writes (those the cluster directory does not
    already hold byte for byte): a file the forged pack adds, or one whose text it changes, is
    written, so searched, and refused (exit 5) with the repository as it was."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    first = out_render(source, repo, directory)
    assert first.returncode == ExitCode.OK, first.stderr
    again = out_render(source, repo, directory)  # the pack now holds every tenant's app
    assert again.returncode == ExitCode.OK, again.stderr
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    (pack,) = packs(directory)
    if forgery == "added-file":
        forge_app(
            pack, lambda app, blob: add_file(app, blob, "secret-leaked.yaml", PLANTED_SECRET), sign=True
        )
    else:
        key = pem_rsa()
        forge_app(pack, lambda app, blob: _replace_first_file(app, blob, f"data: |\n  {key}\n"), sign=True)
    run = out_render(source, repo, directory)
    assert_clean(run)
    assert run.returncode == ExitCode.OUTPUT, run.stderr
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before
    assert_no_canary([run.stdout, run.stderr])


def _committed(repo: Path) -> None:
    identity = ("-c", "user.name=t", "-c", "user.email=t@localhost")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "rendered")):
        subprocess.run(
            ["git", "-C", str(repo), *identity, *args], check=True, capture_output=True, timeout=60
        )


def _first_file_claim(app: list[Any], blob: bytearray) -> str:
    return next(e for e in app_files(app, blob) if e[0] != "kustomization.yaml")[2]


def _lie_about_first_file(app: list[Any], blob: bytearray, claim: str | None) -> None:
    """The first file's text becomes a Secret with data, its blob id `claim` (None: the id the
    file had, which the repository holds)."""
    _replace_first_file(app, blob, PLANTED_SECRET, claim or _first_file_claim(app, blob))


@pytest.mark.parametrize("claim", ["the-held-id", "another-id"])
def test_a_signed_pack_lying_about_a_blob_id_writes_nothing_it_names(
    source: Path, tmp_path: Path, claim: str
) -> None:
    """In a Git work tree the writer keeps a file whose Git blob id is the one the pack gives for
    the rendered text, without hashing the text. A pack signed with a stolen key that gives a
    Secret the id the repository holds has it left out: the file keeps its bytes, nothing of the
    Secret is written or printed. One that gives it another id has it written, so hashed first:
    not that id, the pack is refused (exit 3), the repository as it was."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    assert out_render(source, repo, directory).returncode == ExitCode.OK  # every app in the pack
    _committed(repo)
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    (pack,) = packs(directory)
    lie = None if claim == "the-held-id" else "0" * 40
    forge_app(pack, lambda app, blob: _lie_about_first_file(app, blob, lie), sign=True)
    run = out_render(source, repo, directory)
    assert_clean(run)
    assert run.returncode == (ExitCode.OK if lie is None else ExitCode.INPUT), run.stderr
    if lie is not None:
        assert "render pack" in run.stderr and "not the blob its index names" in run.stderr
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before
    assert_no_canary([run.stdout, run.stderr])


def test_diff_refuses_a_pack_lying_about_a_blob_id_in_an_app_it_shows(source: Path, tmp_path: Path) -> None:
    """`diff --against HEAD` leaves out the apps whose files all have the blob ids the commit
    holds, by the pack's word; an app it shows (here one the forged pack also adds a file to) has
    every text it compares hashed: the Secret behind the held id is refused (exit 3), not shown."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    _committed(repo)
    (pack,) = packs(directory)

    def forge(app: list[Any], blob: bytearray) -> None:
        _lie_about_first_file(app, blob, None)
        add_file(app, blob, "config-extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")

    forge_app(pack, forge, sign=True)
    command = [str(CLI), "diff", str(source), "--against", "HEAD", "--repo", str(repo), "--cluster", "demo"]
    run = subprocess.run(
        [*command, "--cache-dir", str(directory)], capture_output=True, text=True, check=False
    )
    assert_clean(run)
    assert run.returncode == ExitCode.INPUT, run.stderr
    assert "not the blob its index names" in run.stderr
    assert_no_canary([run.stdout, run.stderr])


def test_diff_leaves_out_an_app_a_signed_pack_gives_the_committed_tree_and_shows_none_of_it(
    source: Path, tmp_path: Path
) -> None:
    """A pack signed with a stolen key that puts a Secret behind the blob ids the commit holds
    makes the app's tree id the commit's: `diff --against HEAD` leaves the app out as unchanged
    (reused_output.held_directories). The lie can only hide a change: nothing of the Secret is
    shown or logged, and the report is the one without the cache."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    _committed(repo)
    (pack,) = packs(directory)
    forge_app(pack, lambda app, blob: _lie_about_first_file(app, blob, None), sign=True)
    command = [str(CLI), "diff", str(source), "--against", "HEAD", "--repo", str(repo), "--cluster", "demo"]
    run = subprocess.run(
        [*command, "--cache-dir", str(directory), "-v", "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert_clean(run)
    assert run.returncode == ExitCode.OK, run.stderr
    assert "hold the files the render pack gives them" in run.stderr
    assert_no_canary([run.stdout, run.stderr])
    uncached = subprocess.run(
        [*command, "--no-cache", "-o", "json"], capture_output=True, text=True, check=False
    )
    assert uncached.returncode == ExitCode.OK, uncached.stderr
    assert run.stdout == uncached.stdout


def test_diff_refuses_a_credential_a_signed_pack_adds(source: Path, tmp_path: Path) -> None:
    """diff searches the reused files it shows (those whose text is not the compared tree's): a
    Secret file a forged pack adds to an app is a change, so searched and refused (exit 5)."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    (pack,) = packs(directory)
    forge_app(pack, lambda app, blob: add_file(app, blob, "secret-leaked.yaml", PLANTED_SECRET), sign=True)
    command = [str(CLI), "diff", str(source), "--against", str(repo), "--cluster", "demo"]
    run = subprocess.run(
        [*command, "--cache-dir", str(directory)], capture_output=True, text=True, check=False
    )
    assert_clean(run)
    assert run.returncode == ExitCode.OUTPUT, run.stderr
    assert "secret-leaked.yaml" in run.stderr
    assert_no_canary([run.stdout, run.stderr])


def _rename_first_file(app: list[Any], blob: bytearray, name: str) -> None:
    files = app_files(app, blob)
    next(e for e in files if e[0] != "kustomization.yaml")[0] = name
    put_files(app, blob, files)


@pytest.mark.parametrize(
    "name",
    ["captenant-acme.yaml\0pod-root-shell.yaml", "captenant-acme.yaml\0../../outside.yaml", "../x.yaml"],
    ids=["nul-joined-names", "nul-joined-escape", "escape"],
)
@pytest.mark.parametrize("in_git", [False, True], ids=["plain-directory", "git-work-tree"])
def test_a_signed_pack_whose_file_name_is_no_plain_path_is_not_used(
    source: Path, tmp_path: Path, name: str, in_git: bool
) -> None:
    """A pack's index joins an app's file names with a NUL: a name holding a NUL itself reads as
    two names, more than the app has blob ids, and the pack is refused (the tree written is the
    one without a cache), as a name that climbs out is. In a Git work tree too, where a render
    leaves the apps whose files Git vouches for as the pack names them (held_in_work_tree)."""
    directory, repo, uncached = tmp_path / "cache", tmp_path / "repo", tmp_path / "uncached"
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    if in_git:
        assert out_render(source, repo, directory).returncode == ExitCode.OK  # every app in the pack
        _committed(repo)
    (pack,) = packs(directory)
    forge_app(pack, lambda app, blob: _rename_first_file(app, blob, name), sign=True)
    run = out_render(source, repo, directory)
    assert_clean(run)
    assert run.returncode == ExitCode.OK, run.stderr
    plain = [str(CLI), "render", str(source), "--out", str(uncached), "--cluster", "demo", "--no-cache"]
    assert subprocess.run(plain, capture_output=True, check=False).returncode == ExitCode.OK
    assert read_tree(repo) == read_tree(uncached)
    assert not (tmp_path / "outside.yaml").exists()


def _texts_of(app: list[Any], blob: bytearray) -> bytes:
    return bytes(blob[app[4][2] : app[4][3]])


def _name_twice(app: list[Any], blob: bytearray) -> None:
    files = app_files(app, blob)
    named = [entry for entry in files if entry[0] != "kustomization.yaml"]
    named[1][0] = named[0][0]
    put_files(app, blob, files)


def _kustomization(text: str) -> Callable[[list[Any], bytearray], None]:
    def forge(app: list[Any], blob: bytearray) -> None:
        files = app_files(app, blob)
        listing = next(entry for entry in files if entry[0] == "kustomization.yaml")
        listing[1:] = [listing[1] + text, blob_id((listing[1] + text).encode())]
        put_files(app, blob, files)

    return forge


# The ways a pack's index (format 5) could lie about an app's texts, which show only when they
# are decoded (when the render lays the app out): a pack signed with a stolen key.
TEXT_LIES: dict[str, Callable[[list[Any], bytearray], None]] = {
    "a-text-more-than-names": lambda app, blob: put_texts(app, blob, _texts_of(app, blob) + b"\0extra: 1\n"),
    "a-text-fewer-than-names": lambda app, blob: put_texts(
        app, blob, _texts_of(app, blob).replace(b"\0", b"", 1)
    ),
    "texts-not-utf8": lambda app, blob: put_texts(app, blob, b"\xff" + _texts_of(app, blob)[1:]),
    "a-name-twice": _name_twice,
    "kustomization-climbing-out": _kustomization("- ../../../../outside.yaml\n"),
    "kustomization-generating-a-secret": _kustomization(
        f"secretGenerator:\n- name: leaked\n  literals:\n  - token={CANARY_SECRET}\n"
    ),
}


@pytest.mark.parametrize("lie", TEXT_LIES.values(), ids=TEXT_LIES.keys())
def test_a_signed_pack_whose_texts_are_not_its_index_s_fails_naming_the_app(
    source: Path, tmp_path: Path, lie: Callable[[list[Any], bytearray], None]
) -> None:
    """The texts of an app are decoded and checked once, when the render first asks for its
    files: texts that are not as many as its names, not UTF-8, a name listed twice or a
    kustomization.yaml the layout would not write is an input error naming the pack and the app
    (exit 3), with nothing written, nothing shown and no traceback."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    assert out_render(source, repo, directory).returncode == ExitCode.OK
    assert out_render(source, repo, directory).returncode == ExitCode.OK  # every app in the pack
    before = read_tree(repo)
    (pack,) = packs(directory)
    app = split_pack(pack)[1]["records"][0][6][0]
    forge_app(pack, lie, sign=True)
    run = out_render(source, repo, directory)
    assert_clean(run)
    assert run.returncode == ExitCode.INPUT, run.stderr
    assert "render pack holds" in run.stderr and f"of app {app} " in run.stderr
    assert read_tree(repo) == before
    printed = stdout_render(source, "--cache-dir", str(directory))
    assert_clean(printed)
    assert (printed.returncode, printed.stdout) == (ExitCode.INPUT, "")
    assert_no_canary([run.stdout, run.stderr, printed.stdout, printed.stderr])
