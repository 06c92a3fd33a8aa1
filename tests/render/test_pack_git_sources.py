"""Sources in a Git work tree: a tenant record file whose blob id Git vouches for, the one the
render pack recorded for it, is taken from the pack without being read (pipeline.cached_sources,
io.git_blobs). This is CI's case: a fresh checkout gives every file a new inode and mtime, so
without Git's word all 20,000 records would be read and hashed on every run.

Real Git, a real pack in a real cache directory, the pipeline in process. Each source tree is
checked out again before the warm render (every tracked file removed and restored by Git: new
identities, an index Git wrote). What must hold, whatever the index says: the output is the
bytes of a render without any cache, and a record whose file does not hold the recorded bytes
is read: edited in the work tree, edited and committed, edited behind Git's back
(assume-unchanged), converted on checkout by a committed `.gitattributes`, or in a repository
that is not Git's SHA-1 kind.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from btp_gitops.generator.io import render_pack
from btp_gitops.generator.io.input_files import read_input_bytes
from btp_gitops.generator.io.render_cache import RenderCache
from btp_gitops.generator.pipeline import cached_sources
from tests.conftest import CLI
from tests.render.test_render_cache import outcome, records, tenant, write
from tests.render.test_render_pack import packs, render, source
from tests.support.forged_cache import split_pack, write_pack

__all__ = ["source"]  # the fixture, taken from test_render_pack

IDENTITY = ("-c", "user.name=t", "-c", "user.email=t@localhost")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *IDENTITY, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def committed(source: Path, *, object_format: str = "sha1", attributes: str | None = None) -> Path:
    git(source, "init", "-q", f"--object-format={object_format}")
    if attributes is not None:
        (source / ".gitattributes").write_text(attributes)
    git(source, "add", "-A")
    git(source, "commit", "-qm", "sources")
    return source


def checked_out_again(source: Path) -> None:
    """Every tracked file removed and restored by Git, as a fresh clone would write it."""
    for path in git(source, "ls-files", "-z").split("\0"):
        if path:
            (source / path).unlink()
    git(source, "checkout", "-q", "--", ".")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The source files a render reads, by name (`read_input_bytes` as pipeline.cached_sources
    calls it)."""
    seen: list[str] = []
    read = read_input_bytes

    def counted(path: str | Path, *args: int) -> bytes:
        seen.append(Path(path).name)
        return read(path, *args)

    monkeypatch.setattr(cached_sources, "read_input_bytes", counted)
    yield seen


def tenant_files(source: Path) -> set[str]:
    return {path.name for path in (source / "tenants").glob("*.yaml")}


def warm(source: Path, directory: Path, reads: list[str]) -> tuple[RenderCache, set[str]]:
    """A render with the cache that the render before filled, compared with one without a cache;
    the tenant record files it read."""
    reads.clear()
    cache = RenderCache(directory)
    cached = render(source, cache)
    assert outcome(cached) == outcome(render(source, None))
    return cache, set(reads) & tenant_files(source)


def test_a_fresh_checkout_reads_no_unchanged_record(source: Path, tmp_path: Path, reads: list[str]) -> None:
    committed(source)
    directory = tmp_path / "cache"
    render(source, RenderCache(directory))  # fills the pack
    checked_out_again(source)
    cache, read = warm(source, directory, reads)
    assert read == set()
    assert cache.hits == records(source)
    assert reads, "the files that are no tenant records are read as without a cache"
    _, read = warm(source, directory, reads)
    assert read == set()  # the pack was not rewritten for identities: still Git's word
    checked_out_again(source)
    git(source, "rm", "-q", "--cached", "-r", ".")  # nothing tracked: Git vouches for nothing
    _, read = warm(source, directory, reads)
    assert read == tenant_files(source)


def filled(source: Path, tmp_path: Path) -> Path:
    """The sources committed and a cache filled by rendering them: the cache directory."""
    committed(source)
    directory = tmp_path / "cache"
    render(source, RenderCache(directory))
    return directory


def edited(source: Path, index: int, mark: str) -> Path:
    """The `index`th record file (by name) with other bytes: its subdomain prefixed with `mark`."""
    record = sorted((source / "tenants").glob("*.yaml"))[index]
    text = record.read_text()
    record.write_text(text.replace("subDomain: ", f"subDomain: {mark}"))
    assert record.read_text() != text
    return record


def test_a_record_edited_in_the_work_tree_is_read(source: Path, tmp_path: Path, reads: list[str]) -> None:
    directory = filled(source, tmp_path)
    checked_out_again(source)
    record = edited(source, 2, "x")
    _, read = warm(source, directory, reads)
    assert read == {record.name}


def test_a_record_edited_and_committed_is_read(source: Path, tmp_path: Path, reads: list[str]) -> None:
    """Git vouches for the file, with the id of the bytes committed now: not the pack's."""
    directory = filled(source, tmp_path)
    record = edited(source, 4, "z")
    git(source, "commit", "-qam", "edited")
    checked_out_again(source)
    assert git(source, "diff-files", "--name-only") == ""
    _, read = warm(source, directory, reads)
    assert read == {record.name}


def test_a_record_edited_behind_gits_back_is_read(source: Path, tmp_path: Path, reads: list[str]) -> None:
    """assume-unchanged: Git would not compare the file with its index, so it vouches for nothing."""
    directory = filled(source, tmp_path)
    checked_out_again(source)
    name = sorted((source / "tenants").glob("*.yaml"))[1].name
    git(source, "update-index", "--assume-unchanged", f"tenants/{name}")
    record = edited(source, 1, "y")
    assert git(source, "diff-files", "--name-only") == ""  # Git itself does not see it
    _, read = warm(source, directory, reads)
    assert read == {record.name}


def test_a_record_committed_as_a_link_is_read(source: Path, tmp_path: Path, reads: list[str]) -> None:
    """A tracked symbolic link is no regular file: Git's id for it is its target's name, never
    taken for the bytes it leads to (the link is followed and read as the sources always are)."""
    directory = filled(source, tmp_path)
    record = sorted((source / "tenants").glob("*.yaml"))[0]
    kept = source / ".kept" / record.name  # hidden: not a source of its own
    kept.parent.mkdir()
    record.rename(kept)
    record.symlink_to(f"../.kept/{record.name}")
    edited(source, 0, "v")  # through the link: the bytes it leads to are no longer the packed ones
    git(source, "add", "-A")
    git(source, "commit", "-qm", "a link")
    checked_out_again(source)
    assert record.is_symlink()
    _, read = warm(source, directory, reads)
    assert read == {record.name}


def test_files_converted_on_checkout_are_read(source: Path, tmp_path: Path, reads: list[str]) -> None:
    """A committed `.gitattributes` makes the checked-out bytes differ from the blobs: no record
    file is then taken on Git's word (the bytes are compared instead)."""
    committed(source, attributes="*.yaml text eol=crlf\n")
    checked_out_again(source)  # the bytes the pack is filled with are the converted ones
    directory = tmp_path / "cache"
    render(source, RenderCache(directory))
    checked_out_again(source)
    assert b"\r\n" in next((source / "tenants").glob("*.yaml")).read_bytes()
    cache, read = warm(source, directory, reads)
    assert read == tenant_files(source)
    assert cache.hits == records(source)  # the same bytes as when the pack was written


def test_a_sha256_repository_is_not_taken_at_its_word(source: Path, tmp_path: Path, reads: list[str]) -> None:
    """The pack keeps SHA-1 blob ids: a repository of SHA-256 objects vouches for other ids."""
    committed(source, object_format="sha256")
    directory = tmp_path / "cache"
    render(source, RenderCache(directory))
    checked_out_again(source)
    _, read = warm(source, directory, reads)
    assert read == tenant_files(source)


@pytest.mark.parametrize("blob", ["0" * 39, 7, None], ids=["short", "number", "null"])
def test_a_pack_with_a_malformed_blob_id_is_not_used(source: Path, tmp_path: Path, blob: object) -> None:
    directory = tmp_path / "cache"
    render(source, RenderCache(directory))
    (pack,) = packs(directory)
    fields, index, data = split_pack(pack)
    assert len(index["records"][0]) == 8 and len(index["records"][0][7]) == 40
    index["records"][0][7] = blob
    write_pack(pack, fields, index, data, sign=True)
    assert render_pack.read_pack(directory, pack.stem, RenderCache(directory).secret or b"") is None
    cache = RenderCache(directory)
    render(source, cache)
    assert cache.pack_found == ""


def test_the_cli_in_a_fresh_checkout_prints_what_a_render_without_a_cache_prints(
    source: Path, tmp_path: Path
) -> None:
    """The installed CLI, `render --stdout` with the cache (a tenant added and one edited and
    committed since the pack was written, the sources checked out again): the bytes of
    `--no-cache`, every unchanged record reused."""
    committed(source)
    directory = tmp_path / "cache"
    command = [str(CLI), "render", str(source), "--stdout", "--cluster", "demo", "-v"]
    subprocess.run([*command, "--cache-dir", str(directory)], capture_output=True, check=True)
    write(source, tenant(60))
    edited(source, 3, "w")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "one added, one edited")
    checked_out_again(source)
    warm = subprocess.run(
        [*command, "--cache-dir", str(directory)], capture_output=True, text=True, check=True
    )
    cold = subprocess.run([*command, "--no-cache"], capture_output=True, text=True, check=True)
    assert warm.stdout == cold.stdout
    assert f"{records(source) - 2} of {records(source)} tenant record(s) reused" in warm.stderr
